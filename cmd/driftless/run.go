package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/deploy/swarm"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/notify"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/sources"
	"github.com/driftless-dev/driftless/web"
)

// runFlags are the flags shared by `run` and `demo`.
type runFlags struct {
	config        string
	configFrom    string // URL#PATH of a driftless.yaml in Git
	repo          string
	branch, tag   string
	commit        string
	path          string
	app           string
	discover      string
	interval      string
	prune         bool
	selfHeal      bool
	allowEmpty    bool
	data          string
	listen        string
	publicRead    bool
	webhookSecret string
	webhookFile   string
	apiTokenFile  string
	gitTokenFile  string
	sshKey        string
	knownHosts    string
	verifyPGP     string // comma-separated OpenPGP key files
	verifySSH     string // allowed_signers file
	// releaseWatch and releaseUnreadyFor are the one-line form of
	// release: {watch, unreadyFor}.
	releaseWatch      time.Duration
	releaseUnreadyFor time.Duration
	workers           int
	resync            time.Duration
	readyTimeout      time.Duration
	pingTimeout       time.Duration
	requestTimeout    time.Duration
	buildTimeout      time.Duration
	secretsDir        string
	logLevel          string
	load              loadFlags
	// The web front end's exposure.
	insecureNoToken bool
	trustLoopback   bool
	tlsCert         string
	tlsKey          string
	// externalURL is the dashboard's address for links in notifications
	// and commit statuses.
	externalURL string
	// addressPool and addressPoolSize override addressPool in the file.
	addressPool     string
	addressPoolSize int

	// allowInsecure and onForcePush are the per-app safety settings of
	// single-app mode (allowInsecureTransport, onForcePush in the file).
	allowInsecure bool
	onForcePush   string
}

func defaultDataDir() string {
	if d := os.Getenv("DRIFTLESS_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "driftless")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "driftless")
	}
	return ".driftless"
}

func runUsage() string {
	return `Run the agent: watch Git, keep Docker converged, serve the dashboard and API.

One app from flags:
  driftless run --repo URL [--branch B | --tag T | --commit SHA] [--path P] [--app NAME] [--interval 30s]
An app for every directory of a repository that holds a compose file or manifests:
  driftless run --repo URL --discover 'apps/*' [--prune]
Several apps from a file:
  driftless run --config driftless.yaml
The apps: of a driftless.yaml in Git (#PATH defaults to driftless.yaml; --config adds the local settings):
  driftless run --config-from URL#PATH [--config local.yaml] [--prune]

Secrets never come from the command line except --webhook-secret (prefer the env or file forms):
  DRIFTLESS_API_TOKEN        bearer token for write actions (or --api-token-file)
  DRIFTLESS_WEBHOOK_SECRET   webhook secret (or --webhook-secret-file)
  DRIFTLESS_GIT_USERNAME, DRIFTLESS_GIT_PASSWORD / DRIFTLESS_GIT_TOKEN   HTTPS credentials (or --git-token-file)`
}

func (f *runFlags) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
	IntVar(*int, string, int, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}, withSource bool) {
	if withSource {
		fs.StringVar(&f.config, "config", "", "driftless.yaml listing several apps (instead of --repo)")
		fs.StringVar(&f.configFrom, "config-from", "", "URL#PATH of a driftless.yaml in Git (PATH default driftless.yaml) whose apps: the agent runs, following its changes; the other flags apply to that repository and its apps, --config gives the local settings")
		fs.StringVar(&f.repo, "repo", "", "Git repository URL: https:// or ssh:// (git://, http://, file:// and local paths need --allow-insecure-transport)")
		fs.BoolVar(&f.allowInsecure, "allow-insecure-transport", false, "accept a git://, http://, file:// or local repository, which anyone on the network path (or with write access here) could change")
		fs.StringVar(&f.onForcePush, "on-force-push", "", "a head that does not descend from the applied revision: follow (apply and record it) or refuse (keep the applied one); default refuse with --verify-*, else follow")
		fs.StringVar(&f.branch, "branch", "", "branch to follow (default: the remote's default branch)")
		fs.StringVar(&f.tag, "tag", "", "tag to follow instead of a branch")
		fs.StringVar(&f.commit, "commit", "", "fixed commit to hold instead of a branch")
		fs.StringVar(&f.path, "path", ".", "directory in the repository that holds the manifests")
		fs.StringVar(&f.app, "app", "", "app name (default: derived from --path or the repository name)")
		fs.StringVar(&f.discover, "discover", "", "globs of app directories (comma-separated, like 'apps/*'): every one that holds a compose file or manifests is an app named after it, added and removed with the repository (driftless.yaml: sources)")
		fs.StringVar(&f.interval, "interval", "30s", "poll schedule: a Go duration (30s) or a cron spec (*/5 * * * *, @every 30s)")
		fs.BoolVar(&f.prune, "prune", false, "remove containers and networks no longer declared (volumes are always kept)")
		fs.BoolVar(&f.selfHeal, "self-heal", true, "repair drift; when false, drift is shown but not repaired")
		fs.BoolVar(&f.allowEmpty, "allow-empty", false, "accept a revision with no manifests (it would remove everything)")
		fs.StringVar(&f.gitTokenFile, "git-token-file", "", "file holding an HTTPS token for the repository")
		fs.StringVar(&f.sshKey, "ssh-key", "", "SSH private key file for ssh:// repositories")
		fs.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts file to check the SSH host key against")
		fs.StringVar(&f.verifyPGP, "verify-openpgp-keys", "", "apply only commits signed by these OpenPGP public keys (files, comma-separated)")
		fs.StringVar(&f.verifySSH, "verify-ssh-allowed-signers", "", "apply only commits signed by a key in this ssh-keygen allowed_signers file")
		fs.DurationVar(&f.releaseWatch, "release-watch", 0, "watch each release this long after it is ready and roll a regression back automatically (driftless.yaml: release.watch; 0: off)")
		fs.DurationVar(&f.releaseUnreadyFor, "release-unready-for", drift.DefaultUnreadyFor, "inside the watch window, a new replica not ready for this long is a regression (release.unreadyFor)")
		f.load.register(fs)
	}
	fs.StringVar(&f.data, "data", defaultDataDir(), "data directory: Git clones and the history database (env DRIFTLESS_DATA)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address of the dashboard, API, webhooks and metrics")
	fs.StringVar(&f.secretsDir, "secrets-dir", hostfiles.DefaultSecretsDir(), "tmpfs directory for secret files, bind-mounted into containers (env DRIFTLESS_SECRETS_DIR); the same path on the host when the agent runs in a container")
	fs.BoolVar(&f.publicRead, "public-read", false, "serve read-only pages and API to any address without a token")
	fs.StringVar(&f.webhookSecret, "webhook-secret", "", "webhook secret (prefer DRIFTLESS_WEBHOOK_SECRET or --webhook-secret-file)")
	fs.StringVar(&f.webhookFile, "webhook-secret-file", "", "file holding the webhook secret")
	fs.StringVar(&f.apiTokenFile, "api-token-file", "", "file holding the API token for write actions (or env DRIFTLESS_API_TOKEN)")
	fs.BoolVar(&f.insecureNoToken, "insecure-no-token", false, "start on a non-loopback --listen address without an API token (refused otherwise); pages and the log warn about it")
	fs.BoolVar(&f.trustLoopback, "trust-loopback", true, "accept write actions from loopback clients without the token; set false behind a reverse proxy on this host (driftless.yaml: trustLoopback)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate file: serve HTTPS (with --tls-key; driftless.yaml: tlsCertFile)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key file for --tls-cert (driftless.yaml: tlsKeyFile)")
	fs.StringVar(&f.addressPool, "address-pool", "", "IPv4 range the subnets of new app networks are cut from, or \"docker\" for Docker's own pools (default "+drift.DefaultAddressPoolBase+"; driftless.yaml: addressPool.base)")
	fs.IntVar(&f.addressPoolSize, "address-pool-size", 0, "prefix length of each app network's subnet (default 24; driftless.yaml: addressPool.size)")
	fs.IntVar(&f.workers, "workers", 2, "apps reconciled at once")
	fs.DurationVar(&f.resync, "resync", 5*time.Minute, "full resync period, in case Docker events were missed")
	fs.DurationVar(&f.readyTimeout, "ready-timeout", 60*time.Second, "how long a new replica may take to become ready")
	fs.DurationVar(&f.pingTimeout, "ping-timeout", 5*time.Second, "how long an engine may take to answer a ping before it counts as down (raise it for engines over slow SSH links)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", deploy.DefaultRequestTimeout, "how long an engine may take to answer one request (create, start, inspect, remove…; a stop gets its grace period on top) before the pass fails as the engine not answering")
	fs.DurationVar(&f.buildTimeout, "build-timeout", deploy.DefaultBuildTimeout, "how long one image build from the repository may take before its revision is refused")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.externalURL, "external-url", "", "the dashboard's address as people reach it (https://driftless.example.com), for links in notifications and commit statuses (driftless.yaml: externalURL)")
}

// readSecret takes a secret from a file (trimmed) or an env variable.
func readSecret(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read secret: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return os.Getenv(env), nil
}

// appNameFor derives an app name from the path or the repository URL.
func appNameFor(repo, path string) string {
	base := strings.Trim(path, "/")
	if base == "" || base == "." {
		base = strings.TrimSuffix(strings.TrimRight(repo, "/"), ".git")
	}
	base = strings.ToLower(filepath.Base(base))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "app-" + name
	}
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	return name
}

// connectSwarm connects to the Swarm manager when an app has target
// swarm: the same engine DOCKER_HOST names, seen as a cluster, which
// builds on that engine and sends the apps' registry credentials with
// each service. nil when no app needs it.
func connectSwarm(ctx context.Context, apps []config.AppConfig, engine *deploy.Engine, requestTimeout time.Duration, log *slog.Logger) (*swarm.Engine, error) {
	if !slices.ContainsFunc(apps, func(a config.AppConfig) bool { return a.Target == manifest.TargetSwarm }) {
		return nil, nil
	}
	eng, err := swarm.New(swarm.Options{Logger: log, Builder: engine, Registries: engine, RequestTimeout: requestTimeout})
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Ping(pingCtx); err != nil {
		log.Warn("Swarm manager unreachable at start; will keep trying", "err", err)
	}
	return eng, nil
}

// appFromFlags is the one app that --repo and its flags describe.
func (f *runFlags) appFromFlags() (config.AppConfig, error) {
	if f.repo == "" {
		return config.AppConfig{}, errors.New("nothing to watch: pass --repo URL (one app), --config driftless.yaml (several apps) or --config-from URL#PATH (the apps of a driftless.yaml in Git)")
	}
	name := f.app
	if name == "" {
		name = appNameFor(f.repo, f.path)
	}
	if !manifest.ValidName(name) {
		return config.AppConfig{}, fmt.Errorf("--app %q: not a valid app name (lowercase letters, digits and '-', starting with a letter)", name)
	}
	if _, err := config.ParseSchedule(f.interval); err != nil {
		return config.AppConfig{}, fmt.Errorf("--interval %q: %v", f.interval, err)
	}
	app := config.AppConfig{
		Name: name, Repo: f.repo, Branch: f.branch, Tag: f.tag, Commit: f.commit, Path: f.path,
		Interval: f.interval, Prune: f.prune, SelfHeal: f.selfHeal, AllowEmpty: f.allowEmpty,
		MaxRemovalPercent: config.DefaultMaxRemovalPercent,
	}
	app.AllowInsecureTransport, app.OnForcePush = f.allowInsecure, f.onForcePush
	if f.releaseWatch < 0 || f.releaseUnreadyFor < 0 {
		return app, fmt.Errorf("--release-watch %s, --release-unready-for %s: want positive durations (--release-watch 0 turns watching off)", f.releaseWatch, f.releaseUnreadyFor)
	}
	if f.releaseWatch > 0 {
		app.Release = drift.ReleaseRules{Watch: f.releaseWatch, UnreadyFor: cmp.Or(f.releaseUnreadyFor, drift.DefaultUnreadyFor)}
	}
	if err := f.gitSafety(name); err != nil {
		return app, err
	}
	opts, err := f.load.options(nil)
	if err != nil {
		return app, err
	}
	app.Policy, app.Profiles, app.Limits, app.Target = opts.Policy, opts.Profiles, opts.Limits, f.load.target
	if app.Shared, err = f.load.shared(); err != nil {
		return app, err
	}
	app.AllowPlaintext = opts.AllowPlaintext
	if adopt, err := f.load.adoptCompose(); err != nil {
		return app, err
	} else if adopt {
		app.Adopt = config.AdoptCompose
	}
	app.Auth.Username = os.Getenv("DRIFTLESS_GIT_USERNAME")
	app.Auth.Password = os.Getenv("DRIFTLESS_GIT_PASSWORD")
	if tok, err := readSecret(f.gitTokenFile, "DRIFTLESS_GIT_TOKEN"); err != nil {
		return app, err
	} else if tok != "" {
		app.Auth.Password = tok
	}
	app.Auth.SSHKeyFile = f.sshKey
	app.Auth.KnownHostsFile = f.knownHosts
	v, err := f.verifier()
	if err != nil {
		return app, err
	}
	app.Verify = v
	return app, nil
}

// discoverSource is the source --discover describes: the repository of
// --repo, an app per matching directory, each with the settings of the
// app the flags describe.
func (f *runFlags) discoverSource(app config.AppConfig) ([]config.AppConfig, []config.SourceConfig, error) {
	if f.path != "." || f.app != "" || f.commit != "" {
		return nil, nil, errors.New("--discover names the app directories itself: leave out --path, --app and --commit")
	}
	name := app.Name
	gen := sources.Generator{Directories: strings.Split(f.discover, ",")}
	if err := gen.Validate(); err != nil {
		return nil, nil, fmt.Errorf("--discover %q: %w", f.discover, err)
	}
	app.Path, app.Source = "", name
	return nil, []config.SourceConfig{{Name: name, Generator: gen, Prune: f.prune, MaxApps: config.DefaultMaxApps, App: app}}, nil
}

// verifier reads the keys named by --verify-*, or nil when none is set.
func (f *runFlags) verifier() (*gitsource.Verifier, error) {
	if f.verifyPGP == "" && f.verifySSH == "" {
		return nil, nil
	}
	cfg := gitsource.VerifyConfig{SSHAllowedSigners: f.verifySSH}
	for k := range strings.SplitSeq(f.verifyPGP, ",") {
		if k = strings.TrimSpace(k); k != "" {
			cfg.OpenPGPKeys = append(cfg.OpenPGPKeys, k)
		}
	}
	v, err := gitsource.NewVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("--verify-openpgp-keys/--verify-ssh-allowed-signers: %w", err)
	}
	return v, nil
}

// gitSafety checks the transport and onForcePush of single-app mode.
func (f *runFlags) gitSafety(app string) error {
	if !f.allowInsecure {
		if err := gitsource.CheckTransport(f.repo); err != nil {
			return fmt.Errorf("app %s: --repo: %w; use an https:// or ssh:// URL, or pass --allow-insecure-transport to accept it", app, err)
		}
	}
	if f.onForcePush != "" && f.onForcePush != config.ForcePushFollow && f.onForcePush != config.ForcePushRefuse {
		return fmt.Errorf("--on-force-push %q: want %s or %s", f.onForcePush, config.ForcePushFollow, config.ForcePushRefuse)
	}
	return nil
}

// config turns flags (or the config file) into the agent's configuration.
func (f *runFlags) toConfig() (config.Config, error) {
	cfg, err := f.appsConfig()
	if err != nil {
		return cfg, err
	}
	// Flags win over the file for the process-level settings.
	f.directoriesOver(&cfg)
	if cfg.Listen == "" || f.listen != "127.0.0.1:8080" {
		cfg.Listen = f.listen
	}
	cfg.ReadOnlyPublic = cfg.ReadOnlyPublic || f.publicRead
	if f.webhookSecret != "" {
		cfg.WebhookSecret = f.webhookSecret
	} else if s, err := readSecret(f.webhookFile, "DRIFTLESS_WEBHOOK_SECRET"); err != nil {
		return cfg, err
	} else if s != "" {
		cfg.WebhookSecret = s
	}
	if s, err := readSecret(f.apiTokenFile, "DRIFTLESS_API_TOKEN"); err != nil {
		return cfg, err
	} else if s != "" {
		cfg.APIToken = s
	}
	cfg.ExternalURL = f.externalURLOr(cfg.ExternalURL)
	cfg.AddressPool, err = f.addressPoolOr(cfg.AddressPool)
	return cfg, err
}

// appsConfig is what runs: the config file's apps and sources, the source
// of --config-from, or the app (or --discover source) of --repo.
func (f *runFlags) appsConfig() (config.Config, error) {
	var cfg config.Config
	switch {
	case f.configFrom != "":
		return f.configFromSource()
	case f.config != "":
		if f.repo != "" {
			return cfg, errors.New("use either --config or --repo, not both")
		}
		if f.verifyPGP != "" || f.verifySSH != "" {
			return cfg, errors.New("--verify-* flags apply to --repo only; with --config, set verify: per app in the file")
		}
		if f.allowInsecure || f.onForcePush != "" {
			return cfg, errors.New("--allow-insecure-transport and --on-force-push are for --repo; in a config file set allowInsecureTransport and onForcePush on each app")
		}
		return config.LoadConfig(f.config)
	}
	app, err := f.appFromFlags()
	if err != nil {
		return cfg, err
	}
	cfg.Apps = []config.AppConfig{app}
	if f.discover != "" {
		cfg.Apps, cfg.Sources, err = f.discoverSource(app)
	}
	return cfg, err
}

// configFromSource is the configuration of --config-from: a source named
// config whose generator reads the apps: of a driftless.yaml in Git. The
// repository flags (credentials, --verify-*, --branch, ...) are its, and
// the app flags (--allow, --interval, ...) its template. The file of
// --config, when given, adds its own apps, sources and settings.
func (f *runFlags) configFromSource() (config.Config, error) {
	var cfg config.Config
	if f.repo != "" || f.discover != "" {
		return cfg, errors.New("--config-from names the repository itself: leave out --repo and --discover")
	}
	if f.path != "." || f.app != "" || f.commit != "" {
		return cfg, errors.New("--config-from: leave out --path, --app and --commit (the file in Git gives each app its name and path)")
	}
	repo, file, err := config.ParseConfigFrom(f.configFrom)
	if err != nil {
		return cfg, err
	}
	if !f.allowInsecure {
		if err := gitsource.CheckTransport(repo); err != nil {
			return cfg, fmt.Errorf("--config-from: %w; use an https:// or ssh:// URL, or pass --allow-insecure-transport to accept it", err)
		}
	}
	if f.config != "" {
		if cfg, err = config.LoadLocalConfig(f.config); err != nil {
			return cfg, err
		}
	}
	for _, sc := range cfg.Sources {
		if sc.Name == config.ConfigFromSource {
			return cfg, fmt.Errorf("%s: a source is named %q, the name of --config-from's source: rename it", f.config, sc.Name)
		}
	}
	flags := *f
	flags.repo, flags.app = repo, config.ConfigFromSource
	app, err := flags.appFromFlags()
	if err != nil {
		return cfg, err
	}
	app.Path, app.Source = "", config.ConfigFromSource
	if app.WebhookSecret == "" {
		app.WebhookSecret = cfg.WebhookSecret
	}
	cfg.Sources = append(cfg.Sources, config.SourceConfig{Name: config.ConfigFromSource, Generator: sources.Generator{Config: file},
		Prune: f.prune, MaxApps: config.DefaultMaxApps, App: app})
	return cfg, nil
}

// addressPoolOr is the file's addressPool with --address-pool and
// --address-pool-size applied over it.
func (f *runFlags) addressPoolOr(fromFile *drift.AddressPool) (*drift.AddressPool, error) {
	if f.addressPool == "" && f.addressPoolSize == 0 {
		return fromFile, nil
	}
	base := f.addressPool
	if base == "" {
		base = drift.DefaultAddressPoolBase
		if fromFile != nil && fromFile.Enabled() {
			base = fromFile.Base.String()
		}
	}
	pool, err := drift.ParseAddressPool(base, f.addressPoolSize)
	if err != nil {
		return nil, fmt.Errorf("--address-pool: %w", err)
	}
	return &pool, nil
}

// directoriesOver sets the data and secrets directories: a flag given
// wins over the file, the file over the flag's default.
func (f *runFlags) directoriesOver(cfg *config.Config) {
	if cfg.DataDir == "" || f.data != defaultDataDir() {
		cfg.DataDir = f.data
	}
	if cfg.SecretsDir == "" || f.secretsDir != hostfiles.DefaultSecretsDir() {
		cfg.SecretsDir = f.secretsDir
	}
}

// externalURLOr is --external-url when given (it wins over the file),
// else the file's externalURL.
func (f *runFlags) externalURLOr(fromFile string) string {
	if f.externalURL == "" {
		return fromFile
	}
	return strings.TrimRight(f.externalURL, "/")
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func runCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run (--repo URL | --config FILE | --config-from URL#PATH) [flags]",
		Short: "run the agent: follow Git, heal drift, serve the dashboard",
		Long:  runUsage(),
	}
	fs := cmd.Flags()
	var f runFlags
	f.register(fs, true)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		if len(pos) > 0 {
			fmt.Fprintf(stderr, "driftless run: unexpected argument %q (the repository is given with --repo)\n", pos[0])
			return exitError
		}
		cfg, err := f.toConfig()
		if err != nil {
			fmt.Fprintln(stderr, "driftless run:", err)
			return exitError
		}
		log, err := newLogger(stderr, f.logLevel)
		if err != nil {
			fmt.Fprintln(stderr, "driftless run:", err)
			return exitError
		}
		if err := serve(ctx, cfg, f, log, nil); err != nil {
			fmt.Fprintln(stderr, "driftless run:", err)
			return 1
		}
		return 0
	})
	return cmd
}

// webOptions are the web front end's settings from the config and the
// flags: flags win, and either turning loopback trust off turns it off.
func webOptions(cfg config.Config, f runFlags) web.Options {
	o := web.Options{
		Listen:           cfg.Listen,
		APIToken:         cfg.APIToken,
		WebhookSecret:    cfg.WebhookSecret,
		PublicRead:       cfg.ReadOnlyPublic,
		InsecureNoToken:  f.insecureNoToken,
		DistrustLoopback: cfg.DistrustLoopback || !f.trustLoopback,
		TLSCertFile:      cfg.TLSCertFile,
		TLSKeyFile:       cfg.TLSKeyFile,
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		o.TLSCertFile, o.TLSKeyFile = f.tlsCert, f.tlsKey
	}
	return o
}

// connectLocalEngine connects the agent's own engine, and returns the
// options the named engines start from. An engine that does not answer is
// not fatal: the agent starts, reports it unreachable in status and
// /readyz, and recovers when it comes back.
func connectLocalEngine(ctx context.Context, cfg config.Config, f runFlags, log *slog.Logger) (*deploy.Engine, deploy.Options, error) {
	opts := deploy.Options{ReadyTimeout: f.readyTimeout, PingTimeout: f.pingTimeout, RequestTimeout: f.requestTimeout, BuildTimeout: f.buildTimeout, Logger: log, FilesDir: filepath.Join(cfg.DataDir, "files"), SecretsDir: cfg.SecretsDir, StateDir: hostfiles.StateRoot(cfg.DataDir),
		Credentials: cfg.Logins(&registry.DockerConfig{Dir: registry.DockerConfigDir(os.Getenv)}), Scrub: gitCredentials(cfg.Apps, cfg.Sources), AddressPool: cfg.AddressPool}
	eng, err := deploy.New(ctx, opts)
	if err != nil {
		return nil, opts, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Ping(pingCtx); err != nil {
		log.Warn("Docker engine unreachable at start; will keep trying", "err", err)
	}
	return eng, opts, nil
}

// serve runs the agent and its web front end until ctx ends. started, if
// set, is called once the dashboard listens.
func serve(ctx context.Context, cfg config.Config, f runFlags, log *slog.Logger, started func(url string)) error {
	wopts := webOptions(cfg, f)
	// Refuse an exposed dashboard before touching the data directory or
	// the engine.
	if err := web.CheckExposure(wopts); err != nil {
		return err
	}
	// A busy address must fail before the data directory and its database
	// exist.
	ln, err := web.Listen(wopts.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	eng, engOpts, err := connectLocalEngine(ctx, cfg, f, log)
	if err != nil {
		return err
	}
	defer eng.Close()
	named, closeDialers, err := connectNamedEngines(ctx, cfg, engOpts, log)
	if err != nil {
		return err
	}
	defer closeDialers()
	defer named.Close()

	// Images of Swarm apps are built on the manager's engine, the one
	// eng talks to.
	swarmEng, err := connectSwarm(ctx, cfg.Apps, eng, f.requestTimeout, log)
	if err != nil {
		return err
	}
	var swarmTarget loop.Target // stays a nil interface without a Swarm app
	if swarmEng != nil {
		defer swarmEng.Close()
		swarmTarget = swarmEng
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := registerEngineMetrics(reg, eng, named); err != nil {
		return err
	}
	var repos repoRegistry

	notifier, err := notify.New(notify.Options{Config: cfg, Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	agent, err := loop.New(loop.Options{
		Observer:       notifier,
		DataDir:        cfg.DataDir,
		StateDir:       hostfiles.StateRoot(cfg.DataDir),
		Apps:           cfg.Apps,
		Sources:        cfg.Sources,
		Remover:        eng,
		Engine:         eng,
		Tags:           eng,
		Files:          eng,
		Jobs:           eng,
		Swarm:          swarmTarget,
		Engines:        named.loop(),
		NewSource:      repos.track(sourceFactory(cfg.DataDir, log)),
		Workers:        f.workers,
		ResyncInterval: f.resync,
		Registerer:     reg,
		Logger:         log,
	})
	if err != nil {
		return err
	}
	defer agent.Close()

	wopts.Agent = agent
	wopts.Notifier = notifier
	wopts.Sources = func() []web.AppSource { return webSources(agent.AppConfigs(), cfg.Sources) }
	wopts.Registry = reg
	wopts.Logger = log
	wopts.Repos = repos.get
	wopts.Logs = appLogs{engine: eng, swarm: swarmEng, named: named, configOf: func(app string) (config.AppConfig, bool) {
		apps := agent.AppConfigs()
		if i := slices.IndexFunc(apps, func(c config.AppConfig) bool { return c.Name == app }); i >= 0 {
			return apps[i], true
		}
		return config.AppConfig{}, false
	}}
	srv, err := web.New(wopts)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	notifier.Start(ctx, agent)
	webErr := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, ln)
		webErr <- err
		// Without its dashboard and API the agent would look silent and
		// healthy: stop it instead.
		stop()
	}()
	dashboard := srv.Scheme() + "://" + cfg.Listen
	if started != nil {
		started(dashboard)
	}
	names := make([]string, len(cfg.Apps))
	for i, a := range cfg.Apps {
		names[i] = a.Name
	}
	log.Info("driftless agent started", "apps", strings.Join(names, ","), "data", cfg.DataDir, "dashboard", dashboard)
	agentErr := agent.Run(ctx)
	stop()
	if err := <-webErr; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if agentErr != nil && !errors.Is(agentErr, context.Canceled) {
		return agentErr
	}
	log.Info("driftless agent stopped")
	return nil
}

// webSources are what webhooks match a push against: every app, and every
// source (queued as "source:NAME", so a push that adds a directory adds
// its app at once).
func webSources(apps []config.AppConfig, srcs []config.SourceConfig) []web.AppSource {
	out := make([]web.AppSource, 0, len(apps)+len(srcs))
	for _, a := range apps {
		out = append(out, web.AppSource{Name: a.Name, Repo: a.Repo, Branch: a.Branch, Tag: a.Tag, WebhookSecret: a.WebhookSecret})
	}
	for _, s := range srcs {
		src := web.AppSource{Name: "source:" + s.Name, Repo: s.App.Repo, Branch: s.App.Branch, Tag: s.App.Tag, WebhookSecret: s.App.WebhookSecret}
		if s.Branches != nil {
			src.Branch, src.Tag, src.BranchMatch = "", "", s.Branches.Match
		}
		out = append(out, src)
	}
	return out
}

// sourceFactory clones each app's repository under DATA/repos/APP.
func sourceFactory(dataDir string, log *slog.Logger) func(config.AppConfig) (loop.Source, error) {
	return func(a config.AppConfig) (loop.Source, error) {
		return gitsource.New(gitsource.Config{
			URL: a.Repo, Branch: a.Branch, Tag: a.Tag, Commit: a.Commit, Path: a.Path,
			Dir:                    filepath.Join(dataDir, "repos", a.Name),
			Auth:                   a.Auth,
			Logger:                 log.With("app", a.Name),
			AllowInsecureTransport: a.AllowInsecureTransport,
		})
	}
}

// gitCredentials are the Git secrets the agent holds, to be kept out of
// container log lines and probe output it stores.
func gitCredentials(apps []config.AppConfig, srcs []config.SourceConfig) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Auth.Password, a.Auth.SSHKeyPassphrase)
	}
	for _, s := range srcs {
		out = append(out, s.App.Auth.Password, s.App.Auth.SSHKeyPassphrase)
	}
	return out
}
