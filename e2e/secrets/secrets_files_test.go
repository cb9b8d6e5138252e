package secrets

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/secrets/sopstest"
	"github.com/driftless-dev/driftless/sync/status"
)

// fileSecretsManifest is a web service with two secrets delivered as
// files only: a key of a SOPS YAML file at the default /run/secrets/NAME,
// and a binary SOPS file at its own target with an owner and mode.
func fileSecretsManifest(image string) string {
	return fmt.Sprintf(`apiVersion: driftless.dev/v1
kind: Service
metadata:
  name: web
spec:
  image: %s
  replicas: 1
  secrets:
    - name: db-password
      file: secrets/db.yaml
      key: password
    - name: tls-key
      file: secrets/tls.key
      target: /etc/tls/key.pem
      uid: "1000"
      gid: "1001"
      mode: 0400
  readiness:
    httpGet: {path: /healthz, port: 8080}
    periodSeconds: 1
  stopGracePeriodSeconds: 1
`, image)
}

// secretFile is one file as `docker cp` reads it out of a container.
type secretFile struct {
	Body     string
	UID, GID int
	Mode     int64
}

// copyOut reads one regular file from a container with `docker cp`: the
// way to look inside a scratch image without a shell.
func copyOut(t *testing.T, container, path string) secretFile {
	t.Helper()
	cmd := exec.Command("docker", "cp", container+":"+path, "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker cp %s:%s: %v\n%s", container, path, err, stderr.String())
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s:%s: no regular file in the archive (%v)", container, path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return secretFile{Body: string(b), UID: h.Uid, GID: h.Gid, Mode: h.Mode & 0o7777}
		}
	}
}

// secretMounts are the container's bind mounts from the agent's secrets
// directory, by target.
func secretMounts(t *testing.T, container, secretsDir string) map[string]string {
	t.Helper()
	var mounts []struct{ Type, Source, Destination string }
	if err := json.Unmarshal([]byte(testenv.Docker(t, "inspect", "--format", "{{json .Mounts}}", container)), &mounts); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range mounts {
		if strings.HasPrefix(m.Source, secretsDir+"/") {
			out[m.Destination] = m.Source
		}
	}
	return out
}

// TestSecretFilesOnTmpfs: secrets a service uses are files by default —
// decrypted by the agent onto a root-only tmpfs, bind-mounted read-only at
// /run/secrets/NAME (or the target, with the owner and mode asked for),
// named by the keyed digest — and nowhere in the environment. A plaintext
// file is refused with the file and how to allow it. A rotation is a new
// file and the old one goes with its replica. A tmpfs emptied under a
// stopped replica (a reboot) is written again when it is started. The
// values appear nowhere else: docker inspect (labels and env), the
// database, the agent's output, every page and API answer.
func TestSecretFilesOnTmpfs(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	id, keyFile := newAgeKey(t)
	enc := func(name, plain string) string {
		b, err := sopstest.EncryptAge(name, []byte(plain), id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	app := testenv.UniqueApp(t)
	pw1, pw2 := "file-pw-one-"+app, "file-pw-two-"+app
	tlsKey := "-----BEGIN KEY-----\nfile-tls-" + app + "\n-----END KEY-----\n"

	base := t.TempDir()
	r := &testenv.AgentRig{T: t, App: app, Path: "apps/" + app, Server: gitserver.RunDaemon(t, base), Data: t.TempDir()}
	r.Repo = gitserver.Init(t, base, "infra")
	r.Repo.WriteFile(r.Path+"/web.yaml", fileSecretsManifest(v1))
	r.Repo.WriteFile(r.Path+"/secrets/db.yaml", enc("db.yaml", "password: "+pw1+"\nuser: app\n"))
	r.Repo.WriteFile(r.Path+"/secrets/tls.key", enc("tls.key", tlsKey))
	first := r.Repo.Commit("web with two file secrets")
	r.Args = []string{"run", "--repo", r.Repo.URL(r.Server.URL), "--branch", "main", "--path", r.Path, "--app", app, "--interval", "1s", "--allow-insecure-transport"}
	env := append(os.Environ(), "SOPS_AGE_KEY_FILE="+keyFile)
	r.Agent = testenv.StartAgentEnv(t, env, r.Data, r.Args...)
	secretsDir := testenv.SecretsDir(t, r.Data)
	r.WaitConverged("deploy with file secrets", first, 1, v1)
	c := app + "-web-1"

	// In the container: the files, as asked.
	if f := copyOut(t, c, "/run/secrets/db-password"); f.Body != pw1 || f.Mode != 0o444 {
		t.Errorf("/run/secrets/db-password = %q mode %#o, want the key's value, 0444", f.Body, f.Mode)
	}
	if f := copyOut(t, c, "/etc/tls/key.pem"); f.Body != tlsKey || f.UID != 1000 || f.GID != 1001 || f.Mode != 0o400 {
		t.Errorf("/etc/tls/key.pem = %q owner %d:%d mode %#o, want the file, 1000:1001, 0400", f.Body, f.UID, f.GID, f.Mode)
	}
	// On the host: read-only bind mounts from a root-only tmpfs, named by
	// the keyed digest (not the plain sha256 of the value).
	mounts := secretMounts(t, c, secretsDir)
	if len(mounts) != 2 {
		t.Fatalf("secret mounts %v, want 2 from %s", mounts, secretsDir)
	}
	oldPw := mounts["/run/secrets/db-password"]
	plainSum := sha256.Sum256([]byte(pw1))
	if dir := filepath.Join(secretsDir, app, "web"); filepath.Dir(oldPw) != dir || strings.Contains(oldPw, hex.EncodeToString(plainSum[:])[:8]) {
		t.Errorf("db-password mounted from %s: want a file in %s named by the keyed digest", oldPw, dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(oldPw, &st); err != nil || st.Type != 0x01021994 {
		t.Errorf("%s is not on a tmpfs (%v, type %#x)", oldPw, err, st.Type)
	}
	for _, d := range []string{secretsDir, filepath.Join(secretsDir, app), filepath.Dir(oldPw)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", d, fi.Mode().Perm(), err)
		}
	}
	if ro := testenv.Docker(t, "inspect", "--format", `{{range .Mounts}}{{if eq .Destination "/run/secrets/db-password"}}{{.RW}}{{end}}{{end}}`, c); ro != "false" {
		t.Errorf("/run/secrets/db-password RW=%s, want read-only", ro)
	}

	// A plaintext file where an encrypted one is expected: refused.
	r.Repo.WriteFile(r.Path+"/secrets/db.yaml", "password: "+pw2+"\n")
	plain := r.Repo.Commit("oops: the password in the clear")
	st1 := r.Wait(30*time.Second, "the plaintext revision refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == plain
	})
	if why := strings.Join(st1.Refused.Errors, "\n"); !strings.Contains(why, "secrets/db.yaml is not SOPS-encrypted") || !strings.Contains(why, "allowPlaintext: true") {
		t.Errorf("refusal should name the file and how to allow it: %s", why)
	}
	if st1.Applied == nil || st1.Applied.SHA != first {
		t.Fatalf("applied %v, want the first revision to keep running", testenv.RevShort(st1.Applied))
	}

	// Rotate: a new file, the replica replaced, the old file gone.
	r.Repo.WriteFile(r.Path+"/secrets/db.yaml", enc("db.yaml", "password: "+pw2+"\nuser: app\n"))
	rotated := r.Repo.Commit("rotate the db password")
	r.WaitConverged("the rotation rolled out", rotated, 1, v1)
	if f := copyOut(t, c, "/run/secrets/db-password"); f.Body != pw2 {
		t.Errorf("after rotation /run/secrets/db-password = %q", f.Body)
	}
	newPw := secretMounts(t, c, secretsDir)["/run/secrets/db-password"]
	if newPw == oldPw || newPw == "" {
		t.Errorf("the rotated secret is mounted from %q, the old one was %q: want a new file", newPw, oldPw)
	}
	waitGone(t, oldPw)

	// A reboot empties the tmpfs under a stopped replica: starting it
	// writes the files again. Suspended meanwhile, so that the stop event's
	// pass does not start the replica while its files are being removed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Agent.Client().Suspend(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Docker(t, "stop", "-t", "1", c)
	if err := os.RemoveAll(filepath.Join(secretsDir, app)); err != nil {
		t.Fatal(err)
	}
	if err := r.Agent.Client().Resume(ctx, app); err != nil {
		t.Fatal(err)
	}
	r.Wait(60*time.Second, "the stopped replica started again", func(st status.AppStatus) bool {
		return testenv.ConvergedTo(rotated, 1, v1)(st) && testenv.Docker(t, "inspect", "--format", "{{.State.Running}}", c) == "true"
	})
	if f := copyOut(t, c, "/run/secrets/db-password"); f.Body != pw2 {
		t.Errorf("after the tmpfs was emptied /run/secrets/db-password = %q", f.Body)
	}
	if _, err := os.Stat(newPw); err != nil {
		t.Errorf("the secret file was not written again: %v", err)
	}

	// The values are nowhere else.
	places := map[string]string{
		"app API":      testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app),
		"apps API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps"),
		"services API": testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/services"),
		"history API":  testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/history"),
		"plan API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/plan?format=text"),
		"diff API":     testenv.APIGet(t, r.Agent.URL+"/api/v1/apps/"+app+"/diff"),
		"overview":     testenv.APIGet(t, r.Agent.URL+"/"),
		"app page":     testenv.APIGet(t, r.Agent.URL+"/apps/"+app),
		"history page": testenv.APIGet(t, r.Agent.URL+"/apps/"+app+"/history"),
		"metrics":      testenv.APIGet(t, r.Agent.URL+"/metrics"),
		"agent output": r.Agent.Logs(),
	}
	for _, e := range r.HistoryEntries() {
		places["history entry "+e] = testenv.APIGet(t, r.Agent.URL+"/api/v1/history/"+e)
	}
	db, err := os.ReadFile(filepath.Join(r.Data, "driftless.db"))
	if err != nil {
		t.Fatal(err)
	}
	places["history database"] = string(db)
	for _, cc := range testenv.DockerContainers(t, app) {
		places["docker inspect "+cc.Name] = testenv.Docker(t, "inspect", cc.ID)
	}
	for where, text := range places {
		for _, v := range []string{pw1, pw2, "file-tls-" + app} {
			if strings.Contains(text, v) {
				t.Errorf("%s shows the secret value %q", where, v)
			}
		}
	}
	if env := testenv.Docker(t, "inspect", "--format", "{{json .Config.Env}}", c); strings.Contains(env, "DB_PASSWORD") {
		t.Errorf("a file-only secret is in the environment: %s", env)
	}
}

// waitGone waits until a file no longer exists.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s is still there with no container mounting it", path)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}
