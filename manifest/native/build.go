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
	switch {
	case b.Dockerfile != "" && b.DockerfileInline != "":
		r.Errorf("spec.build.dockerfileInline", "and spec.build.dockerfile are mutually exclusive: give one")
	case b.Dockerfile != "":
		if _, err := manifest.CleanDockerfile(b.Dockerfile); err != nil {
			r.Errorf("spec.build.dockerfile", "%v", err)
		}
	}
	validateLabelKeys(r, "spec.build.labels", b.Labels)
	for _, k := range sortedKeys(b.Args) {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			r.Errorf(yamlpos.ChildPath("spec.build.args", k), "is not a valid build argument name")
		}
	}
}
