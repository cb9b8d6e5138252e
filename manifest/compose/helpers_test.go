package compose_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
)

// renderApp is a stable text form of an App for golden files: one line per
// non-empty field, as path = JSON value.
func renderApp(a *manifest.App) string {
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

func buildApp(t *testing.T, files map[string]string) *manifest.App {
	t.Helper()
	return loadtest.MustLoadCompose(t, files, load.Options{})
}

const dockerfileScratch = "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
