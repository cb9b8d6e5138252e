// Package sources says which apps a source repository declares at one
// revision. It reads only the fs.FS it is given: no git, no Docker, no clock,
// so the agent, the CLI and tests all see the same answer for the same tree.
package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Generator says which apps a source repository holds: exactly one of
// Directories, File or Config.
type Generator struct {
	Directories []string // globs over slash paths from the repository root, e.g. "apps/*", "stacks/*/prod"; path.Match syntax per segment
	Exclude     []string // globs; a directory matching one (or below one that does) is not an app
	File        string   // path of a driftless-apps.yaml in the repository
	// Config is the path of a driftless.yaml in the repository: the
	// agent's configuration from Git. Only its apps: is read; its entries
	// are a File's plus repo:.
	Config string
}

// App is one app a source declares.
type App struct {
	Name string // DNS-safe app name
	Path string // its directory in the repository ("." = root)
	// Repo is the repository the app lives in, set only by a Config
	// entry; "" means the source's own.
	Repo string `json:",omitempty"`
	// Set only by a driftless-apps.yaml entry; zero means "the source's own".
	Branch, Tag string
	Interval    string // Go duration or cron spec, as written (the caller validates it with config.ParseSchedule)
	Prune       *bool  // prune resources inside the app
	SelfHeal    *bool
	Profiles    []string
	Release     *Release
	// At is where the app was declared, for messages: "driftless-apps.yaml:12" or the directory "apps/shop".
	At string
}

// Release is the part of the release settings a repository may choose.
type Release struct {
	Watch       string `json:"watch,omitempty"`      // duration as written
	UnreadyFor  string `json:"unreadyFor,omitempty"` // duration as written
	MaxRestarts *int   `json:"maxRestarts,omitempty"`
}

// maxNameLen is the longest DNS label, so an app name can be part of a
// container's host name.
const maxNameLen = 63

// Validate checks the generator as written in driftless.yaml (exactly one of
// Directories, File and Config; globs valid; File and Config clean
// relative paths, no "..").
func (g Generator) Validate() error {
	set := 0
	for _, given := range []bool{len(g.Directories) > 0, g.File != "", g.Config != ""} {
		if given {
			set++
		}
	}
	switch {
	case set == 0:
		return errors.New("give directories, file or config: the source must say where its apps are")
	case set > 1:
		return errors.New("give one of directories, file and config")
	case len(g.Directories) == 0 && len(g.Exclude) > 0:
		return errors.New("exclude: only applies to directories; list the apps you want in the file instead")
	}
	var errs []error
	for i, glob := range g.Directories {
		if err := checkGlob(glob); err != nil {
			errs = append(errs, fmt.Errorf("directories[%d]: %w", i, err))
		}
	}
	for i, glob := range g.Exclude {
		if err := checkGlob(glob); err != nil {
			errs = append(errs, fmt.Errorf("exclude[%d]: %w", i, err))
		}
	}
	if g.File != "" {
		if err := checkRelPath(g.File); err != nil {
			errs = append(errs, fmt.Errorf("file: %w", err))
		}
	}
	if g.Config != "" {
		if err := checkRelPath(g.Config); err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkGlob accepts a glob that can match a directory below the root: the
// root itself has no name to make an app name from.
func checkGlob(glob string) error {
	if err := checkRelPath(glob); err != nil {
		return err
	}
	if glob == "." {
		return errors.New(`"." is the repository root, which has no directory name to name an app after: use a file generator for a single app at the root`)
	}
	if _, err := path.Match(glob, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob: %v", glob, err)
	}
	return nil
}

// checkRelPath accepts a clean slash path inside the repository.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case path.IsAbs(p):
		return fmt.Errorf("%q is absolute: write it relative to the repository root", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not clean: write it as %q", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the repository", p)
	}
	return nil
}

// Discover lists the apps fsys (the repository tree at one revision) holds,
// sorted by name. More than maxApps apps is an error naming the limit
// (maxApps <= 0: no limit).
func Discover(fsys fs.FS, g Generator, maxApps int) ([]App, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	var apps []App
	var err error
	switch {
	case g.File != "":
		apps, err = discoverFile(fsys, g.File, false)
	case g.Config != "":
		apps, err = discoverFile(fsys, g.Config, true)
	default:
		apps, err = discoverDirs(fsys, g.Directories, g.Exclude)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	if maxApps > 0 && len(apps) > maxApps {
		return nil, fmt.Errorf("the source declares %d apps; maxApps is %d: raise maxApps in driftless.yaml or remove apps", len(apps), maxApps)
	}
	return apps, nil
}

// AppName turns a directory's base name into a DNS-safe app name:
// lowercase letters, digits and '-', starting with a letter, at most 63
// characters (e.g. "My_Shop" -> "my-shop", "2048" -> "app-2048"); "" when
// nothing usable is left.
func AppName(dir string) string {
	var b strings.Builder
	dash := false // a '-' is owed before the next letter or digit
	for _, r := range path.Base(dir) {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		default:
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteRune(r)
	}
	name := b.String()
	if name == "" {
		return ""
	}
	if name[0] < 'a' || name[0] > 'z' {
		name = "app-" + name
	}
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "-")
	}
	return name
}

// validName is what AppName produces and what a driftless-apps.yaml entry
// must write.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// String says how the generator finds apps, for status: "directories
// apps/*", "file driftless-apps.yaml" or "config driftless.yaml".
func (g Generator) String() string {
	switch {
	case g.File != "":
		return "file " + g.File
	case g.Config != "":
		return "config " + g.Config
	}
	return "directories " + strings.Join(g.Directories, ", ")
}
