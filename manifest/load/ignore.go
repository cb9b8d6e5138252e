package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// IgnoreFile is the file in an app directory whose gitignore-style patterns
// exclude files from the app: a CI config or a docs page in YAML is not a
// manifest.
const IgnoreFile = ".driftlessignore"

// IgnoreList is a parsed .driftlessignore. The nil list ignores nothing.
type IgnoreList struct {
	rules []ignoreRule
}

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool // "!pattern": include again
	dirOnly bool // "pattern/": directories only
	base    bool // no slash in the pattern: matches a name at any depth
}

// ReadIgnoreList reads root's .driftlessignore, if any.
func ReadIgnoreList(fsys fs.FS, root string, display func(string) string) (*IgnoreList, error) {
	p := path.Join(root, IgnoreFile)
	data, err := fs.ReadFile(fsys, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display(p), err)
	}
	return parseIgnoreList(string(data)), nil
}

// parseIgnoreList parses gitignore syntax: one pattern per line; blank
// lines and lines starting with # are skipped (\# and \! escape); a leading
// ! negates; a trailing / matches directories only; a pattern with a slash
// (other than a trailing one) is anchored to the app directory, one without
// matches a name at any depth; * and ? match within a path segment, [...]
// a character class, ** any number of directories.
func parseIgnoreList(text string) *IgnoreList {
	l := &IgnoreList{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		line = trimUnescapedSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		r.base = !strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		re, err := regexp.Compile("^" + globRegexp(line) + "$")
		if err != nil {
			continue // cannot happen: globRegexp quotes what it does not translate
		}
		r.re = re
		l.rules = append(l.rules, r)
	}
	return l
}

// trimUnescapedSpace drops trailing spaces unless the last is escaped.
func trimUnescapedSpace(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// globRegexp translates one gitignore glob into a regular expression.
func globRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case strings.HasPrefix(g[i:], "**/") && (i == 0 || g[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "**") && i+2 == len(g) && (i == 0 || g[i-1] == '/'):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '\\' && i+1 < len(g):
			b.WriteString(regexp.QuoteMeta(g[i+1 : i+2]))
			i++
		case c == '[':
			end := strings.IndexByte(g[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			class = strings.ReplaceAll(class, `\`, `\\`)
			class = strings.ReplaceAll(class, "[", `\[`)
			b.WriteString("[" + class + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Ignored reports whether rel (slash-separated, relative to the app
// directory) is excluded. As in git, a file inside an excluded directory
// cannot be included again.
func (l *IgnoreList) Ignored(rel string, isDir bool) bool {
	if l == nil || len(l.rules) == 0 || rel == "." || rel == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if l.match(strings.Join(parts[:i], "/"), true) {
			return true
		}
	}
	return l.match(rel, isDir)
}

// match applies the rules to one path: the last matching rule decides.
func (l *IgnoreList) match(rel string, isDir bool) bool {
	ignored := false
	name := path.Base(rel)
	for _, r := range l.rules {
		if r.dirOnly && !isDir {
			continue
		}
		subject := rel
		if r.base {
			subject = name
		}
		if r.re.MatchString(subject) {
			ignored = !r.negate
		}
	}
	return ignored
}

// relTo returns p relative to root (both slash paths in the same fs.FS).
func relTo(root, p string) string {
	if root == "." || root == "" {
		return p
	}
	if p == root {
		return "."
	}
	return strings.TrimPrefix(p, root+"/")
}

// ManifestFiles lists the YAML files under root in lexical order, less
// those the app's .driftlessignore excludes.
func ManifestFiles(fsys fs.FS, root string, ign *IgnoreList) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := p != root && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || (p != root && ign.Ignored(relTo(root, p), true)) {
				return fs.SkipDir // .git, .github: never manifests
			}
			return nil
		}
		if ign.Ignored(relTo(root, p), false) {
			return nil
		}
		if ext := path.Ext(p); !hidden && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// Mentions reports whether the file p of fsys holds needle, reading it in
// pieces: a file can be told apart from a manifest without holding it
// whole, or counting it among the manifests read. A file over max bytes
// (by stat) is not read and reported as not holding it.
func Mentions(fsys fs.FS, p string, needle []byte, max int64) (bool, error) {
	info, err := fs.Stat(fsys, p)
	if err != nil || info.Size() > max {
		return false, err
	}
	f, err := fsys.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	keep := 0 // bytes carried over, a needle split across two reads
	for {
		n, err := f.Read(buf[keep:])
		if bytes.Contains(buf[:keep+n], needle) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		total := keep + n
		keep = min(len(needle)-1, total)
		copy(buf, buf[total-keep:total])
	}
}
