package faults

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

// TestFaultScaleUpInterruptedByRevert measures a scale-up from 1 to 40
// replicas (ready after the settle time), scales back, then scales up again
// and, while that rolls out, pushes a revert and a signed webhook. The
// rollout must stop at a safe point and the app reach 1 replica long before
// the 40 would have finished, without starting all 40, and history must
// not call the interrupted scale-up a success.
func TestFaultScaleUpInterruptedByRevert(t *testing.T) {
	t.Parallel()
	row := recordFault(t, "40-replica scale-up interrupted by a revert")
	const secret = "fault-webhook-secret"
	v1 := testenv.WorkloadImage(t, "v1")
	one := svcState{Image: v1, Replicas: 1, Plain: true}
	forty := one.with(func(s *svcState) { s.Replicas = 40 })
	// Polling is slow: the webhook is what tells the agent.
	r := newFaultRig(t, one, rigOptions{noStart: true, flags: []string{"--interval", "10m"},
		env: append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET="+secret)})
	ev := startEventLog(t, testenv.DockerClient(t), r.app)
	r.foreign = plantForeign(t, r.dk, r.app, v1)
	r.start()
	r.waitHead(60*time.Second, "one replica")

	// The whole scale-up, for comparison, and back.
	t0 := time.Now()
	r.commit("scale to 40", forty)
	r.webhook(secret)
	// The bounds only decide how long a real failure takes to report: on
	// a quiet machine the scale-up takes about 10 s, on a loaded CI
	// machine beside the compose corpus it once took over 3 minutes.
	r.waitHead(6*time.Minute, "40 replicas")
	full := time.Since(t0)
	r.checkRunning("after scaling to 40")
	t0 = time.Now()
	r.revertHead()
	r.webhook(secret)
	r.waitHead(4*time.Minute, "back to one replica")
	down := time.Since(t0)
	r.checkRunning("after scaling back to 1")

	// The same scale-up, interrupted by a revert once a few replicas run.
	createdBefore, _ := ev.counts()
	t0 = time.Now()
	up := r.commit("scale to 40 again", forty)
	r.webhook(secret)
	if !pollUntil(2*time.Minute, 20*time.Millisecond, func() bool { return len(r.dk.appContainers(t, r.app)) >= 6 }) {
		t.Fatal("the second scale-up did not start within 2 minutes")
	}
	atRevert := len(r.dk.appContainers(t, r.app))
	reverted := time.Now()
	r.revertHead()
	r.webhook(secret)
	row.add(1)
	r.waitHead(4*time.Minute, "one replica after the revert")
	interrupted := time.Since(t0)
	afterRevert := time.Since(reverted)
	createdAll, _ := ev.counts()
	created := createdAll - createdBefore
	r.checkRunning("after the interrupted scale-up")
	entries := r.checkHistory("after the interrupted scale-up", ev)
	var upEntries []string
	for _, e := range entries {
		if e.Kind == status.KindSync && e.Revision != nil && e.Revision.SHA == up {
			upEntries = append(upEntries, e.Result+": "+e.Summary)
			if e.Result == "succeeded" {
				t.Errorf("history calls the interrupted scale-up a success: %s", e.Summary)
			}
		}
	}
	t.Logf("1→40 took %s, 40→1 %s; interrupted at %d containers: 1 replica %s after the revert (%s after the scale-up commit), %d replicas created; history of the interrupted commit: %q",
		full.Round(time.Millisecond), down.Round(time.Millisecond), atRevert, afterRevert.Round(time.Millisecond),
		interrupted.Round(time.Millisecond), created, upEntries)
	if created >= 39 {
		t.Errorf("the interrupted scale-up still created %d replicas; it should have stopped at a safe point", created)
	}
	if interrupted >= full {
		t.Errorf("with the revert the app was back to 1 replica %s after the scale-up commit, no sooner than the whole scale-up (%s)", interrupted, full)
	}
	row.note("1→40 %s, 40→1 %s; revert at %d containers → 1 replica %s later, %d of 39 new replicas created",
		full.Round(100*time.Millisecond), down.Round(100*time.Millisecond), atRevert, afterRevert.Round(100*time.Millisecond), created)
}

// webhook sends a signed generic push hook for the rig's branch.
func (r *faultRig) webhook(secret string) {
	r.t.Helper()
	body := []byte(fmt.Sprintf(`{"repository": %q, "ref": "refs/heads/main"}`, r.repoURL))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, r.agent.URL+"/hooks/generic", bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		r.t.Fatalf("webhook: HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(text)))
	}
}
