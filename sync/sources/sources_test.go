package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// file is a MapFS entry with the given content.
func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

const compose = "services:\n  web:\n    image: nginx\n"

// names lists the apps' names and paths as "name=path", for short tables.
func names(apps []App) []string {
	out := []string{}
	for _, a := range apps {
		out = append(out, a.Name+"="+a.Path)
	}
	return out
}

func TestAppName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct{ in, want string }{
		{"shop", "shop"},
		{"My_Shop", "my-shop"},
		{"apps/My_Shop", "my-shop"},
		{"2048", "app-2048"},
		{"my.shop.v2", "my-shop-v2"},
		{"--shop--", "shop"},
		{"a  b", "a-b"},
		{"café", "caf"},
		{"___", ""},
		{"", ""},
		{".", ""},
		{long, long[:63]},
		{strings.Repeat("a", 62) + "_b", strings.Repeat("a", 62)}, // no trailing '-' after cutting
		{"9" + strings.Repeat("x", 70), "app-9" + strings.Repeat("x", 58)},
	}
	for _, tt := range tests {
		got := AppName(tt.in)
		if got != tt.want {
			t.Errorf("AppName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got != "" && !validName(got) {
			t.Errorf("AppName(%q) = %q, which is not a valid name", tt.in, got)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		g    Generator
		want string // "" for valid
	}{
		{"directories", Generator{Directories: []string{"apps/*", "stacks/*/prod"}, Exclude: []string{"apps/old-*"}}, ""},
		{"file", Generator{File: "driftless-apps.yaml"}, ""},
		{"file in a directory", Generator{File: "deploy/apps.yaml"}, ""},
		{"config", Generator{Config: "driftless.yaml"}, ""},
		{"neither", Generator{}, "give directories, file or config: the source must say where its apps are"},
		{"both", Generator{Directories: []string{"apps/*"}, File: "x.yaml"}, "give one of directories, file and config"},
		{"file and config", Generator{File: "x.yaml", Config: "driftless.yaml"}, "give one of directories, file and config"},
		{"exclude with config", Generator{Config: "x.yaml", Exclude: []string{"a"}}, "exclude: only applies to directories; list the apps you want in the file instead"},
		{"dotdot config", Generator{Config: "../driftless.yaml"}, `config: "../driftless.yaml" leaves the repository`},
		{"exclude with file", Generator{File: "x.yaml", Exclude: []string{"a"}}, "exclude: only applies to directories; list the apps you want in the file instead"},
		{"bad glob", Generator{Directories: []string{"apps/["}}, `directories[0]: "apps/[" is not a valid glob: syntax error in pattern`},
		{"bad exclude", Generator{Directories: []string{"apps/*"}, Exclude: []string{"apps/\\"}}, `exclude[0]: "apps/\\" is not a valid glob: syntax error in pattern`},
		{"root glob", Generator{Directories: []string{"."}}, `directories[0]: "." is the repository root, which has no directory name to name an app after: use a file generator for a single app at the root`},
		{"empty glob", Generator{Directories: []string{""}}, "directories[0]: empty path"},
		{"absolute glob", Generator{Directories: []string{"/apps/*"}}, `directories[0]: "/apps/*" is absolute: write it relative to the repository root`},
		{"unclean glob", Generator{Directories: []string{"apps/*/"}}, `directories[0]: "apps/*/" is not clean: write it as "apps/*"`},
		{"dotdot glob", Generator{Directories: []string{"../*"}}, `directories[0]: "../*" leaves the repository`},
		{"dotdot file", Generator{File: "../apps.yaml"}, `file: "../apps.yaml" leaves the repository`},
		{"unclean file", Generator{File: "a/../apps.yaml"}, `file: "a/../apps.yaml" is not clean: write it as "apps.yaml"`},
		{"absolute file", Generator{File: "/apps.yaml"}, `file: "/apps.yaml" is absolute: write it relative to the repository root`},
		{"all errors", Generator{Directories: []string{"[", "/x"}}, "directories[0]: \"[\" is not a valid glob: syntax error in pattern\ndirectories[1]: \"/x\" is absolute: write it relative to the repository root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDiscoverDirectories(t *testing.T) {
	manifest := "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\n"
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		g       Generator
		want    []string
		wantErr string
	}{
		{
			name: "compose files and manifests",
			fsys: fstest.MapFS{
				"apps/shop/compose.yaml":         file(compose),
				"apps/blog/docker-compose.yml":   file(compose),
				"apps/wiki/compose.yml":          file(compose),
				"apps/forum/docker-compose.yaml": file(compose),
				"apps/native/web.yaml":           file(manifest),
				"apps/native2/net.yml":           file("# a network\n---\nkind: Network\nmetadata: {name: n}\n"),
				"apps/README.md":                 file("# apps\n"),
				"apps/docs/README.md":            file("no app here"),
				"apps/config/settings.yaml":      file("kindly: no\n"),
				"apps/broken/x.yaml":             file("kind: [\n"),
				"apps/list/x.yaml":               file("- kind: Service\n"),
				"apps/hiddenfile/.web.yaml":      file(manifest),
				"apps/.hidden/compose.yaml":      file(compose),
				"apps/shop/sub/compose.yaml":     file(compose),
				"other/thing/compose.yaml":       file(compose),
				"apps/dir/compose.yaml/x":        file("a directory named like a compose file"),
			},
			g:    Generator{Directories: []string{"apps/*"}},
			want: []string{"blog=apps/blog", "forum=apps/forum", "native=apps/native", "native2=apps/native2", "shop=apps/shop", "wiki=apps/wiki"},
		},
		{
			name: "exclude",
			fsys: fstest.MapFS{
				"apps/shop/compose.yaml":        file(compose),
				"apps/legacy-blog/compose.yaml": file(compose),
				"apps/legacy-wiki/compose.yaml": file(compose),
				"apps/test/compose.yaml":        file(compose),
			},
			g:    Generator{Directories: []string{"apps/*"}, Exclude: []string{"apps/legacy-*", "apps/test"}},
			want: []string{"shop=apps/shop"},
		},
		{
			name: "excluding a directory excludes what is below it",
			fsys: fstest.MapFS{
				"stacks/legacy/prod/compose.yaml": file(compose),
				"stacks/shop/prod/compose.yaml":   file(compose),
			},
			g:    Generator{Directories: []string{"stacks/*/prod"}, Exclude: []string{"stacks/legacy"}},
			want: []string{"prod=stacks/shop/prod"},
		},
		{
			name: "hidden directories never match",
			fsys: fstest.MapFS{
				".github/compose.yaml":     file(compose),
				".git/x/compose.yaml":      file(compose),
				"shop/compose.yaml":        file(compose),
				"shop/.cache/compose.yaml": file(compose),
			},
			g:    Generator{Directories: []string{"*", "*/*", ".github"}},
			want: []string{"shop=shop"},
		},
		{
			name: "deeper globs",
			fsys: fstest.MapFS{
				"stacks/eu/shop/compose.yaml":      file(compose),
				"stacks/us/blog/compose.yaml":      file(compose),
				"stacks/us/blog/deep/compose.yaml": file(compose),
				"stacks/compose.yaml":              file(compose),
				"stacks/us/compose.yaml":           file(compose),
				"teams/a/prod/api/compose.yaml":    file(compose),
				"teams/b/dev/web/compose.yaml":     file(compose),
			},
			g:    Generator{Directories: []string{"stacks/*/*", "teams/*/prod/*"}},
			want: []string{"api=teams/a/prod/api", "blog=stacks/us/blog", "shop=stacks/eu/shop"},
		},
		{
			name: "overlapping globs give a directory once",
			fsys: fstest.MapFS{"apps/shop/compose.yaml": file(compose)},
			g:    Generator{Directories: []string{"apps/*", "apps/shop", "apps/s*"}},
			want: []string{"shop=apps/shop"},
		},
		{
			name: "literal glob for a missing directory",
			fsys: fstest.MapFS{"apps/shop/compose.yaml": file(compose)},
			g:    Generator{Directories: []string{"nothing/here"}},
			want: []string{},
		},
		{
			name: "names from directory names",
			fsys: fstest.MapFS{
				"apps/My_Shop/compose.yaml": file(compose),
				"apps/2048/compose.yaml":    file(compose),
			},
			g:    Generator{Directories: []string{"apps/*"}},
			want: []string{"app-2048=apps/2048", "my-shop=apps/My_Shop"},
		},
		{
			name: "two directories make one name",
			fsys: fstest.MapFS{
				"apps/My_Shop/compose.yaml": file(compose),
				"apps/my-shop/compose.yaml": file(compose),
			},
			g:       Generator{Directories: []string{"apps/*"}},
			wantErr: "apps/My_Shop and apps/my-shop both make app my-shop: rename one or exclude it",
		},
		{
			name: "the same base name under two stacks",
			fsys: fstest.MapFS{
				"stacks/a/prod/compose.yaml": file(compose),
				"stacks/b/prod/compose.yaml": file(compose),
			},
			g:       Generator{Directories: []string{"stacks/*/prod"}},
			wantErr: "stacks/a/prod and stacks/b/prod both make app prod: rename one or exclude it",
		},
		{
			name: "a collision with an excluded directory is none",
			fsys: fstest.MapFS{
				"apps/My_Shop/compose.yaml": file(compose),
				"apps/my-shop/compose.yaml": file(compose),
			},
			g:    Generator{Directories: []string{"apps/*"}, Exclude: []string{"apps/My_Shop"}},
			want: []string{"my-shop=apps/my-shop"},
		},
		{
			name: "a name with nothing usable",
			fsys: fstest.MapFS{
				"apps/___/compose.yaml":  file(compose),
				"apps/shop/compose.yaml": file(compose),
			},
			g:       Generator{Directories: []string{"apps/*"}},
			wantErr: "apps/___: the directory name leaves no usable app name (it needs a letter or digit): rename it or exclude it",
		},
		{
			name: "every error at once",
			fsys: fstest.MapFS{
				"apps/___/compose.yaml":  file(compose),
				"apps/a_b/compose.yaml":  file(compose),
				"apps/a-b/compose.yaml":  file(compose),
				"apps/é/compose.yaml":    file(compose),
				"apps/fine/compose.yaml": file(compose),
			},
			g: Generator{Directories: []string{"apps/*"}},
			wantErr: "apps/___: the directory name leaves no usable app name (it needs a letter or digit): rename it or exclude it\n" +
				"apps/a-b and apps/a_b both make app a-b: rename one or exclude it\n" +
				"apps/é: the directory name leaves no usable app name (it needs a letter or digit): rename it or exclude it",
		},
		{
			name: "a directory without an app needs no usable name",
			fsys: fstest.MapFS{"apps/___/README.md": file("x")},
			g:    Generator{Directories: []string{"apps/*"}},
			want: []string{},
		},
		{
			name:    "an invalid generator",
			fsys:    fstest.MapFS{},
			g:       Generator{Directories: []string{"apps/["}},
			wantErr: `directories[0]: "apps/[" is not a valid glob: syntax error in pattern`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, err := Discover(tt.fsys, tt.g, 0)
			checkResult(t, apps, err, tt.want, tt.wantErr)
			for _, a := range apps {
				if a.At != a.Path {
					t.Errorf("app %s: At = %q, want its directory %q", a.Name, a.At, a.Path)
				}
			}
		})
	}
}

// checkResult compares Discover's result with the expected names or error.
func checkResult(t *testing.T, apps []App, err error, want []string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("no error, want %q (apps %v)", wantErr, names(apps))
		}
		if err.Error() != wantErr {
			t.Fatalf("error:\n%s\nwant:\n%s", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got := names(apps); !reflect.DeepEqual(got, want) {
		t.Errorf("apps = %v, want %v", got, want)
	}
}

func TestDiscoverMaxApps(t *testing.T) {
	fsys := fstest.MapFS{
		"apps/a/compose.yaml": file(compose),
		"apps/b/compose.yaml": file(compose),
		"apps/c/compose.yaml": file(compose),
		"apps.yaml":           file("apps:\n  - {name: a, path: a}\n  - {name: b, path: b}\n  - {name: c, path: c}\n"),
	}
	gens := map[string]Generator{
		"directories": {Directories: []string{"apps/*"}},
		"file":        {File: "apps.yaml"},
	}
	for gname, g := range gens {
		for _, tt := range []struct {
			max     int
			wantErr string
		}{
			{0, ""},
			{-1, ""},
			{3, ""},
			{4, ""},
			{2, "the source declares 3 apps; maxApps is 2: raise maxApps in driftless.yaml or remove apps"},
			{1, "the source declares 3 apps; maxApps is 1: raise maxApps in driftless.yaml or remove apps"},
		} {
			apps, err := Discover(fsys, g, tt.max)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("%s, maxApps %d: error %q, want %q", gname, tt.max, got, tt.wantErr)
			}
			if tt.wantErr == "" && len(apps) != 3 {
				t.Errorf("%s, maxApps %d: %d apps, want 3", gname, tt.max, len(apps))
			}
		}
	}
}

func TestDiscoverFile(t *testing.T) {
	yes, no, two := true, false, 2
	fsys := fstest.MapFS{"driftless-apps.yaml": file(`# apps of this repository
apps:
  - name: shop
    path: apps/shop
    branch: main
    interval: 1m
    prune: true
    selfHeal: false
    profiles: [debug, metrics]
    release: {watch: 5m, unreadyFor: 1m, maxRestarts: 2}
  - name: blog
    path: .
    tag: v1.2.0
  - name: wiki
    path: apps/wiki
    profiles: []
    release: {}
`)}
	apps, err := Discover(fsys, Generator{File: "driftless-apps.yaml"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []App{
		{Name: "blog", Path: ".", Tag: "v1.2.0", At: "driftless-apps.yaml:11"},
		{Name: "shop", Path: "apps/shop", Branch: "main", Interval: "1m", Prune: &yes, SelfHeal: &no,
			Profiles: []string{"debug", "metrics"}, Release: &Release{Watch: "5m", UnreadyFor: "1m", MaxRestarts: &two},
			At: "driftless-apps.yaml:3"},
		{Name: "wiki", Path: "apps/wiki", Profiles: []string{}, Release: &Release{}, At: "driftless-apps.yaml:14"},
	}
	if !reflect.DeepEqual(apps, want) {
		t.Errorf("apps =\n%+v\nwant\n%+v", apps, want)
	}
}

func TestDiscoverFileEmptyList(t *testing.T) {
	for _, data := range []string{"apps: []\n", "apps: [] # none yet\n"} {
		apps, err := Discover(fstest.MapFS{"a.yaml": file(data)}, Generator{File: "a.yaml"}, 1)
		if err != nil || len(apps) != 0 {
			t.Errorf("%q: apps %v, error %v; want none, no error", data, apps, err)
		}
	}
}

func TestDiscoverFileMissing(t *testing.T) {
	_, err := Discover(fstest.MapFS{"other.yaml": file("apps: []\n")}, Generator{File: "deploy/driftless-apps.yaml"}, 0)
	want := "deploy/driftless-apps.yaml is missing at this revision: add it to the repository or change the file the source names in driftless.yaml (file does not exist)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
}

func TestDiscoverFileErrors(t *testing.T) {
	const f = "driftless-apps.yaml"
	tests := []struct {
		name string
		data string
		want string
	}{
		{"empty file", "", f + ": the file is empty: write apps: and a list of apps (apps: [] for none)"},
		{"only a comment", "# nothing\n", f + ": the file is empty: write apps: and a list of apps (apps: [] for none)"},
		{"syntax error", "apps:\n  - name: [shop\n", f + ":2: did not find expected ',' or ']'"},
		{"scanner error", "apps:\n\t- name: shop\n", f + ":2:1: a tab indents this line; YAML indentation must be spaces"},
		{"syntax error on the first line", "a: b: c\n", f + ":1: mapping values are not allowed in this context"},
		{"unknown anchor", "apps:\n  - name: shop\n    path: a\n    profiles: *x\n", f + ":4:15: unknown anchor 'x' referenced"},
		{"two documents", "apps: []\n---\napps: []\n", f + ":2:1: a second document: the file holds one document, with apps:"},
		{"not a mapping", "- shop\n", f + ":1:1: expected a mapping with apps:"},
		{"apps missing", "app: []\n", f + ":1:1: unknown key app: the file holds only apps:\n" + f + ":1:1: apps: is missing: write apps: and a list of apps (apps: [] for none)"},
		{"apps not a list", "apps: {shop: x}\n", f + ":1:7: apps: expected a list of apps"},
		{"apps null", "apps:\n", f + ":1:6: apps: expected a list of apps"},
		{"apps twice", "apps: []\napps: []\n", f + ":2:1: top level: key apps repeats the one on line 1"},
		{"entry not a mapping", "apps:\n  - shop\n", f + ":2:5: apps[0]: expected a mapping with name: and path:"},
		{"name and path missing", "apps:\n  - branch: main\n", f + ":2:5: apps[0]: name: is missing: give the app a name\n" +
			f + `:2:5: apps[0]: path: is missing: give the app's directory in the repository ("." for the root)`},
		{"invalid name", "apps:\n  - name: My_Shop\n    path: a\n", f + `:2:5: apps[0].name: "My_Shop" is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 63 characters (e.g. "my-shop")`},
		{"name with a digit first", "apps:\n  - name: 2048\n    path: a\n", f + `:2:5: apps[0].name: "2048" is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 63 characters (e.g. "app-2048")`},
		{"name with nothing usable", "apps:\n  - name: ___\n    path: a\n", f + `:2:5: apps[0].name: "___" is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 63 characters`},
		{"name too long", "apps:\n  - name: " + strings.Repeat("a", 64) + "\n    path: a\n", f + `:2:5: apps[0].name: "` + strings.Repeat("a", 64) + `" is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 63 characters (e.g. "` + strings.Repeat("a", 63) + `")`},
		{"name empty", "apps:\n  - name: \"\"\n    path: a\n", f + ":2:5: apps[0].name: has no value: give one or remove the key"},
		{"name null", "apps:\n  - name:\n    path: a\n", f + ":2:5: apps[0].name: has no value: give one or remove the key"},
		{"name a list", "apps:\n  - name: [a]\n    path: a\n", f + ":2:5: apps[0].name: expected a string"},
		{"duplicate name", "apps:\n  - name: shop\n    path: a\n  - name: blog\n    path: b\n  - path: c\n    name: shop\n",
			f + `:7:5: apps[2].name: "shop" is used by another entry (line 2)`},
		{"path absolute", "apps:\n  - name: shop\n    path: /srv/shop\n", f + `:3:5: apps[0].path: "/srv/shop" is absolute: write it relative to the repository root`},
		{"path escapes", "apps:\n  - name: shop\n    path: ../shop\n", f + `:3:5: apps[0].path: "../shop" leaves the repository`},
		{"path unclean", "apps:\n  - name: shop\n    path: apps/shop/\n", f + `:3:5: apps[0].path: "apps/shop/" is not clean: write it as "apps/shop"`},
		{"branch and tag", "apps:\n  - name: shop\n    path: a\n    branch: main\n    tag: v1\n", f + ":5:5: apps[0].tag: give branch or tag, not both"},
		{"repeated key", "apps:\n  - name: shop\n    path: a\n    name: blog\n", f + ":4:5: apps[0]: key name repeats the one on line 2"},
		{"unknown key", "apps:\n  - name: shop\n    path: a\n    image: nginx\n", f + ":4:5: apps[0].image: unknown key: the keys are name, path, branch, tag, interval, prune, selfHeal, profiles, release"},
		{"non-string key", "apps:\n  - name: shop\n    path: a\n    ? [x]\n    : 1\n", f + ":4:7: apps[0]: a key must be a plain string"},
		{"engines are local", "apps:\n  - name: shop\n    path: a\n    engines: [local, far]\n", f + ":4:5: apps[0].engines: the engines the app runs on is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"},
		{"allow is local", "apps:\n  - name: shop\n    path: a\n    allow: [docker-socket]\n", f + ":4:5: apps[0].allow: host power is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"},
		{"credentials are local", "apps:\n  - name: shop\n    path: a\n    passwordFile: /etc/pw\n    repo: https://example.com/x.git\n",
			f + ":4:5: apps[0].passwordFile: git credentials is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository\n" +
				f + ":5:5: apps[0].repo: the repository is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"},
		{"release check is local", "apps:\n  - name: shop\n    path: a\n    release:\n      watch: 5m\n      check: {url: http://x}\n",
			f + ":6:7: apps[0].release.check: the release check is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"},
		{"release unknown key", "apps:\n  - name: shop\n    path: a\n    release: {wait: 1m}\n", f + ":4:15: apps[0].release.wait: unknown key: the keys are watch, unreadyFor, maxRestarts"},
		{"release not a mapping", "apps:\n  - name: shop\n    path: a\n    release: 5m\n", f + ":4:5: apps[0].release: expected a mapping of watch, unreadyFor and maxRestarts"},
		{"maxRestarts negative", "apps:\n  - name: shop\n    path: a\n    release: {maxRestarts: -1}\n", f + ":4:15: apps[0].release.maxRestarts: expected a whole number, 0 or more"},
		{"maxRestarts a string", "apps:\n  - name: shop\n    path: a\n    release: {maxRestarts: \"2\"}\n", f + ":4:15: apps[0].release.maxRestarts: expected a whole number, 0 or more"},
		{"maxRestarts too large", "apps:\n  - name: shop\n    path: a\n    release: {maxRestarts: 99999999999999999999}\n", f + ":4:15: apps[0].release.maxRestarts: expected a whole number, 0 or more"},
		{"watch empty", "apps:\n  - name: shop\n    path: a\n    release: {watch: \"\"}\n", f + ":4:15: apps[0].release.watch: has no value: give one or remove the key"},
		{"prune not a bool", "apps:\n  - name: shop\n    path: a\n    prune: yes\n", f + ":4:5: apps[0].prune: expected true or false"},
		{"selfHeal not a bool", "apps:\n  - name: shop\n    path: a\n    selfHeal: \"true\"\n", f + ":4:5: apps[0].selfHeal: expected true or false"},
		{"profiles not a list", "apps:\n  - name: shop\n    path: a\n    profiles: debug\n", f + ":4:5: apps[0].profiles: expected a list of strings"},
		{"profiles item", "apps:\n  - name: shop\n    path: a\n    profiles: [debug, {x: 1}, \"\"]\n",
			f + ":4:23: apps[0].profiles[1]: expected a non-empty string\n" + f + ":4:31: apps[0].profiles[2]: expected a non-empty string"},
		{"interval a mapping", "apps:\n  - name: shop\n    path: a\n    interval: {every: 1m}\n", f + ":4:5: apps[0].interval: expected a string"},
		{"every error in every entry", "extra: 1\napps:\n  - name: Shop\n    path: /a\n  - name: blog\n    path: b\n    shared: true\n    target: x\n",
			f + ":1:1: unknown key extra: the file holds only apps:\n" +
				f + `:3:5: apps[0].name: "Shop" is not a valid app name: use lowercase letters, digits and '-', starting with a letter and not ending with '-', at most 63 characters (e.g. "shop")` + "\n" +
				f + `:4:5: apps[0].path: "/a" is absolute: write it relative to the repository root` + "\n" +
				f + ":7:5: apps[1].shared: sharing with other apps is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository\n" +
				f + ":8:5: apps[1].target: the deploy target is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, err := Discover(fstest.MapFS{f: file(tt.data)}, Generator{File: f}, 0)
			checkResult(t, apps, err, nil, tt.want)
		})
	}
}

// TestDiscoverFileLocalKeys checks that every local key gets the local
// setting message, not "unknown key".
func TestDiscoverFileLocalKeys(t *testing.T) {
	for key := range localKeys {
		data := "apps:\n  - name: shop\n    path: a\n    " + key + ": x\n"
		_, err := Discover(fstest.MapFS{"a.yaml": file(data)}, Generator{File: "a.yaml"}, 0)
		if err == nil || !strings.HasPrefix(err.Error(), "a.yaml:4:5: apps[0]."+key+": ") || !strings.Contains(err.Error(), "is a local setting") {
			t.Errorf("%s: error %v, want a local setting error at a.yaml:4:5", key, err)
		}
	}
}

// TestDiscoverConfigLocalKeys: in the agent's configuration from Git,
// every local key but repo (an app's own repository) is refused too.
func TestDiscoverConfigLocalKeys(t *testing.T) {
	for key := range localKeys {
		data := "apps:\n  - name: shop\n    path: a\n    " + key + ": x\n"
		_, err := Discover(fstest.MapFS{"d.yaml": file(data)}, Generator{Config: "d.yaml"}, 0)
		switch {
		case key == "repo" && err != nil:
			t.Errorf("repo: %v, want it accepted", err)
		case key != "repo" && (err == nil || !strings.HasPrefix(err.Error(), "d.yaml:4:5: apps[0]."+key+": ") || !strings.Contains(err.Error(), "is a local setting")):
			t.Errorf("%s: error %v, want a local setting error at d.yaml:4:5", key, err)
		}
	}
}

func TestDiscoverFileAnchors(t *testing.T) {
	data := "apps:\n  - name: shop\n    path: a\n    profiles: &p [debug]\n    release: &r {watch: 1m}\n  - name: blog\n    path: b\n    profiles: *p\n    release: *r\n"
	apps, err := Discover(fstest.MapFS{"a.yaml": file(data)}, Generator{File: "a.yaml"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if !reflect.DeepEqual(a.Profiles, []string{"debug"}) || a.Release == nil || a.Release.Watch != "1m" {
			t.Errorf("app %s: profiles %v, release %+v; want the anchored ones", a.Name, a.Profiles, a.Release)
		}
	}
}

func FuzzDiscoverFile(f *testing.F) {
	f.Add([]byte("apps:\n  - name: shop\n    path: apps/shop\n    branch: main\n    release: {watch: 5m, maxRestarts: 2}\n"), false)
	f.Add([]byte("apps: []\n"), false)
	f.Add([]byte("apps:\n  - &a {name: a, path: .}\n  - *a\n"), false)
	f.Add([]byte("apps:\n  - name: shop\n    path: ../x\n    allow: [x]\n    profiles: [a, b]\n    prune: true\n"), false)
	f.Add([]byte("a: &x [*x]\n"), false)
	f.Add([]byte("listen: :8080\napps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n    path: deploy\n"), true)
	f.Add([]byte("apps:\n  - {name: a, repo: \"https://u:p@h/r\", path: .}\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, config bool) {
		g := Generator{File: "d.yaml"}
		if config {
			g = Generator{Config: "d.yaml"}
		}
		apps, err := Discover(fstest.MapFS{"d.yaml": {Data: data}}, g, 0)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "d.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, a := range apps {
			if !validName(a.Name) {
				t.Errorf("invalid name %q", a.Name)
			}
			if a.Path == "" || path.Clean(a.Path) != a.Path || path.IsAbs(a.Path) || a.Path == ".." || strings.HasPrefix(a.Path, "../") {
				t.Errorf("app %s: bad path %q", a.Name, a.Path)
			}
			if seen[a.Name] {
				t.Errorf("name %q twice", a.Name)
			}
			seen[a.Name] = true
			if a.Branch != "" && a.Tag != "" {
				t.Errorf("app %s: both branch and tag", a.Name)
			}
			if a.Repo != "" && !config {
				t.Errorf("app %s: a repo from a driftless-apps.yaml", a.Name)
			}
		}
	})
}

func TestDiscoverConfig(t *testing.T) {
	const f = "driftless.yaml"
	localMsg := func(line, col int, field, what string) string {
		return fmt.Sprintf("%s:%d:%d: apps[0].%s: %s is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository", f, line, col, field, what)
	}
	tests := []struct {
		name    string
		data    string
		want    []App
		wantErr string
	}{
		{
			name: "valid",
			data: "# the agent's apps\napps:\n  - name: shop\n    path: apps/shop\n    interval: 1m\n  - name: blog\n    path: .\n    tag: v1\n",
			want: []App{{Name: "blog", Path: ".", Tag: "v1", At: f + ":6"}, {Name: "shop", Path: "apps/shop", Interval: "1m", At: f + ":3"}},
		},
		{
			name: "repo key",
			data: "apps:\n  - name: shop\n    repo: https://git.example.com/acme/shop.git\n    path: deploy\n    branch: prod\n",
			want: []App{{Name: "shop", Repo: "https://git.example.com/acme/shop.git", Path: "deploy", Branch: "prod", At: f + ":2"}},
		},
		{
			name:    "repo with a password",
			data:    "apps:\n  - name: shop\n    repo: https://me:secret@git.example.com/acme/shop.git\n    path: deploy\n",
			wantErr: f + ":3:5: apps[0].repo: the URL contains a password: credentials are local settings, given by the source's template in the agent's driftless.yaml",
		},
		{
			name:    "repo empty",
			data:    "apps:\n  - name: shop\n    repo: \"\"\n    path: deploy\n",
			wantErr: f + ":3:5: apps[0].repo: has no value: give one or remove the key",
		},
		{
			name:    "refused local key",
			data:    "apps:\n  - name: shop\n    path: a\n    hostPaths: [/srv]\n",
			wantErr: localMsg(4, 5, "hostPaths", "host power"),
		},
		{
			name:    "refused credentials",
			data:    "apps:\n  - name: shop\n    repo: https://git.example.com/x.git\n    path: a\n    tokenFile: /etc/token\n",
			wantErr: localMsg(5, 5, "tokenFile", "git credentials"),
		},
		{
			name:    "unknown key lists repo",
			data:    "apps:\n  - name: shop\n    path: a\n    image: nginx\n",
			wantErr: f + ":4:5: apps[0].image: unknown key: the keys are name, repo, path, branch, tag, interval, prune, selfHeal, profiles, release",
		},
		{
			name: "refused top-level keys",
			data: "listen: 0.0.0.0:8080\napps: []\nsources:\n  - name: x\nnotifications: []\n",
			wantErr: f + ":1:1: listen: only apps: is read from Git; listen belongs in the agent's local configuration (--config)\n" +
				f + ":3:1: sources: only apps: is read from Git; sources belongs in the agent's local configuration (--config)\n" +
				f + ":5:1: notifications: only apps: is read from Git; notifications belongs in the agent's local configuration (--config)",
		},
		{
			name:    "syntax error",
			data:    "apps:\n  - name: shop\n    path: [a\n",
			wantErr: f + ":3: did not find expected ',' or ']'",
		},
		{
			name:    "apps missing",
			data:    "dataDir: /var/lib/driftless\n",
			wantErr: f + ":1:1: dataDir: only apps: is read from Git; dataDir belongs in the agent's local configuration (--config)\n" + f + ":1:1: apps: is missing: write apps: and a list of apps (apps: [] for none)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, err := Discover(fstest.MapFS{f: file(tt.data)}, Generator{Config: f}, 0)
			if tt.wantErr != "" {
				checkResult(t, apps, err, nil, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(apps, tt.want) {
				t.Errorf("apps =\n%+v\nwant\n%+v", apps, tt.want)
			}
		})
	}
}

// TestDiscoverFileRefusesRepo: a driftless-apps.yaml entry names no
// repository; only the agent's configuration from Git does.
func TestDiscoverFileRefusesRepo(t *testing.T) {
	data := "apps:\n  - name: shop\n    repo: https://git.example.com/x.git\n    path: a\n"
	_, err := Discover(fstest.MapFS{"a.yaml": file(data)}, Generator{File: "a.yaml"}, 0)
	want := "a.yaml:3:5: apps[0].repo: the repository is a local setting: it is given by the source's template in the agent's driftless.yaml, never by the repository"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
