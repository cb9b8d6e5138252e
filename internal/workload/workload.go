// Package workload is the tiny HTTP server that driftless's demo and tests
// run as a container. It ships inside the driftless binary (the hidden
// `driftless workload` command), so an image can be made from the binary
// alone, with no registry.
//
// Its behaviour is steered by flags or, so that manifests can change it
// through env, by WORKLOAD_* variables: crash at start, exit after a while
// (with a chosen exit code, so it can stand in for a one-shot job), become
// ready only after a delay, never become ready, or stop being ready after
// a while.
//
// Arguments it does not know (a compose file's `command: [redis-server,
// --appendonly, yes]` meant for the real image) are tolerated: they are
// logged and shown on /, so an image of the workload can stand in for any
// image. Probe is the other half: a healthcheck `test` for images that
// have no curl or wget.
package workload

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Config steers the server.
type Config struct {
	Listen     string
	Message    string
	Crash      bool          // exit 1 at once
	ExitAfter  time.Duration // exit with ExitCode after this long; 0 = never
	ExitCode   int           // the exit code of ExitAfter; default 1
	ReadyAfter time.Duration // /healthz answers 503 until then
	NeverReady bool          // /healthz always answers 503
	// UnreadyAfter: /healthz answers 503 from this long after start on,
	// a release that breaks under traffic; 0 = never.
	UnreadyAfter time.Duration
	DataDir      string // if set, / counts visits in a file there
	// Args are the arguments that are not the workload's own flags, in
	// order: tolerated, logged and shown on /.
	Args []string
}

// ParseArgs reads flags, with WORKLOAD_* env variables as defaults.
// Arguments that are not its flags (positional ones, unknown flags) end up
// in Config.Args; a known flag with a bad value is still an error.
func ParseArgs(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	cfg := Config{}
	envDur := func(key string) time.Duration {
		d, _ := time.ParseDuration(getenv(key))
		return d
	}
	envBool := func(key string) bool {
		b, _ := strconv.ParseBool(getenv(key))
		return b
	}
	listen := getenv("WORKLOAD_LISTEN")
	if listen == "" {
		listen = ":8080"
	}
	fs.StringVar(&cfg.Listen, "listen", listen, "address to serve on")
	fs.StringVar(&cfg.Message, "message", getenv("MESSAGE"), "message shown on /")
	fs.BoolVar(&cfg.Crash, "crash", envBool("WORKLOAD_CRASH"), "exit with code 1 at start")
	fs.DurationVar(&cfg.ExitAfter, "exit-after", envDur("WORKLOAD_EXIT_AFTER"), "exit with --exit-code after this long")
	exitCode := 1
	if v, err := strconv.Atoi(getenv("WORKLOAD_EXIT_CODE")); err == nil {
		exitCode = v
	}
	fs.IntVar(&cfg.ExitCode, "exit-code", exitCode, "exit code of --exit-after (0 makes it a job that completes)")
	fs.DurationVar(&cfg.ReadyAfter, "ready-after", envDur("WORKLOAD_READY_AFTER"), "answer /healthz with 503 until this long after start")
	fs.BoolVar(&cfg.NeverReady, "never-ready", envBool("WORKLOAD_NEVER_READY"), "always answer /healthz with 503")
	fs.DurationVar(&cfg.UnreadyAfter, "unready-after", envDur("WORKLOAD_UNREADY_AFTER"), "answer /healthz with 503 from this long after start on")
	fs.StringVar(&cfg.DataDir, "data", getenv("WORKLOAD_DATA"), "directory where / counts visits")
	own, extra := splitArgs(fs, args)
	if err := fs.Parse(own); err != nil {
		return Config{}, err
	}
	cfg.Args = append(extra, fs.Args()...)
	return cfg, nil
}

// splitArgs separates the flags fs defines (with their values) from every
// other argument, keeping the order of each.
func splitArgs(fs *flag.FlagSet, args []string) (own, extra []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return own, append(extra, args[i+1:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if !strings.HasPrefix(a, "-") || a == "-" || f == nil {
			extra = append(extra, a)
			continue
		}
		own = append(own, a)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	return own, extra
}

// Run serves until ctx ends or the configured exit happens. It returns the
// process exit code.
func Run(ctx context.Context, cfg Config, stdout io.Writer) int {
	log := slog.New(slog.NewTextHandler(stdout, nil))
	if cfg.Crash {
		log.Error("crashing at start as configured (WORKLOAD_CRASH)")
		return 1
	}
	if len(cfg.Args) > 0 {
		log.Info("ignoring arguments meant for the image the workload stands in for", "args", strings.Join(cfg.Args, " "))
	}
	start := time.Now()
	var visits atomic.Int64
	hostname, _ := os.Hostname()

	mux := http.NewServeMux()
	healthz := func(w http.ResponseWriter, r *http.Request) {
		if cfg.NeverReady {
			http.Error(w, "never ready (WORKLOAD_NEVER_READY)", http.StatusServiceUnavailable)
			return
		}
		if cfg.UnreadyAfter > 0 && time.Since(start) >= cfg.UnreadyAfter {
			http.Error(w, "broken since "+cfg.UnreadyAfter.String()+" after start (WORKLOAD_UNREADY_AFTER)", http.StatusServiceUnavailable)
			return
		}
		if wait := cfg.ReadyAfter - time.Since(start); wait > 0 {
			http.Error(w, fmt.Sprintf("warming up, ready in %s", wait.Round(time.Millisecond)), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/ready", healthz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n := visits.Add(1)
		if cfg.DataDir != "" {
			n = countVisit(cfg.DataDir)
		}
		w.Header().Set("Content-Type", "application/json")
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "APP_") {
				env[k] = v
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"hostname": hostname,
			"message":  cfg.Message,
			"visits":   n,
			"uptime":   time.Since(start).Round(time.Second).String(),
			"env":      env,
			"args":     cfg.Args,
		})
	})

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("workload serving", "addr", ln.Addr().String(), "message", cfg.Message)

	var exitTimer <-chan time.Time
	if cfg.ExitAfter > 0 {
		exitTimer = time.After(cfg.ExitAfter)
	}
	code := 0
	select {
	case <-ctx.Done():
		log.Info("stopping on signal")
	case <-exitTimer:
		log.Info("exiting as configured (WORKLOAD_EXIT_AFTER)", "after", cfg.ExitAfter, "code", cfg.ExitCode)
		code = cfg.ExitCode
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("server failed", "err", err)
			code = 1
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return code
}

// countVisit increments a counter file so a volume's persistence is visible.
func countVisit(dir string) int64 {
	path := filepath.Join(dir, "visits")
	b, _ := os.ReadFile(path)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	n++
	_ = os.WriteFile(path, []byte(strconv.FormatInt(n, 10)), 0o644)
	return n
}
