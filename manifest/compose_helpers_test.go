package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// composeFS builds an app directory from file contents.
func composeFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// loadComposeFiles loads the files as app "shop".
func loadComposeFiles(t *testing.T, files map[string]string, opts LoadOptions) (*App, error) {
	t.Helper()
	return LoadWith(composeFS(files), ".", "shop", opts)
}

// mustLoadCompose loads files that must be valid.
func mustLoadCompose(t *testing.T, files map[string]string, opts LoadOptions) *App {
	t.Helper()
	a, err := loadComposeFiles(t, files, opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if a.Format != FormatCompose {
		t.Fatalf("format %q, want %q", a.Format, FormatCompose)
	}
	return a
}

// renderApp is a stable text form of an App for golden files: one line per
// non-empty field, as path = JSON value.
func renderApp(a *App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "app %s (%s)\n", a.Name, a.Format)
	for _, s := range a.Services {
		fmt.Fprintf(&b, "\nservice %s  hash=%s  at %s\n", s.Name, s.Hash, s.Source)
		flatten(&b, "  labels", s.Labels)
		flatten(&b, "  spec", s.Spec)
		for _, k := range sortedKeys(s.Fields) {
			f := s.Fields[k]
			fmt.Fprintf(&b, "  field %s <- %s %s\n", k, f.Pos, f.Field)
		}
	}
	for _, n := range a.Networks {
		fmt.Fprintf(&b, "\nnetwork %s  hash=%s  at %s implicit=%v\n", n.Name, n.Hash, n.Source, n.Implicit)
		flatten(&b, "  labels", n.Labels)
		flatten(&b, "  spec", n.Spec)
	}
	for _, v := range a.Volumes {
		fmt.Fprintf(&b, "\nvolume %s  hash=%s  at %s\n", v.Name, v.Hash, v.Source)
		flatten(&b, "  labels", v.Labels)
		flatten(&b, "  spec", v.Spec)
	}
	for _, h := range sortedKeys(a.Content) {
		t := a.Content[h]
		var files []string
		for _, f := range t.Files {
			files = append(files, fmt.Sprintf("%q(%d bytes, exec=%v)", f.Path, len(f.Data), f.Exec))
		}
		fmt.Fprintf(&b, "\ncontent %s dir=%v %s\n", h, t.Dir, strings.Join(files, " "))
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(&b, "\nwarning %s\n", w)
	}
	return b.String()
}

// flatten writes v's JSON form as one "path = value" line per leaf.
func flatten(b *strings.Builder, prefix string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(b, "%s = <%v>\n", prefix, err)
		return
	}
	var tree any
	_ = json.Unmarshal(data, &tree)
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(mapKeys(t)) {
				walk(p+"."+k, t[k])
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", p, i), e)
			}
		case nil:
		default:
			j, _ := json.Marshal(t)
			fmt.Fprintf(b, "%s = %s\n", p, j)
		}
	}
	walk(prefix, tree)
}

// composeErrors returns the error lines of a load that must fail with an
// ErrorList.
func composeErrors(t *testing.T, files map[string]string, opts LoadOptions) []string {
	t.Helper()
	_, err := loadComposeFiles(t, files, opts)
	if err == nil {
		t.Fatal("load succeeded, want errors")
	}
	return errorLines(t, err)
}
