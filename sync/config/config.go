// Package config is the driftless.yaml schema: the apps, their sources,
// credentials, policy and notifications, parsed and validated with the
// defaults filled in. It reads files named in the config; it runs nothing.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"sigs.k8s.io/yaml"

	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/secrets"
)

// Defaults for AppConfig fields left out of the config file.
const (
	DefaultInterval          = "@every 30s"
	DefaultMaxRemovalPercent = 50
)

// AppConfig is one app: where its manifests live and how it is synced.
type AppConfig struct {
	Name   string
	Repo   string
	Branch string // at most one of Branch, Tag, Commit; none = the remote's default branch
	Tag    string
	Commit string
	Path   string
	// Interval is a Go duration ("30s") or a cron spec ("*/5 * * * *",
	// "@every 30s").
	Interval string
	Prune    bool
	SelfHeal bool
	Suspend  bool
	// AllowEmpty accepts a revision with no services, which removes
	// everything the app runs.
	AllowEmpty bool
	// MaxRemovalPercent refuses a revision whose plan would remove more than
	// this share of the running services; 100 = no limit.
	MaxRemovalPercent int
	// Auth is read from the environment and files named in the config,
	// never from the command line.
	Auth gitsource.Auth
	// Registries are credentials for this app's pulls; they win over the
	// global ones and Docker's config.json.
	Registries []registry.Login
	// WebhookSecret verifies webhooks for this app; it falls back to the
	// global one.
	WebhookSecret string
	// Policy is the host power the app's manifests may use (privileged,
	// host paths, ...); none by default.
	Policy policy.Policy
	// Shared are the external networks and volumes of other apps that
	// this app's manifests may join or mount; none by default.
	Shared drift.Shared
	// Profiles are the compose profiles to activate.
	Profiles []string
	// Environment is what compose files interpolate from (with the app
	// directory's .env file; these win). The agent's own environment is
	// never used: it holds the agent's secrets.
	Environment map[string]string
	// Target is where the app runs: manifest.TargetEngine (default, "")
	// as containers on the agent's engine, or manifest.TargetSwarm as
	// Swarm services on the Swarm manager the agent talks to.
	Target string
	// Adopt is "compose" to take over the containers `docker compose` runs
	// for ComposeProject (default: the app name), one replica at a time.
	Adopt          string
	ComposeProject string
	// Verify, when set, applies only revisions whose commit is signed by
	// one of its keys; others are refused like invalid revisions.
	Verify *gitsource.Verifier

	// AllowInsecureTransport accepts a repository over http://, git://,
	// file:// or a local path, which anyone on the network path (or with
	// write access on the host) could change.
	AllowInsecureTransport bool
	// OnForcePush is what a head that does not descend from the applied
	// revision does: ForcePushFollow, ForcePushRefuse, or "" for the
	// default, which is refuse with Verify and follow without (see
	// RefusesForcePush).
	OnForcePush string
	// Limits bound what one revision may ask for (replicas, services,
	// bytes, ...); zero fields are policy.DefaultLimits().
	Limits policy.Limits

	// AgeKeyFile is the app's age identity file for SOPS secrets
	// (decryption.ageKeyFile); read at each load, so a rotated key file is
	// picked up without a restart.
	AgeKeyFile string
	// GnuPGHome is the app's GnuPG home for OpenPGP-encrypted secrets
	// (decryption.gnupgHome); "" uses $GNUPGHOME or ~/.gnupg.
	GnuPGHome string
	// AllowPlaintext accepts secret files that are not SOPS-encrypted
	// (decryption.allowPlaintext).
	AllowPlaintext bool

	// Release is how long a release is watched after it is ready and what
	// rolls it back automatically (release:); zero Watch: off.
	Release drift.ReleaseRules

	// SecretKey is the agent's key, set by the agent (never read from the
	// file) and passed to the loader.
	SecretKey manifest.SecretKey

	// CommitURLTemplate and TreeURLTemplate link revisions on the
	// dashboard to a Git host driftless cannot recognise from the repo URL
	// (a self-hosted GitLab or Gitea): {sha} and {path} are replaced.
	CommitURLTemplate, TreeURLTemplate string
	// Notifications are this app's own destinations, on top of the
	// global ones. A generated app carries its source's template's, which
	// notify delivers once per source, not once per app.
	Notifications []Notification
	// CommitStatus, when set, reports each revision's result to the Git
	// host that holds it (for a generated app: its source's repository).
	CommitStatus *CommitStatus
	// Source is the sources: entry that generated the app; "" for an app
	// listed under apps:.
	Source string
	// Preview is set for the preview of a branch: its host ports are
	// moved into its block, and it leaves with its volumes.
	Preview *Preview
	// Engine is the engines: entry the app runs on; "" for the agent's
	// own (LocalEngine). RemoteEngine is set when that engine may be on
	// another host (EngineConfig.Remote): the load then refuses what
	// needs the agent's host.
	Engine       string
	RemoteEngine bool
	// InstanceOf is the app an `engines: [a, b]` entry declares, for each
	// of its instances: Name is then APP@ENGINE, and NameOnEngine (APP)
	// names its containers, networks and volumes on its engine. "" for an
	// app on one engine.
	InstanceOf string
}

// NameOnEngine is the app's name on its engine: its containers', networks'
// and volumes' names and labels. It is Name, except for an instance of an
// app declared on several engines (InstanceOf), which is called the same
// on each of them.
func (c AppConfig) NameOnEngine() string {
	if c.InstanceOf != "" {
		return c.InstanceOf
	}
	return c.Name
}

// InstanceName is the name of the instance of app on engine: APP@ENGINE.
func InstanceName(app, engine string) string { return app + "@" + engine }

// Notification is one destination for notifications. The notify package
// checks the URL and the event names.
type Notification struct {
	Name   string   // in metrics and the UI; default notify-N (global), APP-N or SOURCE-N
	URL    string   // a shoutrrr URL; it holds secrets, so it is never shown
	Events []string // event kinds sent; empty = all
}

// CommitStatus says where an app's commit statuses go.
type CommitStatus struct {
	Provider string // github, gitlab, gitea, bitbucket
	BaseURL  string // API base; default the provider's public one
	Repo     string // owner/name (GitLab: project path or ID); default from the app's repo URL
	Token    string
}

// NotifySettings are the global notification settings.
type NotifySettings struct {
	// SourceUnreachableAfter is how long a source must fail before it is
	// announced; default 5m.
	SourceUnreachableAfter time.Duration
	// RepairBatch is the window drift repairs are counted in before one
	// message says how many; default 1m.
	RepairBatch time.Duration
}

// OnForcePush values.
const (
	ForcePushFollow = "follow" // apply it, record it, show it until a fast-forward
	ForcePushRefuse = "refuse" // refuse it like an invalid revision
)

// AdoptCompose is the Adopt value that takes over a compose project.
const AdoptCompose = "compose"

// LoadOptions are what the config adds to the app's files.
func (c AppConfig) LoadOptions() load.Options {
	return load.Options{Policy: c.Policy, Profiles: c.Profiles, Environment: c.Environment, Limits: c.Limits, SecretKey: c.SecretKey,
		Decrypt: secrets.DecryptWith(secrets.KeyFiles{AgeKeyFile: c.AgeKeyFile, GnuPGHome: c.GnuPGHome}), AllowPlaintext: c.AllowPlaintext,
		Target: c.SwarmTarget(), RemoteEngine: c.remoteEngine()}
}

// remoteEngine names the app's engine when it may be on another host.
func (c AppConfig) remoteEngine() string {
	if c.RemoteEngine {
		return c.Engine
	}
	return ""
}

// SwarmTarget is manifest.TargetSwarm for a Swarm app, else "".
func (c AppConfig) SwarmTarget() string {
	if c.Target == manifest.TargetSwarm {
		return manifest.TargetSwarm
	}
	return ""
}

// ValidateTarget checks an app's target (driftless.yaml target:, or the
// CLI's --target) and what it can be combined with.
func ValidateTarget(target, adopt string) error {
	switch target {
	case "", manifest.TargetEngine:
		return nil
	case manifest.TargetSwarm:
		if adopt != "" {
			return errors.New("target: swarm cannot adopt a docker compose project: its containers are not Swarm services")
		}
		return nil
	}
	return fmt.Errorf("target: %q is not a target: use %s (containers on one engine, the default) or %s (services on a Swarm manager)", target, manifest.TargetEngine, manifest.TargetSwarm)
}

// Config is the whole driftless.yaml.
type Config struct {
	DataDir string
	// SecretsDir is where secret files are written, on a tmpfs
	// (secretsDir; "" for hostfiles.DefaultSecretsDir()).
	SecretsDir     string
	Listen         string
	Registries     []registry.Login // pull credentials of every app; hosts not listed: Docker's config.json
	WebhookSecret  string
	APIToken       string
	ReadOnlyPublic bool // the UI and read-only API need no token
	Apps           []AppConfig
	// Sources are repositories whose trees say which further apps exist.
	Sources []SourceConfig
	// DistrustLoopback (trustLoopback: false) makes loopback clients show
	// the API token too, for a reverse proxy on the same host.
	DistrustLoopback bool
	// TLSCertFile and TLSKeyFile serve the web UI and API over HTTPS.
	TLSCertFile, TLSKeyFile string
	// Notifications are sent for every app; Notify tunes them.
	Notifications []Notification
	Notify        NotifySettings
	// ExternalURL is the dashboard's address as people reach it, for links
	// in notifications and commit statuses.
	ExternalURL string
	// AddressPool is where new app networks get their subnets; nil: the
	// default pool (drift.DefaultAddressPool).
	AddressPool *drift.AddressPool
	// Engines are the Docker engines apps may be placed on besides the
	// agent's own (LocalEngine).
	Engines []EngineConfig
}

// fileConfig is the YAML form. Pointers tell "left out" from "false/0".
type fileConfig struct {
	DataDir           string          `json:"dataDir"`
	SecretsDir        string          `json:"secretsDir"`
	Listen            string          `json:"listen"`
	Registries        []fileRegistry  `json:"registries"`
	WebhookSecretEnv  string          `json:"webhookSecretEnv"`
	WebhookSecretFile string          `json:"webhookSecretFile"`
	APITokenEnv       string          `json:"apiTokenEnv"`
	APITokenFile      string          `json:"apiTokenFile"`
	ReadOnlyPublic    bool            `json:"readOnlyPublic"`
	Apps              []fileAppConfig `json:"apps"`
	Sources           []fileSource    `json:"sources"`
	TrustLoopback     *bool           `json:"trustLoopback"`
	TLSCertFile       string          `json:"tlsCertFile"`
	TLSKeyFile        string          `json:"tlsKeyFile"`

	Notifications []fileNotification `json:"notifications"`
	Notify        *fileNotify        `json:"notify"`
	ExternalURL   string             `json:"externalURL"`
	AddressPool   *fileAddressPool   `json:"addressPool"`
	Engines       []fileEngine       `json:"engines"`
}

// fileAddressPool is `addressPool:`, shaped like a Docker
// default-address-pools entry.
type fileAddressPool struct {
	Base string `json:"base"`
	Size int    `json:"size"`
}

// parse reads the pool; nil when the file has none.
func (p *fileAddressPool) parse() (*drift.AddressPool, []error) {
	if p == nil {
		return nil, nil
	}
	pool, err := drift.ParseAddressPool(p.Base, p.Size)
	if err != nil {
		return nil, []error{fmt.Errorf("addressPool: %w", err)}
	}
	return &pool, nil
}

type fileNotification struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	URLEnv  string   `json:"urlEnv"`
	URLFile string   `json:"urlFile"`
	Events  []string `json:"events"`
}

type fileNotify struct {
	SourceUnreachableAfter string `json:"sourceUnreachableAfter"`
	RepairBatch            string `json:"repairBatch"`
}

type fileCommitStatus struct {
	Provider  string `json:"provider"`
	BaseURL   string `json:"baseURL"`
	Repo      string `json:"repo"`
	TokenEnv  string `json:"tokenEnv"`
	TokenFile string `json:"tokenFile"`
}

type fileAppConfig struct {
	Name              string `json:"name"`
	Repo              string `json:"repo"`
	Branch            string `json:"branch"`
	Tag               string `json:"tag"`
	Commit            string `json:"commit"`
	Path              string `json:"path"`
	Interval          string `json:"interval"`
	Prune             bool   `json:"prune"`
	SelfHeal          *bool  `json:"selfHeal"`
	Suspend           bool   `json:"suspend"`
	AllowEmpty        bool   `json:"allowEmpty"`
	MaxRemovalPercent *int   `json:"maxRemovalPercent"`

	UsernameEnv           string `json:"usernameEnv"`
	PasswordEnv           string `json:"passwordEnv"`
	PasswordFile          string `json:"passwordFile"`
	TokenFile             string `json:"tokenFile"`
	SSHKeyFile            string `json:"sshKeyFile"`
	SSHKeyPassphraseEnv   string `json:"sshKeyPassphraseEnv"`
	KnownHostsFile        string `json:"knownHostsFile"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey"`

	WebhookSecretEnv  string `json:"webhookSecretEnv"`
	WebhookSecretFile string `json:"webhookSecretFile"`

	Allow          []string          `json:"allow"`
	HostPaths      []string          `json:"hostPaths"`
	HomeDir        string            `json:"homeDir"`
	Shared         *fileShared       `json:"shared"`
	Registries     []fileRegistry    `json:"registries"`
	Profiles       []string          `json:"profiles"`
	Environment    map[string]string `json:"environment"`
	Adopt          string            `json:"adopt"`
	ComposeProject string            `json:"composeProject"`
	Target         string            `json:"target"`
	Engine         string            `json:"engine"`
	Engines        []string          `json:"engines"`

	Verify *fileVerify `json:"verify"`

	AllowInsecureTransport bool   `json:"allowInsecureTransport"`
	OnForcePush            string `json:"onForcePush"`
	CommitURLTemplate      string `json:"commitURLTemplate"`
	TreeURLTemplate        string `json:"treeURLTemplate"`
	// Limits: counts, or for the byte limits numbers or quantities ("1Mi").
	Limits     map[string]json.RawMessage `json:"limits"`
	Decryption *fileDecryption            `json:"decryption"`

	Notifications []fileNotification `json:"notifications"`
	CommitStatus  *fileCommitStatus  `json:"commitStatus"`

	Release *fileRelease `json:"release"`
}

// fileShared is an app's `shared:`: other apps' external networks and
// volumes it may use, by Docker name.
type fileShared struct {
	Networks []string `json:"networks"`
	Volumes  []string `json:"volumes"`
}

// parse reads and checks the lists; the zero Shared when left out.
func (fs *fileShared) parse() (drift.Shared, error) {
	if fs == nil {
		return drift.Shared{}, nil
	}
	s := drift.Shared{Networks: fs.Networks, Volumes: fs.Volumes}
	return s, s.Validate()
}

// fileVerify names the keys trusted to sign an app's commits.
type fileVerify struct {
	OpenPGPKeys       []string `json:"openpgpKeys"`
	SSHAllowedSigners string   `json:"sshAllowedSigners"`
}

// webExposure copies the web front end's exposure keys.
func (fc fileConfig) webExposure(cfg *Config, rel func(string) string) {
	cfg.DistrustLoopback = fc.TrustLoopback != nil && !*fc.TrustLoopback
	cfg.TLSCertFile, cfg.TLSKeyFile = rel(fc.TLSCertFile), rel(fc.TLSKeyFile)
}

// fileDecryption is an app's `decryption:` in driftless.yaml.
type fileDecryption struct {
	// AgeKeyFile is an age identity file for this app's SOPS secrets,
	// tried before the agent's SOPS_AGE_KEY_FILE / SOPS_AGE_KEY.
	AgeKeyFile string `json:"ageKeyFile"`
	// GnuPGHome is a GnuPG home directory (mode 0700) holding the private
	// OpenPGP keys of this app's secrets, instead of $GNUPGHOME.
	GnuPGHome string `json:"gnupgHome"`
	// AllowPlaintext accepts secret files that are not SOPS-encrypted.
	AllowPlaintext bool `json:"allowPlaintext"`
}

// LoadConfig reads driftless.yaml. Unknown keys are errors; file paths in
// it are relative to the file's directory. Secrets are read from the
// environment variables and files it names.
func LoadConfig(path string) (Config, error) {
	return loadConfig(path, true)
}

// LoadLocalConfig reads the local driftless.yaml given beside
// --config-from, which may list no apps: the source from Git brings them.
func LoadLocalConfig(path string) (Config, error) {
	return loadConfig(path, false)
}

func loadConfig(path string, needApps bool) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := parseConfigApps(data, filepath.Dir(path), os.Getenv, needApps)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// somethingToRun refuses a configuration with neither apps nor sources.
func (fc fileConfig) somethingToRun() []error {
	if len(fc.Apps) == 0 && len(fc.Sources) == 0 {
		return []error{errors.New("apps: no apps configured (list apps: or give sources: that discover them)")}
	}
	return nil
}

func parseConfig(data []byte, dir string, getenv func(string) string) (Config, error) {
	return parseConfigApps(data, dir, getenv, true)
}

// parseConfigApps parses a driftless.yaml; needApps refuses one with
// neither apps nor sources.
// secretReader reads a secret setting given as an environment variable
// (fooEnv) or a file (fooFile), relative paths read with rel.
func secretReader(rel func(string) string, getenv func(string) string) func(what, env, file string) (string, error) {
	return func(what, env, file string) (string, error) {
		switch {
		case env != "" && file != "":
			return "", fmt.Errorf("%s: set %sEnv or %sFile, not both", what, what, what)
		case env != "":
			v := getenv(env)
			if v == "" {
				return "", fmt.Errorf("%s: environment variable %s is empty or not set", what, env)
			}
			return v, nil
		case file != "":
			b, err := os.ReadFile(rel(file))
			if err != nil {
				return "", fmt.Errorf("%s: %w", what, err)
			}
			return strings.TrimSpace(string(b)), nil
		}
		return "", nil
	}
}

func parseConfigApps(data []byte, dir string, getenv func(string) string, needApps bool) (Config, error) {
	var fc fileConfig
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return Config{}, fmt.Errorf("invalid YAML: %w", err)
	}
	rel := relativeTo(dir)
	secret := secretReader(rel, getenv)

	cfg := Config{DataDir: rel(fc.DataDir), SecretsDir: rel(fc.SecretsDir), Listen: fc.Listen, ReadOnlyPublic: fc.ReadOnlyPublic}
	fc.webExposure(&cfg, rel)
	var errs []error
	var err error
	if cfg.WebhookSecret, err = secret("webhookSecret", fc.WebhookSecretEnv, fc.WebhookSecretFile); err != nil {
		errs = append(errs, err)
	}
	if cfg.APIToken, err = secret("apiToken", fc.APITokenEnv, fc.APITokenFile); err != nil {
		errs = append(errs, err)
	}
	var regErrs []error
	cfg.Registries, regErrs = parseRegistries("registries", fc.Registries, secret, getenv)
	errs = append(errs, regErrs...)
	var notifyErrs []error
	cfg.Notifications, notifyErrs = parseNotifications("notifications", "notify", fc.Notifications, secret)
	errs = append(errs, notifyErrs...)
	cfg.Notify, notifyErrs = parseNotify(fc.Notify)
	errs = append(errs, notifyErrs...)
	cfg.ExternalURL = strings.TrimRight(fc.ExternalURL, "/")
	var poolErrs []error
	cfg.AddressPool, poolErrs = fc.AddressPool.parse()
	errs = append(errs, poolErrs...)
	if needApps {
		errs = append(errs, fc.somethingToRun()...)
	}
	seen := map[string]bool{}
	for i, fa := range fc.Apps {
		where := fmt.Sprintf("apps[%d]", i)
		if fa.Name != "" {
			where = fmt.Sprintf("apps[%d] (%s)", i, fa.Name)
		}
		app, appErrs := parseAppConfig(fa, rel, secret, getenv)
		for _, e := range appErrs {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		if seen[fa.Name] && fa.Name != "" {
			errs = append(errs, fmt.Errorf("%s: name: %q is used by another app; app names must be unique", where, fa.Name))
		}
		seen[fa.Name] = true
		if app.WebhookSecret == "" {
			app.WebhookSecret = cfg.WebhookSecret
		}
		instances, instErrs := instancesOf(app, fa)
		for _, e := range instErrs {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		cfg.Apps = append(cfg.Apps, instances...)
	}
	var srcErrs []error
	cfg.Sources, srcErrs = parseSources(fc.Sources, cfg.WebhookSecret, rel, secret, getenv)
	errs = append(errs, srcErrs...)
	var engErrs []error
	cfg.Engines, engErrs = parseEngines(fc.Engines, rel, secret, getenv)
	errs = append(errs, engErrs...)
	errs = append(errs, placeApps(&cfg)...)
	errs = append(errs, checkInstances(&cfg)...)
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

func parseAppConfig(fa fileAppConfig, rel func(string) string, secret func(what, env, file string) (string, error), getenv func(string) string) (AppConfig, []error) {
	var errs []error
	app := AppConfig{
		Name: fa.Name, Repo: fa.Repo, Branch: fa.Branch, Tag: fa.Tag, Commit: fa.Commit, Path: fa.Path,
		Interval: fa.Interval, Prune: fa.Prune, SelfHeal: true, Suspend: fa.Suspend, AllowEmpty: fa.AllowEmpty,
		MaxRemovalPercent: DefaultMaxRemovalPercent,
	}
	if fa.SelfHeal != nil {
		app.SelfHeal = *fa.SelfHeal
	}
	if !manifest.ValidName(fa.Name) {
		errs = append(errs, fmt.Errorf("name: %q is not a valid app name: use lowercase letters, digits and '-', starting with a letter, at most 63 characters", fa.Name))
	}
	if fa.Repo == "" {
		errs = append(errs, errors.New("repo: required (the Git URL of the manifests repository)"))
	} else if u, err := url.Parse(fa.Repo); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			errs = append(errs, errors.New("repo: the URL contains a password; use passwordEnv, passwordFile or tokenFile instead"))
		}
	}
	refs := 0
	for _, r := range []string{fa.Branch, fa.Tag, fa.Commit} {
		if r != "" {
			refs++
		}
	}
	if refs > 1 {
		errs = append(errs, errors.New("set at most one of branch, tag and commit"))
	}
	if app.Interval == "" {
		app.Interval = DefaultInterval
	}
	if _, err := ParseSchedule(app.Interval); err != nil {
		errs = append(errs, fmt.Errorf("interval: %w", err))
	}
	if fa.MaxRemovalPercent != nil {
		app.MaxRemovalPercent = *fa.MaxRemovalPercent
		if app.MaxRemovalPercent < 0 || app.MaxRemovalPercent > 100 {
			errs = append(errs, fmt.Errorf("maxRemovalPercent: %d is out of range 0..100 (100 = no limit)", app.MaxRemovalPercent))
		}
	}

	auth, authErrs := parseAuth(fa, rel, secret, getenv)
	errs = append(errs, authErrs...)
	app.Auth = auth
	var err error
	if app.WebhookSecret, err = secret("webhookSecret", fa.WebhookSecretEnv, fa.WebhookSecretFile); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, parseReach(fa, &app)...)
	app.Profiles, app.Environment = fa.Profiles, fa.Environment
	app.Adopt, app.ComposeProject, app.Target, app.Engine = fa.Adopt, fa.ComposeProject, fa.Target, fa.Engine
	if err := ValidateTarget(app.Target, app.Adopt); err != nil {
		errs = append(errs, err)
	}
	app.CommitURLTemplate, app.TreeURLTemplate = fa.CommitURLTemplate, fa.TreeURLTemplate
	errs = append(errs, linkTemplateErrors(fa)...)
	var regErrs []error
	app.Registries, regErrs = parseRegistries("registries", fa.Registries, secret, getenv)
	errs = append(errs, regErrs...)
	if app.Adopt != "" && app.Adopt != AdoptCompose {
		errs = append(errs, fmt.Errorf("adopt: %q is not supported: the only value is %q", app.Adopt, AdoptCompose))
	}
	errs = append(errs, parseAppTrust(fa, rel, &app)...)
	errs = append(errs, parseAppNotify(fa, &app, secret)...)
	var relErrs []error
	app.Release, relErrs = fa.Release.parse()
	errs = append(errs, relErrs...)
	return app, errs
}

// parseReach reads what an app's manifests may reach beyond the app's
// own objects: host power (allow, hostPaths, homeDir) and other apps' networks and
// volumes (shared).
func parseReach(fa fileAppConfig, app *AppConfig) []error {
	var errs []error
	app.Policy = policy.Policy{Allow: fa.Allow, HostPaths: fa.HostPaths, HomeDir: fa.HomeDir}
	if err := app.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if app.Shared, err = fa.Shared.parse(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// parseAppTrust reads what guards an app against its own repository: the
// keys that sign its commits, its transport and force-push policy, its
// limits, and the key its secrets decrypt with.
func parseAppTrust(fa fileAppConfig, rel func(string) string, app *AppConfig) []error {
	var errs []error
	var err error
	if app.Verify, err = parseVerify(fa.Verify, rel); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, parseGitSafety(fa, app)...)
	var limitErrs []error
	app.Limits, limitErrs = parseLimits(fa.Limits)
	errs = append(errs, limitErrs...)
	if app.AgeKeyFile, err = ageKeyFile(fa.Decryption, rel); err != nil {
		errs = append(errs, err)
	}
	if d := fa.Decryption; d != nil {
		app.AllowPlaintext = d.AllowPlaintext
		if d.GnuPGHome != "" {
			app.GnuPGHome = rel(d.GnuPGHome)
			if err := secrets.CheckGnuPGHome(app.GnuPGHome); err != nil {
				errs = append(errs, fmt.Errorf("decryption.gnupgHome %s: %w", app.GnuPGHome, err))
			}
		}
	}
	return errs
}

// parseVerify reads the keys an app trusts, at startup: a key file that
// is missing or unreadable stops the agent rather than leaving the app
// unprotected.
func parseVerify(fv *fileVerify, rel func(string) string) (*gitsource.Verifier, error) {
	if fv == nil {
		return nil, nil
	}
	cfg := gitsource.VerifyConfig{SSHAllowedSigners: rel(fv.SSHAllowedSigners)}
	for _, f := range fv.OpenPGPKeys {
		cfg.OpenPGPKeys = append(cfg.OpenPGPKeys, rel(f))
	}
	v, err := gitsource.NewVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return v, nil
}

// parseGitSafety reads allowInsecureTransport and onForcePush.
func parseGitSafety(fa fileAppConfig, app *AppConfig) []error {
	var errs []error
	app.AllowInsecureTransport = fa.AllowInsecureTransport
	if !fa.AllowInsecureTransport && fa.Repo != "" {
		if err := gitsource.CheckTransport(fa.Repo); err != nil {
			errs = append(errs, fmt.Errorf("repo: %w; use an https:// or ssh:// URL, or set allowInsecureTransport: true on this app to accept it", err))
		}
	}
	// Left out, it stays "": the default depends on verify.
	app.OnForcePush = fa.OnForcePush
	switch fa.OnForcePush {
	case "", ForcePushFollow, ForcePushRefuse:
	default:
		errs = append(errs, fmt.Errorf("onForcePush: %q is not supported: use %q (apply it and record it) or %q (keep the applied revision; the default with verify)", fa.OnForcePush, ForcePushFollow, ForcePushRefuse))
	}
	return errs
}

// RefusesForcePush reports whether a head that does not descend from the
// applied revision is refused, and whether only because verify is on.
// With verify, an older signed commit verifies as well as a new one:
// following a rewritten history would let anyone who can push replay a
// signed revision (an old image, a revoked setting) without a signing
// key. So refuse is the default there; an explicit follow still wins.
func (c AppConfig) RefusesForcePush() (refuse, byVerify bool) {
	switch c.OnForcePush {
	case ForcePushRefuse:
		return true, false
	case ForcePushFollow:
		return false, false
	}
	return c.Verify != nil, c.Verify != nil
}

// parseLimits reads an app's limits: a count, or for the byte limits a
// number of bytes or a quantity ("1Mi").
func parseLimits(m map[string]json.RawMessage) (policy.Limits, []error) {
	var l policy.Limits
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(m)) {
		text := strings.TrimSpace(string(m[name]))
		var s string
		if json.Unmarshal(m[name], &s) == nil {
			text = s
		}
		if err := l.Set(name, text); err != nil {
			errs = append(errs, fmt.Errorf("limits.%w", err))
		}
	}
	return l, errs
}

// ageKeyFile is the app's decryption.ageKeyFile, resolved and checked to
// exist ("" when not set).
func ageKeyFile(d *fileDecryption, rel func(string) string) (string, error) {
	if d == nil || d.AgeKeyFile == "" {
		return "", nil
	}
	p := rel(d.AgeKeyFile)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("decryption.ageKeyFile: %w", err)
	}
	return p, nil
}

// parseAuth reads an app's Git credentials from the environment variables
// and files the config names.
func parseAuth(fa fileAppConfig, rel func(string) string, secret func(what, env, file string) (string, error), getenv func(string) string) (gitsource.Auth, []error) {
	var errs []error
	auth := gitsource.Auth{SSHKeyFile: rel(fa.SSHKeyFile), KnownHostsFile: rel(fa.KnownHostsFile), InsecureIgnoreHostKey: fa.InsecureIgnoreHostKey}
	if fa.UsernameEnv != "" {
		if auth.Username = getenv(fa.UsernameEnv); auth.Username == "" {
			errs = append(errs, fmt.Errorf("usernameEnv: environment variable %s is empty or not set", fa.UsernameEnv))
		}
	}
	if fa.TokenFile != "" && (fa.PasswordEnv != "" || fa.PasswordFile != "") {
		errs = append(errs, errors.New("set tokenFile or password(Env|File), not both"))
	}
	var err error
	if auth.Password, err = secret("password", fa.PasswordEnv, fa.PasswordFile); err != nil {
		errs = append(errs, err)
	}
	if fa.TokenFile != "" {
		if auth.Password, err = secret("token", "", fa.TokenFile); err != nil {
			errs = append(errs, err)
		}
	}
	if auth.SSHKeyPassphrase, err = secret("sshKeyPassphrase", fa.SSHKeyPassphraseEnv, ""); err != nil {
		errs = append(errs, err)
	}
	return auth, errs
}

// ParseSchedule reads an interval: a Go duration ("30s", "5m") or a cron
// spec in the standard five-field form or a descriptor ("@every 30s",
// "@hourly").
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		if d < time.Second {
			return nil, fmt.Errorf("%q is too short: poll at most once a second", s)
		}
		return cron.Every(d), nil
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a duration (\"30s\") nor a cron spec (\"*/5 * * * *\", \"@every 30s\"): %v", s, err)
	}
	return sched, nil
}

// ScheduleInterval approximates how often a schedule fires, for readiness.
func ScheduleInterval(s cron.Schedule, now time.Time) time.Duration {
	first := s.Next(now)
	return s.Next(first).Sub(first)
}

// RedactURL drops userinfo from a repository URL for display.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || u.Scheme == "" {
		return raw
	}
	u.User = nil
	return u.String()
}

// SourceIdentity names what the app tracks: a force-push is judged only
// between revisions of the same repository and ref, so changing the
// branch in the config is not one.
func (c AppConfig) SourceIdentity() string {
	return RedactURL(c.Repo) + " " + c.RefName()
}

// RefName describes the tracked ref for status.
func (c AppConfig) RefName() string {
	switch {
	case c.Branch != "":
		return "branch " + c.Branch
	case c.Tag != "":
		return "tag " + c.Tag
	case c.Commit != "":
		return "commit " + c.Commit
	}
	return "default branch"
}

// linkTemplateErrors checks the per-app links to the Git host: a template
// without {sha} would link every revision to the same page.
func linkTemplateErrors(fa fileAppConfig) []error {
	var errs []error
	for _, t := range [][2]string{{"commitURLTemplate", fa.CommitURLTemplate}, {"treeURLTemplate", fa.TreeURLTemplate}} {
		if t[1] != "" && !strings.Contains(t[1], "{sha}") {
			errs = append(errs, fmt.Errorf("%s: %q has no {sha}; write the host's URL with {sha} (and {path} for trees), e.g. https://git.example.com/team/app/commit/{sha}", t[0], t[1]))
		}
	}
	return errs
}

// relativeTo resolves a path written in driftless.yaml: relative paths are
// relative to the file's directory dir; "" stays "".
func relativeTo(dir string) func(string) string {
	return func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
}
