package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

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
	// Branches, when set, makes the source a source of previews: an app
	// for each matching branch (instead of Generator).
	Branches *sources.Branches
	Preview  PreviewSettings
	// MaxPreviews bounds the previews a source keeps at once.
	MaxPreviews int
	// App is the template of every generated app: repo, branch or tag,
	// credentials, verify, webhook secret, and the template: settings.
	// Its Name is the source's and its Path "": the generator sets both.
	App AppConfig
}

// PreviewSettings say how a source of previews runs them.
type PreviewSettings struct {
	// PortsFrom..PortsTo is where previews' fixed host ports are
	// allocated, PerPreview to a preview; PerPreview 0: previews publish
	// no host port.
	PortsFrom, PortsTo, PerPreview int
	// URL is shown for each preview, from a text/template with .Branch,
	// .Slug and .App; "" shows none.
	URL *template.Template
	// TTL removes a preview whose branch has not moved for this long;
	// 0: never.
	TTL time.Duration
}

// Preview is what makes an app a preview of a branch.
type Preview struct {
	Branch string
	URL    string
	Ports  manifest.PortBlock
}

type fileBranches struct {
	Match string `json:"match"`
	Path  string `json:"path"`
}

type filePreview struct {
	Ports *struct {
		Range      string `json:"range"`
		PerPreview int    `json:"perPreview"`
	} `json:"ports"`
	URL string `json:"url"`
	TTL string `json:"ttl"`
}

// parse reads preview:.
func (fp *filePreview) parse() (PreviewSettings, []error) {
	var ps PreviewSettings
	if fp == nil {
		return ps, nil
	}
	var errs []error
	if p := fp.Ports; p != nil {
		lo, hi, ok := strings.Cut(p.Range, "-")
		from, err1 := strconv.Atoi(strings.TrimSpace(lo))
		to, err2 := strconv.Atoi(strings.TrimSpace(hi))
		switch {
		case !ok || err1 != nil || err2 != nil || from < 1 || to > 65535 || from > to:
			errs = append(errs, fmt.Errorf("preview.ports.range: %q is not a port range like 20000-20999", p.Range))
		default:
			ps.PortsFrom, ps.PortsTo = from, to
			ps.PerPreview = p.PerPreview
			if ps.PerPreview == 0 {
				ps.PerPreview = 10
			}
			if ps.PerPreview < 1 || ps.PerPreview > to-from+1 {
				errs = append(errs, fmt.Errorf("preview.ports.perPreview: %d must be between 1 and the range's %d ports", p.PerPreview, to-from+1))
			}
		}
	}
	if fp.URL != "" {
		t, err := template.New("url").Option("missingkey=error").Parse(fp.URL)
		if err == nil {
			err = t.Execute(io.Discard, previewURLData{Branch: "b", Slug: "b", App: "a"})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("preview.url: %v (use {{.Branch}}, {{.Slug}} or {{.App}})", err))
		} else {
			ps.URL = t
		}
	}
	if fp.TTL != "" {
		d, err := time.ParseDuration(fp.TTL)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("preview.ttl: %q is not a positive duration (like 72h)", fp.TTL))
		}
		ps.TTL = d
	}
	return ps, errs
}

type previewURLData struct{ Branch, Slug, App string }

// PreviewURL renders the preview URL of app (branch's preview); "" without
// a template.
func (ps PreviewSettings) PreviewURL(app, slug, branch string) string {
	if ps.URL == nil {
		return ""
	}
	var b strings.Builder
	if err := ps.URL.Execute(&b, previewURLData{Branch: branch, Slug: slug, App: app}); err != nil {
		return ""
	}
	return b.String()
}

// fileSource is a `sources:` entry. The repository keys are an app's
// (name, repo, branch, credentials, verify, ...), written inline; the
// per-app settings go under template:.
type fileSource struct {
	fileAppConfig
	Directories []string       `json:"directories"`
	Exclude     []string       `json:"exclude"`
	File        string         `json:"file"`
	Config      string         `json:"config"`
	Branches    *fileBranches  `json:"branches"`
	Preview     *filePreview   `json:"preview"`
	MaxApps     *int           `json:"maxApps"`
	MaxPreviews *int           `json:"maxPreviews"`
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
			errs = append(errs, fmt.Errorf("%s: a setting of the generated apps belongs under template", k))
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
	if tmpl.Engines != nil {
		errs = append(errs, errors.New("template.engines: a source's apps run on one engine each (template.engine: NAME); several engines are for an app listed under apps"))
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
		Generator: sources.Generator{Directories: fs.Directories, Exclude: fs.Exclude, File: fs.File, Config: fs.Config}}
	if fs.MaxApps != nil {
		sc.MaxApps = *fs.MaxApps
		if sc.MaxApps < 1 {
			errs = append(errs, fmt.Errorf("maxApps: %d must be 1 or more", sc.MaxApps))
		}
	}
	errs = append(errs, parseGenerator(fs, &sc)...)
	return sc, errs
}

// parseGenerator reads how a source finds apps: directories:, file:,
// config: or branches: with preview: and maxPreviews.
func parseGenerator(fs fileSource, sc *SourceConfig) []error {
	var errs []error
	sc.MaxPreviews = DefaultMaxPreviews
	if fs.MaxPreviews != nil {
		sc.MaxPreviews = *fs.MaxPreviews
		if sc.MaxPreviews < 1 {
			errs = append(errs, fmt.Errorf("maxPreviews: %d must be 1 or more", sc.MaxPreviews))
		}
	}
	var prevErrs []error
	sc.Preview, prevErrs = fs.Preview.parse()
	errs = append(errs, prevErrs...)
	switch {
	case fs.Branches != nil && (len(fs.Directories) > 0 || fs.File != "" || fs.Config != ""):
		errs = append(errs, errors.New("branches: a source generates apps from directories:, file:, config: or branches:, one of them"))
	case fs.Branches != nil:
		sc.Branches = &sources.Branches{Match: fs.Branches.Match, Path: fs.Branches.Path}
		if sc.Branches.Path == "" {
			sc.Branches.Path = "."
		}
		if err := sc.Branches.Validate(); err != nil {
			errs = append(errs, err)
		}
	case len(fs.Directories) == 0 && fs.File == "" && fs.Config == "":
		errs = append(errs, errors.New("no generator: set directories: (globs of app directories, like ['apps/*']), file: (a driftless-apps.yaml in the repository), config: (a driftless.yaml in the repository) or branches: (a preview per branch)"))
	default:
		if err := sc.Generator.Validate(); err != nil {
			errs = append(errs, err)
		}
		if fs.Preview != nil {
			errs = append(errs, errors.New("preview: only a source with branches: makes previews"))
		}
	}
	return errs
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

// PreviewFor is the app of the preview of branch, its fixed host ports
// in the slot-th block of the port range (slot < 0: none).
func (s SourceConfig) PreviewFor(branch string, slot int) (AppConfig, error) {
	name := sources.PreviewName(s.Name, branch)
	app, err := s.AppFor(sources.App{Name: name, Path: s.Branches.Path, Branch: branch, At: "branch " + branch})
	if err != nil {
		return AppConfig{}, err
	}
	p := &Preview{Branch: branch, URL: s.Preview.PreviewURL(name, strings.TrimPrefix(name, s.Name+"-"), branch)}
	if s.Preview.PerPreview > 0 && slot >= 0 {
		p.Ports = manifest.PortBlock{Base: s.Preview.PortsFrom + slot*s.Preview.PerPreview, Size: s.Preview.PerPreview}
	}
	app.Preview = p
	return app, nil
}

// Describe says how the source finds apps, for status: "directories
// apps/*", "file driftless-apps.yaml" or "branches preview/* (path deploy)".
func (s SourceConfig) Describe() string {
	if b := s.Branches; b != nil {
		return "branches " + b.Match + " (path " + b.Path + ")"
	}
	return s.Generator.String()
}

// PortSlots is how many previews the port range holds; 0 without ports.
func (s SourceConfig) PortSlots() int {
	if s.Preview.PerPreview == 0 {
		return 0
	}
	return (s.Preview.PortsTo - s.Preview.PortsFrom + 1) / s.Preview.PerPreview
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
	if g.Repo != "" && g.Repo != s.App.Repo {
		if err := s.inOtherRepo(&app, g); err != nil {
			return AppConfig{}, err
		}
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
	return c.Repo == o.Repo && c.Path == o.Path && c.Branch == o.Branch && c.Tag == o.Tag && c.Interval == o.Interval &&
		c.Prune == o.Prune && c.SelfHeal == o.SelfHeal && slices.Equal(c.Profiles, o.Profiles) && c.Release == o.Release &&
		(c.Preview == nil) == (o.Preview == nil) && (c.Preview == nil || *c.Preview == *o.Preview)
}
