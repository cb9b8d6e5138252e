package load

import (
	"testing"
)

func TestIgnorePatterns(t *testing.T) {
	l := parseIgnoreList("*.md\n/build\nlogs/\n**/tmp/**\ndocs/*.yaml\n!docs/keep.yaml\n\\#hash.yaml\na?c.yaml\n[xy].yaml\n")
	for _, tc := range []struct {
		path string
		dir  bool
		want bool
	}{
		{"README.md", false, true},
		{"sub/README.md", false, true},
		{"build", true, true},
		{"sub/build", true, false},
		{"logs", true, true},
		{"logs", false, false},
		{"a/logs/x.yaml", false, true},
		{"x/tmp/y/z.yaml", false, true},
		{"tmp/z.yaml", false, true},
		{"docs/a.yaml", false, true},
		{"docs/keep.yaml", false, false},
		{"docs/sub/a.yaml", false, false},
		{"#hash.yaml", false, true},
		{"abc.yaml", false, true},
		{"abbc.yaml", false, false},
		{"x.yaml", false, true},
		{"z.yaml", false, false},
		{"web.yaml", false, false},
	} {
		if got := l.Ignored(tc.path, tc.dir); got != tc.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
	var none *IgnoreList
	if none.Ignored("x.yaml", false) {
		t.Error("the nil list ignores")
	}
}
