package manifest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
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

// DefaultDockerfile is the Dockerfile's name when none is given.
const DefaultDockerfile = "Dockerfile"

// DockerIgnoreFile is the file at the root of a build context whose
// patterns keep files out of the context, as with docker build.
const DockerIgnoreFile = ".dockerignore"

// BuiltImagePrefix names the images driftless builds when the service does
// not name one: driftless/<app>-<service>:tree-<12 hex>.
const BuiltImagePrefix = "driftless/"

// Build is how a service's image is built from the revision.
type Build struct {
	// Context is the directory sent to the engine, slash-separated and
	// relative to the app directory ("." is the app directory).
	Context string `json:"context"`
	// Dockerfile is relative to Context.
	Dockerfile string            `json:"dockerfile"`
	Args       map[string]string `json:"args,omitempty"`
	Target     string            `json:"target,omitempty"`
	// Image is the name the service gave with image:, tagged on the built
	// image as well; "" when it gave none.
	Image string `json:"image,omitempty"`
	// TreeHash is the Git tree hash of the context as sent: the files
	// .dockerignore keeps. Without a .dockerignore it is the tree hash Git
	// itself shows for the directory (git rev-parse REV:path).
	TreeHash string `json:"treeHash,omitempty"`
}

// BuildContext is what the engine needs to build one image of a revision.
type BuildContext struct {
	// Ref is the content-addressed name the services run.
	Ref string
	// Tags are more names to give the image (the services' image:).
	Tags  []string
	Build Build
	// Files is the context as sent, .dockerignore applied.
	Files *RepoTree
	// Services are the services that run the image, by model name.
	Services []string
}

// Errors of ReadBuildContext.
var (
	ErrContextTooLarge = fmt.Errorf("holds more than %d MiB", MaxBuildContextBytes>>20)
	ErrLinkEscapes     = errors.New("is a symlink that points outside the build context")
)

// BuildTag is the tag of an image built from b: "tree-" and 12 hex
// characters of the context's tree hash when the Dockerfile, args and
// target are the defaults, otherwise of a hash over all of them. The same
// context gives the same tag in every revision, so an unchanged context is
// never rebuilt and a revert finds its earlier image.
func BuildTag(b Build) string {
	if b.Dockerfile == DefaultDockerfile && len(b.Args) == 0 && b.Target == "" && len(b.TreeHash) >= 12 {
		return "tree-" + b.TreeHash[:12]
	}
	js, _ := json.Marshal(struct {
		Tree       string            `json:"tree"`
		Dockerfile string            `json:"dockerfile"`
		Args       map[string]string `json:"args,omitempty"`
		Target     string            `json:"target,omitempty"`
	}{b.TreeHash, b.Dockerfile, b.Args, b.Target})
	sum := sha256.Sum256(js)
	return "tree-" + hex.EncodeToString(sum[:])[:12]
}

// BuiltImageName is the repository name of a service's built image: the
// one its image: gives, or driftless/<app>-<service>.
func BuiltImageName(app, service, image string) (string, error) {
	if image == "" {
		return BuiltImagePrefix + app + "-" + service, nil
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %v", image, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return "", fmt.Errorf("image %q names a digest, which a build cannot produce: give a name or name:tag", image)
	}
	return reference.FamiliarName(named), nil
}

// PushRegistry is the registry a built image is pushed to, so that other
// nodes can pull it: the host its image: names explicitly
// ("registry.example.com/shop/web", "127.0.0.1:5000/web",
// "docker.io/acme/web"), or "" when it names none ("acme/web", which
// Docker would take for Docker Hub: a build is never pushed there unless
// the name says so) or gives no image at all.
func (bc *BuildContext) PushRegistry() string {
	first, rest, ok := strings.Cut(bc.Build.Image, "/")
	if !ok || rest == "" || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		return ""
	}
	return first
}

// ResolveBuilds reads the context of every service with a Build from the
// revision, names its image after the context's tree hash and makes that
// the service's image. Problems come back as an ErrorList located at the
// service's build field.
func ResolveBuilds(fsys fs.FS, root string, app *App) error {
	fsys = buildContextFS(fsys)
	var errs ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		if svc.Spec.Build == nil {
			continue
		}
		bc, err := resolveBuild(fsys, root, app.Name, svc)
		if err != nil {
			ref := svc.Field("build")
			errs = append(errs, &Error{Pos: ref.Pos, Field: ref.Field, Msg: err.Error()})
			continue
		}
		if app.Builds == nil {
			app.Builds = map[string]*BuildContext{}
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
		svc.Hash = HashService(app.SecretKey, svc.Labels, svc.Spec)
	}
	if len(errs) > 0 {
		return (&Collector{Errs: errs}).Sorted()
	}
	return nil
}

func resolveBuild(fsys fs.FS, root, app string, svc *Service) (*BuildContext, error) {
	b := *svc.Spec.Build
	b.Args = copyMap(b.Args)
	name, err := BuiltImageName(app, svc.Name, b.Image)
	if err != nil {
		return nil, err
	}
	dir, err := CleanRepoPath(orDefaultString(b.Context, "."))
	if err != nil {
		return nil, fmt.Errorf("context %w: a build context must be inside the app directory", err)
	}
	dockerfile, err := CleanDockerfile(orDefaultString(b.Dockerfile, DefaultDockerfile))
	if err != nil {
		return nil, err
	}
	b.Context, b.Dockerfile = dir, dockerfile
	files, err := ReadBuildContext(fsys, path.Join(root, dir), dockerfile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("context %s does not exist in this revision: commit the directory or fix the path", dir)
	case errors.Is(err, ErrContextTooLarge):
		return nil, fmt.Errorf("context %s %v: add a %s or point the context at a smaller directory", dir, ErrContextTooLarge, DockerIgnoreFile)
	case err != nil:
		return nil, fmt.Errorf("context %s: %v", dir, err)
	}
	b.TreeHash = files.GitTreeHash()
	bc := &BuildContext{Ref: name + ":" + BuildTag(b), Build: b, Files: files, Services: []string{svc.Name}}
	if b.Image != "" {
		bc.Tags = []string{b.Image}
	}
	return bc, nil
}

// CleanDockerfile checks a Dockerfile path relative to its context.
func CleanDockerfile(p string) (string, error) {
	clean, err := CleanRepoPath(p)
	if err != nil || clean == "." {
		return "", fmt.Errorf("dockerfile %q must be a file inside the build context", p)
	}
	return clean, nil
}

// ReadBuildContext reads the directory dir of fsys as a build context:
// every regular file and symlink that the context's .dockerignore keeps
// (the Dockerfile and the .dockerignore itself are always sent, as docker
// build does). A symlink that leaves the context is refused; so is a
// context over MaxBuildContextBytes and one without the Dockerfile.
func ReadBuildContext(fsys fs.FS, dir, dockerfile string) (*RepoTree, error) {
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
	t := &RepoTree{Dir: true}
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
	slices.SortFunc(t.Files, func(a, b RepoFile) int { return strings.Compare(a.Path, b.Path) })
	if !slices.ContainsFunc(t.Files, func(f RepoFile) bool { return f.Path == dockerfile && f.Link == "" }) {
		return nil, fmt.Errorf("the dockerfile %s is not in the build context %s", dockerfile, dir)
	}
	return t, nil
}

// contextFile reads one entry of a build context; nil for entries that
// are neither regular files nor symlinks (a revision has no others).
func contextFile(fsys fs.FS, fp, rel string, d fs.DirEntry) (*RepoFile, error) {
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
		return &RepoFile{Path: rel, Exec: fi.Mode()&0o111 != 0, Data: data}, nil
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
		return &RepoFile{Path: rel, Link: target, Data: []byte(target)}, nil
	}
	return nil, nil
}

// GitTreeHash is the name Git gives the tree holding t's files (a
// directory tree): blobs of mode 100644, 100755 or 120000 (symlinks),
// subtrees of mode 40000, entries ordered as Git orders them.
func (t *RepoTree) GitTreeHash() string {
	root := &gitDir{}
	for _, f := range t.Files {
		parts := strings.Split(f.Path, "/")
		d := root
		for _, p := range parts[:len(parts)-1] {
			d = d.dir(p)
		}
		d.files = append(d.files, gitFile{name: parts[len(parts)-1], f: f})
	}
	sum := root.hash()
	return hex.EncodeToString(sum[:])
}

type gitDir struct {
	files []gitFile
	dirs  map[string]*gitDir
}

type gitFile struct {
	name string
	f    RepoFile
}

func (d *gitDir) dir(name string) *gitDir {
	if d.dirs == nil {
		d.dirs = map[string]*gitDir{}
	}
	sub, ok := d.dirs[name]
	if !ok {
		sub = &gitDir{}
		d.dirs[name] = sub
	}
	return sub
}

func (d *gitDir) hash() [20]byte {
	type entry struct {
		name, sortKey, mode string
		sum                 [20]byte
	}
	var entries []entry
	for _, f := range d.files {
		mode := "100644"
		switch {
		case f.f.Link != "":
			mode = "120000"
		case f.f.Exec:
			mode = "100755"
		}
		entries = append(entries, entry{f.name, f.name, mode, gitObject("blob", f.f.Data)})
	}
	for name, sub := range d.dirs {
		// Git sorts a directory as if its name ended in "/".
		entries = append(entries, entry{name, name + "/", "40000", sub.hash()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.sortKey, b.sortKey) })
	var body []byte
	for _, e := range entries {
		body = append(body, e.mode...)
		body = append(body, ' ')
		body = append(body, e.name...)
		body = append(body, 0)
		body = append(body, e.sum[:]...)
	}
	return gitObject("tree", body)
}

func gitObject(kind string, data []byte) [20]byte {
	h := sha1.New() //nolint:gosec // Git object names
	h.Write([]byte(kind + " " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	var out [20]byte
	copy(out[:], h.Sum(nil))
	return out
}
