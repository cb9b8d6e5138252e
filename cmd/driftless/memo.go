package main

import (
	"os"
	"path/filepath"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/internal/loadcache"
)

// memoEngine is a back end that can carry what it inspected from one CLI
// process to the next (deploy.Engine; Swarm has no memo).
type memoEngine interface {
	UseInspectMemo(app, build string, data []byte)
	SaveInspectMemo(app, path string)
}

var _ memoEngine = (*deploy.Engine)(nil)

// inspectMemo is where diff and apply keep the engine's inspect memo of one
// app: <data>/cache/observe/<app>.json. DRIFTLESS_INSPECT_MEMO=off turns it
// off.
type inspectMemo struct {
	path string
	eng  memoEngine
}

// openInspectMemo hands eng the memo an earlier run left for app. cache is
// the load cache, whose build identity it shares (nil: read it here).
func openInspectMemo(eng any, data, app string, cache *loadcache.Cache) *inspectMemo {
	me, ok := eng.(memoEngine)
	if !ok || os.Getenv("DRIFTLESS_INSPECT_MEMO") == "off" {
		return nil
	}
	build := cliBuild()
	if cache != nil {
		build = cache.Build
	}
	if build == "" {
		return nil
	}
	m := &inspectMemo{path: filepath.Join(data, "cache", "observe", app+".json"), eng: me}
	prev, _ := os.ReadFile(m.path) // none yet, or unreadable: no memo
	me.UseInspectMemo(app, build, prev)
	return m
}

// save writes the memo for the next run, or removes a stale one.
func (m *inspectMemo) save(app string) {
	if m != nil {
		m.eng.SaveInspectMemo(app, m.path)
	}
}
