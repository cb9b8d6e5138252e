package privengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dirPrefix names engine directories under the temporary directory.
const dirPrefix = "dle-"

// markerFile in an engine directory says it is one and what to clean up
// besides the directory.
const markerFile = "privengine.json"

type marker struct {
	CgroupParent string `json:"cgroupParent"`
	Bridge       string `json:"bridge"`
	// Netns is the network namespace of an isolated engine.
	Netns string `json:"netns,omitempty"`
}

func writeMarker(dir string, m marker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, markerFile), data, 0o600)
}

// lockDir takes an exclusive flock on <dir>/lock for as long as the
// returned file is open; the kernel releases it when the process dies, so
// a directory whose lock can be taken belongs to no live test.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// reapStale cleans up after engines of earlier test processes that died
// without their clean-up (killed by a test timeout, say): their
// processes, bridges, mounts, cgroups and directories.
func reapStale(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, markerFile))
		if err != nil {
			continue
		}
		var m marker
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		lock, err := lockDir(dir)
		if err != nil {
			continue // in use by a live test
		}
		t.Logf("privengine: cleaning up %s, left behind by an earlier test process", dir)
		if err := reap(dir, m); err != nil {
			t.Logf("privengine: %v", err)
		}
		lock.Close()
	}
}

// reap removes whatever an engine in dir left: processes that still run
// (dockerd, containerd, shims, container processes in its cgroup parent),
// bridge interfaces of its networks and its default bridge, mounts under dir, its
// cgroup parent, and dir itself. Everything is found from dir and m, so
// nothing of the host engine or another private engine is touched.
func reap(dir string, m marker) error {
	var errs []error
	for range 20 {
		pids := enginePIDs(dir, m.CgroupParent)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pids := enginePIDs(dir, m.CgroupParent); len(pids) > 0 {
		errs = append(errs, fmt.Errorf("processes of %s still run: %v", dir, pids))
	}
	bridges := networkBridges(dir)
	if m.Bridge != "" && strings.HasPrefix(m.Bridge, "dle") {
		if _, err := os.Stat(filepath.Join("/sys/class/net", m.Bridge)); err == nil {
			bridges = append(bridges, m.Bridge)
		}
	}
	for _, br := range bridges {
		if out, err := exec.Command("ip", "link", "delete", br).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %v %s", br, err, out))
		}
	}
	if m.Netns != "" && strings.HasPrefix(m.Netns, "dle") {
		// Its interfaces (the default bridge, the veth of Link, those of
		// its networks) are deleted with it.
		if _, err := os.Stat(filepath.Join("/run/netns", m.Netns)); err == nil {
			if out, err := exec.Command("ip", "netns", "delete", m.Netns).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("delete network namespace %s: %v %s", m.Netns, err, out))
			}
		}
	}
	errs = append(errs, unmountUnder(dir))
	if m.CgroupParent != "" {
		for _, root := range cgroupDirs(m.CgroupParent) {
			removeCgroupTree(root)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// enginePIDs are the processes whose command line names dir (the engine,
// its containerd and shims) and those in the engine's cgroup parent (the
// containers').
func enginePIDs(dir, cgroupParent string) []int {
	seen := map[int]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") {
			seen[pid] = true
		}
	}
	if cgroupParent != "" {
		for _, root := range cgroupDirs(cgroupParent) {
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				data, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						seen[pid] = true
					}
				}
				return nil
			})
		}
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// networkKey is how libnetwork stores a bridge network in the engine's
// local-kv.db (bbolt keeps keys as they are).
var networkKey = regexp.MustCompile(`docker/network/v1\.0/bridge/([0-9a-f]{64})`)

// networkBridges are the bridge interfaces (br-<id>) of the user-defined
// networks the engine in dir has stored, that still exist. Network IDs are
// random, so no other engine's bridge has one of these names.
func networkBridges(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, "data", "network", "files", "local-kv.db"))
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range networkKey.FindAllSubmatch(data, -1) {
		name := "br-" + string(m[1][:12])
		if _, err := os.Stat(filepath.Join("/sys/class/net", name)); err == nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// unmountUnder detaches every mount under dir, deepest first (the data
// root, which dockerd bind-mounts on itself, and network namespaces).
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMountPath(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDirs are the engine's cgroup parent in every mounted hierarchy.
func cgroupDirs(parent string) []string {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	dirs := []string{filepath.Join("/sys/fs/cgroup", parent)}
	for _, r := range roots {
		dirs = append(dirs, filepath.Join(r, parent))
	}
	return dirs
}

// removeCgroupTree removes a cgroup and its children, deepest first; a
// cgroup is removed with rmdir once no process is in it.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range dirs {
		_ = syscall.Rmdir(d)
	}
}
