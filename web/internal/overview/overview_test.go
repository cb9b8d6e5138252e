package overview

import (
	"reflect"
	"testing"

	"github.com/driftless-dev/driftless/sync/status"
)

func TestEnginesListsEachEngineWithItsApps(t *testing.T) {
	down := []status.Condition{{Kind: "engine", Message: "Docker engine unreachable"}}
	apps := []status.AppStatus{
		{Name: "shop", Engine: "edge", Errors: down},
		{Name: "blog"},
		{Name: "wiki", Engine: "cabin"},
		{Name: "api", Engine: "edge"},
	}
	want := []Engine{{Name: "local", Apps: 1}, {Name: "cabin", Apps: 1}, {Name: "edge", Apps: 2, Unreachable: 1}}
	if got := Engines(apps); !reflect.DeepEqual(got, want) {
		t.Errorf("Engines = %+v, want %+v", got, want)
	}
	if got := Engines([]status.AppStatus{{Name: "blog"}, {Name: "shop", Errors: down}}); got != nil {
		t.Errorf("every app on the agent's own engine: %+v, want no engines line", got)
	}
}

func TestOnEngine(t *testing.T) {
	apps := []status.AppStatus{{Name: "shop", Engine: "edge"}, {Name: "blog"}, {Name: "api", Engine: "edge"}}
	names := func(as []status.AppStatus) (out []string) {
		for _, a := range as {
			out = append(out, a.Name)
		}
		return out
	}
	if got := names(OnEngine(apps, "edge")); !reflect.DeepEqual(got, []string{"shop", "api"}) {
		t.Errorf("on edge: %v", got)
	}
	if got := names(OnEngine(apps, LocalEngine)); !reflect.DeepEqual(got, []string{"blog"}) {
		t.Errorf("on local: %v", got)
	}
}

func TestGroupsKeepsSourcesInOrder(t *testing.T) {
	srcs := []status.SourceSet{{Name: "platform"}, {Name: "empty"}}
	apps := []status.AppStatus{{Name: "a", FromSource: "platform"}, {Name: "b"}, {Name: "c", FromSource: "platform"}}
	got := Groups(apps, srcs)
	if len(got) != 3 || got[0].Source != nil || len(got[0].Apps) != 1 || got[1].Source.Name != "platform" || len(got[1].Apps) != 2 || got[2].Source.Name != "empty" {
		t.Errorf("Groups = %+v", got)
	}
	if got := Groups(apps[:1], srcs); got[0].Source == nil {
		t.Error("an empty apps: group is shown")
	}
}
