package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/deploy/hostfiles"
	"github.com/driftless-dev/driftless/deploy/swarm"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/internal/hostpath"
	"github.com/driftless-dev/driftless/internal/loadcache"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/secrets"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/pipeline"
	"github.com/driftless-dev/driftless/sync/sources"
	"gopkg.in/yaml.v3"
)

// Exit codes of diff follow `argocd app diff` and `flux diff`.
const (
	exitOK      = 0
	exitChanges = 1
	exitError   = 2
)

// loadFlags are what a user adds to an app's files: the host power its
// manifests may use, and the compose profiles to activate.
type loadFlags struct {
	allow, hostPaths, profiles string
	homeDir                    string
	adopt                      string
	limits                     string
	target                     string
	allowPlaintext             bool
	// sharedNetworks and sharedVolumes are other apps' objects the app
	// may use (shared: in driftless.yaml).
	sharedNetworks, sharedVolumes string
}

func (l *loadFlags) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&l.allow, "allow", "", "host powers the manifests may use, comma-separated: "+strings.Join(policy.AllowNames, ", "))
	fs.StringVar(&l.hostPaths, "allow-host-path", "", "absolute host path prefixes bind mounts may use, comma-separated")
	fs.StringVar(&l.homeDir, "home-dir", "", "what ~ in a bind source stands for (as homeDir: in driftless.yaml); the path it leads to needs --allow-host-path")
	fs.StringVar(&l.profiles, "profile", "", "compose profiles to activate, comma-separated")
	fs.StringVar(&l.limits, "limit", "", "limits on what the manifests may ask for, comma-separated name=value (replicas=500,manifestBytes=1Mi); as limits: in driftless.yaml")
	fs.StringVar(&l.adopt, "adopt", "", "compose: take over the containers 'docker compose' runs for the app's project, one replica at a time")
	fs.BoolVar(&l.allowPlaintext, "allow-plaintext-secrets", false, "accept secret files that are not SOPS-encrypted (as decryption: {allowPlaintext: true} in driftless.yaml)")
	fs.StringVar(&l.target, "target", "", "where the app runs: engine (containers on this Docker engine, the default) or swarm (services on the Swarm manager DOCKER_HOST names)")
	fs.StringVar(&l.sharedNetworks, "shared-network", "", "external networks of other apps (their dev.driftless.app label) the app may join, comma-separated; as shared: {networks: [...]} in driftless.yaml")
	fs.StringVar(&l.sharedVolumes, "shared-volume", "", "external volumes of other apps the app may mount, comma-separated; as shared: {volumes: [...]} in driftless.yaml")
}

// shared is what --shared-network and --shared-volume list.
func (l *loadFlags) shared() (drift.Shared, error) {
	s := drift.Shared{Networks: splitList(l.sharedNetworks), Volumes: splitList(l.sharedVolumes)}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("--shared-network / --shared-volume: %w", err)
	}
	return s, nil
}

// adoptCompose reports whether --adopt asks to take over a compose
// project.
func (l *loadFlags) adoptCompose() (bool, error) {
	switch l.adopt {
	case "":
		return false, nil
	case config.AdoptCompose:
		return true, nil
	}
	return false, fmt.Errorf("--adopt %q: the only value is %q", l.adopt, config.AdoptCompose)
}

// manifestLoad is what the flags say of how the app's files are read
// and what they may reach; env is as for options. The secret key is the
// caller's to add.
func (l *loadFlags) manifestLoad(env map[string]string) (manifestLoad, error) {
	opts, err := l.options(env)
	if err != nil {
		return manifestLoad{}, err
	}
	adopt, err := l.adoptCompose()
	if err != nil {
		return manifestLoad{}, err
	}
	shared, err := l.shared()
	if err != nil {
		return manifestLoad{}, err
	}
	return manifestLoad{opts: opts, adopt: adopt, shared: shared}, nil
}

// options are the load options; env is what compose files interpolate
// from (nil: nothing but the app's .env file).
func (l *loadFlags) options(env map[string]string) (load.Options, error) {
	opts := load.Options{
		Policy: policy.Policy{Allow: splitList(l.allow), HostPaths: splitList(l.hostPaths), HomeDir: l.homeDir},
		// Host paths are judged where they land on this machine, whose
		// engine the command drives, and state directories in the
		// CLI's data directory.
		Host:        cliHost(),
		Profiles:    splitList(l.profiles),
		Environment: env,
		// SOPS secrets open with the keys of the user's environment
		// (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, GnuPG), as with `sops`.
		Decrypt:        secrets.DecryptWith(secrets.KeyFiles{}),
		AllowPlaintext: l.allowPlaintext,
	}
	if err := config.ValidateTarget(l.target, l.adopt); err != nil {
		return opts, fmt.Errorf("--%w", err)
	}
	if l.target == manifest.TargetSwarm {
		opts.Target = manifest.TargetSwarm
	}
	if err := opts.Policy.Validate(); err != nil {
		return opts, fmt.Errorf("--allow / --allow-host-path / --home-dir: %w", err)
	}
	for _, kv := range splitList(l.limits) {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return opts, fmt.Errorf("--limit %q: write name=value, e.g. replicas=500", kv)
		}
		if err := opts.Limits.Set(strings.TrimSpace(name), value); err != nil {
			return opts, fmt.Errorf("--limit: %w", err)
		}
	}
	return opts, nil
}

// dataFlag registers --data on a local command: the agent's data
// directory, whose secret key the command hashes secrets with so that its
// hashes agree with the agent's.
func dataFlag(fs *pflag.FlagSet) *string {
	return fs.String("data", defaultDataDir(), "the agent's data directory, for its secret key (env DRIFTLESS_DATA)")
}

// cliSecretKey is the key of the data directory. Missing, it is created
// and the user told so: the first agent or CLI run on a data directory
// makes it, and every later one shares it. Unreadable (another user's
// agent), it is an error that says how to fix it, never a second key that
// would make every secret-bearing service look changed.
func cliSecretKey(data string, stderr io.Writer) (manifest.SecretKey, error) {
	key, created, err := secrets.LoadOrCreateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (run as the agent's user, or pass --data with the agent's data directory)", err)
	}
	if created {
		fmt.Fprintf(stderr, "driftless: created the secret key %s; an agent run with --data %s uses the same\n", secrets.KeyPath(data), data)
	}
	return key, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// processEnv is the environment as compose sees it on a person's machine.
func processEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// cliEnv is the environment a one-shot command loads the app with: the
// process's, and, when PATH names a compose file (namedComposeFile),
// COMPOSE_FILE naming that file alone, as `docker compose -f FILE` does
// (an explicit file wins over a COMPOSE_FILE of the shell).
func cliEnv(named string) map[string]string {
	env := processEnv()
	if named != "" {
		env["COMPOSE_FILE"] = filepath.Base(named)
	}
	return env
}

// namedComposeFile is PATH when it is a compose file, else "".
func namedComposeFile(pos []string) string {
	if len(pos) == 1 && isComposeFile(pos[0]) {
		return pos[0]
	}
	return ""
}

// isComposeFile reports whether p is a file that reads as a compose
// file, as the native front end tells one (load.ComposeShaped). A
// directory, or a file that cannot be read or parsed, is not: loading the
// directory then says what is wrong.
func isComposeFile(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Size() > maxComposeSniff {
		return false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return false
	}
	return load.ComposeShaped(doc.Content[0])
}

// maxComposeSniff bounds the file isComposeFile parses; a larger one is
// loaded as the directory, whose limits then apply.
const maxComposeSniff = 4 << 20

// localApp resolves PATH and --app into the app name and directory.
func localApp(pos []string, appFlag string) (name, dir string, err error) {
	dir = "."
	if len(pos) > 1 {
		return "", "", fmt.Errorf("expected at most one PATH, got %d: %s", len(pos), strings.Join(pos, " "))
	}
	if len(pos) == 1 {
		dir = pos[0]
	}
	if dir, err = appDir(dir); err != nil {
		return "", "", err
	}
	name = appFlag
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", "", err
		}
		// The directory's name, made a valid app name as the agent
		// names the directories it discovers ("My_Shop" -> "my-shop",
		// "2048" -> "app-2048"), as compose makes a project name of it.
		base := filepath.Base(abs)
		if name = strings.ToLower(base); !manifest.ValidName(name) {
			name = sources.AppName(base)
		}
		if name == "" {
			return "", "", fmt.Errorf("the app name defaults to the directory name, but %q holds no letter or digit to make one of: pass --app NAME", base)
		}
	}
	if !manifest.ValidName(name) {
		return "", "", fmt.Errorf("--app %q: not a valid app name (lowercase letters, digits and '-', starting with a letter, at most 63)", name)
	}
	return name, dir, nil
}

// appDir is the app directory PATH names: PATH itself, or the directory
// holding it when PATH is one of the app's files (`validate web.yaml`), since
// a manifest can only be judged with the files next to it.
func appDir(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s: no such file or directory", path)
	case err != nil:
		return "", err
	case fi.IsDir():
		return path, nil
	}
	return filepath.Dir(path), nil
}

// localRevision names what the manifests on disk are: the HEAD commit of the
// Git work tree that holds them (with "-dirty" if it has changes), or
// "local" outside Git.
func localRevision(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "local"
	}
	head, err := repo.Head()
	if err != nil {
		return "local"
	}
	return head.Hash().String()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func validateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate [PATH] [--app NAME] [--output text|json]",
		Short: "check manifests and report every error with file:line:column",
		Long:  "Parse every manifest under PATH (default .) strictly and report all errors with file:line:column.\nExit 0 when valid, 1 when not, 2 on usage errors.",
	}
	fs := cmd.Flags()
	appFlag := fs.String("app", "", "app name (default: the directory name)")
	output := fs.StringP("output", "o", "text", "output format: text or json")
	var lf loadFlags
	lf.register(fs)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		name, dir, err := localApp(pos, *appFlag)
		if err != nil {
			fmt.Fprintln(stderr, "driftless validate:", err)
			return exitError
		}
		named := namedComposeFile(pos)
		opts, err := lf.options(cliEnv(named))
		if err != nil {
			fmt.Fprintln(stderr, "driftless validate:", err)
			return exitError
		}
		app, _, err := loadCache(defaultDataDir()).Load(loadcache.Request{Dir: dir, App: name, Opts: opts})
		var list manifest.ErrorList
		if err != nil && !errors.As(err, &list) {
			fmt.Fprintln(stderr, "driftless validate:", err)
			return exitError
		}
		if *output == "json" {
			res := struct {
				App     string             `json:"app"`
				Valid   bool               `json:"valid"`
				Errors  manifest.ErrorList `json:"errors"`
				Desired *manifest.App      `json:"desired,omitempty"`
			}{App: name, Valid: err == nil, Errors: list}
			if err == nil {
				res.Desired = redactedApp(app)
			}
			_ = writeJSON(stdout, res)
		} else if err != nil {
			for _, e := range list {
				fmt.Fprintln(stdout, e.Error())
			}
			fmt.Fprintf(stdout, "\n%s: %d error(s); nothing from this revision would be applied.\n", cmp.Or(named, dir), len(list))
		} else {
			for _, w := range app.Warnings {
				fmt.Fprintln(stdout, "warning: "+w.Error())
			}
			what := "app"
			if app.Format == manifest.FormatCompose {
				what = "compose app"
			}
			jobs := ""
			if n := len(app.Jobs); n > 0 {
				jobs = fmt.Sprintf(", %d job(s)", n)
			}
			fmt.Fprintf(stdout, "%s: valid: %s %s with %d service(s)%s, %d network(s), %d volume(s).\n",
				cmp.Or(named, dir), what, name, len(app.Services), jobs, len(app.Networks), len(app.Volumes))
		}
		if err != nil {
			return 1
		}
		return exitOK
	})
	return cmd
}

// redactedApp is app with its secret values redacted, for output.
func redactedApp(app *manifest.App) *manifest.App {
	out := *app
	out.Services = slices.Clone(app.Services)
	for i := range out.Services {
		out.Services[i].Spec = out.Services[i].Spec.Redacted(app.SecretKey)
	}
	out.Jobs = slices.Clone(app.Jobs)
	for i := range out.Jobs {
		out.Jobs[i].Service.Spec = out.Jobs[i].Service.Spec.Redacted(app.SecretKey)
	}
	return &out
}

// observer is the engine a one-shot command looks at: *deploy.Engine
// for one engine, *swarm.Engine for target swarm.
type observer interface {
	// ObserveForPlan observes what the plan for in can depend on.
	ObserveForPlan(ctx context.Context, in drift.Input) (drift.Actual, error)
}

// cliEngine is what diff and apply need of either back end: the
// pipeline's Backend, observed for a plan.
type cliEngine interface {
	observer
	pipeline.Backend
	Close() error
}

// connectTarget opens the back end the load options' target names: the
// Swarm manager DOCKER_HOST names for target swarm, else the engine.
func connectTarget(ctx context.Context, target string, opts deploy.Options) (cliEngine, error) {
	if target != manifest.TargetSwarm {
		eng, err := connectEngine(ctx, opts)
		if err != nil {
			return nil, err
		}
		return engineCLI{Engine: eng}, nil
	}
	// Swarm builds on the manager's engine, then pushes where a registry
	// is named.
	builder, err := connectEngine(ctx, opts)
	if err != nil {
		return nil, err
	}
	eng, err := swarm.New(swarm.Options{RolloutTimeout: opts.ReadyTimeout, RequestTimeout: opts.RequestTimeout, Builder: builder, Registries: builder})
	if err != nil {
		builder.Close()
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Ping(pingCtx); err != nil {
		eng.Close()
		builder.Close()
		return nil, err
	}
	return swarmCLI{eng, builder}, nil
}

// engineCLI is one Docker engine as the pipeline's back end: containers
// are compared by their spec hash, there is no Swarm spec to render.
type engineCLI struct {
	*deploy.Engine
	pipeline.NoRender
}

// swarmCLI is the Swarm back end with the engine it builds on, closed
// together.
type swarmCLI struct {
	*swarm.Engine
	builder *deploy.Engine
}

func (s swarmCLI) Close() error { return errors.Join(s.Engine.Close(), s.builder.Close()) }

// loadCache is the one-shot commands' cache of loaded apps, under the data
// directory (see package loadcache); DRIFTLESS_LOAD_CACHE=off turns it off.
func loadCache(data string) *loadcache.Cache {
	if os.Getenv("DRIFTLESS_LOAD_CACHE") == "off" {
		return nil
	}
	build := cliBuild()
	if build == "" {
		return nil
	}
	return &loadcache.Cache{Dir: filepath.Join(data, "cache", "load"), Build: build}
}

// cliBuild identifies this build of driftless for what the one-shot
// commands keep between runs; "" when it cannot be known.
func cliBuild() string {
	id := loadcache.ExecutableBuildID()
	if id == "" {
		return ""
	}
	return version + "/" + id
}

// loadLocal parses the manifests (or takes them from the load cache, when
// nothing they were read from has changed) and observes the engine for
// one app.
func loadLocal(ctx context.Context, cache *loadcache.Cache, dir, name string, ml manifestLoad, eng cliEngine, prune bool) (*manifest.App, drift.Input, error) {
	app, _, err := cache.Load(loadcache.Request{Dir: dir, App: name, Opts: ml.opts})
	if err != nil {
		return nil, drift.Input{}, err
	}
	obsCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	settings := ml.settings(name, prune)
	st := pipeline.State{Revision: localRevision(dir), Now: time.Now()}
	// Of what is not the app's, only what this plan can run into is
	// looked up: the cost follows the app, not the host.
	actual, err := eng.ObserveForPlan(obsCtx, pipeline.Prepare(settings, st, app, drift.Actual{}, pipeline.NoRender{}))
	if err != nil {
		return nil, drift.Input{}, err
	}
	// Prepared as the agent's pass prepares it: adopted, and every field
	// of a Swarm service compared.
	in := pipeline.Prepare(settings, st, app, actual, eng)
	return in.Desired, in, nil
}

// connectEngine opens the Docker engine and checks that it answers, with a
// hint on what to do when it does not.
func connectEngine(ctx context.Context, opts deploy.Options) (*deploy.Engine, error) {
	eng, err := deploy.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Ping(pingCtx); err != nil {
		eng.Close()
		return nil, fmt.Errorf("%w (is Docker running? set DOCKER_HOST if it is not on the default socket)", err)
	}
	return eng, nil
}

func diffCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff [PATH] [--app NAME] [--prune] [--output text|json]",
		Short: "show what apply would change on the local Docker engine",
		Long:  "Show what 'driftless apply' would change: the manifests under PATH against the local Docker engine.\nExit 0 when nothing would change, 1 when something would, 2 on errors.",
	}
	fs := cmd.Flags()
	appFlag := fs.String("app", "", "app name (default: the directory name)")
	prune := fs.Bool("prune", false, "include removal of objects no longer declared")
	output := fs.StringP("output", "o", "text", "output format: text or json")
	data := dataFlag(fs)
	var lf loadFlags
	lf.register(fs)
	var ef engineFlag
	ef.register(fs)
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		name, dir, err := localApp(pos, *appFlag)
		if err == nil && *appFlag == "" {
			name, err = defaultAppName(ctx, dir, name, *data, stderr)
		}
		if err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		ml, err := lf.manifestLoad(cliEnv(namedComposeFile(pos)))
		if err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		if ml.opts.SecretKey, err = cliSecretKey(*data, stderr); err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		var dopts deploy.Options
		remote, done, err := ef.options(&dopts, ml.opts.Target)
		if err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		defer done()
		ml.opts.RemoteEngine = remote
		eng, err := connectTarget(ctx, ml.opts.Target, dopts)
		if err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		defer eng.Close()
		cache := loadCache(*data)
		memo := openInspectMemo(eng, *data, name, cache)
		app, in, err := loadLocal(ctx, cache, dir, name, ml, eng, *prune)
		if err != nil {
			fmt.Fprintln(stderr, "driftless diff:", err)
			return exitError
		}
		memo.save(name)
		plan := drift.Compute(in)
		if *output == "json" {
			_ = writeJSON(stdout, plan)
		} else {
			for _, w := range app.Warnings {
				fmt.Fprintln(stderr, "warning:", w.Error())
			}
			fmt.Fprint(stdout, plan.String())
		}
		if dec := drift.Decide(in, plan, cliPolicy()); dec.Refusal != "" {
			// apply would refuse it: an error, not a plan to carry out.
			fmt.Fprintln(stderr, "driftless diff: revision refused:", dec.Refusal)
			return exitError
		}
		if plan.Empty() {
			return exitOK
		}
		return exitChanges
	})
	return cmd
}

// cliHost is this machine as the CLI's policy checks see it: where host
// paths land, and the state directories of the CLI's data directory
// (those `driftless apply` creates).
func cliHost() policy.Host {
	h := hostpath.Host(os.Getenv)
	h.StateDir = hostfiles.DefaultStateDir()
	return h
}
