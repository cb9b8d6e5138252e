package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestLimitsRefuseRevisions: with the default limits, a commit asking for a
// million replicas, and then one adding a 60 MiB manifest, are refused
// with a message naming the file, the limit, the value and how to raise
// it; the last good revision keeps running (the same container) and the
// agent's peak RSS stays small. The next good commit applies.
func TestLimitsRefuseRevisions(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	t.Cleanup(func() { testenv.RemoveApp(t, app) })
	path := "apps/" + app

	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	repo := gitserver.Init(t, base, "infra")
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(image, 1, map[string]string{"V": "1"}))
	good := repo.Commit("deploy web")
	agent := testenv.StartConfigAgent(t, []testenv.ComposeAppConfig{{Name: app, Repo: repo.URL(server.URL), Branch: "main", Path: path, Interval: "1s"}})
	testenv.WaitAppStatus(t, agent, app, 90*time.Second, "the good revision to deploy", testenv.ConvergedServices(good, map[string]int{"web": 1}))
	running := testenv.ServiceContainers(t, app)
	webID := running["web"][app+"-web-1"]
	if webID == "" {
		t.Fatalf("no web container after the good revision: %v", running)
	}

	// maxRSS bounds the agent's peak RSS after each refusal.
	refuse := func(what, want string, maxRSS int64) {
		t.Helper()
		bad := repo.Commit(what)
		st := testenv.WaitAppStatus(t, agent, app, 60*time.Second, "the refusal of "+what, func(st status.AppStatus) bool {
			return st.Refused != nil && st.Refused.Revision.SHA == bad
		})
		if !slices.Equal(st.Refused.Errors, []string{want}) {
			t.Errorf("%s: refusal errors\n  %q\nwant\n  %q", what, st.Refused.Errors, want)
		}
		if st.Applied == nil || st.Applied.SHA != good {
			t.Errorf("%s: applied %s, want the good %s still applied", what, testenv.RevShort(st.Applied), good[:7])
		}
		if id := testenv.ServiceContainers(t, app)["web"][app+"-web-1"]; id != webID {
			t.Errorf("%s: web container is %q, want the good revision's %q untouched", what, id, webID)
		}
		hwm := agentPeakRSS(t, agent.PID())
		t.Logf("%s: agent peak RSS (VmHWM) %.1f MiB", what, float64(hwm)/(1<<20))
		if hwm > maxRSS {
			t.Errorf("%s: agent peak RSS %.1f MiB, want < %d MiB", what, float64(hwm)/(1<<20), maxRSS>>20)
		}
	}

	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(image, 1000000, map[string]string{"V": "1"}))
	refuse("a million replicas", path+"/web.yaml:7:13: spec.replicas: 1000000 replicas are more than the limit of 100 per service: "+
		"if this is intended, raise limits.replicas in driftless.yaml (or --limit replicas=N)", 200<<20)

	// 60 MiB of manifest: a list of strings that compresses well for git.
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(image, 1, map[string]string{"V": "1"}))
	line := "# " + strings.Repeat("x", 61) + "\n"
	big := strings.Repeat(line, (60<<20)/len(line))
	big += strings.Repeat("#", 60<<20-len(big))
	repo.WriteFile(path+"/big.yaml", big)
	refuse("a 60 MiB manifest", path+"/big.yaml: the manifests this revision has read come to 62914560 bytes (60Mi) with this file, "+
		"more than the limit of 524288 bytes (512Ki); refused without reading further: if this is intended, raise limits.manifestBytes in driftless.yaml (or --limit manifestBytes=N)",
		// The loader refuses the file by its size, unread (parsing it
		// would cost gigabytes), and gitsource.Files leaves large blobs in
		// the object store until they are read: what remains is the fetch
		// of the 60 MiB pack (measured 93 MiB in all, 252 MiB before).
		200<<20)

	repo.Remove(path + "/big.yaml")
	repo.WriteFile(path+"/web.yaml", testenv.ServiceManifest(image, 2, map[string]string{"V": "2"}))
	fixed := repo.Commit("two replicas")
	st := testenv.WaitAppStatus(t, agent, app, 90*time.Second, "the next good revision to deploy", testenv.ConvergedServices(fixed, map[string]int{"web": 2}))
	if st.Refused != nil {
		t.Errorf("refusal still shown after a good commit: %+v", st.Refused)
	}
}

// TestLimitsValidateCLI: `driftless validate` reports a revision over a
// limit with the same message as the agent, and --limit raises it.
func TestLimitsValidateCLI(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(testenv.ServiceManifest("shop/web:1", 1000000, nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.DriftlessBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, filepath.Dir(dir), "validate", "shop")
	want := "shop/web.yaml:7:13: spec.replicas: 1000000 replicas are more than the limit of 100 per service: if this is intended, raise limits.replicas in driftless.yaml (or --limit replicas=N)"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("validate: exit %d, output\n%s\nwant exit 1 and %q", code, out, want)
	}
	out, code = testenv.Run(t, ctx, filepath.Dir(dir), "validate", "shop", "--limit", "replicas=1000000")
	if code != 0 {
		t.Errorf("validate --limit replicas=1000000: exit %d, want 0:\n%s", code, out)
	}
}

// agentPeakRSS reads the peak resident set size (VmHWM) of the agent.
func agentPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the agent's status: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
