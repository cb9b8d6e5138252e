package compose

import (
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
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
		vars := sm.readKVFile(load.KVFile{Kind: "label file", Path: written, Required: true, Missing: "commit it", Pos: pos, Field: field}, lookup).Vars
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
