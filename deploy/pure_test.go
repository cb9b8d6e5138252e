package deploy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/moby/moby/api/types/events"
)

func TestRolloutBatches(t *testing.T) {
	for _, tc := range []struct {
		n, surge, unavailable int
		want                  []rolloutBatch
	}{
		{3, 1, 0, []rolloutBatch{{1, 1}, {1, 1}, {1, 1}}},
		{5, 2, 0, []rolloutBatch{{2, 2}, {2, 2}, {1, 1}}},
		{3, 0, 1, []rolloutBatch{{1, 0}, {1, 0}, {1, 0}}},
		{4, 1, 1, []rolloutBatch{{2, 1}, {2, 1}}},
		{3, 1, 2, []rolloutBatch{{3, 1}}},
		{2, 0, 0, []rolloutBatch{{1, 1}, {1, 1}}}, // cannot make progress as written: surge one
		{0, 1, 0, nil},
	} {
		got := rolloutBatches(tc.n, tc.surge, tc.unavailable)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("rolloutBatches(%d, surge %d, unavailable %d) = %v, want %v", tc.n, tc.surge, tc.unavailable, got, tc.want)
		}
		// Invariant: never more than maxUnavailable replicas stopped first.
		for _, b := range got {
			if b.Size-b.Surge > tc.unavailable {
				t.Errorf("batch %v takes more than %d replicas out of service", b, tc.unavailable)
			}
		}
	}
}

func TestWatchedEvent(t *testing.T) {
	msg := func(typ, action string, attrs map[string]string) eventsMessage {
		return eventsMessage{Type: eventsType(typ), Action: eventsAction(action), Actor: eventsActor{ID: "abc", Attributes: attrs}}
	}
	owned := map[string]string{drift.LabelApp: "shop", "name": "shop-web-1"}
	foreign := map[string]string{"name": "redis-by-hand"}
	for _, tc := range []struct {
		m    eventsMessage
		want string // app/container/id/action/network, or "" when ignored
	}{
		{msg("container", "die", owned), "shop/shop-web-1/abc/die/"},
		{msg("container", "health_status: unhealthy", owned), "shop/shop-web-1/abc/health_status/"},
		{msg("container", "update", owned), "shop/shop-web-1/abc/update/"},
		{msg("container", "rename", owned), "shop/shop-web-1/abc/rename/"},
		{msg("container", "exec_start: /bin/sh", owned), ""},
		{msg("container", "destroy", foreign), "/redis-by-hand/abc/destroy/"},
		{msg("container", "start", foreign), ""},
		{msg("network", "disconnect", map[string]string{"container": "c1", "name": "shop-default"}), "//c1/disconnect/shop-default"},
		{msg("network", "create", map[string]string{"name": "x"}), ""},
		{msg("image", "pull", owned), ""},
		{msg("image", "tag", map[string]string{"name": "shop/web:1"}), "///tag/ shop/web:1"},
		{msg("image", "untag", map[string]string{"name": "sha256:abc"}), ""},
	} {
		ev, ok := watchedEvent(tc.m)
		got := ""
		if ok {
			got = ev.App + "/" + ev.Container + "/" + ev.ID + "/" + ev.Action + "/" + ev.Network
			if ev.Image != "" {
				got += " " + ev.Image
			}
		}
		if got != tc.want {
			t.Errorf("watchedEvent(%s %s) = %q, want %q", tc.m.Type, tc.m.Action, got, tc.want)
		}
	}
}

type (
	eventsMessage = events.Message
	eventsType    = events.Type
	eventsAction  = events.Action
	eventsActor   = events.Actor
)

func TestNotReadyReplicasAreReplacedFirst(t *testing.T) {
	mk := func(ids ...string) []indexed {
		var out []indexed
		for i, id := range ids {
			out = append(out, indexed{index: i, change: drift.Change{ID: id}})
		}
		return out
	}
	ready := map[string]bool{"a": true, "b": false, "c": true, "d": false}
	got := notReadyFirst(mk("a", "b", "c", "d"), func(id string) bool { return ready[id] })
	var order []string
	for _, ic := range got {
		order = append(order, ic.change.ID)
	}
	if strings.Join(order, ",") != "b,d,a,c" {
		t.Fatalf("order %v, want the not-ready b and d first, each group in plan order", order)
	}
}

// A service whose network or volume could not be created is held back
// with that failure; other services are not.
func TestFailedResourcesBlockTheirServices(t *testing.T) {
	netCreate := drift.Change{Action: drift.ActionCreate, Kind: drift.KindNetwork, Name: "shop-back", Resource: "back"}
	volCreate := drift.Change{Action: drift.ActionCreate, Kind: drift.KindVolume, Name: "shop-data", Resource: "data"}
	r := &run{outcomes: []drift.Outcome{
		{Change: netCreate, Result: drift.ResultFailed, Error: "address pool exhausted: raise addressPool", Failure: &drift.Failure{Cause: drift.FailureConflict, Summary: "pool"}},
		{Change: volCreate, Result: drift.ResultDone},
	}}
	missing := r.failedResources([]indexed{{0, netCreate}, {1, volCreate}})
	api := &manifest.Service{Name: "api", Spec: manifest.ServiceSpec{Networks: []string{"back"}}}
	db := &manifest.Service{Name: "db", Spec: manifest.ServiceSpec{Networks: []string{"default"}, Volumes: []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	f := missing.blocks(api)
	if f == nil || f.Cause != drift.FailureConflict || !strings.Contains(f.Summary, "network shop-back could not be created: address pool exhausted") {
		t.Errorf("api: %+v, want the network's conflict", f)
	}
	if f := missing.blocks(db); f != nil {
		t.Errorf("db (its volume was created): %+v, want nil", f)
	}
}
