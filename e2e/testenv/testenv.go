// Package testenv gives end-to-end tests what they need from the real Docker
// engine: the driftless binary, a workload image made from it without any
// registry, unique app names, and clean-up of exactly what a test created.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/deploy"
)

// build caches the driftless binary per test process: building it is the
// slowest step of every end-to-end test.
var build struct {
	once sync.Once
	path string
	sum  string
	err  error
}

// RepoRoot is the module root, found from this file's location.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate testenv source")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// DriftlessBinary builds cmd/driftless as a static binary once per test
// process and returns its path. Main builds it before the first test, so
// that no test's own deadline pays for the build.
func DriftlessBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(buildBinary)
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// buildBinary builds the binary into build.path and records its digest,
// or the error in build.err.
func buildBinary() {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		build.err = fmt.Errorf("cannot locate testenv source")
		return
	}
	dir, err := os.MkdirTemp("", "driftless-e2e-bin-")
	if err != nil {
		build.err = err
		return
	}
	build.path = filepath.Join(dir, "driftless")
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	// Every e2e package builds at its start, and `go test ./...` starts
	// them together: the go command does not share a compile under way
	// between processes, so on a cold cache each would compile every
	// dependency at once. One at a time, the first compiles and the
	// others find it all in the build cache.
	unlock, err := lockBuild(root)
	if err != nil {
		build.err = err
		return
	}
	defer unlock()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", build.path, "./cmd/driftless")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		build.err = fmt.Errorf("go build ./cmd/driftless: %v\n%s", err, out)
		return
	}
	f, err := os.Open(build.path)
	if err != nil {
		build.err = err
		return
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		build.err = err
		return
	}
	build.sum = hex.EncodeToString(h.Sum(nil))[:12]
}

// RequireDocker skips nothing: the engine is part of the test environment
// here and on CI, so its absence is a failure with a clear message.
func RequireDocker(t testing.TB) *deploy.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eng, err := deploy.New(ctx, deploy.Options{})
	if err != nil {
		t.Fatalf("docker engine: %v", err)
	}
	if err := eng.Ping(ctx); err != nil {
		t.Fatalf("these end-to-end tests need a running Docker engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// WorkloadImage returns an image reference whose entrypoint runs the
// workload server (`driftless workload`). The image is made from the
// freshly built binary with ImageImport: no registry is needed. tag lets a
// test have several distinct image references (v1, v2) of the same content.
func WorkloadImage(t testing.TB, tag string) string {
	t.Helper()
	bin := DriftlessBinary(t)
	ref := fmt.Sprintf("driftless-test-workload:%s-%s", build.sum, tag)
	eng := RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ok, err := eng.ImageExists(ctx, ref)
	if err != nil {
		t.Fatalf("image inspect %s: %v", ref, err)
	}
	if !ok {
		if err := eng.ImportImage(ctx, bin, ref, []string{"/driftless", "workload"}, nil); err != nil {
			t.Fatalf("import workload image %s: %v", ref, err)
		}
	}
	return ref
}

// UniqueApp returns a fresh app name and removes, when the test ends, every
// container, network and volume that carries that app's label — and only
// those.
func UniqueApp(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	app := "t" + hex.EncodeToString(b)
	t.Cleanup(func() { RemoveApp(t, app) })
	return app
}

// RemoveApp removes everything labelled with the app.
func RemoveApp(t testing.TB, app string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	eng, err := deploy.New(ctx, deploy.Options{})
	if err != nil {
		t.Logf("cleanup %s: %v", app, err)
		return
	}
	defer eng.Close()
	if err := eng.RemoveApp(ctx, app, nil); err != nil {
		t.Logf("cleanup %s: %v", app, err)
	}
}

// Run runs the driftless binary with args and returns its combined output
// and exit code.
func Run(t testing.TB, ctx context.Context, dir string, args ...string) (string, int) {
	t.Helper()
	return RunEnv(t, ctx, nil, dir, args...)
}

// RunEnv is Run with the process's environment set to env (nil: this
// process's). Tests pass their variables here rather than with t.Setenv,
// which would keep them from running in parallel.
func RunEnv(t testing.TB, ctx context.Context, env []string, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, DriftlessBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			t.Fatalf("driftless %s: %v", strings.Join(args, " "), err)
		}
	}
	return string(out), code
}

// lockBuild takes the machine-wide lock that serializes the e2e packages'
// builds of the checkout at root, and returns its release.
func lockBuild(root string) (func(), error) {
	sum := sha256.Sum256([]byte(root))
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "driftless-e2e-build-"+hex.EncodeToString(sum[:6])+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the e2e build: %w", err)
	}
	return func() { f.Close() }, nil
}
