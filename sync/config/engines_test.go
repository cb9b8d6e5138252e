package config

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEngines(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	const app = "  - name: shop\n    repo: https://git.example.com/shop.git\n"
	const tlsKeys = "    tls: {caFile: ca.pem, certFile: cert.pem, keyFile: key.pem}\n"
	tests := []struct {
		name, yaml string
		want       string // an error that must be in the message; "" = valid
		check      func(t *testing.T, cfg Config)
	}{
		{name: "unix and tls", yaml: "engines:\n  - {name: a, host: unix:///run/a.sock}\n  - name: edge\n    host: tcp://10.0.0.5:2376\n" + tlsKeys + "apps:\n" + app + "    engine: edge\n",
			check: func(t *testing.T, cfg Config) {
				a, edge := cfg.Engines[0], cfg.Engines[1]
				if a.Remote() || !edge.Remote() || edge.TLS.CAFile != filepath.Join(dir, "ca.pem") {
					t.Errorf("engines = %+v %+v, want a on this host, edge remote with its TLS files", a, edge)
				}
				if shop := cfg.Apps[0]; shop.Engine != "edge" || !shop.RemoteEngine || shop.LoadOptions().RemoteEngine != "edge" {
					t.Errorf("shop = engine %q remote %v, want edge, remote", shop.Engine, shop.RemoteEngine)
				}
			}},
		{name: "local by name", yaml: "apps:\n" + app + "    engine: local\n",
			check: func(t *testing.T, cfg Config) {
				if cfg.Apps[0].Engine != "" || cfg.Apps[0].EngineName() != LocalEngine {
					t.Errorf("engine %q, want the local engine", cfg.Apps[0].Engine)
				}
			}},
		{name: "ssh", yaml: "engines:\n  - {name: a, host: 'ssh://deploy@edge:2222', sshKeyFile: key.pem, knownHostsFile: ca.pem}\napps:\n" + app + "    engine: a\n",
			check: func(t *testing.T, cfg Config) {
				if e := cfg.Engines[0]; !e.Remote() || e.SSHKeyFile != filepath.Join(dir, "key.pem") || !cfg.Apps[0].RemoteEngine {
					t.Errorf("ssh engine = %+v, app remote %v; want a remote engine with its key file", e, cfg.Apps[0].RemoteEngine)
				}
			}},
		{name: "unknown engine", yaml: "engines:\n  - {name: a, host: unix:///run/a.sock}\napps:\n" + app + "    engine: edge\n",
			want: `apps[0] (shop): engine: "edge" is not a known engine (known: local, a); declare it under engines: in driftless.yaml first`},
		{name: "unknown engine in a source's template", yaml: "sources:\n  - name: infra\n    repo: https://git.example.com/infra.git\n    directories: ['apps/*']\n    template: {engine: edge}\n",
			want: `sources[0] (infra): template: engine: "edge" is not a known engine (known: local)`},
		{name: "tcp without tls", yaml: "engines:\n  - {name: edge, host: 'tcp://10.0.0.5:2375'}\napps:\n" + app,
			want: "engines[0] (edge): host: tcp://10.0.0.5:2375 without tls: anyone who can reach the port controls the engine and its host; give tls: {caFile, certFile, keyFile}, or set allowInsecureEngine: true"},
		{name: "tcp without tls, allowed", yaml: "engines:\n  - {name: edge, host: 'tcp://10.0.0.5:2375', allowInsecureEngine: true}\napps:\n" + app},
		{name: "tls file missing", yaml: "engines:\n  - name: edge\n    host: tcp://10.0.0.5:2376\n    tls: {caFile: ca.pem, certFile: nope.pem, keyFile: key.pem}\napps:\n" + app, want: "tls.certFile: stat "},
		{name: "local redefined", yaml: "engines:\n  - {name: local, host: unix:///run/a.sock}\napps:\n" + app, want: `engines[0] (local): name: "local" is the agent's own engine`},
		{name: "duplicate", yaml: "engines:\n  - {name: a, host: unix:///run/a.sock}\n  - {name: a, host: unix:///run/b.sock}\napps:\n" + app, want: `engines[1] (a): name: "a" is used by another engine`},
		{name: "ssh key missing", yaml: "engines:\n  - {name: a, host: 'ssh://deploy@edge', sshKeyFile: id_nope}\napps:\n" + app, want: "engines[0] (a): sshKeyFile: stat "},
		{name: "ssh with tls", yaml: "engines:\n  - name: a\n    host: ssh://deploy@edge\n" + tlsKeys + "apps:\n" + app, want: "an ssh:// engine is reached through ssh"},
		{name: "ssh key on tcp", yaml: "engines:\n  - {name: a, host: 'tcp://127.0.0.1:2375', allowInsecureEngine: true, sshKeyFile: key.pem}\napps:\n" + app, want: "sshKeyFile and knownHostsFile are for ssh:// engines"},
		{name: "one app on several engines", yaml: "engines:\n  - {name: far, host: 'ssh://deploy@edge'}\napps:\n" + app + "    engines: [local, far]\n  - name: blog\n    repo: https://git.example.com/blog.git\n",
			check: func(t *testing.T, cfg Config) {
				var got []string
				for _, a := range cfg.Apps {
					got = append(got, a.Name+" "+a.NameOnEngine()+" "+a.EngineName())
				}
				if want := []string{"shop@local shop local", "shop@far shop far", "blog blog local"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
					t.Errorf("apps %q, want %q", got, want)
				}
				if far := cfg.Apps[1]; !far.RemoteEngine || far.LoadOptions().RemoteEngine != "far" || cfg.Apps[0].RemoteEngine {
					t.Errorf("shop@far remote %v, shop@local remote %v; want only shop@far remote", far.RemoteEngine, cfg.Apps[0].RemoteEngine)
				}
			}},
		{name: "engine and engines", yaml: "engines:\n  - {name: far, host: 'ssh://deploy@edge'}\napps:\n" + app + "    engine: far\n    engines: [far]\n", want: "apps[0] (shop): engine and engines: set one"},
		{name: "engines empty", yaml: "apps:\n" + app + "    engines: []\n", want: "apps[0] (shop): engines: empty"},
		{name: "engine listed twice", yaml: "apps:\n" + app + "    engines: [local, local]\n", want: `apps[0] (shop): engines[1]: "local" is listed twice`},
		{name: "unknown engine in engines", yaml: "apps:\n" + app + "    engines: [local, edge]\n", want: `apps (shop@edge): engine: "edge" is not a known engine`},
		{name: "two engines on this host", yaml: "engines:\n  - {name: a, host: unix:///run/a.sock}\napps:\n" + app + "    engines: [local, a]\n", want: "engines: local, a are all on the agent's host"},
		{name: "engines in a source's template", yaml: "sources:\n  - name: infra\n    repo: https://git.example.com/infra.git\n    directories: ['apps/*']\n    template: {engines: [local]}\n", want: "template.engines: a source's apps run on one engine each"},
		{name: "swarm app on an engine", yaml: "engines:\n  - {name: a, host: unix:///run/a.sock}\napps:\n" + app + "    target: swarm\n    engine: a\n", want: "target: swarm runs on the Swarm manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig([]byte(tt.yaml), dir, func(string) string { return "" })
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one with %q", err, tt.want)
			case tt.check != nil:
				tt.check(t, cfg)
			}
		})
	}
}

func TestEngineRemote(t *testing.T) {
	for host, remote := range map[string]bool{
		"unix:///run/docker.sock": false, "tcp://127.0.0.1:2376": false, "tcp://localhost:2376": false, "tcp://[::1]:2376": false,
		"tcp://10.0.0.5:2376": true, "tcp://docker.example.com:2376": true, "ssh://deploy@127.0.0.1": true,
	} {
		if got := (EngineConfig{Host: host}).Remote(); got != remote {
			t.Errorf("%s: remote %v, want %v", host, got, remote)
		}
	}
}

func TestLoadEngineReadsOnlyEngines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "driftless.yaml")
	// The apps need a secret from the agent's environment: a one-shot
	// command that only wants the engine must not need it.
	body := "engines:\n  - {name: edge, host: 'tcp://10.0.0.5:2375', allowInsecureEngine: true}\napps:\n  - {name: shop, repo: https://git.example.com/shop.git, passwordEnv: NOT_SET_HERE}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := LoadEngine(path, "edge")
	if err != nil || e.Host != "tcp://10.0.0.5:2375" || !e.Remote() {
		t.Fatalf("LoadEngine(edge) = %+v, %v", e, err)
	}
	if _, err := LoadEngine(path, "nope"); err == nil || !strings.Contains(err.Error(), `no engine "nope" under engines: (known: local, edge)`) {
		t.Errorf("LoadEngine(nope) = %v, want the known engines named", err)
	}
	if err := os.WriteFile(path, []byte("engines:\n  - {name: edge, host: 'tcp://10.0.0.5:2375'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEngine(path, "edge"); err == nil || !strings.Contains(err.Error(), "allowInsecureEngine") {
		t.Errorf("LoadEngine of plain tcp without TLS = %v, want it refused as the agent refuses it", err)
	}
}

// TestEngineFromDockerContext: context: NAME reads the host and TLS files
// of a Docker context as `docker --context NAME` does; a missing context,
// one that skips TLS verification, or context with host is refused.
func TestEngineFromDockerContext(t *testing.T) {
	dockerConfig := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	writeContext := func(name, meta string, tls bool) {
		sum := sha256.Sum256([]byte(name))
		id := hex.EncodeToString(sum[:])
		metaDir := filepath.Join(dockerConfig, "contexts", "meta", id)
		if err := os.MkdirAll(metaDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(metaDir, "meta.json"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
		if tls {
			tlsDir := filepath.Join(dockerConfig, "contexts", "tls", id, "docker")
			if err := os.MkdirAll(tlsDir, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
				if err := os.WriteFile(filepath.Join(tlsDir, f), []byte("pem"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	writeContext("edge", `{"Name":"edge","Metadata":{},"Endpoints":{"docker":{"Host":"tcp://10.0.0.5:2376","SkipTLSVerify":false}}}`, true)
	writeContext("lax", `{"Name":"lax","Metadata":{},"Endpoints":{"docker":{"Host":"tcp://10.0.0.6:2376","SkipTLSVerify":true}}}`, false)
	path := filepath.Join(t.TempDir(), "driftless.yaml")
	load := func(entry string) (EngineConfig, error) {
		if err := os.WriteFile(path, []byte("engines:\n  - "+entry+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadEngine(path, "e")
	}
	e, err := load("{name: e, context: edge}")
	if err != nil || e.Host != "tcp://10.0.0.5:2376" || e.TLS == nil || !strings.HasSuffix(e.TLS.CAFile, filepath.Join("docker", "ca.pem")) {
		t.Fatalf("context edge: %+v (TLS %+v), %v", e, e.TLS, err)
	}
	for entry, want := range map[string]string{
		"{name: e, context: nope}":                         `no Docker context "nope" in ` + dockerConfig,
		"{name: e, context: lax}":                          "skips TLS verification",
		"{name: e, context: edge, host: 'unix:///x.sock'}": "give host (and tls) or context, not both",
	} {
		if _, err := load(entry); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", entry, err, want)
		}
	}
}
