package privengine

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEngineRestartsAndCleansUp: a private engine answers on its own
// socket, has its own default bridge, makes user-defined bridge networks,
// keeps them across restarts, leaves the host's interfaces (docker0 above all)
// alone, and leaves no bridge interface, process or file behind.
func TestEngineRestartsAndCleansUp(t *testing.T) {
	host := hostInterfaces(t)
	var dir, bridge, defaultBridge string
	t.Run("engine", func(t *testing.T) {
		e := Start(t)
		dir, defaultBridge = e.Dir, e.bridge
		id := e.Docker("network", "create", "privengine-test")
		bridge = "br-" + id[:12]
		if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err != nil {
			t.Fatalf("the network's bridge %s is not there: %v", bridge, err)
		}
		if got := e.Docker("network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", "bridge"); got != e.DefaultBridgeNet() {
			t.Fatalf("the default network's subnet is %q, want the engine's own bridge's %s", got, e.DefaultBridgeNet())
		}
		if out := e.Docker("info", "-f", "{{.Driver}} {{.DockerRootDir}}"); out != "vfs "+filepath.Join(e.Dir, "data") {
			t.Fatalf("docker info: %q", out)
		}

		stop := e.Stop()
		if e.Ping() == nil {
			t.Fatal("the engine answers after Stop")
		}
		start := e.Start()
		// A second restart: dockerd clears its stale default network at
		// every start after the first.
		e.Stop()
		e.Start()
		if got := e.Docker("network", "inspect", "-f", "{{.Id}}", "privengine-test"); got != id {
			t.Fatalf("after a restart the network is %q, want %q", got, id)
		}
		e.HideSocket()
		if e.Ping() == nil {
			t.Fatal("the engine answers with its socket hidden")
		}
		e.RestoreSocket()
		if err := e.Ping(); err != nil {
			t.Fatalf("no answer after the socket came back: %v", err)
		}
		starts, _ := e.Durations()
		t.Logf("private engine: first start %s, stop %s, restart %s", starts[0], stop, start)
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the engine's directory %s is still there (%v)", dir, err)
	}
	for _, br := range []string{bridge, defaultBridge} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", br)); !os.IsNotExist(err) {
			t.Errorf("the bridge %s is still on the host (%v)", br, err)
		}
	}
	after := hostInterfaces(t)
	for name, index := range host {
		if after[name] != index {
			t.Errorf("host interface %s (index %s) was changed: now index %q", name, index, after[name])
		}
	}
}

// hostInterfaces are the host's network interfaces by name, with their
// index, leaving out those other tests come and go with (veth*, br-*) and
// private engines' own bridges.
func hostInterfaces(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "br-") || strings.HasPrefix(name, "dle") {
			continue
		}
		index, err := os.ReadFile(filepath.Join("/sys/class/net", name, "ifindex"))
		if err != nil {
			continue
		}
		out[name] = strings.TrimSpace(string(index))
	}
	return out
}

// TestIsolatedEnginesCleanUp: two engines started with StartIsolated
// each run in a network namespace of their own, under their own
// hostname, linked by a veth pair whose addresses are in their namespaces
// only; nothing of theirs is on the host's network, and their namespaces
// and directories are gone after the test.
func TestIsolatedEnginesCleanUp(t *testing.T) {
	host := hostInterfaces(t)
	var dirs, namespaces []string
	t.Run("engines", func(t *testing.T) {
		a, b := StartIsolated(t, "dle-node-a"), StartIsolated(t, "dle-node-b")
		addrA, addrB := Link(a, b)
		for _, tc := range []struct {
			e          *Engine
			name, addr string
		}{{a, "dle-node-a", addrA}, {b, "dle-node-b", addrB}} {
			dirs, namespaces = append(dirs, tc.e.Dir), append(namespaces, tc.e.netns)
			if got := tc.e.Docker("info", "-f", "{{.Name}}"); got != tc.name {
				t.Errorf("the isolated engine's name is %q, want its own hostname %q", got, tc.name)
			}
			out, err := exec.Command("ip", "-n", tc.e.netns, "-o", "-4", "addr", "show", "dev", "dlelink").CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.addr+"/30") {
				t.Errorf("the link in namespace %s: %v %s, want address %s", tc.e.netns, err, out, tc.addr)
			}
			for _, dev := range []string{tc.e.bridge, "dlelink"} {
				if _, err := os.Stat(filepath.Join("/sys/class/net", dev)); err == nil {
					t.Errorf("interface %s of an isolated engine is on the host", dev)
				}
			}
		}
	})
	for i, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the engine's directory %s is still there (%v)", dir, err)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", namespaces[i])); !os.IsNotExist(err) {
			t.Errorf("the engine's network namespace %s is still there (%v)", namespaces[i], err)
		}
		if pids := enginePIDs(dir, ""); len(pids) > 0 {
			t.Errorf("processes of the engine still run: %v", pids)
		}
	}
	after := hostInterfaces(t)
	if len(after) != len(host) {
		t.Errorf("host interfaces before %v, after %v", host, after)
	}
}

// TestStaleEngineIsReaped: when a test process dies without its clean-up
// (a test timeout, a SIGKILL), the next Start removes what its engine
// left: the engine's processes, its networks' bridges and its directory.
func TestStaleEngineIsReaped(t *testing.T) {
	if os.Getenv("PRIVENGINE_HELPER") == "1" {
		e := Start(t)
		id := e.Docker("network", "create", "privengine-stale")
		iso := StartIsolated(t, "dle-stale")
		fmt.Printf("ISOLATED %s %s\n", iso.Dir, iso.netns)
		fmt.Printf("READY %s br-%s\n", e.Dir, id[:12])
		time.Sleep(time.Minute) // killed before this ends
		return
	}
	if os.Geteuid() != 0 {
		unavailable(t, "a private Docker engine needs root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleEngineIsReaped$", "-test.v")
	cmd.Env = append(os.Environ(), "PRIVENGINE_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir, bridge, isoDir, netns string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "ISOLATED" {
			isoDir, netns = f[1], f[2]
		}
		if len(f) == 3 && f[0] == "READY" {
			dir, bridge = f[1], f[2]
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if dir == "" || isoDir == "" {
		t.Fatal("the helper process did not start its engines")
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err != nil {
		t.Fatalf("the dead process's bridge %s is not there to be reaped: %v", bridge, err)
	}
	reapStale(t)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dead process's engine directory %s is still there (%v)", dir, err)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); !os.IsNotExist(err) {
		t.Errorf("the dead process's bridge %s is still there (%v)", bridge, err)
	}
	if pids := enginePIDs(dir, ""); len(pids) > 0 {
		t.Errorf("processes of the dead engine still run: %v", pids)
	}
	if _, err := os.Stat(isoDir); !os.IsNotExist(err) {
		t.Errorf("the dead process's isolated engine directory %s is still there (%v)", isoDir, err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", netns)); !os.IsNotExist(err) {
		t.Errorf("the dead process's network namespace %s is still there (%v)", netns, err)
	}
	if pids := enginePIDs(isoDir, ""); len(pids) > 0 {
		t.Errorf("processes of the dead isolated engine still run: %v", pids)
	}
}
