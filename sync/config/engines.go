package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/driftless-dev/driftless/deploy/dockerssh"
	"github.com/driftless-dev/driftless/deploy/registry"

	"github.com/driftless-dev/driftless/manifest"
)

// LocalEngine is the name of the agent's own engine (DOCKER_HOST or the
// default socket): the engine of an app that names none. It cannot be
// redefined under engines:.
const LocalEngine = "local"

// EngineConfig is one `engines:` entry: a Docker engine apps may be placed
// on with `engine: NAME`.
type EngineConfig struct {
	Name string
	// Host is unix:///path, tcp://host:port or ssh://[user@]host[:port],
	// written out or read from a Docker context (with its TLS files).
	Host string
	// TLS, for tcp://, verifies the engine with CAFile and authenticates
	// the agent with CertFile and KeyFile (as DOCKER_CERT_PATH's ca.pem,
	// cert.pem and key.pem). nil: plain TCP, which needs
	// AllowInsecureEngine.
	TLS *EngineTLS
	// AllowInsecureEngine accepts tcp:// without TLS: anyone who can
	// reach the port owns the engine and the host.
	AllowInsecureEngine bool
	// SSHKeyFile and KnownHostsFile, for ssh://, are the key the agent
	// logs in with ("": ssh's defaults) and the far side's host key
	// ("": ~/.ssh/known_hosts).
	SSHKeyFile, KnownHostsFile string
	// Registries are pull credentials for the apps placed on this engine,
	// before the global registries: (an app's own still come first).
	Registries []registry.Login
}

// EngineTLS are the files of an engine's TLS connection.
type EngineTLS struct {
	CAFile, CertFile, KeyFile string
}

// Remote reports whether the engine may be on another host: it then
// cannot see the agent's files (repository files, secrets, state
// directories) nor be reached by its readiness probes. A unix socket and
// TCP to a loopback address are on this host; an ssh:// engine is taken
// for another host, wherever it is.
func (e EngineConfig) Remote() bool {
	u, err := url.Parse(e.Host)
	if err != nil || u.Scheme == "unix" {
		return false
	}
	if u.Scheme == "ssh" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// SSH reports whether the engine is reached over ssh://.
func (e EngineConfig) SSH() bool { return strings.HasPrefix(e.Host, "ssh://") }

type fileEngine struct {
	Name                string         `json:"name"`
	Host                string         `json:"host"`
	Context             string         `json:"context"` // a Docker context's name, instead of host and tls
	TLS                 *fileEngineTLS `json:"tls"`
	AllowInsecureEngine bool           `json:"allowInsecureEngine"`
	SSHKeyFile          string         `json:"sshKeyFile"`
	KnownHostsFile      string         `json:"knownHostsFile"`
	Registries          []fileRegistry `json:"registries"`
}

type fileEngineTLS struct {
	CAFile   string `json:"caFile"`
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// parseEngines reads engines:.
func parseEngines(fes []fileEngine, rel func(string) string, secret func(what, env, file string) (string, error), getenv func(string) string) ([]EngineConfig, []error) {
	var out []EngineConfig
	var errs []error
	seen := map[string]bool{}
	for i, fe := range fes {
		where := fmt.Sprintf("engines[%d]", i)
		if fe.Name != "" {
			where = fmt.Sprintf("engines[%d] (%s)", i, fe.Name)
		}
		e, err := parseEngine(fe, rel)
		if err == nil {
			var regErrs []error
			e.Registries, regErrs = parseRegistries("registries", fe.Registries, secret, getenv)
			err = errors.Join(regErrs...)
		}
		if err == nil && seen[fe.Name] {
			err = fmt.Errorf("name: %q is used by another engine; engine names must be unique", fe.Name)
		}
		seen[fe.Name] = true
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		out = append(out, e)
	}
	return out, errs
}

func parseEngine(fe fileEngine, rel func(string) string) (EngineConfig, error) {
	if fe.Context != "" {
		if err := fromDockerContext(&fe); err != nil {
			return EngineConfig{Name: fe.Name}, err
		}
	}
	e := EngineConfig{Name: fe.Name, Host: fe.Host, AllowInsecureEngine: fe.AllowInsecureEngine, SSHKeyFile: rel(fe.SSHKeyFile), KnownHostsFile: rel(fe.KnownHostsFile)}
	switch {
	case fe.Name == LocalEngine:
		return e, fmt.Errorf("name: %q is the agent's own engine (DOCKER_HOST or the default socket) and cannot be redefined: choose another name", LocalEngine)
	case !validEngineName(fe.Name):
		return e, fmt.Errorf("name: %q is not a valid engine name: use lowercase letters, digits and '-', starting with a letter", fe.Name)
	}
	if fe.TLS != nil {
		e.TLS = &EngineTLS{CAFile: rel(fe.TLS.CAFile), CertFile: rel(fe.TLS.CertFile), KeyFile: rel(fe.TLS.KeyFile)}
	}
	u, err := url.Parse(fe.Host)
	if err != nil || fe.Host == "" {
		return e, fmt.Errorf("host: %q is not an engine address: use unix:///path/to/docker.sock, tcp://host:2376 or ssh://user@host", fe.Host)
	}
	if (e.SSHKeyFile != "" || e.KnownHostsFile != "") && u.Scheme != "ssh" {
		return e, errors.New("sshKeyFile and knownHostsFile are for ssh:// engines")
	}
	switch u.Scheme {
	case "unix":
		if u.Path == "" {
			return e, fmt.Errorf("host: %q names no socket: write unix:///path/to/docker.sock", fe.Host)
		}
		if e.TLS != nil {
			return e, errors.New("tls: a unix socket takes no TLS settings")
		}
		return e, nil
	case "tcp":
		if u.Port() == "" {
			return e, fmt.Errorf("host: %q has no port: write tcp://host:2376", fe.Host)
		}
		if e.TLS == nil {
			if !e.AllowInsecureEngine {
				return e, fmt.Errorf("host: %s without tls: anyone who can reach the port controls the engine and its host; give tls: {caFile, certFile, keyFile}, or set allowInsecureEngine: true on this engine to accept it", fe.Host)
			}
			return e, nil
		}
		return e, e.TLS.check()
	case "ssh":
		return e, checkSSH(e, u)
	}
	return e, fmt.Errorf("host: %q: the scheme %q is not supported: use unix://, tcp:// or ssh://", fe.Host, u.Scheme)
}

// checkSSH checks an ssh:// engine: an address deploy/dockerssh can
// dial (ssh://[user@]host[:port][/path/to/docker.sock], no password), no
// TLS, and the files it names readable.
func checkSSH(e EngineConfig, _ *url.URL) error {
	if e.TLS != nil {
		return errors.New("tls: an ssh:// engine is reached through ssh, which authenticates it by its host key: use knownHostsFile")
	}
	if _, err := dockerssh.ParseURL(e.Host); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	var errs []error
	for _, f := range [][2]string{{"sshKeyFile", e.SSHKeyFile}, {"knownHostsFile", e.KnownHostsFile}} {
		if f[1] == "" {
			continue
		}
		if _, err := os.Stat(f[1]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f[0], err))
		}
	}
	return errors.Join(errs...)
}

// check requires the three files to be given and readable.
func (t *EngineTLS) check() error {
	var errs []error
	for _, f := range [][2]string{{"caFile", t.CAFile}, {"certFile", t.CertFile}, {"keyFile", t.KeyFile}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("tls.%s: required", f[0]))
		} else if _, err := os.Stat(f[1]); err != nil {
			errs = append(errs, fmt.Errorf("tls.%s: %w", f[0], err))
		}
	}
	return errors.Join(errs...)
}

func validEngineName(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' })
}

// placeApps checks that every app's and source's engine is declared, and
// marks the apps placed on a remote engine.
func placeApps(cfg *Config) []error {
	known := map[string]EngineConfig{}
	for _, e := range cfg.Engines {
		known[e.Name] = e
	}
	names := []string{LocalEngine}
	for _, e := range cfg.Engines {
		names = append(names, e.Name)
	}
	var errs []error
	place := func(where string, app *AppConfig) {
		if app.Engine == "" || app.Engine == LocalEngine {
			app.Engine = ""
			return
		}
		if app.Target == manifest.TargetSwarm {
			errs = append(errs, fmt.Errorf("%s: engine: target: swarm runs on the Swarm manager the agent's own engine belongs to; leave engine: out", where))
			return
		}
		e, ok := known[app.Engine]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: engine: %q is not a known engine (known: %s); declare it under engines: in driftless.yaml first", where, app.Engine, strings.Join(names, ", ")))
			return
		}
		app.RemoteEngine = e.Remote()
	}
	for i := range cfg.Apps {
		where := fmt.Sprintf("apps[%d] (%s)", i, cfg.Apps[i].Name)
		if cfg.Apps[i].InstanceOf != "" {
			where = fmt.Sprintf("apps (%s)", cfg.Apps[i].Name) // i counts instances, not entries
		}
		place(where, &cfg.Apps[i])
	}
	for i := range cfg.Sources {
		place(fmt.Sprintf("sources[%d] (%s): template", i, cfg.Sources[i].Name), &cfg.Sources[i].App)
	}
	return errs
}

// EngineName is the engine the app is placed on; LocalEngine for the
// agent's own.
func (c AppConfig) EngineName() string {
	if c.Engine == "" {
		return LocalEngine
	}
	return c.Engine
}

// instancesOf expands an app declared with `engines: [a, b]` into one
// instance per engine, named APP@ENGINE, each with its own sync, health
// and history; an app without engines: is returned as is.
func instancesOf(app AppConfig, fa fileAppConfig) ([]AppConfig, []error) {
	if fa.Engines == nil {
		return []AppConfig{app}, nil
	}
	var errs []error
	if fa.Engine != "" {
		errs = append(errs, errors.New("engine and engines: set one (engines: lists every engine the app runs on)"))
	}
	if len(fa.Engines) == 0 {
		errs = append(errs, errors.New("engines: empty; list the engines the app runs on, or use engine: NAME"))
	}
	if app.Target == manifest.TargetSwarm {
		errs = append(errs, errors.New("engines: target: swarm runs on the Swarm manager the agent's own engine belongs to; leave engines: out"))
	}
	seen := map[string]bool{}
	var out []AppConfig
	for i, e := range fa.Engines {
		if seen[e] {
			errs = append(errs, fmt.Errorf("engines[%d]: %q is listed twice", i, e))
			continue
		}
		seen[e] = true
		inst := app
		inst.Name, inst.InstanceOf, inst.Engine = InstanceName(app.Name, e), app.Name, e
		out = append(out, inst)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// checkInstances refuses an app whose instances would share what the
// agent keeps on its own host by app name: two engines on this host
// would mount the same state directories.
func checkInstances(cfg *Config) []error {
	onHost := map[string][]string{}
	for _, a := range cfg.Apps {
		if a.InstanceOf != "" && !a.RemoteEngine {
			onHost[a.InstanceOf] = append(onHost[a.InstanceOf], a.EngineName())
		}
	}
	var errs []error
	for _, a := range cfg.Apps {
		if engines := onHost[a.InstanceOf]; a.InstanceOf != "" && len(engines) > 1 && engines[0] == a.EngineName() {
			errs = append(errs, fmt.Errorf("apps (%s): engines: %s are all on the agent's host, where the instances would share the app's state directories; list at most one engine on this host", a.InstanceOf, strings.Join(engines, ", ")))
		}
	}
	return errs
}
