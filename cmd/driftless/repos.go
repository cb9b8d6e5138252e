package main

import (
	"sync"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/web"
)

// repoRegistry remembers the clone each app's source uses, so the
// dashboard reads diffs from the same clone the loop fetches into
// (*gitsource.Source serialises its own access).
type repoRegistry struct {
	mu    sync.Mutex
	repos map[string]*gitsource.Source
}

// track wraps a source factory to record what it creates.
func (r *repoRegistry) track(next func(config.AppConfig) (loop.Source, error)) func(config.AppConfig) (loop.Source, error) {
	return func(a config.AppConfig) (loop.Source, error) {
		src, err := next(a)
		if gs, ok := src.(*gitsource.Source); ok && err == nil {
			r.mu.Lock()
			if r.repos == nil {
				r.repos = map[string]*gitsource.Source{}
			}
			r.repos[a.Name] = gs
			r.mu.Unlock()
		}
		return src, err
	}
}

// get is web.Options.Repos.
func (r *repoRegistry) get(app string) web.Repo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gs, ok := r.repos[app]; ok {
		return gs
	}
	return nil
}
