package loop

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestSignedWebhookDeploysAtOnce: with polling too slow to matter (10m),
// a push followed by a signed webhook to the real binary deploys the new
// commit; an unsigned or wrongly signed hook is refused and deploys
// nothing, and a hook for another branch is accepted and ignored.
func TestSignedWebhookDeploysAtOnce(t *testing.T) {
	t.Parallel()
	const secret = "e2e-webhook-secret"
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)
	v1 := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRigEnv(t, env, func(app string) string { return testenv.WebManifest(v1, 1, "one") }, "--interval", "10m")
	first := r.Repo.Head()
	r.WaitConverged("first deploy", first, 1, v1)

	second := r.Commit("two replicas", testenv.WebManifest(v1, 2, "one"))
	url := r.Repo.URL(r.Server.URL)
	send := func(ref, sig string) (int, string) {
		body := []byte(fmt.Sprintf(`{"repository": %q, "ref": %q}`, url, ref))
		if sig == "sign" {
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(body)
			sig = "sha256=" + hex.EncodeToString(mac.Sum(nil))
		}
		req, err := http.NewRequest(http.MethodPost, r.Agent.URL+"/hooks/generic", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if sig != "" {
			req.Header.Set("X-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(text)
	}
	if code, body := send("refs/heads/main", ""); code != http.StatusUnauthorized {
		t.Fatalf("unsigned hook: HTTP %d %s", code, body)
	}
	if code, body := send("refs/heads/main", "sha256="+strings.Repeat("0", 64)); code != http.StatusUnauthorized {
		t.Fatalf("wrongly signed hook: HTTP %d %s", code, body)
	}
	if code, body := send("refs/heads/other", "sign"); code != http.StatusAccepted || !strings.Contains(body, "other") {
		t.Fatalf("hook for another branch: HTTP %d %s", code, body)
	}
	time.Sleep(2 * time.Second)
	if st := r.Wait(5*time.Second, "still the first commit", func(s status.AppStatus) bool { return s.Applied != nil }); st.Applied.SHA != first {
		t.Fatalf("refused or ignored hooks deployed %s", st.Applied.Short())
	}
	if code, body := send("refs/heads/main", "sign"); code != http.StatusAccepted {
		t.Fatalf("signed hook: HTTP %d %s", code, body)
	}
	st := r.WaitConverged("the pushed commit after the hook", second, 2, v1)
	if st.Fetched == nil || st.Fetched.SHA != second {
		t.Fatalf("fetched %+v", st.Fetched)
	}
}
