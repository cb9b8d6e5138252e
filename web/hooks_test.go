package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sign(body, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// hookCase describes one provider's delivery of its fixture.
type hookCase struct {
	provider string
	fixture  string
	app      string // the app the fixture's push concerns
	secret   string // that app's secret
	events   map[string]string
	// signed returns the signature headers for body under secret.
	signed func(body, secret string) map[string]string
	// otherBranch moves the push to a branch no app tracks.
	otherBranch func(m map[string]any)
	// otherRepo is the fixture's repository path, replaced to make the push
	// concern a repository no app tracks.
	repoPath string
}

func hookCases() []hookCase {
	prefixed := func(h string) func(body, secret string) map[string]string {
		return func(body, secret string) map[string]string {
			return map[string]string{h: "sha256=" + sign(body, secret)}
		}
	}
	setRef := func(m map[string]any) { m["ref"] = "refs/heads/feature-x" }
	return []hookCase{
		{
			provider: "github", fixture: "github_push.json", app: "shop", secret: testShopSecret,
			events: map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
			signed: prefixed("X-Hub-Signature-256"), otherBranch: setRef, repoPath: "acme/shop",
		},
		{
			provider: "gitlab", fixture: "gitlab_push.json", app: "blog", secret: testGlobalSecret,
			events:      map[string]string{"X-Gitlab-Event": "Push Hook"},
			signed:      func(_, secret string) map[string]string { return map[string]string{"X-Gitlab-Token": secret} },
			otherBranch: setRef, repoPath: "acme/blog",
		},
		{
			provider: "gitea", fixture: "gitea_push.json", app: "wiki", secret: testGlobalSecret,
			events: map[string]string{"X-Gitea-Event": "push"},
			signed: func(body, secret string) map[string]string {
				return map[string]string{"X-Gitea-Signature": sign(body, secret)}
			},
			otherBranch: setRef, repoPath: "acme/wiki",
		},
		{
			provider: "gitea", fixture: "gitea_push.json", app: "wiki", secret: testGlobalSecret,
			events: map[string]string{"X-Forgejo-Event": "push"},
			signed: func(body, secret string) map[string]string {
				return map[string]string{"X-Forgejo-Signature": sign(body, secret)}
			},
			otherBranch: setRef, repoPath: "acme/wiki",
		},
		{
			provider: "bitbucket", fixture: "bitbucket_push.json", app: "docs", secret: testGlobalSecret,
			events: map[string]string{"X-Event-Key": "repo:push"},
			signed: prefixed("X-Hub-Signature"),
			otherBranch: func(m map[string]any) {
				for _, ch := range m["push"].(map[string]any)["changes"].([]any) {
					ch.(map[string]any)["new"].(map[string]any)["name"] = "feature-x"
				}
			},
			repoPath: "acme/docs",
		},
		{
			provider: "generic", fixture: "generic_push.json", app: "shop", secret: testShopSecret,
			signed: prefixed("X-Signature"), otherBranch: setRef, repoPath: "acme/shop",
		},
	}
}

func (hc hookCase) name() string {
	for k := range hc.events {
		if strings.HasPrefix(k, "X-Forgejo") {
			return hc.provider + "/forgejo"
		}
	}
	return hc.provider
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("webhook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mutateJSON(t *testing.T, body string, f func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e *testEnv) deliver(hc hookCase, body string, sig map[string]string) (int, map[string]any) {
	e.t.Helper()
	var opts []reqOpt
	for k, v := range hc.events {
		opts = append(opts, header(k, v))
	}
	for k, v := range sig {
		opts = append(opts, header(k, v))
	}
	// Webhooks come from the forge, never from loopback.
	opts = append(opts, from("140.82.115.10:443"))
	w := e.do(http.MethodPost, "/hooks/"+hc.provider, body, opts...)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		e.t.Fatalf("webhook answer is not JSON: %q", w.Body.String())
	}
	return w.Code, out
}

func TestWebhookQueuesMatchingApp(t *testing.T) {
	for _, hc := range hookCases() {
		t.Run(hc.name(), func(t *testing.T) {
			env := newTestEnv(t, nil)
			body := readFixture(t, hc.fixture)
			code, out := env.deliver(hc, body, hc.signed(body, hc.secret))
			if code != http.StatusAccepted {
				t.Fatalf("status %d, body %v; want 202", code, out)
			}
			queued, _ := out["queued"].([]any)
			if len(queued) != 1 || queued[0] != hc.app {
				t.Errorf("queued = %v, want [%s]", out["queued"], hc.app)
			}
			if got := env.agent.enqueuedCalls(); !slices.Equal(got, []string{hc.app + "/webhook"}) {
				t.Errorf("Enqueue calls = %v, want [%s/webhook]", got, hc.app)
			}
		})
	}
}

func TestWebhookRejectsUnsignedAndWronglySigned(t *testing.T) {
	for _, hc := range hookCases() {
		t.Run(hc.name(), func(t *testing.T) {
			env := newTestEnv(t, nil)
			body := readFixture(t, hc.fixture)
			cases := map[string]map[string]string{
				"missing":       nil,
				"wrong secret":  hc.signed(body, "not-the-secret"),
				"tampered body": hc.signed(strings.Replace(body, "acme", "acne", 1), hc.secret),
			}
			if hc.provider == "gitlab" {
				delete(cases, "tampered body") // GitLab sends a token, not a body signature
			}
			for name, sig := range cases {
				code, out := env.deliver(hc, body, sig)
				if code != http.StatusUnauthorized {
					t.Errorf("%s signature: status %d (%v), want 401", name, code, out)
				}
				if msg, _ := out["error"].(string); msg == "" || strings.Contains(msg, hc.secret) {
					t.Errorf("%s signature: error message %q should explain and not leak the secret", name, msg)
				}
			}
			if got := env.agent.enqueuedCalls(); len(got) != 0 {
				t.Errorf("rejected deliveries queued syncs: %v", got)
			}
		})
	}
}

func TestWebhookIgnoresOtherBranchAndOtherRepo(t *testing.T) {
	for _, hc := range hookCases() {
		t.Run(hc.name(), func(t *testing.T) {
			env := newTestEnv(t, nil)
			fixture := readFixture(t, hc.fixture)
			for name, body := range map[string]string{
				"other branch": mutateJSON(t, fixture, hc.otherBranch),
				"other repo":   strings.ReplaceAll(fixture, hc.repoPath, "acme/unrelated"),
			} {
				code, out := env.deliver(hc, body, hc.signed(body, hc.secret))
				if code != http.StatusAccepted {
					t.Errorf("%s: status %d (%v), want 202", name, code, out)
					continue
				}
				if reason, _ := out["ignored"].(string); reason == "" {
					t.Errorf("%s: answer %v has no ignored reason", name, out)
				}
			}
			if got := env.agent.enqueuedCalls(); len(got) != 0 {
				t.Errorf("ignored pushes queued syncs: %v", got)
			}
		})
	}
}

func TestWebhookOversizeAndMalformed(t *testing.T) {
	for _, hc := range hookCases() {
		t.Run(hc.name(), func(t *testing.T) {
			env := newTestEnv(t, nil)
			big := `{"ref":"refs/heads/main","padding":"` + strings.Repeat("x", 70<<10) + `"}`
			if code, out := env.deliver(hc, big, hc.signed(big, hc.secret)); code != http.StatusRequestEntityTooLarge {
				t.Errorf("oversize: status %d (%v), want 413", code, out)
			}
			bad := `{"ref": "refs/heads/main", "repository": `
			code, out := env.deliver(hc, bad, hc.signed(bad, hc.secret))
			if code != http.StatusBadRequest {
				t.Errorf("malformed: status %d (%v), want 400", code, out)
			}
			if msg, _ := out["error"].(string); !strings.Contains(msg, "unexpected end of JSON") {
				t.Errorf("malformed: error %q should carry the parse error", msg)
			}
		})
	}
}

func TestWebhookPing(t *testing.T) {
	env := newTestEnv(t, nil)
	ping := readFixture(t, "github_ping.json")
	gh := hookCases()[0]
	gh.events = map[string]string{"X-GitHub-Event": "ping"}
	if code, out := env.deliver(gh, ping, gh.signed(ping, testShopSecret)); code != http.StatusOK {
		t.Errorf("github ping: status %d (%v), want 200", code, out)
	}
	// Bitbucket's ping event.
	bb := hookCases()[4]
	bb.events = map[string]string{"X-Event-Key": "diagnostics:ping"}
	if code, out := env.deliver(bb, "{}", bb.signed("{}", testGlobalSecret)); code != http.StatusOK {
		t.Errorf("bitbucket ping: status %d (%v), want 200", code, out)
	}
	// A Gitea/GitLab test delivery without a ref or commits.
	for _, hc := range []hookCase{hookCases()[1], hookCases()[2]} {
		body := `{"commits": [], "total_commits_count": 0}`
		if code, out := env.deliver(hc, body, hc.signed(body, testGlobalSecret)); code != http.StatusOK {
			t.Errorf("%s test event: status %d (%v), want 200", hc.provider, code, out)
		}
	}
	// Other events are not pushes.
	gh.events = map[string]string{"X-GitHub-Event": "issues"}
	body := readFixture(t, "github_push.json")
	if code, out := env.deliver(gh, body, gh.signed(body, testShopSecret)); code != http.StatusAccepted || out["ignored"] == nil {
		t.Errorf("github issues event: status %d (%v), want 202 ignored", code, out)
	}
	if got := env.agent.enqueuedCalls(); len(got) != 0 {
		t.Errorf("pings queued syncs: %v", got)
	}
}

func TestWebhookBurstIsAllAccepted(t *testing.T) {
	env := newTestEnv(t, nil)
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	for i := range 20 {
		if code, out := env.deliver(hc, body, hc.signed(body, hc.secret)); code != http.StatusAccepted {
			t.Fatalf("delivery %d: status %d (%v)", i, code, out)
		}
	}
	// Every delivery is passed on; the agent's queue coalesces them.
	if got := len(env.agent.enqueuedCalls()); got != 20 {
		t.Errorf("Enqueue called %d times, want 20", got)
	}
}

// A repository's secret only authorises the apps that use it: shop has
// its own secret, so a push to main signed with the global secret (which
// shop-staging on the same repository uses) does not queue shop.
func TestWebhookPerAppSecret(t *testing.T) {
	env := newTestEnv(t, nil)
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	code, out := env.deliver(hc, body, hc.signed(body, testGlobalSecret))
	if code != http.StatusAccepted || out["ignored"] == nil {
		t.Errorf("main signed with the global secret: status %d (%v), want 202 ignored", code, out)
	}
	staging := mutateJSON(t, body, func(m map[string]any) { m["ref"] = "refs/heads/staging" })
	code, out = env.deliver(hc, staging, hc.signed(staging, testGlobalSecret))
	if code != http.StatusAccepted || len(out["queued"].([]any)) != 1 || out["queued"].([]any)[0] != "shop-staging" {
		t.Errorf("staging signed with the global secret: status %d (%v), want shop-staging queued", code, out)
	}
	if got := env.agent.enqueuedCalls(); !slices.Equal(got, []string{"shop-staging/webhook"}) {
		t.Errorf("Enqueue calls = %v", got)
	}
}

func TestWebhookWithoutAnySecretConfigured(t *testing.T) {
	env := newTestEnv(t, func(o *Options) {
		o.WebhookSecret = ""
		o.Sources = func() []AppSource {
			return []AppSource{{Name: "shop", Repo: "https://github.com/acme/shop", Branch: "main"}}
		}
	})
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	code, out := env.deliver(hc, body, hc.signed(body, ""))
	if code != http.StatusUnauthorized || !strings.Contains(out["error"].(string), "--webhook-secret") {
		t.Errorf("status %d (%v), want 401 naming --webhook-secret", code, out)
	}
}

func TestWebhookMetrics(t *testing.T) {
	env := newTestEnv(t, nil)
	hc := hookCases()[0]
	body := readFixture(t, hc.fixture)
	env.deliver(hc, body, hc.signed(body, hc.secret))
	env.deliver(hc, body, nil)
	w := env.do(http.MethodGet, "/metrics", "")
	for _, want := range []string{
		`driftless_webhook_requests_total{provider="github",result="queued"} 1`,
		`driftless_webhook_requests_total{provider="github",result="unauthorized"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
