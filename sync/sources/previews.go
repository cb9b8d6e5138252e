package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// Branches is the generator of previews: an app for every branch that
// matches, deployed from Path on that branch.
type Branches struct {
	Match string // path.Match pattern over branch names, e.g. "preview/*"
	Path  string // the app's directory on every branch ("." = root)
}

// Validate checks the generator as written in driftless.yaml.
func (b Branches) Validate() error {
	if b.Match == "" {
		return fmt.Errorf("branches.match: required (a pattern of branch names, like 'preview/*')")
	}
	if _, err := path.Match(b.Match, ""); err != nil {
		return fmt.Errorf("branches.match: %q is not a valid pattern: %v", b.Match, err)
	}
	if p := b.Path; p != "" && (path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../")) {
		return fmt.Errorf("branches.path: %q must be a clean path relative to the repository root", p)
	}
	return nil
}

// Matches reports whether branch gets a preview.
func (b Branches) Matches(branch string) bool {
	ok, _ := path.Match(b.Match, branch)
	return ok
}

// PreviewName is the app of base's preview of branch: base-slug, where
// the slug is the branch's name made DNS-safe ("preview/Login_2" →
// "preview-login-2"). A name past 63 characters is cut and ends in a hash
// of the branch, so it stays stable and distinct.
func PreviewName(base, branch string) string {
	var b strings.Builder
	b.WriteString(base)
	dash := true
	for _, r := range branch {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		default:
			dash = true
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteRune(r)
	}
	name := b.String()
	if len(name) <= maxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(branch))
	suffix := "-" + hex.EncodeToString(sum[:3])
	return strings.TrimRight(name[:maxNameLen-len(suffix)], "-") + suffix
}
