package security

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// issue24Compose is issue 24's example, as an attacker with push access
// would commit it: the host's root and the Docker socket through named
// volumes of the local driver, and no `allow:` anywhere.
const issue24Compose = `services:
  x:
    image: alpine
    volumes: [hostroot:/host, sock:/var/run/docker.sock]
volumes:
  hostroot: {driver_opts: {type: none, o: bind, device: /}}
  sock: {driver_opts: {type: none, o: bind, device: /var/run/docker.sock}}
`

// issue24Native is the same through the native manifests' driverOpts, and
// an NFS mount of the local driver.
const issue24Native = `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: x}
spec:
  image: alpine
  volumes: [{name: hostroot, mountPath: /host}, {name: share, mountPath: /share}]
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: hostroot}
spec: {driverOpts: {type: none, o: bind, device: /}}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: share}
spec: {driverOpts: {type: nfs, o: "addr=127.0.0.1", device: ":/export"}}
`

// TestSecVolumeDriverOptionsAreRefused: a commit that binds the host's
// root and the Docker socket through volume driver options — compose's
// driver_opts or a native Volume's driverOpts — is refused by the agent
// and by the CLI, at the options' file:line, naming the setting that would
// allow it; no volume or container of the app ever exists on the engine.
func TestSecVolumeDriverOptionsAreRefused(t *testing.T) {
	t.Parallel()
	composeApp, nativeApp := testenv.UniqueApp(t), testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile("apps/"+composeApp+"/compose.yaml", issue24Compose)
	repo.WriteFile("apps/"+nativeApp+"/app.yaml", issue24Native)
	sha := repo.Commit("mount the host")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{
		{Name: composeApp, Repo: repo.URL(server.URL), Branch: "main", Path: "apps/" + composeApp, Interval: "1s"},
		{Name: nativeApp, Repo: repo.URL(server.URL), Branch: "main", Path: "apps/" + nativeApp, Interval: "1s"},
	})

	wantCompose := []string{
		"apps/" + composeApp + "/compose.yaml:6:57: volumes.hostroot.driver_opts.device: volume hostroot binds a host path: mounting / gives the container the Docker socket and the host's kernel and device files (/proc, /sys, /dev), which are root on the host; allow it for this app with `allow: [docker-socket, system-paths]` in driftless.yaml (or `--allow docker-socket,system-paths`)",
		"apps/" + composeApp + "/compose.yaml:7:53: volumes.sock.driver_opts.device: volume sock binds a host path: mounting /var/run/docker.sock gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)",
	}
	wantNative := []string{
		"apps/" + nativeApp + "/app.yaml:11:50: spec.driverOpts.device: volume hostroot binds a host path: mounting / gives the container the Docker socket and the host's kernel and device files (/proc, /sys, /dev), which are root on the host; allow it for this app with `allow: [docker-socket, system-paths]` in driftless.yaml (or `--allow docker-socket,system-paths`)",
		"apps/" + nativeApp + "/app.yaml:16:8: spec.driverOpts: volume share has the host mount a filesystem of type \"nfs\": the local driver's options are host power, as a bind mount is; allow it for this app with `allow: [volume-drivers]` in driftless.yaml (or `--allow volume-drivers`)",
	}
	for app, want := range map[string][]string{composeApp: wantCompose, nativeApp: wantNative} {
		st := testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the refusal", func(st status.AppStatus) bool {
			return st.Refused != nil && st.Refused.Revision.SHA == sha
		})
		if !slices.Equal(st.Refused.Errors, want) {
			t.Errorf("%s: refusal errors\n  %s\nwant\n  %s", app, strings.Join(st.Refused.Errors, "\n  "), strings.Join(want, "\n  "))
		}
		if !testenv.HasCondition(st, "validation") || !strings.Contains(st.Message, "refused") {
			t.Errorf("%s: status %q, errors %+v: want the refusal said", app, st.Message, st.Errors)
		}
		if entries := testenv.History(t, agent.Client(), app, string(status.KindRefused)); len(entries) != 1 || !slices.Equal(entries[0].Errors, want) {
			t.Errorf("%s: refused history %+v, want one entry with the errors", app, entries)
		}
	}

	// The CLI refuses the same files the same way, before the engine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.RunDriftless(t, ctx, filepath.Join(repo.Work, "apps", composeApp), nil, "apply", "--data", t.TempDir(), "--app", composeApp)
	if code == 0 || !strings.Contains(out, "compose.yaml:6:57: volumes.hostroot.driver_opts.device: volume hostroot binds a host path: mounting / gives the container the Docker socket") ||
		!strings.Contains(out, "`allow: [docker-socket]`") {
		t.Errorf("driftless apply: exit %d, want the refusal:\n%s", code, out)
	}

	for _, app := range []string{composeApp, nativeApp} {
		assertNothingOnEngine(t, app, "hostroot", "sock", "share")
	}
}

// TestSecSymlinkedHostPathIsRefused: an app may mount a directory under
// its hostPaths, and something with write access there (the app's own
// container, through that very mount) replaces the directory with a
// symlink to the Docker socket. The next commit is refused where the path
// now leads, by the agent and the CLI; the revision that runs is not
// healed through the symlink either; no container ever mounts the socket.
func TestSecSymlinkedHostPathIsRefused(t *testing.T) {
	t.Parallel()
	images := testenv.NewImageSet(t)
	web := images.Ref("shop/web:1")
	images.Ensure(web)
	app := testenv.UniqueApp(t)
	hostDir := t.TempDir()
	data := filepath.Join(hostDir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	compose := func(greeting string) string {
		return "services:\n  web:\n    image: " + web + "\n    environment: {GREETING: " + greeting + "}\n    volumes: [\"" + data + ":/data\"]\n"
	}
	path := "apps/" + app
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile(path+"/compose.yaml", compose("hello"))
	first := repo.Commit("mount the data directory")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{{Name: app, Repo: repo.URL(server.URL), Branch: "main", Path: path, Interval: "1s",
		HostPaths: []string{hostDir}}})
	testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the first revision to deploy", testenv.ConvergedServices(first, map[string]int{"web": 1}))

	// The directory becomes a symlink to the socket.
	if err := os.Rename(data, data+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/var/run/docker.sock", data); err != nil {
		t.Fatal(err)
	}
	landed, err := filepath.EvalSymlinks("/var/run/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	want := path + "/compose.yaml:5:15: services.web.volumes[0]: mounting " + data + " (which leads to " + landed + " on the host) gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)"

	// The revision that runs is refused at the next pass, and not healed
	// through the symlink.
	victim := app + "-web-1"
	testenv.Docker(t, "rm", "-f", victim)
	st := testenv.WaitAppStatus(t, agent, app, 30*time.Second, "the running revision refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == first
	})
	if !slices.Equal(st.Refused.Errors, []string{want}) {
		t.Errorf("refusal errors\n  %q\nwant\n  %q", st.Refused.Errors, want)
	}
	time.Sleep(3 * time.Second) // three more passes
	if names := testenv.DockerNames(t, app); len(names) != 0 {
		t.Fatalf("containers %v were created through the symlink", names)
	}

	// The next commit is refused the same way.
	repo.WriteFile(path+"/compose.yaml", compose("again"))
	next := repo.Commit("and again")
	st = testenv.WaitAppStatus(t, agent, app, 30*time.Second, "the next commit refused", func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == next
	})
	if !slices.Equal(st.Refused.Errors, []string{want}) || !strings.Contains(st.Message, "host path(s) lead where this app may not mount") {
		t.Errorf("refusal errors %q, message %q; want\n  %q", st.Refused.Errors, st.Message, want)
	}
	if names := testenv.DockerNames(t, app); len(names) != 0 {
		t.Fatalf("containers %v were created through the symlink", names)
	}

	// The CLI judges the path on this machine too.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := testenv.RunDriftless(t, ctx, filepath.Join(repo.Work, path), nil, "validate", "--app", app, "--allow-host-path", hostDir)
	if code != 1 || !strings.Contains(out, "compose.yaml:5:15: services.web.volumes[0]: mounting "+data+" (which leads to "+landed+" on the host) gives the container the Docker socket") {
		t.Errorf("driftless validate: exit %d, want 1 with the refusal:\n%s", code, out)
	}

	// Fixed on the host, the app is deployed again, from the real
	// directory.
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data+".old", data); err != nil {
		t.Fatal(err)
	}
	testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the next commit to deploy once the host is fixed", testenv.ConvergedServices(next, map[string]int{"web": 1}))
	if src := testenv.Docker(t, "inspect", "--format", "{{range .Mounts}}{{.Source}}{{end}}", victim); src != data {
		t.Errorf("%s mounts %q, want %s", victim, src, data)
	}
}

// assertNothingOnEngine fails the test when the app has a container or a
// volume on the engine, by label or by name.
func assertNothingOnEngine(t *testing.T, app string, volumes ...string) {
	t.Helper()
	if names := testenv.DockerNames(t, app); len(names) != 0 {
		t.Errorf("%s: containers %v exist", app, names)
	}
	if out := testenv.Docker(t, "volume", "ls", "-q", "--filter", "label=dev.driftless.app="+app); out != "" {
		t.Errorf("%s: volumes %q exist", app, out)
	}
	for _, v := range volumes {
		if out, err := testenv.DockerTry("volume", "inspect", app+"-"+v); err == nil {
			t.Errorf("volume %s-%s exists: %s", app, v, out)
		}
	}
}
