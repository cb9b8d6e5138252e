package compose_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// A relative bind source the revision does not hold is a state directory
// (the path as written, cleaned; read-write unless :ro); one it holds is
// still a read-only repository mount.
func TestStateDirectories(t *testing.T) {
	files := map[string]string{
		".env":          "UPLOAD_LOCATION=./library\n",
		"conf/app.toml": "x = 1\n",
		"compose.yaml": `services:
  db:
    image: postgres:16
    volumes:
      - ./volumes/db/data/:/var/lib/postgresql/data
      - ./conf:/etc/app
  server:
    image: immich:1
    volumes:
      - ${UPLOAD_LOCATION}:/usr/src/app/upload
      - type: bind
        source: ./cache/../thumbs
        target: /thumbs
        read_only: true
      - ./volumes/db/data:/backup:ro,z
`,
	}
	a := loadtest.MustLoadCompose(t, files, load.Options{})
	got := map[string]string{}
	for _, svc := range a.Services {
		for _, b := range svc.Spec.Binds {
			got[svc.Name+" "+b.MountPath] = bindSummary(b)
		}
	}
	want := map[string]string{
		"db /var/lib/postgresql/data": "state=volumes/db/data",
		"db /etc/app":                 "repo=conf",
		"server /usr/src/app/upload":  "state=library",
		"server /thumbs":              "state=thumbs ro",
		"server /backup":              "state=volumes/db/data ro z",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("binds %v, want %v", got, want)
	}
	// The listing status shows: each directory once, with its mounts.
	dirs := a.StateDirs()
	if len(dirs) != 3 || dirs[2].Path != "volumes/db/data" || len(dirs[2].Mounts) != 2 ||
		dirs[2].Mounts[1] != (manifest.StateMount{Service: "server", MountPath: "/backup", ReadOnly: true}) {
		t.Errorf("StateDirs() = %+v", dirs)
	}
	// Only the path is hashed: a state directory has no content in the
	// app, so nothing written there can change a spec.
	for _, svc := range a.Services {
		for _, b := range svc.Spec.Binds {
			if b.StatePath != "" && (b.ContentHash != "" || b.HostPath != "" || b.RepoPath != "") {
				t.Errorf("%s: state bind %+v has another source", svc.Name, b)
			}
		}
	}
	moved := loadtest.MustLoadCompose(t, map[string]string{
		".env": "UPLOAD_LOCATION=./library2\n", "conf/app.toml": files["conf/app.toml"], "compose.yaml": files["compose.yaml"],
	}, load.Options{})
	if moved.Service("server").Hash == a.Service("server").Hash || moved.Service("db").Hash != a.Service("db").Hash {
		t.Error("moving server's state directory must change its hash only")
	}
}

func bindSummary(b manifest.BindMount) string {
	s := ""
	switch {
	case b.StatePath != "":
		s = "state=" + b.StatePath
	case b.RepoPath != "":
		s = "repo=" + b.RepoPath
	default:
		s = "host=" + b.HostPath
	}
	for _, o := range []struct {
		on   bool
		word string
	}{{b.ReadOnly, "ro"}, {b.CreateHostPath, "create"}, {b.SELinux != "", b.SELinux}} {
		if o.on {
			s += " " + o.word
		}
	}
	return s
}

// ~ is the app's homeDir; the path it leads to is a host path like any
// other, under hostPaths.
func TestHomeDirectory(t *testing.T) {
	files := loadtest.Web(`volumes: ["~/.config/app:/config:ro", "~:/home"]`)
	a := loadtest.MustLoadCompose(t, files, load.Options{Policy: policy.Policy{HomeDir: "/home/ada", HostPaths: []string{"/home/ada"}}})
	var got []string
	for _, b := range a.Services[0].Spec.Binds {
		got = append(got, bindSummary(b))
	}
	if strings.Join(got, "|") != "host=/home/ada/.config/app ro create|host=/home/ada create" {
		t.Errorf("binds %q", got)
	}
	errs := loadtest.ComposeErrors(t, files, load.Options{Policy: policy.Policy{HomeDir: "/home/ada"}})
	if len(errs) != 2 || !strings.Contains(errs[0], "compose.yaml:4:15: services.web.volumes[0]: host path /home/ada/.config/app is outside the paths this app may mount; allow it with `hostPaths: [/home/ada/.config/app]`") {
		t.Errorf("without hostPaths: %q", errs)
	}
}

// Bad sources are refused where they are written, saying what to do.
func TestStateAndHomeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		opts  load.Options
		want  []string
	}{
		{"leaves the app directory",
			loadtest.Web(`volumes: ["../shared:/shared", "./data/../../x:/x"]`), load.Options{},
			[]string{
				`compose.yaml:4:15: services.web.volumes[0]: bind source "../shared" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)`,
				`compose.yaml:4:36: services.web.volumes[1]: bind source "./data/../../x" leaves the app directory: a relative source is a file of the app directory or, when the revision does not hold it, a directory of the app's state, and stays inside; mount other places by their absolute path (policy hostPaths)`,
			}},
		{"home without homeDir",
			loadtest.Web("volumes:", "  - ~/data:/data"), load.Options{},
			[]string{
				"compose.yaml:5:9: services.web.volumes[0]: \"~/data\" is in a home directory, and this app has none: set `homeDir: /home/USER` for the app in driftless.yaml (or `--home-dir /home/USER`); the path it leads to then needs `hostPaths` like any host path",
			}},
		{"another user's home",
			loadtest.Web("volumes:", "  - ~bob/data:/data"), load.Options{Policy: policy.Policy{HomeDir: "/home/ada"}},
			[]string{
				"compose.yaml:5:9: services.web.volumes[0]: \"~bob/data\": another user's home directory (~bob) is not supported; write ~/... for the app's homeDir, or the absolute path",
			}},
		{"swarm",
			loadtest.Web("volumes:", "  - ./data:/data"), load.Options{Target: manifest.TargetSwarm},
			[]string{
				"compose.yaml:5:9: services.web.volumes[0]: state directory ./data would live on the agent's host, and a Swarm task may run on another node: keep the data in a named volume (target: swarm)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadtest.ComposeErrors(t, tt.files, tt.opts)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
