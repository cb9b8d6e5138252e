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
	InspectMemo(app string) []byte
}

// inspectMemo is where diff and apply keep the engine's inspect memo of one
// app: <data>/cache/observe/<app>.json. DRIFTLESS_INSPECT_MEMO=off turns it
// off.
type inspectMemo struct {
	path string
	eng  memoEngine
}

// openInspectMemo hands eng the memo an earlier run left for app.
func openInspectMemo(eng any, data, app string) *inspectMemo {
	me, ok := eng.(memoEngine)
	if !ok || os.Getenv("DRIFTLESS_INSPECT_MEMO") == "off" {
		return nil
	}
	build := loadcache.ExecutableBuildID()
	if build == "" {
		return nil
	}
	m := &inspectMemo{path: filepath.Join(data, "cache", "observe", app+".json"), eng: me}
	prev, _ := os.ReadFile(m.path) // none yet, or unreadable: no memo
	me.UseInspectMemo(app, version+"/"+build, prev)
	return m
}

// save writes the memo for the next run, or removes a stale one. A memo
// that cannot be written costs the next run its inspects, nothing else.
func (m *inspectMemo) save(app string) {
	if m == nil {
		return
	}
	data := m.eng.InspectMemo(app)
	if data == nil {
		os.Remove(m.path)
		return
	}
	dir := filepath.Dir(m.path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), m.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

var _ memoEngine = (*deploy.Engine)(nil)
