package engines

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/driftless-dev/driftless/e2e/privengine"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/secrets/sopstest"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestSecretFileOnRemoteEngine: a compose app on an ssh:// engine (always
// another host as far as the agent knows) uses two SOPS-encrypted secret
// files (age), one at compose's default /run/secrets/NAME and one at its
// own target with an owner and mode. The decrypted values are in its
// container on that engine, with those owners and modes, copied in
// through the engine API: the container mounts nothing at their targets
// and nothing is written under the agent's secrets directory for that
// engine. A commit that rotates one value replaces the container, and the
// new value is there. Neither the old nor the new value appears in the
// agent's output or in what its API shows of the app.
func TestSecretFileOnRemoteEngine(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	eng, ssh := farEngine(t, image)

	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "age.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	enc := func(name, plain string) string {
		b, err := sopstest.EncryptAge(name, []byte(plain), id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	app := prefix() + "-secrets"
	dir := "apps/" + app + "/"
	password := "remote-pw-" + app
	token1, token2 := "remote-token-one-"+app, "remote-token-two-"+app
	repo, url := platformRepo(t)
	repo.WriteFile(dir+"compose.yaml", fmt.Sprintf(`services:
  web:
    image: %s
    environment: {MESSAGE: secrets}
    stop_grace_period: 1s
    secrets:
      - db-password
      - {source: api-token, target: /etc/app/token, uid: "1000", gid: "1001", mode: 0400}
secrets:
  db-password: {file: secrets/db-password.txt}
  api-token: {file: secrets/api-token.txt}
`, image))
	repo.WriteFile(dir+"secrets/db-password.txt", enc("db-password.txt", password))
	repo.WriteFile(dir+"secrets/api-token.txt", enc("api-token.txt", token1))
	first := repo.Commit("an app with two secret files on the ssh engine")
	cfg := fmt.Sprintf(`engines:
%sapps:
  - {name: %s, repo: %s, branch: main, path: apps/%[2]s, interval: 2s, allowInsecureTransport: true, engine: far, decryption: {ageKeyFile: %[4]s}}
`, farEntry(ssh), app, url, keyFile)
	path := writeConfig(t, cfg)
	data := testenv.DataDir(t)
	agent := testenv.StartAgent(t, data, "run", "--config", path, "--ping-timeout", sshPingTimeout)

	st := testenv.WaitAppStatus(t, agent, app, remoteWait, "converged with secret files", testenv.ConvergedServices(first, map[string]int{"web": 1}))
	name := app + "-web-1"
	for target, want := range map[string]remoteFile{
		"/run/secrets/db-password": {Body: password, Mode: 0o444},
		"/etc/app/token":           {Body: token1, UID: 1000, GID: 1001, Mode: 0o400},
	} {
		if got := remoteFileOf(t, eng, name, target); got != want {
			t.Errorf("%s in %s on the remote engine: %+v, want %+v", target, name, got, want)
		}
	}
	if got := eng.Docker("inspect", "--format", "{{range .Mounts}}{{.Destination}} {{end}}", name); strings.Contains(got, "/run/secrets") || strings.Contains(got, "/etc/app") {
		t.Errorf("%s mounts %q: the secrets must be copied in, not mounted", name, got)
	}
	secretsDir := filepath.Join(testenv.SecretsDir(t, data), "engines", "far")
	checkNothingUnder(t, secretsDir)

	// The token is rotated: a new container with the new value.
	repo.WriteFile(dir+"secrets/api-token.txt", enc("api-token.txt", token2))
	second := repo.Commit("rotate the api token")
	testenv.WaitAppStatus(t, agent, app, remoteWait, "replaced with the rotated token", func(st2 status.AppStatus) bool {
		ids := testenv.ContainerIDs(st2)
		return testenv.ConvergedServices(second, map[string]int{"web": 1})(st2) && len(ids) == 1 && ids[0] != testenv.ContainerIDs(st)[0]
	})
	if got, want := remoteFileOf(t, eng, name, "/etc/app/token"), (remoteFile{Body: token2, UID: 1000, GID: 1001, Mode: 0o400}); got != want {
		t.Errorf("after the rotation, /etc/app/token in %s: %+v, want %+v", name, got, want)
	}
	if got := remoteFileOf(t, eng, name, "/run/secrets/db-password"); got.Body != password {
		t.Errorf("after the rotation, /run/secrets/db-password in %s: %+v, want the unchanged password", name, got)
	}
	checkNothingUnder(t, secretsDir)
	checkNoValues(t, agent, app, password, token1, token2)
}

// checkNothingUnder fails the test for each entry of dir, which may be
// missing.
func checkNothingUnder(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("the agent's secrets directory for the remote engine holds %s", e.Name())
	}
}

// checkNoValues fails the test for each value found in the agent's
// output or in what its API answers about app.
func checkNoValues(t *testing.T, agent *testenv.Agent, app string, values ...string) {
	t.Helper()
	api := map[string]string{"log": agent.Logs()}
	for _, p := range []string{"/api/v1/apps", "/api/v1/apps/" + app, "/api/v1/apps/" + app + "/plan", "/api/v1/apps/" + app + "/history", "/api/v1/history"} {
		api[p] = get(t, agent.URL+p)
	}
	stJSON, err := json.Marshal(testenv.AppStatus(t, agent, app))
	if err != nil {
		t.Fatal(err)
	}
	api["status"] = string(stJSON)
	for where, text := range api {
		for _, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("the secret value %q is in the agent's %s", v, where)
			}
		}
	}
}

// remoteFile is one regular file as `docker cp` reads it out of a
// container.
type remoteFile struct {
	Body     string
	UID, GID int
	Mode     int64
}

// remoteFileOf reads one regular file from a container on the private
// engine (docker cp: the workload image has no shell).
func remoteFileOf(t *testing.T, eng *privengine.Engine, container, path string) remoteFile {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(testenv.CopyOut(t, eng.Env(), container, path)))
	h, err := tr.Next()
	if err != nil {
		t.Fatalf("%s in %s: %v", path, container, err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return remoteFile{Body: string(b), UID: h.Uid, GID: h.Gid, Mode: h.Mode & 0o7777}
}
