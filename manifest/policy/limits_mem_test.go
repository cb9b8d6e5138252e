package policy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// atLimit builds the worst revisions the default limits accept, for both
// front ends: as many services as allowed, each with as many values as the
// node budget leaves, padded to the byte limit; one long string; lists
// nested as deep as allowed, repeated.
func atLimit() map[string]fstest.MapFS {
	lim := policy.DefaultLimits()
	nodes := lim.ManifestBytes / policy.BytesPerNode
	pad := func(s string, per int) string { return s + strings.Repeat("x", max(per, 0)) }
	// compose: per service 6 nodes + 2 per env entry; 8 for the file.
	env := int((nodes-8)/int64(lim.Services)-6) / 2
	per := int(lim.ManifestBytes)/(lim.Services*env) - 20
	var c strings.Builder
	c.WriteString("services:\n")
	for s := range lim.Services {
		fmt.Fprintf(&c, "  s%d:\n    image: x\n    environment:\n", s)
		for e := range env {
			fmt.Fprintf(&c, "      A%d: %s\n", e, pad("v", per))
		}
	}
	// native: per document 17 nodes + 2 per env entry.
	nenv := int(nodes/int64(lim.Services)-17) / 2
	nper := (int(lim.ManifestBytes)/lim.Services-110)/nenv - len("    A100: \n")
	var n strings.Builder
	for s := range lim.Services {
		fmt.Fprintf(&n, "---\napiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: s%d}\nspec:\n  image: x\n  env:\n", s)
		for e := range nenv {
			fmt.Fprintf(&n, "    A%d: %s\n", e, pad("v", nper))
		}
	}
	long := strings.Repeat("x", int(lim.ManifestBytes)-200)
	lists := int(nodes/int64(policy.MaxNesting) - 4)
	leaf := pad("v", int(lim.ManifestBytes)/lists-3*policy.MaxNesting)
	deep := strings.Repeat("[", policy.MaxNesting-4) + leaf + strings.Repeat("]", policy.MaxNesting-4)
	var d strings.Builder
	d.WriteString("services:\n  web:\n    image: x\nx-deep:\n")
	for range lists {
		fmt.Fprintf(&d, "  - %s\n", deep)
	}
	return map[string]fstest.MapFS{
		"compose/many-services": {"compose.yaml": {Data: []byte(c.String())}},
		"compose/long-string":   {"compose.yaml": {Data: []byte("services:\n  web:\n    image: x\n    environment: {A: " + long + "}\n")}},
		"compose/deep":          {"compose.yaml": {Data: []byte(d.String())}},
		"native/many-services":  {"m.yaml": {Data: []byte(n.String())}},
		"native/long-string":    {"m.yaml": {Data: []byte(loadtest.Svc + "  image: x\n  env: {A: " + long + "}\n")}},
	}
}

// TestLimitsParseMemory loads each worst revision the default limits
// accept, each in a child process, and checks that it loads, is near the
// byte limit, and that the peak resident memory of the process (VmHWM)
// grows by less than 64 MiB while it loads. TotalAlloc (garbage included)
// is reported too.
//
// The bound is for the agent as users run it. Under -race the detector's
// shadow memory grows a load's peak four- to sixfold (46–65 MiB measured
// for the 200-service case, against 10–11 MiB), so then the children run
// from a copy of this test built without it.
func TestLimitsParseMemory(t *testing.T) {
	if name := os.Getenv("DRIFTLESS_LIMITS_CASE"); name != "" {
		loadAndMeasure(name)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	child := os.Args[0]
	if raceDetector {
		child = filepath.Join(t.TempDir(), "policy.test")
		build := exec.Command("go", "test", "-c", "-o", child, ".")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the test without the race detector: %v\n%s", err, out)
		}
	}
	for name, fsys := range atLimit() {
		t.Run(name, func(t *testing.T) {
			size := 0
			for _, f := range fsys {
				size += len(f.Data)
			}
			if int64(size) > policy.DefaultLimits().ManifestBytes || int64(size) < policy.DefaultLimits().ManifestBytes*9/10 {
				t.Fatalf("revision is %d bytes, want just under the limit %d", size, policy.DefaultLimits().ManifestBytes)
			}
			cmd := exec.Command(child, "-test.run=^TestLimitsParseMemory$", "-test.count=1")
			cmd.Env = append(os.Environ(), "DRIFTLESS_LIMITS_CASE="+name)
			out, err := cmd.CombinedOutput()
			var services int
			var peak, total int64
			if _, perr := fmt.Sscanf(lastLine(string(out), "measured:"), "measured: services=%d peak=%d total=%d", &services, &peak, &total); err != nil || perr != nil {
				t.Fatalf("child: %v %v\n%.2000s", err, perr, out)
			}
			t.Logf("%d bytes, %d services: peak RSS growth %.1f MiB, TotalAlloc %.1f MiB", size, services, float64(peak)/(1<<20), float64(total)/(1<<20))
			if peak > 64<<20 {
				t.Errorf("loading grew the peak RSS by %.1f MiB, want < 64 MiB", float64(peak)/(1<<20))
			}
		})
	}
}

// loadAndMeasure is the child of TestLimitsParseMemory.
func loadAndMeasure(name string) {
	fsys := atLimit()[name]
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	hwm := vmHWM()
	app, err := appdir.Load(fsys, ".", "shop")
	runtime.ReadMemStats(&after)
	if err != nil {
		fmt.Printf("refused: %.300s\n", err)
		os.Exit(1)
	}
	fmt.Printf("measured: services=%d peak=%d total=%d\n", len(app.Services), vmHWM()-hwm, after.TotalAlloc-before.TotalAlloc)
}

// vmHWM is the peak resident set size of this process, in bytes.
func vmHWM() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func lastLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func BenchmarkLoadAtLimit(b *testing.B) {
	for name, fsys := range atLimit() {
		b.Run(strings.ReplaceAll(name, "/", "-"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := appdir.Load(fsys, ".", "shop"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
