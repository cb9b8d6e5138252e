package native

import (
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// validateBuild checks a native spec.build on its own; ResolveBuilds
// checks it against the revision.
func validateBuild(r yamlpos.Reporter, b *rawBuild) {
	if b == nil {
		return
	}
	if b.Context != "" {
		if _, err := manifest.CleanRepoPath(b.Context); err != nil {
			r.Errorf("spec.build.context", "%v: a build context must be inside the app directory", err)
		}
	}
	if b.Dockerfile != "" {
		if _, err := manifest.CleanDockerfile(b.Dockerfile); err != nil {
			r.Errorf("spec.build.dockerfile", "%v", err)
		}
	}
	for _, k := range sortedKeys(b.Args) {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			r.Errorf(yamlpos.ChildPath("spec.build.args", k), "is not a valid build argument name")
		}
	}
}
