package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// A repository file a service binds reaches Swarm tasks as a config named
// after its path and versioned by content, from either front end; on one
// engine it stays a bind mount.
func TestSwarmRepoFileBindsBecomeConfigs(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"compose", map[string]string{
			"compose.yaml":    "services:\n  web:\n    image: shop/web:1\n    volumes: [./conf/nginx.conf:/etc/nginx/nginx.conf:ro]\n",
			"conf/nginx.conf": "worker_processes 1;\n",
		}},
		{"native", map[string]string{
			"web.yaml":        "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: shop/web:1\n  binds: [{repoPath: conf/nginx.conf, mountPath: /etc/nginx/nginx.conf}]\n",
			"conf/nginx.conf": "worker_processes 1;\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := appdir.LoadWith(loadtest.ComposeFS(tt.files), ".", "shop", swarmOpts)
			if err != nil {
				t.Fatal(err)
			}
			binds := a.Service("web").Spec.Binds
			if len(binds) != 1 || binds[0].Object == nil || *binds[0].Object != (manifest.FileObject{Kind: manifest.FileConfig, Name: "conf-nginx.conf"}) || binds[0].MountPath != "/etc/nginx/nginx.conf" {
				t.Fatalf("binds = %+v, want conf/nginx.conf as config conf-nginx.conf at /etc/nginx/nginx.conf", binds)
			}
			if c := a.Content[binds[0].ContentHash]; c == nil || string(c.Files[0].Data) != "worker_processes 1;\n" {
				t.Errorf("the config's content is not loaded with the app: %+v", c)
			}
			one, err := appdir.LoadWith(loadtest.ComposeFS(tt.files), ".", "shop", load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if b := one.Service("web").Spec.Binds; len(b) != 1 || b[0].Object != nil {
				t.Errorf("one engine: binds = %+v, want a plain bind mount", b)
			}
		})
	}
}

func TestSwarmRepoFileRefusals(t *testing.T) {
	big := strings.Repeat("x", policy.MaxSwarmConfigBytes+1)
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"native directory",
			map[string]string{
				"web.yaml":    "apiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: web}\nspec:\n  image: shop/web:1\n  binds:\n    - {repoPath: conf, mountPath: /etc/conf}\n",
				"conf/a.conf": "x\n",
			},
			"web.yaml:7:7: spec.binds[0]: repository directory conf cannot be mounted into Swarm tasks (a task may run on another node): mount its files one by one (each becomes a Swarm config), declare them under configs:, or COPY them into an image with build: (target: swarm)"},
		{"file too large for a config",
			map[string]string{
				"compose.yaml": "services:\n  web:\n    image: shop/web:1\n    volumes: [./big.bin:/data/big.bin]\n",
				"big.bin":      big,
			},
			"compose.yaml:4:15: services.web.volumes[0]: big.bin holds 1024001 bytes, more than a Swarm config can hold (1000 KiB): COPY it into an image with build:, or put it in a volume (target: swarm)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := appdir.LoadWith(loadtest.ComposeFS(tt.files), ".", "shop", swarmOpts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

func TestRepoFileConfigName(t *testing.T) {
	tests := []struct{ app, path, want string }{
		{"shop", "nginx.conf", "nginx.conf"},
		{"shop", "conf/nginx.conf", "conf-nginx.conf"},
		{"shop", "conf/my file+1.conf", "conf-my-file-1.conf"},
		{"shop", ".hidden", "hidden"},
		// Cut from the front, so the versioned name fits Swarm's 64
		// characters and still ends in the file's name.
		{"shop", strings.Repeat("d/", 30) + "site.conf", "d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-d-site.conf"},
	}
	for _, tt := range tests {
		got := policy.RepoFileConfigName(tt.app, tt.path)
		if got != tt.want {
			t.Errorf("RepoFileConfigName(%q, %q) = %q, want %q", tt.app, tt.path, got, tt.want)
		}
		if n := len(tt.app) + 1 + len(got) + 9; n > policy.MaxSwarmObjectName {
			t.Errorf("%q: the versioned name has %d characters, more than Swarm's %d", tt.path, n, policy.MaxSwarmObjectName)
		}
	}
}

// build: is accepted on Swarm: the image is named after its context as on
// one engine, and pushed to the registry its image: names, if any.
func TestSwarmBuildAccepted(t *testing.T) {
	a, err := appdir.LoadWith(loadtest.ComposeFS(map[string]string{
		"compose.yaml":   "services:\n  web:\n    build: ./web\n    image: registry.example.com:5000/shop/web:latest\n  api:\n    build: ./api\n",
		"web/Dockerfile": "FROM scratch\n",
		"api/Dockerfile": "FROM scratch\nCOPY x /\n",
		"api/x":          "x\n",
	}), ".", "shop", swarmOpts)
	if err != nil {
		t.Fatal(err)
	}
	web, api := a.Service("web").Spec.Image, a.Service("api").Spec.Image
	if !strings.HasPrefix(web, "registry.example.com:5000/shop/web:tree-") || !strings.HasPrefix(api, "driftless/shop-api:tree-") {
		t.Fatalf("images = %s, %s; want content-addressed tags of the builds", web, api)
	}
	if got := a.Builds[web].PushRegistry(); got != "registry.example.com:5000" {
		t.Errorf("web pushes to %q, want registry.example.com:5000", got)
	}
	if got := a.Builds[api].PushRegistry(); got != "" {
		t.Errorf("api (no image:) pushes to %q, want nowhere", got)
	}
}

func TestPushRegistry(t *testing.T) {
	tests := []struct{ image, want string }{
		{"", ""},
		{"web", ""},
		{"acme/web", ""}, // Docker Hub only when written out
		{"docker.io/acme/web", "docker.io"},
		{"localhost/web", "localhost"},
		{"127.0.0.1:5000/shop/web:v1", "127.0.0.1:5000"},
		{"ghcr.io/acme/web", "ghcr.io"},
	}
	for _, tt := range tests {
		bc := &manifest.BuildContext{Build: manifest.Build{Image: tt.image}}
		if got := bc.PushRegistry(); got != tt.want {
			t.Errorf("PushRegistry(%q) = %q, want %q", tt.image, got, tt.want)
		}
	}
}
