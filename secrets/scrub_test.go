package secrets

import (
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		values     []string
		want       string
	}{
		{"nothing to hide", "listening on :80", nil, "listening on :80"},
		{"every occurrence", "pw=hunter2 again hunter2", []string{"hunter2"}, "pw=(sensitive) again (sensitive)"},
		{"longer first", "token abc123def", []string{"abc", "abc123def"}, "token (sensitive)"},
		{"empty value ignored", "x", []string{""}, "x"},
		{"file value with newline", "db password is s3cret!", []string{"s3cret!\n"}, "db password is (sensitive)"},
		{"multi-line value", "key:\nLINE1\nLINE2\nend", []string{"LINE1\nLINE2"}, "key:\n(sensitive)\nend"},
	} {
		if got := Scrub(tc.text, tc.values...); got != tc.want {
			t.Errorf("%s: Scrub = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func FuzzScrub(f *testing.F) {
	f.Add("pw=hunter2", "hunter2", "hunt")
	f.Add("aaaa", "aa", "a")
	f.Fuzz(func(t *testing.T, text, v1, v2 string) {
		got := Scrub(text, v1, v2)
		for _, v := range []string{v1, v2} {
			// A value that overlaps the marker can be spelled by it; any
			// other must be gone.
			if v != "" && !strings.ContainsAny(v, Marker) && strings.Contains(got, v) {
				t.Fatalf("Scrub(%q, %q, %q) = %q still holds %q", text, v1, v2, got, v)
			}
		}
	})
}
