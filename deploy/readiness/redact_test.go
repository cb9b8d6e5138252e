package readiness

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// A healthcheck that prints the container's secret env value, or the
// agent's Git token, never shows it in the readiness reason that reaches
// status and the API.
func TestReadinessReasonIsScrubbed(t *testing.T) {
	spec := manifest.ServiceSpec{Image: "x", Env: map[string]string{"DB_PASSWORD": "hunter2-long", "MODE": "prod"}, SecretEnv: []string{"DB_PASSWORD"}}
	label, err := json.Marshal(spec.Redacted(manifest.SecretKey("k")))
	if err != nil {
		t.Fatal(err)
	}
	ins := container.InspectResponse{
		ID: "c1", Name: "/shop-web-1",
		Config: &container.Config{
			Env:    []string{"DB_PASSWORD=hunter2-long", "MODE=prod"},
			Labels: map[string]string{drift.LabelApp: "shop", drift.LabelSpec: string(label)},
		},
		State: &container.State{Status: "running", StartedAt: time.Now().Format(time.RFC3339Nano),
			Health: &container.Health{Status: "unhealthy", Log: []*container.HealthcheckResult{{Output: "connect with hunter2-long as prod failed; token ghp_agenttoken"}}}},
	}
	info := FromInspect(ins)
	p := New(nil, 2*time.Second, slog.New(slog.DiscardHandler))
	defer p.Stop()
	p.Scrub = []string{"ghp_agenttoken"}
	p.Update(info)
	_, reason, _, _ := p.Result("c1")
	if strings.Contains(reason, "hunter2") || strings.Contains(reason, "ghp_agenttoken") {
		t.Fatalf("reason shows a secret: %q", reason)
	}
	if want := "healthcheck unhealthy: connect with (sensitive) as prod failed; token (sensitive)"; reason != want {
		t.Errorf("reason = %q, want %q", reason, want)
	}
	// A summary refresh (no inspect) keeps what the inspect learned.
	info2 := Info{ID: "c1", App: "shop", State: drift.StateRunning, Health: "unhealthy"}
	p.Update(info2)
	if _, reason, _, _ := p.Result("c1"); strings.Contains(reason, "hunter2") {
		t.Errorf("after a summary refresh the reason shows the secret: %q", reason)
	}
}
