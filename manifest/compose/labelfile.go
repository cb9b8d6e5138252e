package compose

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// mapLabelFiles reads the service's label_file entries from the revision,
// as compose reads them from disk: KEY=VALUE lines, later files winning
// over earlier ones, labels: over every file; ${VAR} in a file names a
// label of an earlier file. The labels join the service's own, so a
// changed file replaces the replicas like a changed label.
func (sm *serviceMap) mapLabelFiles(files []string) {
	if len(files) == 0 {
		return
	}
	fromFiles := map[string]string{}
	lookup := func(k string) (string, bool) {
		v, ok := fromFiles[k]
		return v, ok
	}
	for i, written := range files {
		pos := sm.m.ix.item(sm.path("label_file"), i)
		field := yamlpos.IndexPath(sm.path("label_file"), i)
		vars, ok := sm.readLabelFile(pos, field, written, lookup)
		if !ok {
			continue
		}
		for k, v := range vars {
			if strings.HasPrefix(k, manifest.ReservedLabelPrefix) {
				sm.refuseAt(pos, field, "label %s in %q: the label prefix %q is reserved for driftless", k, written, manifest.ReservedLabelPrefix)
				continue
			}
			fromFiles[k] = v
		}
	}
	for k, v := range fromFiles {
		if _, explicit := sm.labels[k]; !explicit {
			if sm.labels == nil {
				sm.labels = map[string]string{}
			}
			sm.labels[k] = v
		}
	}
}

// readLabelFile reads and parses one label file of the revision.
func (sm *serviceMap) readLabelFile(pos manifest.Position, field, written string, lookup func(string) (string, bool)) (map[string]string, bool) {
	if path.IsAbs(written) {
		sm.refuseAt(pos, field, "%q: label files are read from the revision, so the path must be relative to the app directory", written)
		return nil, false
	}
	p, err := manifest.CleanRepoPath(written)
	if err != nil {
		sm.refuseAt(pos, field, "label file %v", err)
		return nil, false
	}
	data, err := fs.ReadFile(sm.m.fsys, path.Join(sm.m.root, p))
	var limit *policy.LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sm.refuseAt(pos, field, "label file %q does not exist in the repository: commit it", written)
		return nil, false
	case errors.As(err, &limit):
		sm.refuseAt(pos, field, "label file %q: %s", written, limit.AsError().Msg)
		return nil, false
	case err != nil:
		sm.refuseAt(pos, field, "cannot read label file %q: %v", written, err)
		return nil, false
	}
	vars, setTwice, err := load.ReadDotenv(data, lookup)
	if err != nil {
		ep, _ := load.PlainDotenvPos(sm.m.display(path.Join(sm.m.root, p)), false, err)
		if ep.File == "" {
			ep = pos
		}
		sm.refuseAt(ep, field, "%s", load.DotenvMessage(err))
		return nil, false
	}
	sm.warnSetTwice(pos, field, p, setTwice)
	return vars, true
}
