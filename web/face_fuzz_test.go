package web

import (
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzRecognizeHost: any repo URL gives either no links or https links on
// the URL's own host that carry the SHA, and never panics.
func FuzzRecognizeHost(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/shop.git", "git@gitlab.com:g/s/r.git", "ssh://git@gitea.lan:22/a/b",
		"https://bitbucket.org/a/b", "git@:x", "https://github.com/..%2f/x", "ssh://[::1]/a/b", "",
	} {
		f.Add(s, "deploy/app")
	}
	f.Fuzz(func(t *testing.T, repoURL, dir string) {
		h := RecognizeHost(repoURL)
		for _, link := range []string{h.CommitURL("abc1234"), h.TreeURL("abc1234", dir)} {
			if link == "" {
				continue
			}
			u, err := url.Parse(link)
			if err != nil || u.Scheme != "https" || u.Host == "" || !strings.Contains(link, "abc1234") {
				t.Fatalf("RecognizeHost(%q) gave link %q", repoURL, link)
			}
		}
	})
}

// FuzzRedactDiff: whatever the diff and manifest say, no secretEnv value
// of at least minSecretLen bytes survives redaction on a diff line, and
// lines keep their first column.
func FuzzRedactDiff(f *testing.F) {
	f.Add("spec:\n  env: {TOKEN: abcdef}\n  secretEnv: [TOKEN]\n", "+  TOKEN: abcdef\n- x abcdef y\n context\n")
	f.Add("services:\n  a:\n    environment: [K=vvvv]\n    x-driftless: {secretEnv: [K]}\n", "+      - K=vvvv\n")
	f.Fuzz(func(t *testing.T, manifest, diff string) {
		sec := scanSecrets(fstest.MapFS{"m.yaml": {Data: []byte(manifest)}})
		got := sec.diff(diff)
		in, out := strings.Split(diff, "\n"), strings.Split(got, "\n")
		if len(in) != len(out) {
			t.Fatalf("line count changed: %d → %d", len(in), len(out))
		}
		for i, l := range out {
			if l == "" || in[i] == "" || strings.HasPrefix(in[i], "+++ ") || strings.HasPrefix(in[i], "--- ") || strings.HasPrefix(in[i], "@@") || strings.HasPrefix(in[i], "diff ") {
				continue
			}
			if l[0] != in[i][0] {
				t.Fatalf("line %d lost its first column: %q → %q", i, in[i], l)
			}
			if c := in[i][0]; c != '+' && c != '-' && c != ' ' {
				continue
			}
			for _, v := range sec.values {
				if len(v) >= minSecretLen && strings.Contains(l[1:], v) && !strings.Contains(redacted, v) {
					t.Fatalf("secret %q survives in line %q", v, l)
				}
			}
		}
	})
}
