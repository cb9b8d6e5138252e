package web

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/deploy/logstream"
	dsecrets "github.com/driftless-dev/driftless/secrets"
)

// redacted replaces a secret value in a manifest diff: the same marker as
// in container logs.
const redacted = logstream.Redacted

// minSecretLen is the shortest secret value replaced wherever it occurs:
// shorter ones ("1", "on") would blank out ordinary text. Lines that set a
// secret key are redacted whatever the value's length.
const minSecretLen = 4

// secrets are the secretEnv keys and their values found in manifests.
type secrets struct {
	keys   map[string]bool
	values []string // longest first, so a value containing another goes whole
	// files are the files manifests name as secrets (native
	// spec.secrets[].file, compose's top-level secrets.NAME.file), relative
	// to the app directory: a plaintext one would show its value in a
	// diff, so their content lines are never shown.
	files []string
}

// maxSecretScanBytes bounds how much YAML one scan parses.
const maxSecretScanBytes = 8 << 20

// scanSecrets collects, from every YAML file of the trees, the keys listed
// under a secretEnv key (native spec.secretEnv, compose
// x-driftless.secretEnv) and the values those keys have under env or
// environment, map or KEY=VALUE list. It reads the YAML loosely, not
// through the manifest loader: a refused revision's diff must be redacted
// too.
func scanSecrets(trees ...fs.FS) secrets {
	docs := yamlDocs(trees)
	s := secrets{keys: map[string]bool{}}
	for _, d := range docs {
		walkYAML(d, func(key string, v any) {
			if key == "secrets" {
				s.files = append(s.files, secretFiles(v)...)
				return
			}
			if key != "secretEnv" {
				return
			}
			list, _ := v.([]any)
			for _, k := range list {
				if ks, ok := k.(string); ok && ks != "" {
					s.keys[ks] = true
				}
			}
		})
	}
	if len(s.keys) == 0 {
		return s
	}
	seen := map[string]bool{}
	for _, d := range docs {
		walkYAML(d, func(key string, v any) {
			if key != "env" && key != "environment" {
				return
			}
			for k, val := range envPairs(v) {
				if s.keys[k] && val != "" && !seen[val] {
					seen[val] = true
					s.values = append(s.values, val)
				}
			}
		})
	}
	slices.SortFunc(s.values, func(a, b string) int { return len(b) - len(a) })
	return s
}

// secretFiles reads the files of a native secrets list or a compose
// top-level secrets mapping.
func secretFiles(v any) []string {
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case map[string]any:
		for _, item := range t {
			items = append(items, item)
		}
	}
	var out []string
	for _, item := range items {
		m, _ := item.(map[string]any)
		if f, ok := m["file"].(string); ok && f != "" {
			out = append(out, path.Clean(strings.TrimPrefix(f, "./")))
		}
	}
	return out
}

// isSecretFile reports whether a diff's file (a repository path) is one
// of the secret files (paths below the app directory).
func (s secrets) isSecretFile(repoPath string) bool {
	for _, f := range s.files {
		if repoPath == f || strings.HasSuffix(repoPath, "/"+f) {
			return true
		}
	}
	return false
}

// yamlDocs parses every YAML document of the trees, up to
// maxSecretScanBytes in all. Invalid YAML is skipped after the documents
// before it: the loader reports the error.
func yamlDocs(trees []fs.FS) []any {
	var docs []any
	budget := maxSecretScanBytes
	for _, t := range trees {
		if t == nil {
			continue
		}
		_ = fs.WalkDir(t, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return nil
			}
			data, err := fs.ReadFile(t, p)
			if err != nil || len(data) > budget {
				return nil
			}
			budget -= len(data)
			dec := yaml.NewDecoder(bytes.NewReader(data))
			for {
				var doc any
				if err := dec.Decode(&doc); err != nil {
					break
				}
				docs = append(docs, doc)
			}
			return nil
		})
	}
	return docs
}

// walkYAML calls f for every key of every mapping under v.
func walkYAML(v any, f func(key string, v any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			f(k, child)
			walkYAML(child, f)
		}
	case []any:
		for _, child := range t {
			walkYAML(child, f)
		}
	}
}

// envPairs reads an env map or KEY=VALUE list.
func envPairs(v any) map[string]string {
	out := map[string]string{}
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if val != nil {
				out[k] = scalarString(val)
			}
		}
	case []any:
		for _, item := range t {
			if s, ok := item.(string); ok {
				if k, val, ok := strings.Cut(s, "="); ok {
					out[k] = val
				}
			}
		}
	}
	return out
}

func scalarString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any, []any:
		return ""
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// keyLine matches a YAML or env line setting KEY: "KEY: v", "- KEY=v",
// `"KEY": v`.
var keyLine = regexp.MustCompile(`^(\s*(?:-\s*)?["']?)([A-Za-z_][A-Za-z0-9_.-]*)(["']?\s*[:=]\s*)(\S.*)$`)

// line redacts one line of text: the value of a secret key set on it, and
// every secret value occurring in it.
func (s secrets) line(text string) string {
	if len(s.keys) == 0 {
		return text
	}
	if m := keyLine.FindStringSubmatch(text); m != nil && s.keys[m[2]] {
		text = m[1] + m[2] + m[3] + redacted
	}
	for _, v := range s.values {
		if len(v) >= minSecretLen {
			text = strings.ReplaceAll(text, v, redacted)
		}
	}
	return text
}

// diff redacts a unified diff line by line; the first column (+, -, space)
// is kept. Every content line of a secret file is replaced whole.
func (s secrets) diff(text string) string {
	if (len(s.keys) == 0 && len(s.files) == 0) || text == "" {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	inSecretFile := false
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		if name, ok := diffFileName(body); ok {
			inSecretFile = name != "" && s.isSecretFile(name) || inSecretFile && name == ""
			continue
		}
		if body == "" || strings.HasPrefix(body, "@@") || strings.HasPrefix(body, "diff ") {
			continue
		}
		switch body[0] {
		case '+', '-', ' ':
			if inSecretFile {
				body = body[:1] + redacted
			} else {
				body = body[:1] + s.line(body[1:])
			}
		}
		if nl {
			body += "\n"
		}
		lines[i] = body
	}
	return strings.Join(lines, "")
}

// encryptedNote replaces the changed lines of a SOPS-encrypted file in a
// diff: ciphertext tells a reader nothing, and its metadata (recipients,
// MAC) is noise.
func encryptedNote(n int) string { return fmt.Sprintf("encrypted file changed (%d lines)", n) }

// maxSOPSCheckBytes bounds a file read to tell whether it is encrypted.
const maxSOPSCheckBytes = 4 << 20

// collapseEncrypted replaces the hunks of every file in a unified diff
// that is SOPS-encrypted at either revision (as secrets.IsEncrypted tells
// from the file in the trees) with one line, encryptedNote. root is the
// app's path, which the diff's file names start with; trees are the
// app's path at the diff's revisions.
func collapseEncrypted(text, root string, trees []fs.FS) string {
	if text == "" {
		return text
	}
	var out strings.Builder
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); {
		// One file: "diff --git" up to the next one.
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "diff --git ") {
			j++
		}
		section := lines[i:j]
		i = j
		if !sectionEncrypted(section, root, trees) {
			for _, l := range section {
				out.WriteString(l)
			}
			continue
		}
		changed, inHunk := 0, false
		for _, l := range section {
			switch {
			case strings.HasPrefix(l, "@@"):
				inHunk = true
			case !inHunk:
				out.WriteString(l) // the file's header: its name and mode
			case strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-"):
				changed++
			}
		}
		out.WriteString(encryptedNote(changed) + "\n")
	}
	return out.String()
}

// sectionEncrypted reports whether the file one diff section is about is
// SOPS-encrypted at either revision.
func sectionEncrypted(section []string, root string, trees []fs.FS) bool {
	prefix := ""
	if root != "" {
		prefix = root + "/"
	}
	for _, l := range section {
		if strings.HasPrefix(l, "@@") {
			break
		}
		var name string
		switch {
		case strings.HasPrefix(l, "--- a/"):
			name = strings.TrimPrefix(l, "--- a/")
		case strings.HasPrefix(l, "+++ b/"):
			name = strings.TrimPrefix(l, "+++ b/")
		default:
			continue
		}
		rel, ok := strings.CutPrefix(strings.TrimRight(name, "\n"), prefix)
		if !ok {
			continue
		}
		for _, t := range trees {
			if t != nil && fileEncrypted(t, rel) {
				return true
			}
		}
	}
	return false
}

func fileEncrypted(t fs.FS, name string) bool {
	info, err := fs.Stat(t, name)
	if err != nil || info.IsDir() || info.Size() > maxSOPSCheckBytes {
		return false
	}
	data, err := fs.ReadFile(t, name)
	// Every SOPS format names its metadata "sops" (a key, a section, or
	// sops_ prefixed entries): a cheap test before parsing.
	return err == nil && bytes.Contains(data, []byte("sops")) && dsecrets.IsEncrypted(name, data)
}

// diffFileName reads a "--- a/PATH" or "+++ b/PATH" header: ok, and the
// path ("" for /dev/null).
func diffFileName(line string) (string, bool) {
	for _, prefix := range []string{"--- ", "+++ "} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if rest == "/dev/null" {
				return "", true
			}
			if _, p, ok := strings.Cut(rest, "/"); ok {
				return p, true
			}
			return rest, true
		}
	}
	return "", false
}
