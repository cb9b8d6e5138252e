package web

import (
	"slices"
	"testing"

	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
)

// The real agent satisfies the interface web uses.
var _ Agent = (*loop.Agent)(nil)
var _ appConfigLister = (*loop.Agent)(nil)

type agentWithConfigs struct {
	*fakeAgent
	configs []config.AppConfig
}

func (a agentWithConfigs) AppConfigs() []config.AppConfig { return a.configs }

// Without Options.Sources, webhooks match the agent's own app configs;
// apps fixed to a commit never match a push.
func TestSourcesDefaultToAgentConfigs(t *testing.T) {
	agent := agentWithConfigs{fakeAgent: newFakeAgent(), configs: []config.AppConfig{
		{Name: "shop", Repo: "https://github.com/acme/shop.git", Branch: "main", WebhookSecret: testShopSecret},
		{Name: "blog", Repo: "https://github.com/acme/shop.git", Commit: "0f1e2d3"},
	}}
	s, err := New(Options{Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{t: t, agent: agent.fakeAgent, srv: s, h: s.Handler()}
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	code, out := env.deliver(hc, body, hc.signed(body, testShopSecret))
	if code != 202 || !slices.Equal(agent.enqueuedCalls(), []string{"shop/webhook"}) {
		t.Errorf("status %d (%v), Enqueue calls %v; want only shop queued", code, out, agent.enqueuedCalls())
	}
}
