package compose

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// stateStacks are the corpus stacks for state directories: relative bind
// sources the repository does not hold, which compose creates beside the
// file and driftless keeps under its data directory
// (<data>/state/<app>/<path>). Each writes through a container into its
// state, and checks that a replaced replica, a change and a revert find
// it again.
func stateStacks() []corpusStack {
	return []corpusStack{vwDataDirStack(), giteaStateStack(), immichUploadStack()}
}

// stateDirOf is the host path of one of the app's state directories.
func stateDirOf(r *stackRun, p string) string {
	return filepath.Join(r.agent.Data, "state", r.app.Name, filepath.FromSlash(p))
}

// putThrough writes a file into a container's directory (`docker cp`, no
// shell needed): into a state directory, it lands on the host.
func putThrough(t *testing.T, container, dir, name, body string) {
	t.Helper()
	cp := exec.Command("docker", "cp", "-", container+":"+dir)
	cp.Stdin = strings.NewReader(string(testenv.TarOf(t, map[string]string{name: body})))
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("docker cp into %s:%s: %v\n%s", container, dir, err, out)
	}
}

// wantHostFile checks a file on the host.
func wantHostFile(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q (%v), want %q", p, b, err, want)
	}
}

// wantStateMount checks that a container mounts a state directory,
// read-write, from its host path.
func wantStateMount(t *testing.T, r *stackRun, container, target, statePath string) {
	t.Helper()
	m := mountOf(t, container, target)
	if m["Type"] != "bind" || m["Source"] != stateDirOf(r, statePath) || m["ReadOnly"] == true {
		t.Errorf("%s: mount at %s is %v, want a read-write bind of %s", container, target, m, stateDirOf(r, statePath))
	}
}

// wantStateStatus checks the state directories the API lists: path ->
// the services that mount it.
func wantStateStatus(t *testing.T, r *stackRun, want map[string][]string) {
	t.Helper()
	st := testenv.AppStatus(t, r.agent, r.app.Name)
	got := map[string][]string{}
	for _, d := range st.StateDirs {
		if d.HostPath != stateDirOf(r, d.Path) {
			t.Errorf("status: state directory %s at %q, want %s", d.Path, d.HostPath, stateDirOf(r, d.Path))
		}
		for _, m := range d.Mounts {
			got[d.Path] = append(got[d.Path], m.Service)
		}
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("status lists state directories %v, want %v", got, want)
	}
	// And `driftless status APP`, where a user looks for what to back up.
	out, code := testenv.Run(t, t.Context(), t.TempDir(), "status", r.app.Name, "--server="+r.agent.URL)
	listed := map[string]string{} // directory column → host path column
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "./") {
			listed[f[0]] = f[1]
		}
	}
	for p := range want {
		if host := listed["./"+p]; code != 0 || host != stateDirOf(r, p) {
			t.Errorf("driftless status %s (exit %d) lists ./%s at %q, want %s:\n%s", r.app.Name, code, p, host, stateDirOf(r, p), out)
		}
	}
}

// visits asks the stand-in for / on a published port and returns its
// visit count, which it keeps in WORKLOAD_DATA.
func visits(t *testing.T, port int) int {
	t.Helper()
	var page struct{ Visits int }
	body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("GET / on port %d: %v: %q", port, err, body)
	}
	return page.Visits
}

const standInListens = "the stand-in listens on 8080; the host port is a free one (the apps run at once on a shared machine)"

// vwDataDirStack: one service whose whole state is ./vw-data. The
// stand-in counts visits in a file there, so what the app writes itself
// must survive a replaced container, a change and its revert.
func vwDataDirStack() corpusStack {
	port := 0
	seen := 0 // visits counted so far
	return corpusStack{
		dir:      "vw-data-dir",
		replicas: map[string]int{"vaultwarden": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			port = r.app.Port("vaultwarden", 1)
			r.app.Replace("compose.yaml", "127.0.0.1:8000:80", fmt.Sprintf("127.0.0.1:%d:8080", port), standInListens)
			r.app.Replace("compose.yaml", `WEBSOCKET_ENABLED: "true"`, `WEBSOCKET_ENABLED: "true"`+"\n      WORKLOAD_DATA: /data",
				"the stand-in keeps its visit counter in WORKLOAD_DATA, where the real server keeps its database")
		},
		check: func(t *testing.T, r *stackRun) {
			c := r.c("vaultwarden", 1)
			wantStateMount(t, r, c, "/data", "vw-data")
			wantStateStatus(t, r, map[string][]string{"vw-data": {"vaultwarden"}})
			if n := visits(t, port); n != 1 {
				t.Errorf("first visit counted %d: the state directory was not empty", n)
			}
			seen = visits(t, port)
			wantHostFile(t, filepath.Join(stateDirOf(r, "vw-data"), "visits"), strconv.Itoa(seen))
		},
		changes: []stackChange{{
			what:  "vaultwarden: signups allowed",
			edits: []fileEdit{{File: "compose.yaml", Old: `SIGNUPS_ALLOWED: "false"`, New: `SIGNUPS_ALLOWED: "true"`}},
			rolls: []string{"vaultwarden"},
			check: func(t *testing.T, r *stackRun) {
				wantEnv(t, r.c("vaultwarden", 1), map[string]string{"SIGNUPS_ALLOWED": "true"})
				// The new container counts on from the old one's count.
				if n := visits(t, port); n != seen+1 {
					t.Errorf("after the replace, the visit count is %d, want %d: the state was not kept", n, seen+1)
				}
				seen++
			},
		}},
		heal: "vaultwarden",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			// The revert replaced the container once more.
			if n := visits(t, port); n != seen+1 {
				t.Errorf("after the revert, the visit count is %d, want %d", n, seen+1)
			}
			seen++
			return func(t *testing.T) {
				wantHostFile(t, filepath.Join(stateDirOf(r, "vw-data"), "visits"), strconv.Itoa(seen))
				if n := visits(t, port); n != seen+1 {
					t.Errorf("after the repair, the visit count is %d, want %d", n, seen+1)
				}
				wantStateMount(t, r, r.c("vaultwarden", 1), "/data", "vw-data")
			}
		},
	}
}

// giteaStateStack: two services, each with its own state directory, and a
// repository directory mounted read-only inside one of them. It also
// plants a symlink out of the state directory, as a container could, and
// checks that a revision mounting through it is refused while the last
// good one keeps running.
func giteaStateStack() corpusStack {
	const appIni = "[server]\nDOMAIN = git.example.com\n"
	return corpusStack{
		dir:      "gitea-state",
		replicas: map[string]int{"server": 1, "db": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			r.app.Replace("compose.yaml", `"3000:3000"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("server", 1)), standInListens)
			r.app.Replace("compose.yaml", `"2222:22"`, fmt.Sprintf(`"%d:22"`, r.app.Port("ssh", 1)), "host ports: a free one")
		},
		check: func(t *testing.T, r *stackRun) {
			server, db := r.c("server", 1), r.c("db", 1)
			wantStateMount(t, r, server, "/data", "gitea")
			wantStateMount(t, r, db, "/var/lib/postgresql/data", "postgres")
			wantStateStatus(t, r, map[string][]string{"gitea": {"server"}, "postgres": {"db"}})
			// The repository's templates, read-only, inside the state.
			wantFile(t, server, "/data/gitea/templates/home.tmpl", r.app.Files["custom/templates/home.tmpl"])
			if m := mountOf(t, server, "/data/gitea/templates"); m["ReadOnly"] != true {
				t.Errorf("templates are not read-only: %v", m)
			}
			putThrough(t, server, "/data", "gitea/conf/app.ini", appIni)
			wantHostFile(t, filepath.Join(stateDirOf(r, "gitea"), "gitea", "conf", "app.ini"), appIni)
			refuseStateSymlink(t, r)
		},
		changes: []stackChange{{
			what:  "server: another root URL",
			edits: []fileEdit{{File: "compose.yaml", Old: "ROOT_URL=https://git.example.com/", New: "ROOT_URL=https://forge.example.com/"}},
			rolls: []string{"server"},
			check: func(t *testing.T, r *stackRun) {
				wantEnv(t, r.c("server", 1), map[string]string{"GITEA__server__ROOT_URL": "https://forge.example.com/"})
				wantFile(t, r.c("server", 1), "/data/gitea/conf/app.ini", appIni)
			},
		}},
		heal: "db",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			wantFile(t, r.c("server", 1), "/data/gitea/conf/app.ini", appIni) // after the revert
			putThrough(t, r.c("db", 1), "/var/lib/postgresql/data", "PG_VERSION", "14\n")
			return func(t *testing.T) {
				wantFile(t, r.c("db", 1), "/var/lib/postgresql/data/PG_VERSION", "14\n")
				wantHostFile(t, filepath.Join(stateDirOf(r, "postgres"), "PG_VERSION"), "14\n")
			}
		},
	}
}

// refuseStateSymlink: ./gitea/escape is made a symlink out of the app's
// state directory (a container mounting ./gitea can do that); a commit
// that mounts ./gitea/escape/repos is refused, with the bind's position,
// and nothing is replaced. Reverting it brings the app back to Synced.
func refuseStateSymlink(t *testing.T, r *stackRun) {
	t.Helper()
	link := filepath.Join(stateDirOf(r, "gitea"), "escape")
	outside := t.TempDir()
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	before := testenv.ServiceContainers(t, r.app.Name)
	applied := testenv.AppStatus(t, r.agent, r.app.Name).Applied.SHA
	body, err := readRepoFile(r.repo, "compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r.repo.WriteFile("compose.yaml", strings.Replace(body, "      - ./gitea:/data\n", "      - ./gitea:/data\n      - ./gitea/escape/repos:/repos\n", 1))
	sha := r.repo.Commit("server: mount ./gitea/escape/repos")
	want := fmt.Sprintf("compose.yaml:26:9: services.server.volumes[1]: state directory ./gitea/escape/repos (%s) leads to %s on the host (symlinks followed), outside the app's state directory %s",
		filepath.Join(link, "repos"), filepath.Join(outside, "repos"), filepath.Join(r.agent.Data, "state", r.app.Name))
	st := testenv.WaitAppStatus(t, r.agent, r.app.Name, corpusWait, "the refusal of "+sha[:7], func(st status.AppStatus) bool {
		return st.Refused != nil && st.Refused.Revision.SHA == sha
	})
	if len(st.Refused.Errors) != 1 || !strings.HasPrefix(st.Refused.Errors[0], want) {
		t.Errorf("refusal errors %q, want one starting %q", st.Refused.Errors, want)
	}
	if st.Applied == nil || st.Applied.SHA != applied {
		t.Errorf("applied revision %+v, want the last good one %s", st.Applied, applied[:7])
	}
	if _, err := os.Stat(filepath.Join(outside, "repos")); !os.IsNotExist(err) {
		t.Errorf("something was created through the symlink: %v", err)
	}
	if after := testenv.ServiceContainers(t, r.app.Name); !maps.EqualFunc(after, before, maps.Equal) {
		t.Errorf("containers changed on a refused revision: %v, before %v", after, before)
	}
	reverted := r.repo.Revert(sha)
	r.waitConverged("the revert of the refused "+sha[:7], reverted, r.stack.replicas)
}

// immichUploadStack: the state directories come from .env
// (UPLOAD_LOCATION=./library). Moving the uploads to another directory
// rolls the services that see the variable and leaves the old directory
// on the host; the revert finds the uploads again.
func immichUploadStack() corpusStack {
	const photo = "JPEG, pretend\n"
	return corpusStack{
		dir:      "immich-upload",
		replicas: map[string]int{"immich-server": 1, "immich-machine-learning": 1, "redis": 1, "database": 1},
		setup: func(t *testing.T, r *stackRun, cfg *testenv.ComposeAppConfig) {
			r.app.Replace("compose.yaml", `"2283:2283"`, fmt.Sprintf(`"%d:8080"`, r.app.Port("immich-server", 1)), standInListens)
			r.app.Replace("compose.yaml", "test: redis-cli ping || exit 1", `test: ["CMD", "/driftless", "workload", "probe", "tcp://localhost:6379"]`,
				"the stand-in image has no shell or redis-cli: the workload's own probe checks the same port")
		},
		check: func(t *testing.T, r *stackRun) {
			server := r.c("immich-server", 1)
			wantStateMount(t, r, server, "/usr/src/app/upload", "library")
			wantStateMount(t, r, r.c("database", 1), "/var/lib/postgresql/data", "postgres")
			wantStateStatus(t, r, map[string][]string{"library": {"immich-server"}, "postgres": {"database"}})
			wantEnv(t, server, map[string]string{"UPLOAD_LOCATION": "./library", "DB_DATA_LOCATION": "./postgres"})
			putThrough(t, server, "/usr/src/app/upload", "library/admin/IMG_0001.jpg", photo)
			wantHostFile(t, filepath.Join(stateDirOf(r, "library"), "library", "admin", "IMG_0001.jpg"), photo)
		},
		changes: []stackChange{{
			what:  "uploads in ./photos",
			edits: []fileEdit{{File: ".env", Old: "UPLOAD_LOCATION=./library", New: "UPLOAD_LOCATION=./photos"}},
			// env_file: .env puts the variable in both services' environment.
			rolls: []string{"immich-server", "immich-machine-learning"},
			check: func(t *testing.T, r *stackRun) {
				wantStateMount(t, r, r.c("immich-server", 1), "/usr/src/app/upload", "photos")
				wantStateStatus(t, r, map[string][]string{"photos": {"immich-server"}, "postgres": {"database"}})
				if files := testenv.ContainerFiles(t, r.c("immich-server", 1), "/usr/src/app/upload"); len(files) != 0 {
					t.Errorf("the new upload directory is not empty: %v", slices.Collect(maps.Keys(files)))
				}
				// The old directory stays on the host: driftless never removes state.
				wantHostFile(t, filepath.Join(stateDirOf(r, "library"), "library", "admin", "IMG_0001.jpg"), photo)
			},
		}},
		heal: "immich-server",
		keeps: func(t *testing.T, r *stackRun) func(t *testing.T) {
			// After the revert, the uploads are back in the container.
			server := r.c("immich-server", 1)
			wantFile(t, server, "/usr/src/app/upload/library/admin/IMG_0001.jpg", photo)
			putThrough(t, server, "/usr/src/app/upload", "library/admin/IMG_0002.jpg", photo)
			return func(t *testing.T) {
				server := r.c("immich-server", 1)
				for _, f := range []string{"IMG_0001.jpg", "IMG_0002.jpg"} {
					wantFile(t, server, "/usr/src/app/upload/library/admin/"+f, photo)
				}
				wantStateStatus(t, r, map[string][]string{"library": {"immich-server"}, "postgres": {"database"}})
			}
		},
	}
}

// stateEquivCases are the equivalence cases for state directories and
// home directories.
func stateEquivCases() []equivCase {
	return []equivCase{{
		dir:      "equiv-state",
		services: []string{"app", "reader"},
		volumes:  nil,
		declared: map[string][]string{
			"container app": {
				"Mounts./data.RW", "Mounts./data.Content", "Mounts./var/lib/app/db.RW", "Mounts./var/lib/app/db.Content",
				"Mounts./config.RW", "Mounts./config.Content",
			},
			"container reader": {"Mounts./data.RW", "Mounts./data.Content"},
		},
		env: func(t *testing.T) map[string]string {
			// docker-compose 1.29 expands ~ with HOME; driftless with the
			// app's homeDir (args below). Both see the same directory.
			home := equivHome(t)
			return map[string]string{"HOME": home}
		},
		args: func(env map[string]string) []string {
			return []string{"--home-dir", env["HOME"], "--allow-host-path", env["HOME"]}
		},
	}}
}

// equivHome is a home directory with a file under ~/.config/app, for the
// ~ bind.
func equivHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "app", "settings.ini"), []byte("[app]\ntheme = dark\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// removeCreatedSources removes what docker-compose created in the project
// directory beside the app's files: the bind sources it made for missing
// relative paths (state directories). They are not files of the app; left
// there, driftless would find them and mount them as repository files.
func removeCreatedSources(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	keep := map[string]bool{}
	for name := range files {
		keep[strings.SplitN(name, "/", 2)[0]] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}
