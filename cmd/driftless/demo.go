package main

import (
	"context"
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/examples"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/sources"
)

// The demo's app and images. --clean removes objects labelled with this app
// and these image tags, and nothing else.
const (
	demoApp = "demo"
	// demoComposeApp is the demo's compose app: examples/compose-shop.
	demoComposeApp = "demo-shop"
	// demoSource makes an app of each directory demoAppsGlob matches in
	// the demo's repository of apps (examples/apps: apps/hello is the app
	// "hello"). --clean removes every app any commit of it declared.
	demoSource   = "demo-apps"
	demoAppsGlob = "apps/*"
)

var demoImages = []string{"driftless-demo:v1", "driftless-demo:v2"}

func demoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo [--data DIR] [--listen ADDR] [--clean]",
		Short: "try driftless locally: demo image, Git repo, agent, dashboard",
		Long: `Try driftless on this machine, with no registry and no remote Git host:
it packs this binary into the demo images driftless-demo:v1 and :v2, seeds a Git
repository in DATA/repo with the example app (web x3 with a readiness probe, cache
with a volume, one network), one in DATA/compose-repo with a compose app, and one in
DATA/apps-repo whose directories apps/* are apps (the source demo-apps), and runs the
agent on them with the dashboard.
A second run reuses what exists. --clean removes everything the demo created.`,
	}
	fs := cmd.Flags()
	var f runFlags
	f.register(fs, false)
	clean := fs.Bool("clean", false, "remove the demo's containers, network, volume, images and data directory, then exit")
	// The demo keeps its own data apart from a real agent's.
	demoData := filepath.Join(defaultDataDir(), "demo")
	_ = fs.Set("data", demoData)
	fs.Lookup("data").DefValue = demoData
	cmd.RunE = runs(func(ctx context.Context, pos []string, stdout, stderr io.Writer) int {
		return runDemo(ctx, f, *clean, pos, stdout, stderr)
	})
	return cmd
}

// runDemo is `driftless demo` once its flags are parsed.
func runDemo(ctx context.Context, f runFlags, clean bool, pos []string, stdout, stderr io.Writer) int {
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "driftless demo: unexpected argument %q\n", pos[0])
		return exitError
	}
	data, err := filepath.Abs(f.data)
	if err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return exitError
	}
	if clean {
		if err := demoClean(ctx, data, stdout); err != nil {
			fmt.Fprintln(stderr, "driftless demo --clean:", err)
			return 1
		}
		return 0
	}
	if a, ok := runningDemo(data); ok {
		fmt.Fprintf(stderr, "driftless demo: a demo is already running (pid %d): open %s\nStop it with Ctrl-C in its terminal, or remove everything with: %s demo --clean\n", a.pid, a.url, invokedAs())
		return 1
	}
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(stderr, "driftless demo: the demo keeps its manifests in a local Git repository and needs the git command: install git and run it again")
		return 1
	}
	log, err := newLogger(stderr, f.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return exitError
	}

	step := func(msg string) { fmt.Fprintf(stdout, "==> %s\n", msg) }
	step("checking the Docker engine")
	eng, err := connectEngine(ctx, deploy.Options{})
	if err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return 1
	}
	defer eng.Close()

	step("preparing the demo images " + strings.Join(demoImages, ", ") + " (built from this binary, no registry needed)")
	if err := demoImagesEnsure(ctx, eng); err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return 1
	}

	repo := filepath.Join(data, "repo")
	composeRepo := filepath.Join(data, "compose-repo")
	appsRepo := filepath.Join(data, "apps-repo")
	for _, r := range []struct {
		dir    string
		files  embed.FS
		root   string
		readme string
		msg    string
	}{
		{repo, examples.Shop, "shop", demoReadme, "Add the demo app: web x3, cache, backend network, data volume"},
		{composeRepo, examples.ComposeShop, "compose-shop", demoReadme, "Add a compose app: web x2 with a config file, cache with a volume"},
		{appsRepo, examples.Apps, ".", demoAppsReadme, "Add the app hello: a directory under apps/ is an app"},
	} {
		step("preparing the Git repository " + r.dir)
		created, err := demoRepo(ctx, r.dir, r.files, r.root, r.readme, r.msg)
		if err != nil {
			fmt.Fprintln(stderr, "driftless demo:", err)
			return 1
		}
		if !created {
			fmt.Fprintln(stdout, "    (reusing it: your earlier commits are kept)")
		}
	}

	cfg := config.Config{
		DataDir: filepath.Join(data, "agent"),
		Listen:  f.listen,
		Apps: []config.AppConfig{{
			Name: demoApp, Repo: repo, Branch: "main", Path: ".",
			// Local polling is cheap; a short interval makes the tour snappy.
			Interval: "@every 2s", SelfHeal: true,
			MaxRemovalPercent: config.DefaultMaxRemovalPercent,
			// Each release is watched for a minute and rolled back if it
			// breaks (tour step 5).
			Release: drift.ReleaseRules{Watch: time.Minute, UnreadyFor: drift.DefaultUnreadyFor},
		}, {
			Name: demoComposeApp, Repo: composeRepo, Branch: "main", Path: ".",
			Interval: "@every 2s", SelfHeal: true,
			MaxRemovalPercent: config.DefaultMaxRemovalPercent,
		}},
		// A directory added under apps/ and committed is a new app; one
		// removed is removed with its app (tour step 8).
		Sources: []config.SourceConfig{{
			Name: demoSource, Generator: sources.Generator{Directories: []string{demoAppsGlob}},
			Prune: true, MaxApps: config.DefaultMaxApps,
			App: config.AppConfig{
				Name: demoSource, Source: demoSource, Repo: appsRepo, Branch: "main",
				Interval: "@every 2s", SelfHeal: true,
				MaxRemovalPercent: config.DefaultMaxRemovalPercent,
			},
		}},
	}
	// The demo's repositories are local paths on this host.
	for i := range cfg.Apps {
		cfg.Apps[i].AllowInsecureTransport = true
	}
	for i := range cfg.Sources {
		cfg.Sources[i].App.AllowInsecureTransport = true
	}
	if s, err := readSecret(f.apiTokenFile, "DRIFTLESS_API_TOKEN"); err == nil {
		cfg.APIToken = s
	}
	self, err := selfCommand(data)
	if err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return 1
	}
	step("starting the agent (Ctrl-C stops it; the containers keep running)")
	cleanCmd := self + " demo --clean"
	if def, _ := filepath.Abs(filepath.Join(defaultDataDir(), "demo")); def != data {
		cleanCmd += " --data " + data
	}
	forget := func() {}
	defer func() { forget() }()
	err = serve(ctx, cfg, f, log, func(url string) {
		var recErr error
		if forget, recErr = recordDemo(data, url); recErr != nil {
			log.Warn("could not record the demo's agent; a second demo will not find it", "err", recErr)
		}
		printTour(stdout, url, repo, composeRepo, appsRepo, self, cleanCmd)
	})
	if err != nil {
		fmt.Fprintln(stderr, "driftless demo:", err)
		return 1
	}
	return 0
}

// selfCommand is how the user runs this binary again from any directory:
// its name when it is on PATH, else a copy kept in the demo's data
// directory (a binary from `go run` lives in a temporary directory that is
// gone when go run exits).
func selfCommand(data string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if p, err := exec.LookPath("driftless"); err == nil {
		if same, _ := sameFile(p, exe); same {
			return "driftless", nil
		}
	}
	if !strings.Contains(exe, "go-build") {
		return exe, nil
	}
	dst := filepath.Join(data, "driftless")
	if err := copyFile(exe, dst, 0o755); err != nil {
		return "", fmt.Errorf("keep a copy of the driftless binary for the tour: %w", err)
	}
	return dst, nil
}

func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func printTour(w io.Writer, url, repo, composeRepo, appsRepo, self, clean string) {
	fmt.Fprintf(w, `
driftless demo is running.

  Dashboard:     %[1]s
  Repository:    %[2]s   (app "demo": web x3 with a readiness probe, cache x1 with a volume, network backend)
  Compose app:   %[5]s   (app "demo-shop": a plain compose.yaml, web x2, cache)
  Apps by dir:   %[6]s   (source "demo-apps": each apps/* directory is an app, "hello" so far)

Try it, in another terminal:

  1. Deploy by committing (a rolling update, one replica at a time):
       cd %[2]s
       sed -i 's/hello from driftless/hello again/' web.yaml
       git commit -qam "Change the greeting" && sleep 10 && %[3]s status demo

  2. Roll back by reverting (history marks the revert):
       git revert --no-edit HEAD && sleep 10 && %[3]s history demo

  3. Watch drift heal (no commit needed):
       docker rm -f demo-web-1 ; sleep 5 ; docker ps --filter label=dev.driftless.app=demo

  4. Watch a broken commit get refused (the running version stays):
       sed -i 's/replicas: 3/replicas: -3/' web.yaml && git commit -qam "Break it" && sleep 5 && %[3]s status demo
       git revert --no-edit HEAD

  5. Watch a release that crashes 15 s after it is ready get rolled back on its own (each release
     of "demo" is watched for a minute):
       sed -i 's/^    LOG_LEVEL: info$/    LOG_LEVEL: info\n    WORKLOAD_EXIT_AFTER: 15s/' web.yaml
       git commit -qam "Crash under traffic" && sleep 40 && %[3]s status demo
     It says "quarantined <sha>: ... rolled back automatically": the branch still names the commit, the
     last good release runs. Fix forward with: git revert --no-edit HEAD
     (%[3]s sync --force demo would retry the quarantined commit on purpose.)

  6. See it in the browser: %[1]s/apps/demo   (the timeline: every step above as a mark over the
     replica lines; click a mark for its entry)   and the plan on the command line: cd %[2]s && %[3]s diff

  7. A compose file, deployed as it is: change the config file the web service mounts, and only web rolls:
       cd %[5]s
       echo "Prices are down." > greeting.txt
       git commit -qam "New greeting" && sleep 10 && %[3]s status demo-shop

  8. Add an app by adding a directory (the source "demo-apps" makes an app of each apps/* directory):
       cd %[6]s
       cp -r apps/hello apps/hello2 && git add apps && git commit -qm "Add hello2" && sleep 10 && %[3]s status hello2
     Remove it the same way (the source prunes: the app and its containers go):
       git rm -rq apps/hello2 && git commit -qm "Remove hello2" && sleep 5 && curl -s %[1]s/api/v1/sources
     The dashboard groups the apps by source.

Stop with Ctrl-C. Remove everything the demo created with: %[4]s

`, url, repo, self, clean, composeRepo, appsRepo)
}

// isStatic reports whether the ELF binary has no dynamic loader, so it runs
// in an image from scratch.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func demoImagesEnsure(ctx context.Context, eng *deploy.Engine) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	static, err := isStatic(exe)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", exe, err)
	}
	if !static {
		return errors.New("the demo packs this binary into an image from scratch, so it must be statically linked: run it as\n    CGO_ENABLED=0 go run ./cmd/driftless demo\nor build it with CGO_ENABLED=0 go build ./cmd/driftless")
	}
	for _, ref := range demoImages {
		ok, err := eng.ImageExists(ctx, ref)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		// The binary keeps its file name in the image, whatever it is.
		err = eng.ImportImage(ictx, exe, ref, []string{"/" + filepath.Base(exe), "workload"}, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("import %s: %w", ref, err)
		}
	}
	return nil
}

// The README.md of the demo's repositories.
const (
	demoReadme     = "# driftless demo\n\nEdit the manifests here and commit: the agent deploys what main declares.\nSee docs/manifests.md in the driftless repository for every field.\n"
	demoAppsReadme = "# driftless demo: apps by directory\n\nEach directory under apps/ is an app named after it. Add one and commit, and the\nagent deploys it; remove it and commit, and the app is removed.\nSee docs/sources.md in the driftless repository.\n"
)

// demoRepo creates a demo Git repository with the files under root and a
// README, unless it exists. It reports whether it created it.
func demoRepo(ctx context.Context, dir string, files fs.FS, root, readme, message string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		return false, err
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		// A local identity, so the tour's commits work on machines without one.
		{"config", "user.name", "driftless demo"},
		{"config", "user.email", "demo@driftless.invalid"},
		{"add", "."},
		{"commit", "-q", "-m", message},
	} {
		if err := git(args...); err != nil {
			return false, err
		}
	}
	return true, nil
}

// demoClean removes what the demo created: objects labelled with the demo
// apps (the configured ones and every app of its source), the demo
// images, and the data directory.
func demoClean(ctx context.Context, data string, stdout io.Writer) error {
	// A running demo agent would recreate what is removed.
	if a, ok := runningDemo(data); ok {
		fmt.Fprintf(stdout, "stopping the demo's agent (pid %d, %s) first\n", a.pid, a.url)
		if err := stopDemo(ctx, a, 40*time.Second); err != nil {
			return err
		}
	}
	eng, err := connectEngine(ctx, deploy.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	generated, err := demoSourceApps(ctx, filepath.Join(data, "apps-repo"))
	if err != nil {
		return err
	}
	for _, app := range append([]string{demoApp, demoComposeApp}, generated...) {
		err = eng.RemoveApp(ctx, app, func(kind drift.Kind, name string) {
			fmt.Fprintf(stdout, "removed %s %s\n", kind, name)
		})
		if err != nil {
			return err
		}
	}
	for _, ref := range demoImages {
		removed, err := eng.RemoveImage(ctx, ref)
		if err != nil {
			return err
		}
		if removed {
			fmt.Fprintf(stdout, "removed image %s\n", ref)
		}
	}
	if _, err := os.Stat(data); err == nil {
		if err := os.RemoveAll(data); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s\n", data)
	}
	fmt.Fprintln(stdout, "demo cleaned up")
	return nil
}

// demoSourceApps are the apps the demo's source declared at any commit of
// its repository: every directory matching demoAppsGlob that a commit
// touched, named as the source names it. An app added and removed again
// is among them; none without the repository.
func demoSourceApps(ctx context.Context, repo string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		return nil, nil
	}
	cmd := exec.CommandContext(ctx, "git", "-c", "core.quotePath=false", "log", "--all", "--format=", "--name-only")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the apps of the demo's source in %s: git log: %w", repo, err)
	}
	seen := map[string]bool{}
	var names []string
	for _, p := range strings.Split(string(out), "\n") {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if ok, _ := path.Match(demoAppsGlob, d); !ok || strings.HasPrefix(path.Base(d), ".") {
				continue
			}
			if name := sources.AppName(d); name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}
