package testenv

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Main runs one end-to-end package's tests and returns the code for
// os.Exit; each package's TestMain calls it.
//
// The CLI runs of the tests (driftless apply) write secret files under a
// directory of this process rather than the host's /run/driftless.
//
// Unless -parallel was given, up to parallel tests that call t.Parallel
// run at once instead of GOMAXPROCS: end-to-end tests mostly wait for the
// engine, a git poll or a container to start, so on a 2-core machine the
// waits overlap rather than the CPU. DRIFTLESS_E2E_PARALLEL overrides it.
func Main(m *testing.M, parallel int) int {
	dir, err := os.MkdirTemp(shmOrTemp(), "driftless-e2e-cli-secrets-")
	if err == nil {
		os.Setenv("DRIFTLESS_SECRETS_DIR", dir)
	}
	setParallel(parallel)
	build.once.Do(buildBinary) // a failure fails the first test that needs the binary
	code := m.Run()
	if build.path != "" {
		os.RemoveAll(filepath.Dir(build.path))
	}
	if err == nil {
		_ = syscall.Unmount(dir, syscall.MNT_DETACH) // if the CLI had to mount a tmpfs
		os.RemoveAll(dir)
	}
	return code
}

// setParallel raises -test.parallel to n (or $DRIFTLESS_E2E_PARALLEL)
// when the user did not set it.
func setParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			explicit = true
		}
	})
	if explicit {
		return
	}
	if v, err := strconv.Atoi(os.Getenv("DRIFTLESS_E2E_PARALLEL")); err == nil && v > 0 {
		n = v
	}
	if n > 0 {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// shmOrTemp is /dev/shm when it is a tmpfs, else the temporary directory.
func shmOrTemp() string {
	var st syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &st) == nil && st.Type == 0x01021994 {
		return "/dev/shm"
	}
	return os.TempDir()
}
