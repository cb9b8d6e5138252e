package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	fage "filippo.io/age"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/secrets/sopstest"
)

func TestScanSecretsAndRedactDiff(t *testing.T) {
	native := fstest.MapFS{"web.yaml": {Data: []byte(`apiVersion: driftless/v1
kind: Service
metadata: {name: web}
spec:
  image: nginx
  env:
    DB_PASSWORD: hunter2-old
    LOG_LEVEL: info
  secretEnv: [DB_PASSWORD]
`)}}
	compose := fstest.MapFS{"compose.yaml": {Data: []byte(`services:
  api:
    image: api
    environment:
      - API_TOKEN=tok-abcdef
      - PIN=12
      - MODE=fast
    x-driftless:
      secretEnv: [API_TOKEN, PIN]
`)}, "broken.yml": {Data: []byte("a: [\n")}}
	sec := scanSecrets(native, compose, nil)
	for _, k := range []string{"DB_PASSWORD", "API_TOKEN", "PIN"} {
		if !sec.keys[k] {
			t.Errorf("secret key %s not found", k)
		}
	}
	if sec.keys["LOG_LEVEL"] || sec.keys["MODE"] {
		t.Errorf("non-secret keys marked secret: %v", sec.keys)
	}

	diff := `--- a/web.yaml
+++ b/web.yaml
@@ -5,4 +5,4 @@ spec:
   env:
-    DB_PASSWORD: hunter2-old
+    DB_PASSWORD: "hunter2-new"
-    LOG_LEVEL: info
+    LOG_LEVEL: debug
+      - API_TOKEN=tok-abcdef
+      - PIN=12
+      - MODE=fast
+  # rotated from hunter2-old last week
`
	got := sec.diff(diff)
	for _, leak := range []string{"hunter2-old", "hunter2-new", "tok-abcdef", "PIN=12"} {
		if strings.Contains(got, leak) {
			t.Errorf("redacted diff still shows %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{
		"-    DB_PASSWORD: " + redacted + "\n", "+    DB_PASSWORD: " + redacted + "\n",
		"+      - API_TOKEN=" + redacted + "\n", "+      - PIN=" + redacted + "\n",
		"+    LOG_LEVEL: debug\n", "+      - MODE=fast\n", // not secret: shown
		"+  # rotated from " + redacted + " last week\n", // a known value anywhere
		"@@ -5,4 +5,4 @@ spec:\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted diff lacks %q:\n%s", want, got)
		}
	}
	// Without secretEnv nothing changes.
	if plain := scanSecrets(fstest.MapFS{"a.yaml": {Data: []byte("env: {X: secretish}")}}).diff(diff); plain != diff {
		t.Errorf("diff changed without secretEnv:\n%s", plain)
	}
}

func TestClassifyDiff(t *testing.T) {
	lines := classifyDiff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n ctx\n")
	var got []string
	for _, l := range lines {
		got = append(got, l.Class+":"+l.Text)
	}
	want := "file:--- a/x|file:+++ b/x|hunk:@@ -1 +1 @@|del:-old|add:+new|ctx: ctx"
	if strings.Join(got, "|") != want {
		t.Errorf("classifyDiff = %s, want %s", strings.Join(got, "|"), want)
	}
}

// fakeRepo serves canned diffs and manifests by SHA.
type fakeRepo struct {
	files map[string]fs.FS
	text  string
	calls []string
}

func (r *fakeRepo) Diff(_ context.Context, from, to string, _ int) (gitsource.Diff, error) {
	r.calls = append(r.calls, from+".."+to)
	if _, ok := r.files[to]; !ok {
		return gitsource.Diff{}, fmt.Errorf("commit %s: %w", to, gitsource.ErrCommitNotFound)
	}
	return gitsource.Diff{From: from, To: to, Path: "deploy", Files: 1, Text: r.text}, nil
}

func (r *fakeRepo) Files(_ context.Context, sha string) (fs.FS, error) {
	if f, ok := r.files[sha]; ok {
		return f, nil
	}
	return nil, gitsource.ErrCommitNotFound
}

func TestEntryPageAndAPIShowRedactedDiff(t *testing.T) {
	manifest := fstest.MapFS{"web.yaml": {Data: []byte("spec:\n  env: {DB_PASSWORD: s3cret-value}\n  secretEnv: [DB_PASSWORD]\n")}}
	repo := &fakeRepo{
		files: map[string]fs.FS{fmt.Sprintf("%040d", 27): manifest, fmt.Sprintf("%040d", 21): manifest},
		text:  "--- a/deploy/web.yaml\n+++ b/deploy/web.yaml\n@@ -1,2 +1,2 @@\n-image: nginx:1.26\n+image: nginx:1.27\n+  DB_PASSWORD: s3cret-value\n",
	}
	env := newTestEnv(t, func(o *Options) {
		o.Repos = func(app string) Repo {
			if app == "shop" {
				return repo
			}
			return nil
		}
	})
	body := env.page("/history/27")
	assertContains(t, "entry page", body,
		"What the revision changed in Git",
		`<span class="d-add">&#43;image: nginx:1.27</span>`, `<span class="d-del">-image: nginx:1.26</span>`,
		"DB_PASSWORD: "+redacted)
	if strings.Contains(body, "s3cret-value") {
		t.Error("entry page shows a secretEnv value")
	}
	// Entry 27's previous successful sync of shop is 21 (25 is a repair, 23 refused).
	if len(repo.calls) != 1 || repo.calls[0] != fmt.Sprintf("%040d..%040d", 21, 27) {
		t.Errorf("diff asked for %v", repo.calls)
	}

	// The live page refetches after every pass: the same diff is computed once.
	env.page("/history/27")
	if len(repo.calls) != 1 {
		t.Errorf("second load recomputed the diff: %v", repo.calls)
	}

	w := env.do(http.MethodGet, "/api/v1/apps/shop/diff?from="+fmt.Sprintf("%040d", 21)+"&to="+fmt.Sprintf("%040d", 27), "")
	var d gitsource.Diff
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || w.Code != http.StatusOK {
		t.Fatalf("diff API: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(d.Text, "+image: nginx:1.27") || strings.Contains(d.Text, "s3cret-value") {
		t.Errorf("diff API text = %q", d.Text)
	}
	for target, code := range map[string]int{
		"/api/v1/apps/shop/diff?to=nothex":                     http.StatusBadRequest,
		"/api/v1/apps/shop/diff?to=" + strings.Repeat("e", 40): http.StatusNotFound,
		"/api/v1/apps/nope/diff":                               http.StatusNotFound,
		"/api/v1/apps/blog/diff":                               http.StatusNotImplemented, // no repo for blog
	} {
		if w := env.do(http.MethodGet, target, ""); w.Code != code {
			t.Errorf("GET %s: status %d, want %d: %s", target, w.Code, code, w.Body)
		}
	}
	// Reading needs read access like the rest of the API.
	locked := newTestEnv(t, func(o *Options) { o.APIToken = "tok"; o.Repos = func(string) Repo { return repo } })
	if w := locked.do(http.MethodGet, "/api/v1/apps/shop/diff?to="+fmt.Sprintf("%040d", 27), "", from("192.0.2.1:1234")); w.Code != http.StatusUnauthorized {
		t.Errorf("diff without a token: status %d", w.Code)
	}
}

// blockedRepo never answers, like a clone locked by a long fetch.
type blockedRepo struct{ release chan struct{} }

func (r blockedRepo) Diff(ctx context.Context, _, _ string, _ int) (gitsource.Diff, error) {
	<-r.release
	return gitsource.Diff{}, nil
}

func (r blockedRepo) Files(context.Context, string) (fs.FS, error) { return nil, nil }

// A busy clone does not hang the request: it ends with the request's
// context and says to retry.
func TestDiffOfBusyRepoAnswersServiceUnavailable(t *testing.T) {
	repo := blockedRepo{release: make(chan struct{})}
	t.Cleanup(func() { close(repo.release) })
	env := newTestEnv(t, func(o *Options) { o.Repos = func(string) Repo { return repo } })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := env.do(http.MethodGet, "/api/v1/apps/shop/diff?to="+fmt.Sprintf("%040d", 27), "", func(r *http.Request) { *r = *r.WithContext(ctx) })
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "repository is busy") {
		t.Errorf("busy repo: %d %s", w.Code, w.Body)
	}
}

// A SOPS-encrypted file's changed lines show as one note; other files,
// even one that mentions sops, are shown as they are.
func TestDiffCollapsesSOPSFiles(t *testing.T) {
	id, err := fage.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(name, plain string) string {
		b, err := sopstest.EncryptAge(name, []byte(plain), id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	oldYAML := enc("secrets/db.yaml", "password: s3cret-one\n")
	newYAML := enc("secrets/db.yaml", "password: s3cret-two\nuser: app\n")
	dotenv := enc("secrets/api.env", "TOKEN=tok-123456\n")
	plain := "# decrypted with sops at deploy time\nimage: web\n"
	from := fstest.MapFS{"secrets/db.yaml": {Data: []byte(oldYAML)}, "secrets/api.env": {Data: []byte(dotenv)}, "web.yaml": {Data: []byte("image: web\n")}}
	to := fstest.MapFS{"secrets/db.yaml": {Data: []byte(newYAML)}, "web.yaml": {Data: []byte(plain)}}

	hunk := func(sign, text string) (string, int) {
		var b strings.Builder
		n := 0
		for l := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
			b.WriteString(sign + l + "\n")
			n++
		}
		return b.String(), n
	}
	delYAML, nDel := hunk("-", oldYAML)
	addYAML, nAdd := hunk("+", newYAML)
	delEnv, nEnv := hunk("-", dotenv)
	diff := "diff --git a/deploy/secrets/db.yaml b/deploy/secrets/db.yaml\nindex 1111111..2222222 100644\n--- a/deploy/secrets/db.yaml\n+++ b/deploy/secrets/db.yaml\n" +
		fmt.Sprintf("@@ -1,%d +1,%d @@\n", nDel, nAdd) + delYAML + addYAML +
		"diff --git a/deploy/secrets/api.env b/deploy/secrets/api.env\ndeleted file mode 100644\nindex 3333333..0000000\n--- a/deploy/secrets/api.env\n+++ /dev/null\n" +
		fmt.Sprintf("@@ -1,%d +0,0 @@\n", nEnv) + delEnv +
		"diff --git a/deploy/web.yaml b/deploy/web.yaml\nindex 4444444..5555555 100644\n--- a/deploy/web.yaml\n+++ b/deploy/web.yaml\n@@ -1 +1,2 @@\n+# decrypted with sops at deploy time\n image: web\n"

	got := collapseEncrypted(diff, "deploy", []fs.FS{from, to})
	for _, leak := range []string{"ENC[", "sops_mac", "age1", "-----BEGIN AGE"} {
		if strings.Contains(got, leak) {
			t.Errorf("collapsed diff still shows %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{
		"+++ b/deploy/secrets/db.yaml\n" + encryptedNote(nDel+nAdd) + "\n",
		"+++ /dev/null\n" + encryptedNote(nEnv) + "\n",
		"+# decrypted with sops at deploy time\n image: web\n", // plain text: kept
	} {
		if !strings.Contains(got, want) {
			t.Errorf("collapsed diff lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "encrypted file changed"); n != 2 {
		t.Errorf("%d notes, want 2:\n%s", n, got)
	}
	var note *diffLine
	for _, l := range classifyDiff(got) {
		if strings.HasPrefix(l.Text, "encrypted file changed") {
			note = &l
			break
		}
	}
	if note == nil || note.Class != "note" {
		t.Errorf("the note is classed %+v, want note", note)
	}
	// Without the trees nothing says a file is encrypted: unchanged.
	if same := collapseEncrypted(diff, "deploy", nil); same != diff {
		t.Error("the diff changed without trees")
	}
}

// A diff no tree marks as encrypted comes back byte for byte.
func FuzzCollapseEncrypted(f *testing.F) {
	f.Add("diff --git a/d/x.yaml b/d/x.yaml\n--- a/d/x.yaml\n+++ b/d/x.yaml\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("diff --git \n@@\n+\n-\n--- a/\n+++ b/d/")
	plain := fstest.MapFS{"x.yaml": {Data: []byte("sops: not really\n")}}
	f.Fuzz(func(t *testing.T, text string) {
		if got := collapseEncrypted(text, "d", []fs.FS{plain, nil}); got != text {
			t.Fatalf("changed a diff without encrypted files:\n%q\n→\n%q", text, got)
		}
	})
}

// A file the manifests name as a secret (native or compose) shows no
// content in a diff: a plaintext one (allowPlaintext) would show its
// value, an encrypted one only noise. Other files are untouched.
func TestRedactDiffOfSecretFiles(t *testing.T) {
	native := fstest.MapFS{"web.yaml": {Data: []byte("kind: Service\nspec:\n  secrets: [{name: db, file: secrets/db.txt, allowPlaintext: true}]\n")}}
	compose := fstest.MapFS{"compose.yaml": {Data: []byte("services: {api: {secrets: [key]}}\nsecrets:\n  key: {file: ./key.txt}\n")}}
	diff := "--- a/apps/shop/secrets/db.txt\n+++ b/apps/shop/secrets/db.txt\n@@ -1 +1 @@\n-old-password\n+new-password\n" +
		"--- /dev/null\n+++ b/apps/api/key.txt\n@@ -0,0 +1 @@\n+api-key-value\n" +
		"--- a/apps/shop/web.yaml\n+++ b/apps/shop/web.yaml\n@@ -1 +1 @@\n-image: a\n+image: b\n"
	got := scanSecrets(native, compose).diff(diff)
	for _, leak := range []string{"old-password", "new-password", "api-key-value"} {
		if strings.Contains(got, leak) {
			t.Errorf("diff shows %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{"-" + redacted + "\n+" + redacted + "\n", "+++ b/apps/api/key.txt\n@@ -0,0 +1 @@\n+" + redacted + "\n", "-image: a\n+image: b\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
}
