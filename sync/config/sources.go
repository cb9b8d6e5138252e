package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/sources"
)

// Defaults of a source's limits.
const (
	DefaultMaxApps     = 50
	DefaultMaxPreviews = 10
)

// SourceConfig is one `sources:` entry: a repository whose tree says which
// apps exist. Every app it generates starts as a copy of App — the source's
// repository access plus its template of local settings — with the name
// and path the generator gives. Nothing the repository says can widen App.
type SourceConfig struct {
	Name      string
	Generator sources.Generator
	// Prune removes an app whose directory or entry left Git (containers
	// and networks; volumes are kept). Without it the app stays, shown as
	// "no longer in Git", and nothing of it is touched.
	Prune   bool
	MaxApps int
	// App is the template of every generated app: repo, branch or tag,
	// credentials, verify, webhook secret, and the template: settings.
	// Its Name is the source's and its Path "": the generator sets both.
	App AppConfig
}

// fileSource is a `sources:` entry. The repository keys are an app's
// (name, repo, branch, credentials, verify, ...), written inline; the
// per-app settings go under template:.
type fileSource struct {
	fileAppConfig
	Directories []string       `json:"directories"`
	Exclude     []string       `json:"exclude"`
	File        string         `json:"file"`
	MaxApps     *int           `json:"maxApps"`
	Template    *fileAppConfig `json:"template"`
}

// sourceKeys are the keys of fileAppConfig a source itself takes: where
// the repository is and how to reach and trust it. The other keys of an
// app belong under template:.
var sourceKeys = []string{"name", "repo", "branch", "tag", "interval", "prune",
	"usernameEnv", "passwordEnv", "passwordFile", "tokenFile", "sshKeyFile", "sshKeyPassphraseEnv", "knownHostsFile", "insecureIgnoreHostKey",
	"webhookSecretEnv", "webhookSecretFile", "verify", "allowInsecureTransport", "onForcePush", "commitURLTemplate", "treeURLTemplate"}

// templateRefused are the source keys a template may not set: they say
// which repository the apps come from and how it is trusted.
var templateRefused = []string{"name", "repo", "branch", "tag", "commit", "path",
	"usernameEnv", "passwordEnv", "passwordFile", "tokenFile", "sshKeyFile", "sshKeyPassphraseEnv", "knownHostsFile", "insecureIgnoreHostKey",
	"webhookSecretEnv", "webhookSecretFile", "verify", "allowInsecureTransport"}

// setKeys are the JSON names of fa's fields that are set.
func setKeys(fa fileAppConfig) []string {
	var out []string
	v := reflect.ValueOf(fa)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			continue
		}
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// parseSource reads one sources: entry.
func parseSource(fs fileSource, globalSecret string, rel func(string) string, secret func(what, env, file string) (string, error), getenv func(string) string) (SourceConfig, []error) {
	var errs []error
	for _, k := range setKeys(fs.fileAppConfig) {
		if !slices.Contains(sourceKeys, k) {
			errs = append(errs, fmt.Errorf("%s: a setting of the generated apps: put it under template:", k))
		}
	}
	tmpl := fileAppConfig{}
	if fs.Template != nil {
		tmpl = *fs.Template
		for _, k := range setKeys(tmpl) {
			if slices.Contains(templateRefused, k) {
				errs = append(errs, fmt.Errorf("template.%s: set on the source itself, not in its template (the generator gives each app its name and path)", k))
			}
		}
	}
	if tmpl.Notifications != nil || tmpl.CommitStatus != nil {
		errs = append(errs, errors.New("template: notifications and commitStatus are not supported for generated apps yet; the global notifications: cover every app"))
	}
	// The app template: the source's repository keys over the template's
	// settings. The source's prune is about whole apps; the template's is
	// the apps' own.
	merged := tmpl
	src := fs.fileAppConfig
	merged.Name, merged.Repo, merged.Branch, merged.Tag = src.Name, src.Repo, src.Branch, src.Tag
	merged.UsernameEnv, merged.PasswordEnv, merged.PasswordFile, merged.TokenFile = src.UsernameEnv, src.PasswordEnv, src.PasswordFile, src.TokenFile
	merged.SSHKeyFile, merged.SSHKeyPassphraseEnv, merged.KnownHostsFile, merged.InsecureIgnoreHostKey = src.SSHKeyFile, src.SSHKeyPassphraseEnv, src.KnownHostsFile, src.InsecureIgnoreHostKey
	merged.WebhookSecretEnv, merged.WebhookSecretFile, merged.Verify = src.WebhookSecretEnv, src.WebhookSecretFile, src.Verify
	merged.AllowInsecureTransport, merged.OnForcePush = src.AllowInsecureTransport, src.OnForcePush
	merged.CommitURLTemplate, merged.TreeURLTemplate = src.CommitURLTemplate, src.TreeURLTemplate
	if merged.Interval == "" {
		merged.Interval = src.Interval
	}
	app, appErrs := parseAppConfig(merged, rel, secret, getenv)
	errs = append(errs, appErrs...)
	if app.WebhookSecret == "" {
		app.WebhookSecret = globalSecret
	}
	app.Source = src.Name
	sc := SourceConfig{Name: src.Name, Prune: src.Prune, MaxApps: DefaultMaxApps, App: app,
		Generator: sources.Generator{Directories: fs.Directories, Exclude: fs.Exclude, File: fs.File}}
	if fs.MaxApps != nil {
		sc.MaxApps = *fs.MaxApps
		if sc.MaxApps < 1 {
			errs = append(errs, fmt.Errorf("maxApps: %d must be 1 or more", sc.MaxApps))
		}
	}
	if len(fs.Directories) == 0 && fs.File == "" {
		errs = append(errs, errors.New("no generator: set directories: (globs of app directories, like ['apps/*']) or file: (a driftless-apps.yaml in the repository)"))
	} else if err := sc.Generator.Validate(); err != nil {
		errs = append(errs, err)
	}
	return sc, errs
}

// parseSources reads sources:.
func parseSources(list []fileSource, globalSecret string, rel func(string) string, secret func(what, env, file string) (string, error), getenv func(string) string) ([]SourceConfig, []error) {
	var out []SourceConfig
	var errs []error
	seen := map[string]bool{}
	for i, fs := range list {
		where := fmt.Sprintf("sources[%d]", i)
		if fs.Name != "" {
			where = fmt.Sprintf("sources[%d] (%s)", i, fs.Name)
		}
		sc, scErrs := parseSource(fs, globalSecret, rel, secret, getenv)
		for _, e := range scErrs {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		if seen[fs.Name] && fs.Name != "" {
			errs = append(errs, fmt.Errorf("%s: name: %q is used by another source; source names must be unique", where, fs.Name))
		}
		seen[fs.Name] = true
		out = append(out, sc)
	}
	return out, errs
}

// AppFor is the configuration of one app the source declares: the
// template with the app's name and path, and what a driftless-apps.yaml
// entry may choose (ref, interval, prune, self-heal, profiles, and the
// watch of its releases — never the HTTP check, which the agent fetches).
func (s SourceConfig) AppFor(g sources.App) (AppConfig, error) {
	app := s.App
	app.Name, app.Path, app.Source = g.Name, g.Path, s.Name
	if !manifest.ValidName(g.Name) {
		return AppConfig{}, fmt.Errorf("%s: %q is not a valid app name", g.At, g.Name)
	}
	if g.Branch != "" || g.Tag != "" {
		app.Branch, app.Tag, app.Commit = g.Branch, g.Tag, ""
	}
	if g.Interval != "" {
		if _, err := ParseSchedule(g.Interval); err != nil {
			return AppConfig{}, fmt.Errorf("%s: interval: %w", g.At, err)
		}
		app.Interval = g.Interval
	}
	if g.Prune != nil {
		app.Prune = *g.Prune
	}
	if g.SelfHeal != nil {
		app.SelfHeal = *g.SelfHeal
	}
	if g.Profiles != nil {
		app.Profiles = slices.Clone(g.Profiles)
	}
	if r := g.Release; r != nil {
		fr := fileRelease{Watch: r.Watch, UnreadyFor: r.UnreadyFor, MaxRestarts: r.MaxRestarts}
		if fr.Watch == "" && app.Release.Watch > 0 {
			fr.Watch = app.Release.Watch.String()
		}
		if fr.UnreadyFor == "" && app.Release.UnreadyFor > 0 {
			fr.UnreadyFor = app.Release.UnreadyFor.String()
		}
		if fr.MaxRestarts == nil {
			fr.MaxRestarts = &app.Release.MaxRestarts
		}
		rules, errs := fr.parse()
		if len(errs) > 0 {
			return AppConfig{}, fmt.Errorf("%s: %w", g.At, errors.Join(errs...))
		}
		rules.Check = app.Release.Check
		app.Release = rules
	}
	return app, nil
}

// AppsFor is the configuration of every app the source declares.
func (s SourceConfig) AppsFor(apps []sources.App) ([]AppConfig, error) {
	var errs []error
	out := make([]AppConfig, 0, len(apps))
	for _, g := range apps {
		cfg, err := s.AppFor(g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, cfg)
	}
	return out, errors.Join(errs...)
}

// SameGenerated reports whether a generated app's configuration is
// unchanged in what a source or its file can change.
func (c AppConfig) SameGenerated(o AppConfig) bool {
	return c.Path == o.Path && c.Branch == o.Branch && c.Tag == o.Tag && c.Interval == o.Interval &&
		c.Prune == o.Prune && c.SelfHeal == o.SelfHeal && slices.Equal(c.Profiles, o.Profiles) && c.Release == o.Release
}
