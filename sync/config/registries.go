package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/deploy/registry"
)

// fileRegistry is one entry of registries: in driftless.yaml. Secrets are
// named by reference (an environment variable or a file), never written
// inline.
type fileRegistry struct {
	Host         string `json:"host"`
	Username     string `json:"username"`
	UsernameEnv  string `json:"usernameEnv"`
	PasswordEnv  string `json:"passwordEnv"`
	PasswordFile string `json:"passwordFile"`
	TokenFile    string `json:"tokenFile"`
	// Password is only here to refuse it with a useful message.
	Password string `json:"password"`
}

// parseRegistries checks registry logins and reads their secrets.
func parseRegistries(field string, list []fileRegistry, secret func(what, env, file string) (string, error), getenv func(string) string) ([]registry.Login, []error) {
	var out []registry.Login
	var errs []error
	seen := map[string]bool{}
	for i, fr := range list {
		where := fmt.Sprintf("%s[%d]", field, i)
		if fr.Host != "" {
			where = fmt.Sprintf("%s[%d] (%s)", field, i, fr.Host)
		}
		l, err := parseRegistry(fr, secret, getenv)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if seen[l.Host] {
			errs = append(errs, fmt.Errorf("%s: host %s is listed twice", where, l.Host))
		}
		seen[l.Host] = true
		out = append(out, l)
	}
	return out, errs
}

func parseRegistry(fr fileRegistry, secret func(what, env, file string) (string, error), getenv func(string) string) (registry.Login, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(fr.Host), "https://"), "http://"), "/")
	l := registry.Login{Host: host}
	switch {
	case host == "":
		return l, errors.New("host: required (the registry as in image names: reg.example:5000, ghcr.io, docker.io)")
	case strings.Contains(host, "/"):
		return l, fmt.Errorf("host: %q must be a host[:port], without a path", fr.Host)
	case fr.Password != "":
		return l, errors.New("password: inline passwords are not accepted: use passwordEnv or passwordFile")
	case fr.Username != "" && fr.UsernameEnv != "":
		return l, errors.New("set username or usernameEnv, not both")
	case fr.TokenFile != "" && (fr.PasswordEnv != "" || fr.PasswordFile != ""):
		return l, errors.New("set tokenFile or password(Env|File), not both")
	}
	l.Username = fr.Username
	if fr.UsernameEnv != "" {
		if l.Username = getenv(fr.UsernameEnv); l.Username == "" {
			return l, fmt.Errorf("usernameEnv: environment variable %s is empty or not set", fr.UsernameEnv)
		}
	}
	var err error
	if fr.TokenFile != "" {
		l.Token, err = secret("token", "", fr.TokenFile)
		return l, err
	}
	if l.Password, err = secret("password", fr.PasswordEnv, fr.PasswordFile); err != nil {
		return l, err
	}
	switch {
	case l.Password == "":
		return l, errors.New("needs passwordEnv, passwordFile or tokenFile")
	case l.Username == "":
		return l, errors.New("a password needs username or usernameEnv")
	}
	return l, nil
}

// Logins are the registry credentials the config gives, per app and for
// all, over Docker's own config.json, for the agent's own engine.
func (c Config) Logins(docker *registry.DockerConfig) *registry.Logins {
	return c.LoginsFor(LocalEngine, docker)
}

// LoginsFor are the registry credentials of the engine called engine:
// an app's own first (by its name on its engine, which its pulls give),
// then the engine's registries:, then the global ones, then Docker's
// config.json.
func (c Config) LoginsFor(engine string, docker *registry.DockerConfig) *registry.Logins {
	l := &registry.Logins{Global: c.Registries, PerApp: map[string][]registry.Login{}, Docker: docker}
	for _, e := range c.Engines {
		if e.Name == engine && len(e.Registries) > 0 {
			l.Global = append(slices.Clone(e.Registries), c.Registries...)
		}
	}
	for _, a := range c.Apps {
		if len(a.Registries) > 0 {
			l.PerApp[a.NameOnEngine()] = a.Registries
		}
	}
	return l
}
