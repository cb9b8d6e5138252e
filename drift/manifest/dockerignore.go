package manifest

import (
	"path"
	"regexp"
	"strings"
)

// dockerIgnore is a parsed .dockerignore. Its rules differ from
// .driftlessignore's (gitignore) the way docker build's do: every pattern
// is anchored at the context's root ("*.md" is only the root's), a pattern
// also excludes everything under a directory it matches, the last matching
// pattern wins, and "!" can include a file again even inside an excluded
// directory. The nil list excludes nothing.
type dockerIgnore struct {
	rules []dockerIgnoreRule
}

type dockerIgnoreRule struct {
	re     *regexp.Regexp
	negate bool
}

// parseDockerIgnore parses .dockerignore text: one pattern per line,
// surrounding space trimmed, lines starting with # skipped; a leading !
// negates; patterns are cleaned like paths (a leading / or ./ changes
// nothing); * and ? match within a segment, [...] a class, ** any number
// of segments.
func parseDockerIgnore(text string) *dockerIgnore {
	d := &dockerIgnore{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r dockerIgnoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = strings.TrimSpace(line[1:])
		}
		line = strings.TrimPrefix(path.Clean("/"+line), "/")
		if line == "" {
			continue // "/" or "." would exclude the whole context: docker ignores them too
		}
		re, err := regexp.Compile("^" + globRegexp(line) + "$")
		if err != nil {
			continue // cannot happen: globRegexp quotes what it does not translate
		}
		r.re = re
		d.rules = append(d.rules, r)
	}
	return d
}

// excluded reports whether rel (slash-separated, relative to the context)
// stays out of the context.
func (d *dockerIgnore) excluded(rel string) bool {
	if d == nil {
		return false
	}
	out := false
	for _, r := range d.rules {
		if r.matches(rel) {
			out = !r.negate
		}
	}
	return out
}

// matches reports whether the rule matches rel or one of its parents.
func (r dockerIgnoreRule) matches(rel string) bool {
	for p := rel; ; {
		if r.re.MatchString(p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
