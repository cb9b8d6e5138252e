package loop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// nextStatus is pure: these cases feed it outcomes on a fixed clock and
// check the status, history and memory it returns.

var clock0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func testRev(n int, subject string) gitsource.Revision {
	return gitsource.Revision{SHA: fmt.Sprintf("%07d%033d", n, n), Subject: subject}
}

func acceptedRev(n int, services ...manifest.Service) *revisionState {
	return &revisionState{rev: testRev(n, fmt.Sprintf("commit %d", n)), app: &manifest.App{Name: "shop", Services: services}}
}

func statusIn(prev status.AppStatus, mem memory, o passOutcome, now time.Time) statusInput {
	return statusInput{prev: prev, mem: mem, cfg: appConfig("shop"), trigger: TriggerPoll, now: now, out: o}
}

func TestNextStatusEngineUnreachableKeepsSince(t *testing.T) {
	o := passOutcome{engineErr: fmt.Errorf("%w at unix:///var/run/docker.sock: connection refused", drift.ErrEngineUnreachable)}
	u := nextStatus(statusIn(status.AppStatus{Name: "shop"}, newMemory(), o, clock0))
	s := u.status
	if s.Sync != status.SyncUnknown || s.Health != status.HealthUnknown || len(s.Errors) != 1 || s.Errors[0].Kind != "engine" ||
		s.Message != "Docker engine unreachable at unix:///var/run/docker.sock: connection refused; retrying" {
		t.Fatalf("status %+v", s)
	}
	if !s.LastSuccess.IsZero() || len(u.history) != 0 || u.errors[0] != "engine" {
		t.Fatalf("last success %v, history %d, errors %v", s.LastSuccess, len(u.history), u.errors)
	}
	later := nextStatus(statusIn(s, u.mem, o, clock0.Add(time.Minute)))
	if !later.status.Errors[0].Since.Equal(clock0) {
		t.Fatalf("the condition's Since moved: %v", later.status.Errors[0].Since)
	}
}

func TestNextStatusSourceTransitionsAreRecordedOnce(t *testing.T) {
	acc := acceptedRev(1)
	mem := newMemory()
	mem.accepted = acc
	fail := passOutcome{accepted: acc, sourceErr: errors.New("git server unreachable"), gap: &drift.Plan{}, health: &drift.AppHealth{Health: drift.HealthHealthy}}
	u1 := nextStatus(statusIn(status.AppStatus{}, mem, fail, clock0))
	u2 := nextStatus(statusIn(u1.status, u1.mem, fail, clock0.Add(time.Minute)))
	head := testRev(2, "next")
	ok := passOutcome{accepted: acc, fetched: &head, gap: &drift.Plan{}, health: &drift.AppHealth{Health: drift.HealthHealthy}}
	u3 := nextStatus(statusIn(u2.status, u2.mem, ok, clock0.Add(2*time.Minute)))
	got := append(append(summaries(u1.history), summaries(u2.history)...), summaries(u3.history)...)
	want := []string{
		"source failed: git server unreachable; keeping " + acc.rev.Short() + " running and retrying with backoff",
		"source recovered: fetched " + head.Short(),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if u2.status.Source.Error == "" || u3.status.Source.Error != "" {
		t.Fatalf("source error: %q then %q", u2.status.Source.Error, u3.status.Source.Error)
	}
}

func TestNextStatusCommitWithoutContainerChangesBecomesApplied(t *testing.T) {
	svc := manifest.Service{Name: "web", Hash: "h1", Spec: manifest.ServiceSpec{Replicas: 1}}
	v1, v2 := acceptedRev(1, svc), acceptedRev(2, svc)
	mem := newMemory()
	mem.accepted, mem.appliedRev = v1, &v1.rev
	o := passOutcome{accepted: v2, fetched: &v2.rev, gap: &drift.Plan{App: "shop"}, health: &drift.AppHealth{Health: drift.HealthHealthy}}
	u := nextStatus(statusIn(status.AppStatus{}, mem, o, clock0))
	if u.status.Applied == nil || u.status.Applied.SHA != v2.rev.SHA || u.status.Sync != drift.SyncSynced {
		t.Fatalf("applied %v, %s", u.status.Applied, u.status.Sync)
	}
	if len(u.history) != 1 || u.history[0].Kind != status.KindSync || u.history[0].Result != "succeeded" {
		t.Fatalf("history %+v", u.history)
	}
	if u.mem.appliedState["web"].Hash != "h1" || u.persist == nil {
		t.Fatalf("applied state %+v, persisted %v", u.mem.appliedState, u.persist != nil)
	}
}

func TestNextStatusCancelledPassSaysNothingNew(t *testing.T) {
	acc := acceptedRev(1)
	mem := newMemory()
	mem.accepted = acc
	o := passOutcome{accepted: acc, sourceErr: errors.New("context canceled"), cancelled: true}
	u := nextStatus(statusIn(status.AppStatus{Sync: drift.SyncSynced, Health: drift.HealthHealthy}, mem, o, clock0))
	if len(u.history) != 0 || len(u.status.Errors) != 0 || len(u.errors) != 0 || u.status.Sync != drift.SyncSynced {
		t.Fatalf("a cancelled pass changed the story: history %v, errors %+v, metrics %v, sync %s", u.history, u.status.Errors, u.errors, u.status.Sync)
	}
}

func TestNextStatusDoesNotChangeItsInput(t *testing.T) {
	mem := newMemory()
	mem.conditions["source"] = status.Condition{Kind: "source", Message: "old", Since: clock0}
	o := passOutcome{accepted: acceptedRev(1), gap: &drift.Plan{}, health: &drift.AppHealth{Health: drift.HealthHealthy}}
	nextStatus(statusIn(status.AppStatus{}, mem, o, clock0))
	if _, ok := mem.conditions["source"]; !ok || mem.accepted != nil {
		t.Fatal("nextStatus changed the memory it was given")
	}
}

func TestPassResult(t *testing.T) {
	acc := acceptedRev(1)
	applied := func(causes ...drift.FailureCause) *applyReport {
		r := drift.ApplyResult{Err: errors.New("did not complete")}
		for _, c := range causes {
			r.Outcomes = append(r.Outcomes, drift.Outcome{Result: drift.ResultFailed, Failure: &drift.Failure{Cause: c}})
		}
		return &applyReport{result: r}
	}
	for _, tc := range []struct {
		name string
		o    passOutcome
		want string // requeue, error type
	}{
		{"clean", passOutcome{accepted: acc}, "no requeue, nil"},
		{"interference", passOutcome{accepted: acc, apply: applied(drift.FailureInterference)}, "requeue now, nil"},
		{"stopped for a newer revision", passOutcome{accepted: acc, apply: applied(drift.FailureStopped)}, "requeue now, nil"},
		{"engine during apply", passOutcome{accepted: acc, apply: applied(drift.FailureEngine)}, "no requeue, engine"},
		{"engine on observe", passOutcome{engineErr: errors.New("connection refused")}, "no requeue, engine"},
		{"rollout failure", passOutcome{accepted: acc, apply: applied(drift.FailureRollout, drift.FailureInterference)}, "no requeue, error"},
		{"refused", passOutcome{accepted: acc, refusal: &status.Refusal{Revision: testRev(2, "bad"), Reason: "1 manifest error(s)"}}, "no requeue, stalled"},
		{"source", passOutcome{accepted: acc, sourceErr: errors.New("unreachable")}, "no requeue, waiting"},
		{"backoff", passOutcome{accepted: acc, gap: &drift.Plan{Deferred: []drift.Change{{NotBefore: clock0.Add(10 * time.Second)}}}}, "after 10.1s, nil"},
	} {
		res, err := passResult(tc.o, clock0)
		got := "no requeue"
		switch {
		case res.Requeue:
			got = "requeue now"
		case res.RequeueAfter > 0:
			got = "after " + res.RequeueAfter.String()
		}
		var stalled *stalledError
		var waiting *waitingError
		switch {
		case err == nil:
			got += ", nil"
		case errors.Is(err, drift.ErrEngineUnreachable):
			got += ", engine"
		case errors.As(err, &stalled):
			got += ", stalled"
		case errors.As(err, &waiting):
			got += ", waiting"
		default:
			got += ", error"
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// An engine that fails under an apply is the engine's problem, not the
// manifest's: the status lists it under "engine" and retries it as such,
// while a rollout failure stays under "apply" with backoff.
func TestNextStatusEngineFailureDuringApplyIsAnEngineCondition(t *testing.T) {
	acc := acceptedRev(1, manifest.Service{Name: "web", Hash: "h1", Spec: manifest.ServiceSpec{Replicas: 1}})
	failed := func(cause drift.FailureCause, msg string) passOutcome {
		r := drift.ApplyResult{Err: errors.New(msg), Outcomes: []drift.Outcome{{Result: drift.ResultFailed, Failure: &drift.Failure{Cause: cause}}}}
		return passOutcome{accepted: acc, fetched: &acc.rev, gap: &drift.Plan{App: "shop"}, health: &drift.AppHealth{Health: drift.HealthDegraded}, apply: &applyReport{result: r}}
	}
	engine := "web: Docker engine unreachable at tcp://10.0.0.1:2375: no answer to POST /containers/create within 3s"
	for _, tc := range []struct {
		name, kind, message string
		o                   passOutcome
	}{
		{"engine", "engine", "apply " + acc.rev.Short() + ": " + engine + "; retrying", failed(drift.FailureEngine, engine)},
		{"rollout", "apply", "apply " + acc.rev.Short() + ": web: not ready; retrying with backoff", failed(drift.FailureRollout, "web: not ready")},
	} {
		mem := newMemory()
		mem.accepted = acc
		u := nextStatus(statusIn(status.AppStatus{Name: "shop"}, mem, tc.o, clock0))
		s := u.status
		if len(s.Errors) != 1 || s.Errors[0].Kind != tc.kind || len(u.errors) != 1 || u.errors[0] != tc.kind {
			t.Errorf("%s: conditions %+v, error metrics %v; want one %q", tc.name, s.Errors, u.errors, tc.kind)
		}
		if s.Message != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, s.Message, tc.message)
		}
	}
}
