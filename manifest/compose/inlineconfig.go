package compose

import (
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// inlineConfigDir is where a config given in the compose file seems to
// come from: it names the mount in plans and status ("repo:" + path) and
// is no file of the repository.
const inlineConfigDir = ".compose-configs/"

// inlineConfig is a config whose content the compose file gives (content:,
// interpolated like any value) or a variable of the project environment
// names (environment:, from .env and the app's environment), as docker
// compose writes each into the container: one file, mounted read-only and
// content-addressed like a repository file, so a changed content replaces
// the replicas that mount it.
func (sm *serviceMap) inlineConfig(name string, obj types.FileObjectConfig, exec bool) (string, *manifest.RepoTree, bool) {
	content := obj.Content
	if obj.Environment != "" {
		v, ok := sm.m.in.Lookup(obj.Environment)
		if !ok {
			if sm.m.reported == nil {
				sm.m.reported = map[string]bool{}
			}
			at := yamlpos.ChildPath("configs", name) + ".environment"
			if !sm.m.reported[at] {
				sm.m.errs.Add(sm.m.ix.at(at), at, "variable %s is not set in the project environment: set it in .env (or the app's environment:), or give the content with content: or file:", obj.Environment)
			}
			sm.m.reported[at] = true
			return "", nil, false
		}
		content = v
	}
	tree := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte(content), Exec: exec}}}
	sm.m.content[tree.Hash()] = tree
	return inlineConfigDir + name, tree, true
}
