package loop

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

func web(image string, replicas int) map[string]string {
	return map[string]string{"web.yaml": service("web", image, replicas)}
}

func TestForcePushFollowedIsShownUntilAFastForward(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	v1 := src.commit("v1", web("demo:v1", 1))
	h.pass("shop", "startup")
	v2 := src.commit("v2", web("demo:v2", 1))
	h.pass("shop", "poll")

	// main is rewritten: v2 is replaced by r, which descends from v1 only.
	r := src.rewrite(v1, "rewritten", web("demo:r", 1))
	st, err := h.pass("shop", "poll")
	if err != nil {
		t.Fatal(err)
	}
	checkFollowed(t, h, st, v2, r)

	// Polling the same head and restarting keep it shown, recorded once.
	h.clock.Advance(time.Minute)
	h.pass("shop", "poll")
	h.restart()
	st, _ = h.pass("shop", "startup")
	if st.ForcePush == nil || !hasCondition(st, "force-push") {
		t.Fatalf("after a restart: force-push %+v, errors %+v; want it still shown", st.ForcePush, st.Errors)
	}
	if n := len(h.history("shop", status.KindForcePush)); n != 1 {
		t.Fatalf("%d force-push entries for one force-push", n)
	}

	// A fast-forward on top of the applied revision clears it.
	ff := src.commit("v3", web("demo:v3", 1))
	st, err = h.pass("shop", "poll")
	if err != nil || st.Applied.SHA != ff || st.ForcePush != nil || hasCondition(st, "force-push") {
		t.Fatalf("after a fast-forward: err %v, applied %s, force-push %+v, errors %+v", err, st.Applied.Short(), st.ForcePush, st.Errors)
	}
	if st.Message != "synced to "+ff[:7] {
		t.Fatalf("message %q", st.Message)
	}
}

// checkFollowed checks that the force-push from -> to was followed,
// recorded once and shown.
func checkFollowed(t *testing.T, h *harness, st status.AppStatus, v2, r string) {
	t.Helper()
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + r[:7]}) {
		t.Fatalf("running %v, want the force-pushed revision followed", got)
	}
	want := "branch main moved from " + v2[:7] + " to " + r[:7] + ", not a fast-forward"
	es := h.history("shop", status.KindForcePush)
	if len(es) != 1 || es[0].Result != "followed" || !strings.HasPrefix(es[0].Summary, want) || es[0].Revision.SHA != r {
		t.Fatalf("force-push history = %+v, want one entry %q", es, want)
	}
	if st.ForcePush == nil || st.ForcePush.From != v2 || st.ForcePush.To.SHA != r || st.ForcePush.Refused {
		t.Fatalf("status force-push = %+v", st.ForcePush)
	}
	if !hasCondition(st, "force-push") || !strings.Contains(st.Message, "after a force-push: "+want) {
		t.Fatalf("status errors %+v, message %q: want the force-push shown", st.Errors, st.Message)
	}
}

// refusedForcePush deploys v1 then v2 with onForcePush: refuse, and
// rewrites main to r on top of v1.
func refusedForcePush(t *testing.T) (h *harness, v2, r string, good []string) {
	t.Helper()
	cfg := appConfig("shop")
	cfg.OnForcePush = config.ForcePushRefuse
	h = newHarness(t, cfg)
	src := h.sources["shop"]
	v1 := src.commit("v1", web("demo:v1", 2))
	h.pass("shop", "startup")
	v2 = src.commit("v2", web("demo:v2", 2))
	h.pass("shop", "poll")
	r = src.rewrite(v1, "rewritten", web("demo:r", 2))
	return h, v2, r, []string{"shop-web-1@" + v2[:7], "shop-web-2@" + v2[:7]}
}

func TestForcePushRefusedKeepsTheAppliedRevision(t *testing.T) {
	h, v2, r, good := refusedForcePush(t)
	st, err := h.pass("shop", "poll")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error (wait for a new commit)", err)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, good) {
		t.Fatalf("running %v, want the applied revision untouched", got)
	}
	remedy := "push a commit that descends from " + v2[:7] + ", or set onForcePush: follow"
	if st.Refused == nil || st.Refused.Revision.SHA != r || st.Applied.SHA != v2 ||
		!strings.Contains(st.Message, "not a fast-forward") || !strings.Contains(st.Message, remedy) || !strings.Contains(st.Message, "still running "+v2[:7]) {
		t.Fatalf("refused %+v, applied %s, message %q", st.Refused, st.Applied.Short(), st.Message)
	}
	if st.ForcePush == nil || !st.ForcePush.Refused || !hasCondition(st, "force-push") {
		t.Fatalf("force-push %+v, errors %+v", st.ForcePush, st.Errors)
	}
	es := h.history("shop", status.KindForcePush, status.KindRefused)
	if len(es) != 1 || es[0].Kind != status.KindForcePush || es[0].Result != "refused" || !strings.Contains(es[0].Summary, remedy) {
		t.Fatalf("history = %q, want one refused force-push entry with the remedy", summaries(es))
	}

	// The applied revision keeps healing, and a restart changes nothing.
	h.engine.rm("shop-web-2")
	h.pass("shop", "docker-event")
	h.restart()
	h.engine.rm("shop-web-1")
	st, _ = h.pass("shop", "startup")
	if got := h.engine.running("shop"); !slices.Equal(got, good) {
		t.Fatalf("running %v after repairs and a restart, want the applied revision", got)
	}
	if st.Refused == nil || st.ForcePush == nil || len(h.history("shop", status.KindForcePush, status.KindRefused)) != 1 {
		t.Fatalf("after restart: refused %+v, force-push %+v, history %q", st.Refused, st.ForcePush, summaries(h.history("shop")))
	}
}

func TestForcePushRefusedUntilACommitDescendsFromTheApplied(t *testing.T) {
	h, v2, _, good := refusedForcePush(t)
	src := h.sources["shop"]
	h.pass("shop", "poll")

	// A commit on top of the rewritten head is still not a fast-forward
	// of what runs: the previous fetch is not what counts.
	r2 := src.commit("on top of the rewrite", web("demo:r2", 2))
	st, _ := h.pass("shop", "poll")
	if st.Refused == nil || st.Refused.Revision.SHA != r2 || !slices.Equal(h.engine.running("shop"), good) {
		t.Fatalf("commit on the rewritten history: refused %+v, running %v", st.Refused, h.engine.running("shop"))
	}

	// A commit that descends from the applied one deploys.
	ff := src.rewrite(v2, "fast-forward", web("demo:v3", 2))
	st, err := h.pass("shop", "poll")
	if err != nil || st.Applied.SHA != ff || st.Refused != nil || st.ForcePush != nil || hasCondition(st, "force-push") {
		t.Fatalf("after a fast-forward: err %v, applied %s, refused %+v, force-push %+v", err, st.Applied.Short(), st.Refused, st.ForcePush)
	}
}

func TestForcePushAcceptedBySwitchingToFollow(t *testing.T) {
	cfg := appConfig("shop")
	cfg.OnForcePush = config.ForcePushRefuse
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	v1 := src.commit("v1", web("demo:v1", 1))
	h.pass("shop", "startup")
	src.commit("v2", web("demo:v2", 1))
	h.pass("shop", "poll")
	r := src.rewrite(v1, "rewritten", web("demo:r", 1))
	h.pass("shop", "poll")

	h.apps[0].OnForcePush = config.ForcePushFollow
	h.restart()
	st, err := h.pass("shop", "startup")
	if err != nil || st.Applied.SHA != r || st.Refused != nil || st.ForcePush == nil || st.ForcePush.Refused {
		t.Fatalf("after onForcePush: follow: err %v, applied %s, refused %+v, force-push %+v", err, st.Applied.Short(), st.Refused, st.ForcePush)
	}
	if es := h.history("shop", status.KindForcePush); len(es) != 2 || es[0].Result != "followed" {
		t.Fatalf("history %q, want the refusal then the follow", summaries(es))
	}
}

func TestForcePushWhenTheAppliedCommitIsGone(t *testing.T) {
	h := newHarness(t, appConfig("shop"))
	src := h.sources["shop"]
	v1 := src.commit("v1", web("demo:v1", 1))
	h.pass("shop", "startup")
	r := src.rewrite("", "new root", web("demo:r", 1))
	src.forget(v1) // as in a clone made after the force-push
	st, err := h.pass("shop", "poll")
	if err != nil || st.Applied.SHA != r || st.ForcePush == nil || !st.ForcePush.Missing {
		t.Fatalf("err %v, applied %s, force-push %+v", err, st.Applied.Short(), st.ForcePush)
	}
	if es := h.history("shop", status.KindForcePush); len(es) != 1 || !strings.Contains(es[0].Summary, "no longer holds "+v1[:7]) {
		t.Fatalf("history %q, want it to say the applied commit is gone", summaries(es))
	}
}

func TestTrackingAnotherBranchIsNotAForcePush(t *testing.T) {
	cfg := appConfig("shop")
	cfg.OnForcePush = config.ForcePushRefuse
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	src.commit("v1 on main", web("demo:v1", 1))
	h.pass("shop", "startup")

	h.apps[0].Branch = "release"
	h.restart()
	rel := src.rewrite("", "release branch", web("demo:rel", 1))
	st, err := h.pass("shop", "startup")
	if err != nil || st.Applied.SHA != rel || st.ForcePush != nil || len(h.history("shop", status.KindForcePush)) != 0 {
		t.Fatalf("after switching branch: err %v, applied %s, force-push %+v", err, st.Applied.Short(), st.ForcePush)
	}
}

// replayedSignedCommit deploys two signed revisions with verify on and
// onForcePush as given, then moves main back to the older signed one, as
// anyone who can push but holds no signing key can.
func replayedSignedCommit(t *testing.T, onForcePush string) (h *harness, v1, v2 string) {
	t.Helper()
	cfg := appConfig("shop")
	cfg.Verify = testVerifier(t)
	cfg.OnForcePush = onForcePush
	h = newHarness(t, cfg)
	src := h.sources["shop"]
	alice := gitsource.Signer{Type: gitsource.SignerSSH, Key: "SHA256:alice", Identity: "alice@example.com"}
	v1 = src.signed(src.commit("v1", web("demo:v1", 1)), alice)
	h.pass("shop", "startup")
	v2 = src.signed(src.commit("v2", web("demo:v2", 1)), alice)
	if st, err := h.pass("shop", "poll"); err != nil || st.Applied.SHA != v2 {
		t.Fatalf("v2: err %v, applied %s", err, st.Applied.Short())
	}
	src.mu.Lock()
	src.head = v1
	src.mu.Unlock()
	return h, v1, v2
}

// TestReplayedSignedCommitIsRefusedWithVerify: with verify on and
// onForcePush left out, moving the branch back to an older signed commit
// is refused, and the status says it was verify's default and how to
// accept it.
func TestReplayedSignedCommitIsRefusedWithVerify(t *testing.T) {
	h, v1, v2 := replayedSignedCommit(t, "")
	st, err := h.pass("shop", "poll")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error (wait for a new commit)", err)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + v2[:7]}) {
		t.Fatalf("running %v, want %s kept", got, v2[:7])
	}
	why := "onForcePush: refuse, the default with verify on: a replayed older signed commit is not accepted"
	remedy := "push a commit that descends from " + v2[:7] + ", or set onForcePush: follow"
	if st.Refused == nil || st.Refused.Revision.SHA != v1 || !strings.Contains(st.Message, why) || !strings.Contains(st.Message, remedy) {
		t.Fatalf("refused %+v, message %q: want %s refused saying %q and %q", st.Refused, st.Message, v1[:7], why, remedy)
	}
	if st.ForcePush == nil || !st.ForcePush.Refused || !st.ForcePush.VerifyDefault {
		t.Fatalf("force-push %+v, want refused by verify's default", st.ForcePush)
	}
	if es := h.history("shop", status.KindForcePush); len(es) != 1 || es[0].Result != "refused" || !strings.Contains(es[0].Summary, why) {
		t.Fatalf("history %q, want one refused entry saying why", summaries(es))
	}
}

// TestReplayedSignedCommitIsFollowedWhenExplicit: onForcePush: follow
// set explicitly still follows with verify on.
func TestReplayedSignedCommitIsFollowedWhenExplicit(t *testing.T) {
	h, v1, _ := replayedSignedCommit(t, config.ForcePushFollow)
	st, err := h.pass("shop", "poll")
	if err != nil || st.Applied.SHA != v1 || st.Refused != nil || st.ForcePush == nil || st.ForcePush.Refused {
		t.Fatalf("err %v, applied %s, refused %+v, force-push %+v; want %s followed", err, st.Applied.Short(), st.Refused, st.ForcePush, v1[:7])
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + v1[:7]}) {
		t.Fatalf("running %v, want %s", got, v1[:7])
	}
}
