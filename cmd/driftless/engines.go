package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/dockerssh"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
)

// namedEngines are the agent's engines of engines:, by name.
type namedEngines map[string]*deploy.Engine

// connectNamedEngines connects to each engine of engines: with the local
// engine's options (local), its own host, TLS or SSH files, and its own
// repository files, secret files and pulled-image records
// (DATA/engines/NAME/files, SECRETS/engines/NAME): each engine collects
// what its own containers no longer mount. An engine that may be on
// another host (EngineConfig.Remote) gets repository files copied into
// its containers instead (deploy.Options.Remote). State directories are shared,
// kept by app name. An engine that does not answer is not fatal: its apps
// show it unreachable until it does. An ssh:// engine is dialed through
// the system ssh client (deploy/dockerssh); closeDialers stops their
// shared SSH connections, after the engines are closed.
func connectNamedEngines(ctx context.Context, cfg config.Config, local deploy.Options, log *slog.Logger) (_ namedEngines, closeDialers func(), _ error) {
	out := namedEngines{}
	var dialers []*dockerssh.Dialer
	closeDialers = func() {
		for _, d := range dialers {
			if err := d.Close(); err != nil {
				log.Warn("closing an engine's SSH connection", "err", err)
			}
		}
	}
	secrets := cfg.SecretsDir
	if secrets == "" {
		secrets = hostfiles.DefaultSecretsDir()
	}
	for _, ec := range cfg.Engines {
		opts := local
		d, err := reach(ec, &opts)
		if err != nil {
			out.Close()
			closeDialers()
			return nil, nil, fmt.Errorf("engine %s: %w", ec.Name, err)
		}
		if d != nil {
			dialers = append(dialers, d)
		}
		opts.Credentials = cfg.LoginsFor(ec.Name, &registry.DockerConfig{Dir: registry.DockerConfigDir(os.Getenv)})
		opts.FilesDir = filepath.Join(cfg.DataDir, "engines", ec.Name, "files")
		opts.SecretsDir = filepath.Join(secrets, "engines", ec.Name)
		opts.Logger = log.With("engine", ec.Name)
		eng, err := deploy.New(ctx, opts)
		if err != nil {
			out.Close()
			closeDialers()
			return nil, nil, fmt.Errorf("engine %s: %w", ec.Name, err)
		}
		out[ec.Name] = eng
	}
	pingAll(ctx, out, log)
	return out, closeDialers, nil
}

// pingAll pings every engine at once, so that engines that do not answer
// delay the start by one timeout, not one each; an engine down is not
// fatal, only logged.
func pingAll(ctx context.Context, engines namedEngines, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for name, eng := range engines {
		wg.Go(func() {
			if err := eng.Ping(ctx); err != nil {
				log.Warn("engine unreachable at start; its apps show it until it answers", "engine", name, "err", err)
			}
		})
	}
	wg.Wait()
}

// reach points opts at the engine ec declares: its host, its TLS files,
// or for ssh:// a dialer through the system ssh client, which the caller
// closes after the engine.
func reach(ec config.EngineConfig, opts *deploy.Options) (*dockerssh.Dialer, error) {
	opts.Host = ec.Host
	opts.Remote = ec.Remote()
	if ec.TLS != nil {
		opts.TLS = &deploy.TLSFiles{CAFile: ec.TLS.CAFile, CertFile: ec.TLS.CertFile, KeyFile: ec.TLS.KeyFile}
	}
	if !ec.SSH() {
		return nil, nil
	}
	d, err := dockerssh.New(ec.Host, dockerssh.Options{KeyFile: ec.SSHKeyFile, KnownHostsFile: ec.KnownHostsFile})
	if err != nil {
		return nil, err
	}
	opts.Dial = d.DialContext
	return d, nil
}

// Close closes every engine.
func (n namedEngines) Close() {
	for _, e := range n {
		e.Close()
	}
}

// loop is the engines as the loop takes them.
func (n namedEngines) loop() map[string]loop.NamedEngine {
	out := make(map[string]loop.NamedEngine, len(n))
	for name, e := range n {
		out[name] = e
	}
	return out
}

// registerEngineMetrics exports each engine's own series (the view's
// divergence count, Docker requests): with an engine label once there are
// named engines, so that their series do not collide.
func registerEngineMetrics(reg prometheus.Registerer, local *deploy.Engine, named namedEngines) error {
	if len(named) == 0 {
		return reg.Register(local.Collector())
	}
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"engine": config.LocalEngine}, reg).Register(local.Collector()); err != nil {
		return fmt.Errorf("register engine metrics: %w", err)
	}
	for name, e := range named {
		if err := prometheus.WrapRegistererWith(prometheus.Labels{"engine": name}, reg).Register(e.Collector()); err != nil {
			return fmt.Errorf("register metrics of engine %s: %w", name, err)
		}
	}
	return nil
}

// engineFlag is --engine NAME with --config FILE: a one-shot command
// (diff, apply, logs) on an engine of a driftless.yaml's engines:,
// reached as the agent reaches it, instead of the one DOCKER_HOST names.
type engineFlag struct{ name, config string }

func (f *engineFlag) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&f.name, "engine", "", "work on this engine of --config's engines: (default: the engine DOCKER_HOST names)")
	fs.StringVar(&f.config, "config", "", "the driftless.yaml whose engines: declares --engine")
}

// options points opts at the engine --engine names. remote is its name
// when it may be on another host (for load.Options.RemoteEngine: what it
// cannot see is refused as the agent refuses it); done closes its SSH
// connection, after the engine.
func (f *engineFlag) options(opts *deploy.Options, target string) (remote string, done func(), err error) {
	done = func() {}
	switch {
	case f.name != "" && f.name != config.LocalEngine && target == manifest.TargetSwarm:
		return "", done, errors.New("--engine: target swarm runs on the Swarm manager DOCKER_HOST names; leave --engine out")
	case f.name == "" && f.config != "":
		return "", done, errors.New("--config names the driftless.yaml of --engine: give --engine NAME too")
	case f.name == "" || f.name == config.LocalEngine:
		return "", done, nil
	case f.config == "":
		return "", done, fmt.Errorf("--engine %s: give --config driftless.yaml, whose engines: declares it", f.name)
	}
	ec, err := config.LoadEngine(f.config, f.name)
	if err != nil {
		return "", done, err
	}
	d, err := reach(ec, opts)
	if err != nil {
		return "", done, fmt.Errorf("engine %s: %w", ec.Name, err)
	}
	if d != nil {
		done = func() { _ = d.Close() }
	}
	if l, ok := opts.Credentials.(*registry.Logins); ok && len(ec.Registries) > 0 {
		// The engine's registries: before the others, as the agent has them.
		l.Global = append(slices.Clone(ec.Registries), l.Global...)
	}
	if ec.Remote() {
		remote = ec.Name
	}
	return remote, done, nil
}
