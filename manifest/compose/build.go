package compose

import (
	"io/fs"
	"reflect"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/composerules"
	"github.com/driftless-dev/driftless/manifest/load"
)

// resolveBuildsIfValid is ResolveBuilds for a front end that has collected
// errs so far: a revision already refused is not read further.
func resolveBuildsIfValid(fsys fs.FS, root string, app *manifest.App, errs *yamlpos.Collector) error {
	if len(errs.Errs) > 0 {
		return nil
	}
	return load.ResolveBuilds(fsys, root, app)
}

// mapBuild maps build: onto ServiceSpec.Build. ResolveBuilds reads the
// context from the revision afterwards.
func (sm *serviceMap) mapBuild() {
	b := sm.s.Build
	sm.record("build", "build")
	v := reflect.ValueOf(b).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" || strings.HasPrefix(name, "#") || v.Field(i).IsZero() {
			continue
		}
		switch r := composerules.Build[name].(type) {
		case composerules.Mapped:
		case composerules.Refused:
			sm.refuse("build."+name, "%s", string(r))
		case composerules.NoEffect:
			sm.warn("build."+name, "%s", string(r))
		default:
			sm.refuse("build."+name, "is not supported by driftless yet")
		}
	}
	args := map[string]string{}
	for k, val := range b.Args {
		// compose-go drops an arg without a value that its environment
		// does not set, as docker compose does; any left is skipped alike.
		if val != nil {
			args[k] = *val
		}
	}
	if len(args) == 0 {
		args = nil
	}
	ctx := b.Context
	if ctx == "" {
		ctx = "."
	}
	if _, err := manifest.CleanRepoPath(ctx); err != nil {
		sm.refuse("build.context", "%v: a build context must be inside the app directory", err)
	}
	df := sm.buildDockerfile(b)
	sm.m.refuseReserved(sm.path("build.labels"), b.Labels)
	if sm.s.Image != "" {
		if _, err := manifest.BuiltImageName(sm.m.app, sm.name, sm.s.Image); err != nil {
			sm.refuse("image", "%v", err)
		}
	}
	sm.spec.Build = &manifest.Build{Context: ctx, Dockerfile: df, Args: args, Target: b.Target, Image: sm.s.Image,
		DockerfileInline: b.DockerfileInline, Labels: copyMap(b.Labels), Tags: slices.Clone(b.Tags), NoCache: b.NoCache, Pull: b.Pull}
}

// buildDockerfile is the Dockerfile a build names: none beside
// dockerfile_inline, the default when neither is written.
func (sm *serviceMap) buildDockerfile(b *types.BuildConfig) string {
	df := b.Dockerfile
	switch {
	case b.DockerfileInline != "" && df != "":
		sm.refuse("build.dockerfile_inline", "and build.dockerfile are mutually exclusive: give one")
	case b.DockerfileInline != "":
	case df == "":
		df = manifest.DefaultDockerfile
		fallthrough
	default:
		if _, err := manifest.CleanDockerfile(df); err != nil {
			sm.refuse("build.dockerfile", "%v", err)
		}
	}
	return df
}

// remoteBuildContext tells whether a build context is a Git or HTTP URL,
// as Docker recognises one, rather than a directory.
func remoteBuildContext(ctx string) bool {
	for _, prefix := range []string{"http://", "https://", "git://", "git@", "ssh://", "github.com/"} {
		if strings.HasPrefix(ctx, prefix) {
			return true
		}
	}
	return false
}

// remoteBuild handles a build from a Git or HTTP URL. driftless builds
// from the revision only. With image: as well, the image is run as it is,
// pulled when the engine lacks it, as docker compose up pulls an image it
// can pull before it builds any; without image: there is nothing to run.
func (sm *serviceMap) remoteBuild() {
	ctx := sm.s.Build.Context
	if sm.s.Image == "" {
		sm.refuse("build.context", "%q is a remote context (a Git or HTTP URL), which driftless does not build: it builds from the revision only; commit the context to the repository, or name the published image with image:", ctx)
		return
	}
	sm.warn("build.context", "%q is a remote context, which driftless does not build: it runs image %q, pulled when the engine lacks it (as docker compose pulls an image it can before building)", ctx, sm.s.Image)
}

// composeBuildFields lists the build attributes compose-go knows, for the
// test that keeps composerules.Build complete.
func composeBuildFields() []string {
	var out []string
	t := reflect.TypeOf(types.BuildConfig{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" && !strings.HasPrefix(name, "#") {
			out = append(out, name)
		}
	}
	return out
}
