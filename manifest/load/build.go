package load

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// Builds: a service may declare how to build its image from the revision
// (compose's build:, the native spec.build). The front ends record what was
// written in ServiceSpec.Build; ResolveBuilds then reads the context from
// the revision, names the image after the Git tree hash of what it sends
// to the engine, and makes that name the service's image. Everything here
// stays pure: the engine builds the image later, only if it is missing.

// MaxBuildContextBytes bounds what one build context may send to the
// engine: sources and small binaries, not data sets.
const MaxBuildContextBytes = 64 << 20

// DockerIgnoreFile is the file at the root of a build context whose
// patterns keep files out of the context, as with docker build.
const DockerIgnoreFile = ".dockerignore"

// Errors of ReadBuildContext.
var (
	ErrContextTooLarge = fmt.Errorf("holds more than %d MiB", MaxBuildContextBytes>>20)
	ErrLinkEscapes     = errors.New("is a symlink that points outside the build context")
)

// ResolveBuilds reads the context of every service with a Build from the
// revision, names its image after the context's tree hash and makes that
// the service's image. Problems come back as an ErrorList located at the
// service's build field.
func ResolveBuilds(fsys fs.FS, root string, app *manifest.App) error {
	fsys = policy.BuildContextFS(fsys)
	var errs manifest.ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		if svc.Spec.Build == nil {
			continue
		}
		bc, err := resolveBuild(fsys, root, app.Name, svc)
		if err != nil {
			ref := svc.Field("build")
			errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: err.Error()})
			continue
		}
		if app.Builds == nil {
			app.Builds = map[string]*manifest.BuildContext{}
		}
		if prev, ok := app.Builds[bc.Ref]; ok {
			prev.Services = append(prev.Services, svc.Name)
			for _, t := range bc.Tags {
				if !slices.Contains(prev.Tags, t) {
					prev.Tags = append(prev.Tags, t)
				}
			}
			slices.Sort(prev.Tags)
		} else {
			app.Builds[bc.Ref] = bc
		}
		svc.Spec.Build = &bc.Build
		svc.Spec.Image = bc.Ref
		svc.Hash = manifest.HashService(app.SecretKey, svc.Labels, svc.Spec)
	}
	if len(errs) > 0 {
		return (&yamlpos.Collector{Errs: errs}).Sorted()
	}
	return nil
}

func resolveBuild(fsys fs.FS, root, app string, svc *manifest.Service) (*manifest.BuildContext, error) {
	b := *svc.Spec.Build
	b.Args = copyMap(b.Args)
	name, err := manifest.BuiltImageName(app, svc.Name, b.Image)
	if err != nil {
		return nil, err
	}
	dir, err := manifest.CleanRepoPath(orDefaultString(b.Context, "."))
	if err != nil {
		return nil, fmt.Errorf("context %w: a build context must be inside the app directory", err)
	}
	if err := checkBuildTags(b.Tags); err != nil {
		return nil, err
	}
	b.Labels = copyMap(b.Labels)
	var files *manifest.RepoTree
	if b.DockerfileInline != "" {
		b.Context, b.Dockerfile = dir, manifest.InlineDockerfile
		files, err = readInlineContext(fsys, path.Join(root, dir), b.DockerfileInline)
	} else {
		if b.Dockerfile, err = manifest.CleanDockerfile(orDefaultString(b.Dockerfile, manifest.DefaultDockerfile)); err != nil {
			return nil, err
		}
		b.Context = dir
		files, err = ReadBuildContext(fsys, path.Join(root, dir), b.Dockerfile)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("context %s does not exist in this revision: commit the directory or fix the path", dir)
	case errors.Is(err, ErrContextTooLarge):
		return nil, fmt.Errorf("context %s %v: add a %s or point the context at a smaller directory", dir, ErrContextTooLarge, DockerIgnoreFile)
	case err != nil:
		return nil, fmt.Errorf("context %s: %v", dir, err)
	}
	b.TreeHash = files.GitTreeHash()
	bc := &manifest.BuildContext{Ref: name + ":" + manifest.BuildTag(b), Build: b, Files: files, Services: []string{svc.Name}}
	if b.Image != "" {
		bc.Tags = []string{b.Image}
	}
	for _, t := range b.Tags {
		if !slices.Contains(bc.Tags, t) {
			bc.Tags = append(bc.Tags, t)
		}
	}
	return bc, nil
}

// checkBuildTags checks the more names a build gives its image
// (compose's build.tags): each a name or name:tag, never a digest, which a
// build cannot produce.
func checkBuildTags(tags []string) error {
	for _, t := range tags {
		named, err := reference.ParseNormalizedNamed(t)
		if err != nil {
			return fmt.Errorf("tags: invalid image reference %q: %v", t, err)
		}
		if _, ok := named.(reference.Digested); ok {
			return fmt.Errorf("tags: %q names a digest, which a build cannot produce: give a name or name:tag", t)
		}
	}
	return nil
}

// readInlineContext reads the context directory dir for a Dockerfile given
// inline: the context's files, and the Dockerfile's text as
// manifest.InlineDockerfile.
func readInlineContext(fsys fs.FS, dir, dockerfile string) (*manifest.RepoTree, error) {
	t, err := readContext(fsys, dir, manifest.InlineDockerfile)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(t.Files, func(f manifest.RepoFile) bool { return f.Path == manifest.InlineDockerfile }) {
		return nil, fmt.Errorf("the context %s holds a file %s, where driftless puts the inline Dockerfile: rename the file", dir, manifest.InlineDockerfile)
	}
	t.Files = append(t.Files, manifest.RepoFile{Path: manifest.InlineDockerfile, Data: []byte(dockerfile)})
	slices.SortFunc(t.Files, func(a, b manifest.RepoFile) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

// ReadBuildContext reads the directory dir of fsys as a build context:
// every regular file and symlink that the context's .dockerignore keeps
// (the Dockerfile and the .dockerignore itself are always sent, as docker
// build does). A symlink that leaves the context is refused; so is a
// context over MaxBuildContextBytes and one without the Dockerfile.
func ReadBuildContext(fsys fs.FS, dir, dockerfile string) (*manifest.RepoTree, error) {
	t, err := readContext(fsys, dir, dockerfile)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(t.Files, func(f manifest.RepoFile) bool { return f.Path == dockerfile && f.Link == "" }) {
		return nil, fmt.Errorf("the dockerfile %s is not in the build context %s", dockerfile, dir)
	}
	return t, nil
}

// readContext reads the directory dir of fsys as a build context whose
// Dockerfile is dockerfile, which need not be there.
func readContext(fsys fs.FS, dir, dockerfile string) (*manifest.RepoTree, error) {
	info, err := fs.Stat(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is a file: the context must be a directory", dir)
	}
	walk := &contextWalk{}
	if data, err := fs.ReadFile(fsys, path.Join(dir, DockerIgnoreFile)); err == nil {
		if walk.ign, err = parseDockerIgnore(string(data), dockerfile); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	t := &manifest.RepoTree{Dir: true}
	var total int64
	err = fs.WalkDir(fsys, dir, func(fp string, d fs.DirEntry, err error) error {
		rel := relTo(dir, fp)
		if err != nil || rel == "." {
			return err
		}
		excluded, skipDir, err := walk.visit(rel, d.IsDir())
		switch {
		case err != nil:
			return err
		case skipDir:
			return fs.SkipDir
		case d.IsDir(), excluded && rel != dockerfile && rel != DockerIgnoreFile:
			return nil
		}
		f, err := contextFile(fsys, fp, rel, d)
		if err != nil || f == nil {
			return err
		}
		total += int64(len(f.Data))
		if total > MaxBuildContextBytes {
			return ErrContextTooLarge
		}
		t.Files = append(t.Files, *f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(t.Files, func(a, b manifest.RepoFile) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

// contextFile reads one entry of a build context; nil for entries that
// are neither regular files nor symlinks (a revision has no others).
func contextFile(fsys fs.FS, fp, rel string, d fs.DirEntry) (*manifest.RepoFile, error) {
	switch {
	case d.Type().IsRegular():
		fi, err := d.Info()
		if err != nil {
			return nil, err
		}
		data, err := fs.ReadFile(fsys, fp)
		if err != nil {
			return nil, err
		}
		return &manifest.RepoFile{Path: rel, Exec: fi.Mode()&0o111 != 0, Data: data}, nil
	case d.Type()&fs.ModeSymlink != 0:
		target, err := fs.ReadLink(fsys, fp)
		if err != nil {
			return nil, err
		}
		// The engine resolves links inside the context it was sent; one
		// that leads out of it would read nothing, or the host's files.
		if path.IsAbs(target) || strings.Contains(target, "\\") {
			return nil, fmt.Errorf("%s %w (%s)", rel, ErrLinkEscapes, target)
		}
		if to := path.Join(path.Dir(rel), target); to == ".." || strings.HasPrefix(to, "../") {
			return nil, fmt.Errorf("%s %w (%s)", rel, ErrLinkEscapes, target)
		}
		return &manifest.RepoFile{Path: rel, Link: target, Data: []byte(target)}, nil
	}
	return nil, nil
}
