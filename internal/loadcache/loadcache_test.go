package loadcache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/internal/hostpath"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

const composeFile = `services:
  web:
    image: nginx:${TAG:-1.27}
    environment: [REGION, MODE=fast]
    env_file: [web.env]
  db:
    image: postgres:16
`

// newApp writes an app directory and returns it.
func newApp(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shop")
	for name, data := range files {
		write(t, filepath.Join(dir, name), data)
	}
	return dir
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testCache(t *testing.T) *Cache {
	return &Cache{Dir: filepath.Join(t.TempDir(), "cache"), Build: "build-1"}
}

func baseRequest(dir string) Request {
	return Request{Dir: dir, App: "shop", Opts: load.Options{
		Environment: map[string]string{"REGION": "eu", "UNRELATED": "1"},
		SecretKey:   manifest.SecretKey("0123456789abcdef0123456789abcdef"),
	}}
}

// loadApp loads req and checks the outcome.
func loadApp(t *testing.T, c *Cache, req Request, want Outcome) *manifest.App {
	t.Helper()
	app, got, err := c.Load(req)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got != want {
		t.Fatalf("outcome %v, want %v", name(got), name(want))
	}
	return app
}

func name(o Outcome) string {
	return [...]string{"miss", "hit", "skip", "failed"}[o]
}

// uncached is what the load gives without the cache.
func uncached(t *testing.T, req Request) *manifest.App {
	t.Helper()
	app, err := appdir.LoadDirWith(req.Dir, req.App, req.Opts)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func sameModel(t *testing.T, got, want *manifest.App) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached model differs from the loaded one:\n got %+v\nwant %+v", got, want)
	}
}

func TestHitGivesTheLoadedModel(t *testing.T) {
	dir := newApp(t, map[string]string{"compose.yaml": composeFile, "web.env": "A=1\n"})
	c := testCache(t)
	req := baseRequest(dir)
	first := loadApp(t, c, req, Miss)
	second := loadApp(t, c, req, Hit)
	sameModel(t, second, first)
	sameModel(t, second, uncached(t, req))
	// A variable the load never looked up does not matter.
	req.Opts.Environment = map[string]string{"REGION": "eu", "UNRELATED": "2", "PWD": "/elsewhere"}
	loadApp(t, c, req, Hit)
}

// Every input of the load, changed, is a miss, and the model then is the
// one the changed inputs give.
func TestEachChangedInputMisses(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string, req *Request, c *Cache)
	}{
		{"compose file edited", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, "compose.yaml"), strings.Replace(composeFile, "postgres:16", "postgres:17", 1))
		}},
		{"override file appears", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, "compose.override.yml"), "services:\n  db:\n    image: postgres:15\n")
		}},
		{"docker-compose.yml appears beside (shadowed: a warning)", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, "docker-compose.yml"), composeFile)
		}},
		{".env appears", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, ".env"), "TAG=2\n")
		}},
		{"env_file edited", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, "web.env"), "A=2\n")
		}},
		{"driftless manifest appears beside (refused)", func(t *testing.T, dir string, _ *Request, _ *Cache) {
			write(t, filepath.Join(dir, "more", "x.yaml"), "apiVersion: driftless.dev/v1\nkind: Service\n")
		}},
		{"looked-up variable changed", func(t *testing.T, _ string, req *Request, _ *Cache) {
			req.Opts.Environment = map[string]string{"REGION": "us", "UNRELATED": "1"}
		}},
		{"looked-up variable unset", func(t *testing.T, _ string, req *Request, _ *Cache) {
			req.Opts.Environment = map[string]string{"UNRELATED": "1"}
		}},
		{"interpolated variable set", func(t *testing.T, _ string, req *Request, _ *Cache) {
			req.Opts.Environment = map[string]string{"REGION": "eu", "TAG": "2"}
		}},
		{"profile flag", func(t *testing.T, _ string, req *Request, _ *Cache) { req.Opts.Profiles = []string{"debug"} }},
		{"policy flag", func(t *testing.T, _ string, req *Request, _ *Cache) {
			req.Opts.Policy = policy.Policy{Allow: []string{"privileged"}}
		}},
		{"allow-plaintext flag", func(t *testing.T, _ string, req *Request, _ *Cache) { req.Opts.AllowPlaintext = true }},
		{"limit flag", func(t *testing.T, _ string, req *Request, _ *Cache) {
			if err := req.Opts.Limits.Set("replicas", "7"); err != nil {
				t.Fatal(err)
			}
		}},
		{"app name", func(t *testing.T, _ string, req *Request, _ *Cache) { req.App = "shop2" }},
		{"secret key", func(t *testing.T, _ string, req *Request, _ *Cache) {
			req.Opts.SecretKey = manifest.SecretKey("fedcba9876543210fedcba9876543210")
		}},
		{"another build", func(t *testing.T, _ string, _ *Request, c *Cache) { c.Build = "build-2" }},
		{"corrupt entry", func(t *testing.T, _ string, _ *Request, c *Cache) {
			entries, _ := filepath.Glob(filepath.Join(c.Dir, "*.gob"))
			if len(entries) != 1 {
				t.Fatalf("%d entries", len(entries))
			}
			data, _ := os.ReadFile(entries[0])
			write(t, entries[0], string(data[:len(data)/2]))
		}},
		{"entry replaced by garbage", func(t *testing.T, _ string, _ *Request, c *Cache) {
			entries, _ := filepath.Glob(filepath.Join(c.Dir, "*.gob"))
			write(t, entries[0], "not gob")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := newApp(t, map[string]string{"compose.yaml": composeFile, "web.env": "A=1\n"})
			c := testCache(t)
			req := baseRequest(dir)
			loadApp(t, c, req, Miss)
			loadApp(t, c, req, Hit)
			tc.change(t, dir, &req, c)
			app, got, err := c.Load(req)
			if got == Hit {
				t.Fatal("served from the cache after the change")
			}
			want, werr := appdir.LoadDirWith(req.Dir, req.App, req.Opts)
			if (err == nil) != (werr == nil) {
				t.Fatalf("error %v, uncached %v", err, werr)
			}
			if err == nil {
				sameModel(t, app, want)
				// Stored again: the next load is a hit.
				loadApp(t, c, req, Hit)
			}
		})
	}
}

func TestNativeManifestAppearingMisses(t *testing.T) {
	svc := "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: %s}\nspec: {image: nginx}\n"
	dir := newApp(t, map[string]string{"web.yaml": strings.Replace(svc, "%s", "web", 1)})
	c := testCache(t)
	req := baseRequest(dir)
	loadApp(t, c, req, Miss)
	loadApp(t, c, req, Hit)
	write(t, filepath.Join(dir, "sub", "api.yml"), strings.Replace(svc, "%s", "api", 1))
	app := loadApp(t, c, req, Miss)
	if len(app.Services) != 2 {
		t.Fatalf("%d services after adding one", len(app.Services))
	}
}

// An app holding secret values is never written to disk.
func TestSecretsAreNotStored(t *testing.T) {
	dir := newApp(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    image: nginx\n    secrets: [token]\nsecrets:\n  token:\n    file: token.txt\n    x-driftless: {allowPlaintext: true}\n",
		"token.txt":    "s3cr3t-value",
	})
	c := testCache(t)
	req := baseRequest(dir)
	loadApp(t, c, req, Skip)
	loadApp(t, c, req, Skip)
	if entries, _ := filepath.Glob(filepath.Join(c.Dir, "*")); len(entries) != 0 {
		t.Fatalf("stored %v", entries)
	}
}

func TestEntryFiles(t *testing.T) {
	dir := newApp(t, map[string]string{"compose.yaml": composeFile, "web.env": "A=1\n"})
	c := testCache(t)
	c.PerApp = 2
	req := baseRequest(dir)
	loadApp(t, c, req, Miss)
	entries, _ := filepath.Glob(filepath.Join(c.Dir, "*"))
	if len(entries) != 1 {
		t.Fatalf("entries %v", entries)
	}
	info, err := os.Stat(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(entries[0])
	if bytes.Contains(data, req.Opts.SecretKey) {
		t.Error("the entry holds the secret key")
	}
	// Each profile set is an entry of its own; the app keeps PerApp.
	for _, p := range []string{"a", "b", "c"} {
		req.Opts.Profiles = []string{p}
		loadApp(t, c, req, Miss)
	}
	if entries, _ := filepath.Glob(filepath.Join(c.Dir, "shop.*")); len(entries) != 2 {
		t.Fatalf("%d entries for the app, want 2", len(entries))
	}
}

func TestDisabledOrFailedLoad(t *testing.T) {
	dir := newApp(t, map[string]string{"compose.yaml": "services:\n  web: {image: [}\n"})
	c := testCache(t)
	if _, got, err := c.Load(baseRequest(dir)); err == nil || got != Failed {
		t.Fatalf("broken file: %v, %v", name(got), err)
	}
	if entries, _ := filepath.Glob(filepath.Join(c.Dir, "*")); len(entries) != 0 {
		t.Fatalf("a failed load was stored: %v", entries)
	}
	dir = newApp(t, map[string]string{"compose.yaml": composeFile, "web.env": ""})
	var off *Cache
	loadApp(t, off, baseRequest(dir), Skip)
	loadApp(t, &Cache{Dir: c.Dir}, baseRequest(dir), Skip) // no build ID
}

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// The corpus loads the same from the cache as without it, and the
// variables the load reports reading are all it depends on: with every
// other variable removed, the model is the same.
func TestCorpus(t *testing.T) {
	var dirs []string
	for _, g := range []string{"../../manifest/compose/testdata/compose/*", "../../examples/*"} {
		m, _ := filepath.Glob(g)
		for _, d := range m {
			if info, err := os.Stat(d); err == nil && info.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) < 15 {
		t.Fatalf("corpus of %d apps", len(dirs))
	}
	stored := 0
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			// Every word of the app's files is a set variable, so that
			// each reference resolves to something.
			env := map[string]string{}
			_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					data, _ := os.ReadFile(p)
					for _, w := range identifier.FindAllString(string(data), -1) {
						env[w] = "1"
					}
				}
				return nil
			})
			opts := load.Options{Environment: env, SecretKey: manifest.SecretKey("k")}
			if data, err := os.ReadFile(filepath.Join(dir, "profiles.txt")); err == nil {
				opts.Profiles = strings.Fields(string(data))
			}
			read := map[string]bool{}
			opts.EnvRead = func(n string) { read[n] = true }
			req := Request{Dir: dir, App: "corpus", Opts: opts}
			want, err := appdir.LoadDirWith(dir, "corpus", opts)
			if err != nil {
				t.Skipf("not loadable on its own: %v", err)
			}
			only := map[string]string{}
			for n := range read {
				if v, ok := env[n]; ok {
					only[n] = v
				}
			}
			narrow := opts
			narrow.Environment, narrow.EnvRead = only, nil
			got, err := appdir.LoadDirWith(dir, "corpus", narrow)
			if err != nil {
				t.Fatalf("with only the variables read (%d of %d): %v", len(only), len(env), err)
			}
			sameModel(t, got, want)

			c := testCache(t)
			req.Opts.EnvRead = nil
			_, first, _ := c.Load(req)
			app, second, err := c.Load(req)
			if err != nil {
				t.Fatal(err)
			}
			if first == Miss {
				stored++
				if second != Hit {
					t.Fatalf("second load %v", name(second))
				}
			}
			sameModel(t, app, want)
		})
	}
	if stored < 10 {
		t.Errorf("only %d corpus apps were cached", stored)
	}
}

// compose-go itself takes a build arg without a value from the
// environment: that variable is an input too.
func TestBuildArgFromEnvironment(t *testing.T) {
	dir := newApp(t, map[string]string{
		"compose.yaml":   "services:\n  web:\n    build:\n      context: web\n      args: [VERSION]\n",
		"web/Dockerfile": "FROM scratch\n",
	})
	c := testCache(t)
	req := baseRequest(dir)
	req.Opts.Environment = map[string]string{"VERSION": "1"}
	first := loadApp(t, c, req, Miss)
	loadApp(t, c, req, Hit)
	req.Opts.Environment = map[string]string{"VERSION": "2"}
	second := loadApp(t, c, req, Miss)
	if first.Services[0].Hash == second.Services[0].Hash {
		t.Fatal("the build arg did not change the service")
	}
	sameModel(t, second, uncached(t, req))
	// The build context is an input as well.
	write(t, filepath.Join(dir, "web", "Dockerfile"), "FROM scratch\nLABEL a=b\n")
	third := loadApp(t, c, req, Miss)
	if third.Services[0].Hash == second.Services[0].Hash {
		t.Fatal("the Dockerfile did not change the service")
	}
}

// Where a host path lands is not a fact of the files: a hit judges it
// again, so a symlink made after the first load is refused as the load
// would refuse it.
func TestHitJudgesHostPathsAgain(t *testing.T) {
	hostDir := t.TempDir()
	data := filepath.Join(hostDir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := newApp(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: nginx\n    volumes: [\"" + data + ":/data\"]\n"})
	c := testCache(t)
	req := baseRequest(dir)
	req.Opts.Policy = policy.Policy{HostPaths: []string{hostDir}}
	req.Opts.Host = hostpath.Host(func(string) string { return "" })
	loadApp(t, c, req, Miss)
	loadApp(t, c, req, Hit)
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run/docker.sock", data); err != nil {
		t.Fatal(err)
	}
	_, got, err := c.Load(req)
	var list manifest.ErrorList
	if got != Failed || !errors.As(err, &list) || !strings.Contains(err.Error(), "compose.yaml:4:15: services.web.volumes[0]: mounting "+data+" (which leads to /run/docker.sock on the host) gives the container the Docker socket") {
		t.Fatalf("outcome %s, error %v; want the symlink refused", name(got), err)
	}
}

// A job's secrets keep the app out of the cache as a service's do.
func TestJobSecretsAreNotCached(t *testing.T) {
	a := &manifest.App{Jobs: []manifest.Job{{Name: "migrate", Service: manifest.Service{Spec: manifest.ServiceSpec{SecretEnv: []string{"TOKEN"}}}}}}
	if !holdsSecrets(a) {
		t.Error("a job's secretEnv is cached")
	}
	if holdsSecrets(&manifest.App{Jobs: []manifest.Job{{Name: "migrate"}}}) {
		t.Error("a job without secrets is not cached")
	}
}

// A build context holding a symlink (rallly's .claude/skills/* link to
// .agents/skills/*) loads through the recorder as through os.DirFS: the
// link is read, not refused as "readlink ...: invalid argument". Where it
// points is not a fact a hit checks, so the load is not stored.
func TestBuildContextSymlink(t *testing.T) {
	dir := newApp(t, map[string]string{
		"compose.yaml":         "services:\n  web:\n    build: .\n",
		"Dockerfile":           "FROM scratch\n",
		".agents/skills/a/x":   "x\n",
		".claude/skills/.keep": "",
	})
	if err := os.Symlink("../../.agents/skills/a", filepath.Join(dir, ".claude/skills/a")); err != nil {
		t.Fatal(err)
	}
	c := testCache(t)
	req := baseRequest(dir)
	app := loadApp(t, c, req, Skip)
	var found bool
	for _, bc := range app.Builds {
		for _, f := range bc.Files.Files {
			found = found || f.Path == ".claude/skills/a" && f.Link == "../../.agents/skills/a"
		}
	}
	if !found {
		t.Error("the build context lacks the link .claude/skills/a")
	}
	loadApp(t, c, req, Skip)
}
