package manifest

import (
	"crypto/sha1" //nolint:gosec // Git's object names are SHA-1; this is naming, not security
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
)

// DefaultDockerfile is the Dockerfile's name when none is given.
const DefaultDockerfile = "Dockerfile"

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
	// DockerfileInline is the Dockerfile's text when the manifest gives
	// it in place of a file (compose's dockerfile_inline). It is sent in
	// the context as InlineDockerfile, which Dockerfile then names.
	DockerfileInline string `json:"dockerfileInline,omitempty"`
	// Labels are the built image's own labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Tags are more names given to the built image, as Image is.
	Tags []string `json:"tags,omitempty"`
	// NoCache builds without the engine's build cache and Pull pulls the
	// base images first. Both change how a missing image is built, not
	// which image the service runs, so they stay out of its hash.
	NoCache bool `json:"noCache,omitempty"`
	Pull    bool `json:"pull,omitempty"`
}

// InlineDockerfile is the path in the context as sent at which a
// Dockerfile given inline goes: a name no one commits.
const InlineDockerfile = ".driftless-inline.Dockerfile"

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

// BuildTag is the tag of an image built from b: "tree-" and 12 hex
// characters of the context's tree hash when the Dockerfile, args, target
// and labels are the defaults, otherwise of a hash over all of them. The
// same context gives the same tag in every revision, so an unchanged
// context is never rebuilt and a revert finds its earlier image.
func BuildTag(b Build) string {
	if b.Dockerfile == DefaultDockerfile && len(b.Args) == 0 && b.Target == "" && len(b.Labels) == 0 && len(b.TreeHash) >= 12 {
		return "tree-" + b.TreeHash[:12]
	}
	// An inline Dockerfile is a file of the tree as sent, so TreeHash
	// covers it.
	js, _ := json.Marshal(struct {
		Tree       string            `json:"tree"`
		Dockerfile string            `json:"dockerfile"`
		Args       map[string]string `json:"args,omitempty"`
		Target     string            `json:"target,omitempty"`
		Labels     map[string]string `json:"labels,omitempty"`
	}{b.TreeHash, b.Dockerfile, b.Args, b.Target, b.Labels})
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

// CleanDockerfile checks a Dockerfile path relative to its context.
func CleanDockerfile(p string) (string, error) {
	clean, err := CleanRepoPath(p)
	if err != nil || clean == "." {
		return "", fmt.Errorf("dockerfile %q must be a file inside the build context", p)
	}
	return clean, nil
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
