package deploy_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/internal/netleave"
	"github.com/driftless-dev/driftless/drift"
)

// On an engine whose libnetwork deadlocks when two containers leave one
// network at once (Docker before 20.10.27, this machine's 20.10.24), the
// replicas of a scale-down and of an app's removal leave the app network
// one at a time, even with four removals allowed at once: each
// container's die and destroy come before the next one's die.
func TestReplicasLeaveANetworkOneAtATime(t *testing.T) {
	f := newFixture(t, deploy.Options{Parallelism: 4})
	ctx := context.Background()
	v, err := f.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !netleave.Affected(v.Version) {
		t.Skipf("Docker %s does not have the deadlock; removals are not serialised there", v.Version)
	}
	up := f.load(webYAML(4, ""))
	if res, _ := f.apply(up, f.plan(up, drift.Options{})); res.Err != nil {
		t.Fatalf("apply 4 replicas: %v", res.Err)
	}

	since := time.Now()
	down := f.load(webYAML(1, ""))
	if res, _ := f.apply(down, f.plan(down, drift.Options{})); res.Err != nil {
		t.Fatalf("scale down to 1: %v", res.Err)
	}
	f.assertOneAtATime(since, 3)

	one := f.load(webYAML(3, ""))
	if res, _ := f.apply(one, f.plan(one, drift.Options{})); res.Err != nil {
		t.Fatalf("scale up to 3: %v", res.Err)
	}
	since = time.Now()
	if err := f.eng.RemoveApp(ctx, f.app, nil); err != nil {
		t.Fatal(err)
	}
	f.assertOneAtATime(since, 3)
}

// assertOneAtATime reads the app's container events from since and
// checks that want containers died, each destroyed before the next died.
func (f *fixture) assertOneAtATime(since time.Time, want int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	until := time.Now().Add(time.Second)
	time.Sleep(time.Until(until))
	res := f.cli.Events(ctx, client.EventsListOptions{
		Since: strconv.FormatFloat(float64(since.UnixNano())/1e9, 'f', 3, 64),
		Until: strconv.FormatFloat(float64(until.UnixNano())/1e9, 'f', 3, 64),
		Filters: make(client.Filters).Add("type", string(events.ContainerEventType)).
			Add("label", drift.LabelApp+"="+f.app).Add("event", "die").Add("event", "destroy"),
	})
	var seq []string
	for done := false; !done; {
		select {
		case m, ok := <-res.Messages:
			if !ok {
				done = true
				break
			}
			seq = append(seq, string(m.Action)+" "+m.Actor.Attributes["name"])
		case err := <-res.Err:
			if err != nil && !strings.Contains(err.Error(), "EOF") {
				f.t.Fatalf("events: %v", err)
			}
			done = true
		}
	}
	f.t.Logf("events: %q", seq)
	dying := ""
	died := 0
	for _, e := range seq {
		action, name, _ := strings.Cut(e, " ")
		switch {
		case action == "die" && dying != "":
			f.t.Fatalf("%s died while %s had not left yet: %q", name, dying, seq)
		case action == "die":
			dying = name
			died++
		case action == "destroy" && name == dying:
			dying = ""
		}
	}
	if died != want {
		f.t.Errorf("%d containers died, want %d: %q", died, want, seq)
	}
}
