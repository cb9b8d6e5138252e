package secrets

import (
	"regexp"
	"strings"

	"github.com/driftless-dev/driftless/manifest/load"
)

// badKey finds the first key of f that driftless refuses. The MAC cannot
// see keys: it hashes values only, and an empty value adds nothing to it,
// so a line added to an encrypted dotenv file with an empty value passes
// it. sops accepts such a file; driftless refuses two of them, at the
// line of the key:
//
//   - a key set twice in one mapping: KEY= appended below KEY=ENC[...]
//     would, read last, blank the secret;
//   - in a dotenv file, a key that compose reads as a key and a value:
//     sops's key ends at the first '=', compose's at the first ':' or
//     '=', so an added "NAME:value=" sets NAME to "value=".
//
// Dotenv keys are compared as compose reads them (export and spaces
// dropped), since that is how the decrypted file is read.
func badKey(f *sopsFile) *load.KeyError {
	switch f.format {
	case FormatINI:
		// INI sections may repeat (sops allows it), and the parser
		// merges repeated keys before the MAC is checked.
		return nil
	case FormatDotenv:
		for _, it := range f.branches[0] {
			if k, ok := it.Key.(string); ok && strings.Contains(k, ":") {
				return &load.KeyError{Key: k, Line: it.line, Msg: "holds ':', which compose reads as the end of the key and the start of its value: write KEY=VALUE"}
			}
		}
		return duplicateIn(f.branches[0], dotenvKey)
	}
	for _, b := range f.branches {
		if bad := duplicateIn(b, func(k string) string { return k }); bad != nil {
			return bad
		}
	}
	return nil
}

// duplicateIn finds a key set twice in any mapping of v, keys compared
// after norm.
func duplicateIn(v any, norm func(string) string) *load.KeyError {
	switch v := v.(type) {
	case branch:
		first := map[string]int{}
		for _, it := range v {
			if k, ok := it.Key.(string); ok {
				k = norm(k)
				if l, dup := first[k]; dup {
					return &load.KeyError{Key: k, First: l, Line: it.line}
				}
				first[k] = it.line
			}
			if dup := duplicateIn(it.Value, norm); dup != nil {
				return dup
			}
		}
	case []any:
		for _, e := range v {
			if dup := duplicateIn(e, norm); dup != nil {
				return dup
			}
		}
	}
	return nil
}

var dotenvExport = regexp.MustCompile(`^export\s+`)

// dotenvKey is a dotenv key as compose-go reads it.
func dotenvKey(k string) string {
	k = strings.TrimSpace(k)
	if dotenvExport.MatchString(k) {
		k = strings.TrimSpace(strings.TrimPrefix(k, "export"))
	}
	return k
}
