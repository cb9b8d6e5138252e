package status

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/drift"
)

// Status lists the app's volumes, declared ones first, anonymous ones
// with the slot and target they belong to; other apps' are not its.
func TestVolumes(t *testing.T) {
	actual := &drift.Actual{Volumes: []drift.Volume{
		{Name: "shop-db-2-anon-x", App: "shop", Driver: "local", Service: "db", Slot: 2, Target: "/data"},
		{Name: "shop-db-1-anon-x", App: "shop", Driver: "local", Service: "db", Slot: 1, Target: "/data"},
		{Name: "shop-cache", App: "shop", Driver: "local", Resource: "cache"},
		{Name: "blog-data", App: "blog", Driver: "local", Resource: "data"},
	}}
	want := []VolumeStatus{
		{Name: "shop-cache", Driver: "local", Resource: "cache"},
		{Name: "shop-db-1-anon-x", Driver: "local", Service: "db", Slot: 1, Target: "/data"},
		{Name: "shop-db-2-anon-x", Driver: "local", Service: "db", Slot: 2, Target: "/data"},
	}
	if got := Volumes("shop", actual); !reflect.DeepEqual(got, want) {
		t.Errorf("volumes:\n got %+v\nwant %+v", got, want)
	}
	if got := Volumes("shop", nil); got != nil {
		t.Errorf("volumes without an observation: %+v", got)
	}
}
