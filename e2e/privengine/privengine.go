// Package privengine runs a private Docker engine for one test: its own
// dockerd (and the containerd it starts), socket, data root, exec root,
// pid file and empty config file, so a test may stop, restart or take the
// socket away from an engine without touching the shared host engine.
//
// The engine runs with no iptables, no IP forwarding change and the vfs
// storage driver. Its default bridge is one made for it ("dle" and 8 hex
// digits, on a 10.x.255.0/24 no host route uses). Two dockerd settings
// are avoided on purpose, because with either dockerd deletes the host's
// docker0 (daemon_unix.go, removeDefaultBridgeInterface) and breaks the
// host engine's default network: "--bridge none" (at every start) and
// "--default-address-pool" (at every restart, when it clears the stale
// default network). User-defined networks therefore come from Docker's
// default pools; dockerd skips subnets that a host route already covers. User-defined bridge networks work
// and their containers are reachable from the host at their addresses,
// which is how driftless's readiness prober reaches them. Containers get
// their own cgroup parent.
//
// Everything is cleaned up when the test ends: the engine's containers and
// networks (so no bridge interface is left on the host), the engine
// itself, its default bridge, mounts under its directory, its cgroup
// parent and its files.
//
// StartIsolated runs an engine in a network namespace (and hostname) of
// its own instead, and Link joins two of them by a veth pair: two
// Swarm nodes on one machine, whose fixed ports (gossip 7946, VXLAN 4789)
// and docker_gwbridge would otherwise collide with each other and with
// any other Swarm engine on the host. Nothing of such an engine is on the
// host's network: its interfaces go with its namespace.
package privengine

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/stackdump"
)

// Engine is a private dockerd.
type Engine struct {
	// Host is the engine's address for DOCKER_HOST: unix://<Dir>/docker.sock.
	Host string
	// Dir holds the socket, data root, exec root, pid file, config file
	// and the engine's log.
	Dir string

	t            testing.TB
	bridge       string   // the engine's default bridge, made for it
	lock         *os.File // flock held while the engine's directory is in use
	sock         string
	bridgeNet    string // the default bridge's subnet, 10.x.255.0/24
	cgroupParent string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	logFile *os.File
	// Starts and Stops are how long each start (until the engine answers
	// a ping) and each stop (until the process exited) took.
	starts, stops []time.Duration

	// netns is the engine's network namespace ("" = the host's), and
	// hostname its name there (a Swarm node's hostname).
	netns, hostname string
	// extra are dockerd flags added to the defaults (StartWithArgs).
	extra []string
}

// StopTimeout is how long Stop waits after SIGTERM before SIGKILL. dockerd
// stops its running containers first, each with its own stop timeout.
const StopTimeout = 30 * time.Second

// startTimeout bounds the wait for the first ping.
const startTimeout = 30 * time.Second

// Start starts a private engine and registers its clean-up.
func Start(t testing.TB) *Engine {
	t.Helper()
	return start(t, "")
}

// StartIsolated starts a private engine in a network namespace and a UTS
// namespace of its own, with hostname as its host name (what Swarm shows
// as the node's hostname). Its default bridge is inside the namespace;
// Link connects it to another isolated engine.
func StartIsolated(t testing.TB, hostname string) *Engine {
	t.Helper()
	return start(t, hostname)
}

// StartWithArgs is Start with dockerd flags added to the defaults at
// every start, e.g. a second --host on TCP with --tlsverify and its
// certificates. The unix socket stays, for Ping, Docker and clean-up.
func StartWithArgs(t testing.TB, extra ...string) *Engine {
	t.Helper()
	return start(t, "", extra...)
}

func start(t testing.TB, hostname string, extra ...string) *Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "a private Docker engine needs root")
	}
	for _, bin := range []string{"dockerd", "containerd", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			unavailable(t, "a private Docker engine needs "+bin+" (packages docker.io, containerd, iproute2)")
		}
	}
	reapStale(t)
	// A short directory: the engine's and containerd's socket paths must
	// fit in 108 bytes.
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	id := make([]byte, 4)
	for i := range id {
		id[i] = byte(rand.IntN(256))
	}
	e := &Engine{
		t:            t,
		bridge:       "dle" + hex.EncodeToString(id),
		lock:         lock,
		Dir:          dir,
		sock:         filepath.Join(dir, "docker.sock"),
		cgroupParent: "/driftless-privengine-" + hex.EncodeToString(id),
		hostname:     hostname,
		extra:        extra,
	}
	if hostname != "" {
		e.netns = e.bridge // a random name, never one of another engine
	}
	e.Host = "unix://" + e.sock
	e.bridgeNet, err = freeBridgeNet()
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	for _, d := range []string{"data", "exec"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// An empty config: nothing from the host's /etc/docker/daemon.json.
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cleanup)
	// What a later run needs to clean up after this one if this process
	// dies without running its clean-up (a test timeout, a SIGKILL).
	if err := writeMarker(dir, e.marker()); err != nil {
		t.Fatal(err)
	}
	if e.netns != "" {
		ipCmds(t, []string{"netns", "add", e.netns}, []string{"-n", e.netns, "link", "set", "lo", "up"})
	}
	// The default bridge: dockerd uses a bridge it is given as it is.
	gw := strings.TrimSuffix(e.bridgeNet, "0/24") + "1/24"
	ipCmds(t, e.ip("link", "add", e.bridge, "type", "bridge"), e.ip("addr", "add", gw, "dev", e.bridge), e.ip("link", "set", e.bridge, "up"))
	e.Start()
	return e
}

// ip is an ip(8) command line in the engine's network namespace.
func (e *Engine) ip(args ...string) []string {
	if e.netns == "" {
		return args
	}
	return append([]string{"-n", e.netns}, args...)
}

func ipCmds(t testing.TB, cmds ...[]string) {
	t.Helper()
	for _, args := range cmds {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("privengine: ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
}

// Link joins the network namespaces of two isolated engines (see
// StartIsolated) with a veth pair, and returns the addresses each has
// on it, a's 10.254.0.1 and b's 10.254.0.2 (a /30 only these two share,
// in namespaces only these two engines use). Link a pair once.
func Link(a, b *Engine) (addrA, addrB string) {
	a.t.Helper()
	if a.netns == "" || b.netns == "" {
		a.t.Fatal("privengine: Link joins engines started with StartIsolated")
	}
	const dev = "dlelink"
	addrA, addrB = "10.254.0.1", "10.254.0.2"
	ipCmds(a.t,
		// Made in the namespaces: no end of it is ever on the host.
		[]string{"link", "add", dev, "netns", a.netns, "type", "veth", "peer", "name", dev, "netns", b.netns},
		a.ip("addr", "add", addrA+"/30", "dev", dev), b.ip("addr", "add", addrB+"/30", "dev", dev),
		a.ip("link", "set", dev, "up"), b.ip("link", "set", dev, "up"))
	return addrA, addrB
}

// Hostname is the host name of an isolated engine ("" for one on the
// host's namespaces).
func (e *Engine) Hostname() string { return e.hostname }

func (e *Engine) marker() marker {
	if e.netns != "" {
		// The bridge is in the namespace and goes with it.
		return marker{CgroupParent: e.cgroupParent, Netns: e.netns}
	}
	return marker{CgroupParent: e.cgroupParent, Bridge: e.bridge}
}

// unavailable skips the test locally and fails it on CI, where the
// private engine is part of the test environment.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// freeBridgeNet picks 10.X.255.0/24 with X such that no host route lies
// in 10.X.0.0/16, for the engine's default bridge.
func freeBridgeNet() (string, error) {
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", err
	}
	used := map[byte]bool{}
	for line := range strings.Lines(string(routes)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] == "Destination" {
			continue
		}
		v, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			continue
		}
		// Little-endian: the first octet is the lowest byte.
		if byte(v) == 10 {
			used[byte(v>>8)] = true
		}
	}
	start := rand.IntN(50)
	for i := range 50 {
		x := byte(200 + (start+i)%50)
		if !used[x] {
			return fmt.Sprintf("10.%d.255.0/24", x), nil
		}
	}
	return "", errors.New("privengine: no free 10.x.255.0/24 for the default bridge")
}

// DefaultBridgeNet is the subnet of the engine's default bridge.
func (e *Engine) DefaultBridgeNet() string { return e.bridgeNet }

func (e *Engine) args() []string {
	return append([]string{
		"--config-file", filepath.Join(e.Dir, "daemon.json"),
		"--host", e.Host,
		"--data-root", filepath.Join(e.Dir, "data"),
		"--exec-root", filepath.Join(e.Dir, "exec"),
		"--pidfile", filepath.Join(e.Dir, "docker.pid"),
		"--bridge", e.bridge, // never "none": see the package doc
		"--iptables=false",
		"--ip6tables=false",
		"--ip-forward=false",
		"--ip-masq=false",
		"--userland-proxy=false",
		"--storage-driver", "vfs",
		"--cgroup-parent", e.cgroupParent,
		"--live-restore=false",
	}, e.extra...)
}

// Start starts the engine, on the same data root as before after a Stop
// (an engine restart), waits until it answers a ping and returns how long
// that took.
func (e *Engine) Start() time.Duration {
	e.t.Helper()
	d, err := e.start()
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *Engine) start() (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd != nil {
		return 0, errors.New("privengine: Start while the engine runs")
	}
	logFile, err := os.OpenFile(filepath.Join(e.Dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(logFile, "=== privengine: starting dockerd at %s\n", time.Now().Format(time.RFC3339Nano))
	t0 := time.Now()
	cmd := exec.Command("dockerd", e.args()...)
	// Its own process group (a terminal's ^C is not for it), and killed if
	// the test binary dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if e.netns != "" {
		// ip netns exec mounts the namespace's /sys (so dockerd sees its
		// own interfaces there, never the host's), in a mount namespace
		// of its own, which hides the cgroup file systems under /sys:
		// they are mounted again there as on the host. A new UTS
		// namespace gives the engine its hostname. Each step execs the
		// next: the PID is dockerd's.
		mounts, err := cgroupMounts()
		if err != nil {
			logFile.Close()
			return 0, err
		}
		script := `echo "$0" >/proc/sys/kernel/hostname && ` + mounts + `exec dockerd "$@"`
		cmd = exec.Command("ip", append([]string{"netns", "exec", e.netns, "sh", "-c", script, e.hostname}, e.args()...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWUTS}
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = withoutDockerEnv(os.Environ())
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return 0, fmt.Errorf("privengine: start dockerd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	e.cmd, e.done, e.logFile = cmd, done, logFile

	deadline := time.Now().Add(startTimeout)
	for e.pingLocked() != nil {
		select {
		case <-done:
			e.cmd = nil
			logFile.Close()
			return 0, fmt.Errorf("privengine: dockerd exited at start: %v\n%s", cmd.ProcessState, e.LogTail(40))
		default:
		}
		if time.Now().After(deadline) {
			e.stopLocked(5 * time.Second)
			return 0, fmt.Errorf("privengine: dockerd did not answer within %s:\n%s", startTimeout, e.LogTail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := time.Since(t0)
	e.starts = append(e.starts, d)
	return d, nil
}

// cgroupMounts is a shell command list ("mount ... && " each) that
// mounts the host's cgroup file systems (v1 hierarchies, v2, or both) at
// the same places again, in the order the host has them.
func cgroupMounts() (string, error) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 4 || (f[1] != "/sys/fs/cgroup" && !strings.HasPrefix(f[1], "/sys/fs/cgroup/")) {
			continue
		}
		fmt.Fprintf(&b, "mkdir -p %s && mount -t %s -o %s %s %s && ", shellQuote(f[1]), shellQuote(f[2]), shellQuote(f[3]), shellQuote(f[0]), shellQuote(f[1]))
	}
	if b.Len() == 0 {
		return "", errors.New("privengine: no cgroup file system under /sys/fs/cgroup to give an isolated engine")
	}
	return b.String(), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Stop stops the engine by PID: SIGTERM, then SIGKILL after StopTimeout.
// dockerd stops its containers first; those with a restart policy of
// always or unless-stopped are started again by the next Start.
func (e *Engine) Stop() time.Duration {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	d, killed := e.stopLocked(StopTimeout)
	if killed {
		e.t.Errorf("privengine: dockerd did not stop within %s of SIGTERM; killed it", StopTimeout)
	}
	return d
}

func (e *Engine) stopLocked(timeout time.Duration) (time.Duration, bool) {
	if e.cmd == nil {
		return 0, false
	}
	t0 := time.Now()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	killed := false
	select {
	case <-e.done:
	case <-time.After(timeout):
		killed = true
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	d := time.Since(t0)
	fmt.Fprintf(e.logFile, "=== privengine: dockerd exited after %s (%v)\n", d, e.cmd.ProcessState)
	e.logFile.Close()
	e.cmd = nil
	if killed {
		// dockerd had no chance to stop its containerd.
		e.killContainerd()
	}
	e.stops = append(e.stops, d)
	return d, killed
}

// killContainerd ends the containerd this engine started, by its pid file.
func (e *Engine) killContainerd() {
	data, err := os.ReadFile(filepath.Join(e.Dir, "exec", "containerd", "containerd.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	// Only if it is still the containerd of this engine.
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if strings.Contains(string(cmdline), e.Dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Running reports whether the engine process runs.
func (e *Engine) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cmd != nil
}

// Durations returns how long every start and stop took so far.
func (e *Engine) Durations() (starts, stops []time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.starts), slices.Clone(e.stops)
}

// Ping asks the engine's socket for /_ping.
func (e *Engine) Ping() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pingLocked()
}

func (e *Engine) pingLocked() error {
	c := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.sock)
		}},
	}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://docker/_ping")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping: HTTP %d", resp.StatusCode)
	}
	return nil
}

// HideSocket renames the engine's socket away while the engine runs:
// connections made from now on fail as if the engine were gone, those
// already open go on.
func (e *Engine) HideSocket() {
	e.t.Helper()
	if err := os.Rename(e.sock, e.sock+".hidden"); err != nil {
		e.t.Fatalf("privengine: hide socket: %v", err)
	}
}

// HiddenEnv is Env for the socket's hidden name, so a test can still
// reach the engine while HideSocket is in effect.
func (e *Engine) HiddenEnv() []string {
	return append(withoutDockerEnv(os.Environ()), "DOCKER_HOST=unix://"+e.sock+".hidden")
}

// RestoreSocket puts the socket back after HideSocket.
func (e *Engine) RestoreSocket() {
	e.t.Helper()
	if err := os.Rename(e.sock+".hidden", e.sock); err != nil {
		e.t.Fatalf("privengine: restore socket: %v", err)
	}
}

// Env is os.Environ with DOCKER_HOST set to this engine (and any other
// DOCKER_* connection settings removed).
func (e *Engine) Env() []string {
	return append(withoutDockerEnv(os.Environ()), "DOCKER_HOST="+e.Host)
}

func withoutDockerEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		for _, k := range []string{"DOCKER_HOST=", "DOCKER_CONTEXT=", "DOCKER_TLS_VERIFY=", "DOCKER_CERT_PATH="} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
}

// DockerTry runs the docker CLI against the engine.
func (e *Engine) DockerTry(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = e.Env()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Docker runs the docker CLI against the engine and fails the test on an
// error.
func (e *Engine) Docker(args ...string) string {
	e.t.Helper()
	out, err := e.DockerTry(args...)
	if err != nil {
		e.t.Fatalf("docker %s (private engine): %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// LoadImages copies images from the host engine: docker save | docker load.
func (e *Engine) LoadImages(refs ...string) time.Duration {
	e.t.Helper()
	if len(refs) == 0 {
		return 0
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	save := exec.CommandContext(ctx, "docker", append([]string{"save"}, refs...)...)
	save.Env = withoutDockerEnv(os.Environ())
	load := exec.CommandContext(ctx, "docker", "load", "--quiet")
	load.Env = e.Env()
	pr, pw := io.Pipe()
	var saveErr strings.Builder
	save.Stdout, save.Stderr = pw, &saveErr
	load.Stdin = pr
	var loadOut strings.Builder
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := load.Start(); err != nil {
		e.t.Fatalf("privengine: docker load: %v", err)
	}
	err := save.Run()
	pw.CloseWithError(err)
	lerr := load.Wait()
	if err != nil || lerr != nil {
		e.t.Fatalf("privengine: docker save %v | docker load: %v / %v\n%s%s", refs, err, lerr, saveErr.String(), loadOut.String())
	}
	return time.Since(t0)
}

// LogTail is the last n lines of the engine's log.
func (e *Engine) LogTail(n int) string {
	f, err := os.Open(filepath.Join(e.Dir, "dockerd.log"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// cleanup removes everything the engine made: its containers and
// networks (see removeNetworks; an isolated engine's go with its
// namespace), then the engine, its directory, mounts, cgroup parent and
// namespace.
func (e *Engine) cleanup() {
	t := e.t
	if t.Failed() {
		t.Logf("private engine log (last lines):\n%s", e.LogTail(30))
		if stuck := e.stuckGoroutines(); stuck != "" {
			t.Logf("private engine goroutines blocked for a minute or more:\n%s", stuck)
		}
	}
	e.mu.Lock()
	running := e.cmd != nil
	e.mu.Unlock()
	if _, err := os.Stat(e.sock + ".hidden"); err == nil {
		_ = os.Rename(e.sock+".hidden", e.sock)
	}
	if e.netns != "" {
		// Its containers' and networks' interfaces are in its namespace
		// and go with it (reap deletes it once the processes are gone).
		e.mu.Lock()
		e.stopLocked(StopTimeout)
		e.mu.Unlock()
	} else {
		e.removeNetworks(running)
	}
	if err := reap(e.Dir, e.marker()); err != nil {
		t.Logf("privengine cleanup: %v", err)
	}
	e.lock.Close()
}

// removeNetworks removes the engine's containers and networks through
// the engine (started again if it is stopped), so no bridge interface or
// route stays on the host, and stops it.
func (e *Engine) removeNetworks(running bool) {
	t := e.t
	if !running {
		if _, err := e.start(); err != nil {
			t.Logf("privengine cleanup: could not start the engine again to remove its networks: %v", err)
		}
	}
	if !e.Running() {
		return
	}
	if ids, err := e.DockerTry("ps", "-aq"); err == nil && ids != "" {
		if out, err := e.DockerTry(append([]string{"rm", "-f"}, strings.Fields(ids)...)...); err != nil {
			t.Logf("privengine cleanup: docker rm: %v\n%s", err, out)
		}
	}
	if out, err := e.DockerTry("network", "prune", "-f"); err != nil {
		t.Logf("privengine cleanup: docker network prune: %v\n%s", err, out)
	}
	e.mu.Lock()
	e.stopLocked(StopTimeout)
	e.mu.Unlock()
}

// lockWait is the state of a goroutine waiting for a lock ("semacquire"
// before Go 1.20); goroutines waiting on channels for minutes (event
// streams, idle loops) are normal in an engine.
var lockWait = regexp.MustCompile(`^(semacquire|sync\.\w*Mutex\.\w*Lock)$`)

// stuckGoroutines asks dockerd for its goroutine stacks (SIGUSR1) and
// returns those blocked for a minute or more: after a failed test they
// tell an engine that hung (a lock held forever, see deploy's netleave)
// from one that was only slow. "" when the engine does not run or does
// not answer within a few seconds.
func (e *Engine) stuckGoroutines() string {
	e.mu.Lock()
	cmd := e.cmd
	e.mu.Unlock()
	if cmd == nil {
		return ""
	}
	logPath := filepath.Join(e.Dir, "dockerd.log")
	before, _ := os.ReadFile(logPath)
	// With ip netns exec, the process is dockerd itself (each step execs).
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return ""
	}
	written := regexp.MustCompile(`goroutine stacks written to (\S+?)"?(\s|$)`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		after, _ := os.ReadFile(logPath)
		if len(after) < len(before) {
			continue
		}
		m := written.FindSubmatch(after[len(before):])
		if m == nil {
			continue
		}
		stacks, err := os.ReadFile(string(m[1]))
		if err != nil {
			return err.Error()
		}
		return stackdump.Waiting(string(stacks), lockWait)
	}
	return ""
}
