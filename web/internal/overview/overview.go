// Package overview arranges the dashboard's app list: the apps grouped by
// where they are declared, and the engines they run on. It is pure: app
// statuses in, what the overview page shows out.
package overview

import (
	"slices"

	"github.com/driftless-dev/driftless/sync/status"
)

// Group is the apps of one sources: entry (Source set), or those listed
// under apps: (Source nil).
type Group struct {
	Source *status.SourceSet
	Apps   []status.AppStatus
}

// Groups groups apps by the source that declares them, keeping each
// group's order; a source with no app still shows (its set may be refused).
func Groups(apps []status.AppStatus, srcs []status.SourceSet) []Group {
	groups := []Group{{}}
	at := map[string]int{}
	for i := range srcs {
		at[srcs[i].Name] = len(groups)
		groups = append(groups, Group{Source: &srcs[i]})
	}
	for _, a := range apps {
		i, ok := at[a.FromSource]
		if !ok {
			i = 0
		}
		groups[i].Apps = append(groups[i].Apps, a)
	}
	if len(groups[0].Apps) == 0 {
		groups = groups[1:]
	}
	return groups
}

// LocalEngine is what the overview calls the agent's own engine.
const LocalEngine = "local"

// Engine is one engine as its apps' statuses show it.
type Engine struct {
	Name string
	Apps int
	// Unreachable are its apps whose last pass found the engine not
	// answering (an "engine" condition).
	Unreachable int
}

// OnEngine are the apps placed on the engine called name (LocalEngine for
// the agent's own), in their order.
func OnEngine(apps []status.AppStatus, name string) []status.AppStatus {
	var out []status.AppStatus
	for _, a := range apps {
		if a.Engine == name || (a.Engine == "" && name == LocalEngine) {
			out = append(out, a)
		}
	}
	return out
}

// Engines are the engines the apps run on, the agent's own first, then by
// name; none when every app runs on the agent's own engine.
func Engines(apps []status.AppStatus) []Engine {
	at := map[string]int{}
	var out []Engine
	named := false
	for _, a := range apps {
		name := a.Engine
		if name == "" {
			name = LocalEngine
		} else {
			named = true
		}
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, Engine{Name: name})
		}
		out[i].Apps++
		if slices.ContainsFunc(a.Errors, func(c status.Condition) bool { return c.Kind == "engine" }) {
			out[i].Unreachable++
		}
	}
	if !named {
		return nil
	}
	slices.SortFunc(out, func(x, y Engine) int {
		switch {
		case x.Name == LocalEngine:
			return -1
		case y.Name == LocalEngine:
			return 1
		case x.Name < y.Name:
			return -1
		case x.Name > y.Name:
			return 1
		}
		return 0
	})
	return out
}
