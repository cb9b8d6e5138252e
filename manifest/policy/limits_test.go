package policy_test

import (
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// loadLimited loads files with lim and returns the errors, one per line.
func loadLimited(t *testing.T, fsys fs.FS, lim policy.Limits) []string {
	t.Helper()
	_, err := appdir.LoadWith(fsys, ".", "shop", load.Options{Limits: lim})
	if err == nil {
		t.Fatal("loaded, want a refusal")
	}
	return loadtest.ErrorLines(t, err)
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

func nativeService(name string, replicas int) string {
	return "---\napiVersion: driftless.dev/v1\nkind: Service\nmetadata: {name: " + name + "}\nspec:\n  image: x\n  replicas: " + strconv.Itoa(replicas) + "\n"
}

func TestLimitsRefuse(t *testing.T) {
	conf := strings.Repeat("c", 100)
	tests := []struct {
		name  string
		files map[string]string
		lim   policy.Limits
		want  []string
	}{
		{
			name:  "native replicas",
			files: map[string]string{"web.yaml": loadtest.Svc + "  image: x\n  replicas: 9223372036854775807\n"},
			want:  []string{"web.yaml:7:13: spec.replicas: 9223372036854775807 replicas are more than the limit of 100 per service: if this is intended, raise limits.replicas in driftless.yaml (or --limit replicas=N)"},
		},
		{
			name:  "compose deploy.replicas",
			files: map[string]string{"compose.yaml": "services:\n  web:\n    image: x\n    deploy: {replicas: 1000000}\n"},
			want:  []string{"compose.yaml:4:24: services.web.deploy.replicas: 1000000 replicas are more than the limit of 100 per service: if this is intended, raise limits.replicas in driftless.yaml (or --limit replicas=N)"},
		},
		{
			name:  "compose scale, raised limit",
			files: map[string]string{"compose.yaml": "services:\n  web:\n    image: x\n    scale: 6\n"},
			lim:   policy.Limits{Replicas: 5},
			want:  []string{"compose.yaml:4:12: services.web.scale: 6 replicas are more than the limit of 5 per service: if this is intended, raise limits.replicas in driftless.yaml (or --limit replicas=N)"},
		},
		{
			name:  "native services",
			files: map[string]string{"a.yaml": nativeService("a", 1) + nativeService("b", 1) + nativeService("c", 1)},
			lim:   policy.Limits{Services: 2},
			want:  []string{`a.yaml:18:18: the app declares 3 services, more than the limit of 2 (this is service "c"): split the app, or if this is intended, raise limits.services in driftless.yaml (or --limit services=N)`},
		},
		{
			name:  "compose services, before compose-go",
			files: map[string]string{"compose.yaml": "services:\n  a: {image: x}\n  b: {image: x}\n  c: {image: x}\n"},
			lim:   policy.Limits{Services: 2},
			want:  []string{"compose.yaml:4:3: the app declares 3 services, more than the limit of 2: split the app, or if this is intended, raise limits.services in driftless.yaml (or --limit services=N)"},
		},
		{
			name:  "compose objects",
			files: map[string]string{"compose.yaml": "services:\n  a: {image: x}\nnetworks: {n1: {}, n2: {}}\nvolumes: {v1: {}}\n"},
			lim:   policy.Limits{Objects: 2},
			want:  []string{"compose.yaml:4:11: the app declares 3 networks and volumes, more than the limit of 2: if this is intended, raise limits.objects in driftless.yaml (or --limit objects=N)"},
		},
		{
			name:  "documents per file",
			files: map[string]string{"a.yaml": nativeService("a", 1) + nativeService("b", 1) + nativeService("c", 1)},
			lim:   policy.Limits{Documents: 2},
			want:  []string{"a.yaml:15:1: this file holds more than 2 YAML documents, the limit; refused without reading further: split it into files, or if this is intended, raise limits.documents in driftless.yaml (or --limit documents=N)"},
		},
		{
			name:  "files per revision",
			files: map[string]string{"a.yaml": nativeService("a", 1), "b.yaml": nativeService("b", 1), "c.yaml": nativeService("c", 1)},
			lim:   policy.Limits{Files: 2},
			want:  []string{"c.yaml: the files this revision has read come to 3 with this file, more than the limit of 2; refused without reading further: if this is intended, raise limits.files in driftless.yaml (or --limit files=N)"},
		},
		{
			name:  "compose bind content",
			files: map[string]string{"compose.yaml": "services:\n  web:\n    image: x\n    volumes: [./conf:/etc/conf:ro]\n", "conf/a": conf, "conf/b": conf},
			lim:   policy.Limits{ContentBytes: 150},
			want:  []string{`compose.yaml:4:15: services.web.volumes[0]: bind source "./conf": the repository files this revision mounts come to 200 bytes with this file, more than the limit of 150 bytes; refused without reading further: if this is intended, raise limits.contentBytes in driftless.yaml (or --limit contentBytes=N); mount configuration, keep data in a volume`},
		},
		{
			name:  "native repoPath content",
			files: map[string]string{"web.yaml": loadtest.Svc + "  image: x\n  binds: [{repoPath: conf, mountPath: /etc/conf}]\n", "conf/a": conf, "conf/b": conf},
			lim:   policy.Limits{ContentBytes: 150},
			want:  []string{"web.yaml:7:11: spec.binds[0]: repoPath conf: the repository files this revision mounts come to 200 bytes with this file, more than the limit of 150 bytes; refused without reading further: if this is intended, raise limits.contentBytes in driftless.yaml (or --limit contentBytes=N); mount config files, not data (use a volume)"},
		},
		{
			name:  "nesting",
			files: map[string]string{"compose.yaml": "services:\n  web: {image: x}\nx-deep: " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "\n"},
			want:  []string{"compose.yaml:3:32: nested more than 24 levels deep, the limit: flatten the structure"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := loadLimited(t, mapFS(tc.files), tc.lim)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

// hugeFS holds one manifest whose stat says 60 MiB and which must never be
// read: the limit is checked before reading.
type hugeFS struct{ fstest.MapFS }

type hugeInfo struct{ fs.FileInfo }

func (hugeInfo) Size() int64 { return 60 << 20 }

func (h hugeFS) Stat(name string) (fs.FileInfo, error) {
	info, err := h.MapFS.Stat(name)
	if err == nil && name == "big.yaml" {
		return hugeInfo{info}, nil
	}
	return info, err
}

func (h hugeFS) Open(name string) (fs.File, error) {
	if name == "big.yaml" {
		return nil, errors.New("big.yaml was opened: its size must refuse it first")
	}
	return h.MapFS.Open(name)
}

func (h hugeFS) ReadFile(name string) ([]byte, error) {
	if name == "big.yaml" {
		return nil, errors.New("big.yaml was read: its size must refuse it first")
	}
	return h.MapFS.ReadFile(name)
}

func TestLimitsManifestBytesRefusedBeforeReading(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
	}{
		{"native", fstest.MapFS{"a.yaml": {Data: []byte(nativeService("a", 1))}, "big.yaml": {}}},
		{"compose", fstest.MapFS{"compose.yaml": {Data: []byte("include: [big.yaml]\nservices: {web: {image: x}}\n")}, "big.yaml": {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadLimited(t, hugeFS{tc.files}, policy.Limits{})
			want := "big.yaml: the manifests this revision has read come to "
			if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "more than the limit of 524288 bytes (512Ki)") || !strings.HasSuffix(got[0], "raise limits.manifestBytes in driftless.yaml (or --limit manifestBytes=N)") {
				t.Errorf("errors %q\nwant one starting %q naming the limit", got, want)
			}
		})
	}
}

// YAML beside a compose file is no manifest unless it names driftless.dev/,
// and one over manifestBytes could not be loaded as one: it is neither
// read nor refused.
func TestLimitsHugeYAMLBesideCompose(t *testing.T) {
	fsys := hugeFS{fstest.MapFS{"compose.yaml": {Data: []byte("services: {web: {image: x}}\n")}, "big.yaml": {}}}
	if _, err := appdir.LoadWith(fsys, ".", "shop", load.Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestLimitsBillionLaughs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"compose", map[string]string{"compose.yaml": loadtest.BillionLaughs("services: {web: {image: x}}\n")},
			"compose.yaml:3:12: YAML aliases expand this revision to more than 8192 values, more than 524288 bytes (512Ki) of manifests can hold written out; refused without expanding them: use fewer aliases, or if this is intended, raise limits.manifestBytes in driftless.yaml (or --limit manifestBytes=N)"},
		{"native", map[string]string{"a.yaml": loadtest.BillionLaughs("")},
			"a.yaml:2:12: YAML aliases expand this revision to more than 8192 values, more than 524288 bytes (512Ki) of manifests can hold written out; refused without expanding them: use fewer aliases, or if this is intended, raise limits.manifestBytes in driftless.yaml (or --limit manifestBytes=N)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := appdir.LoadWith(mapFS(tc.files), ".", "shop", load.Options{})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("loaded a billion laughs")
			}
			got := loadtest.ErrorLines(t, err)
			if !slices.Equal(got, []string{tc.want}) {
				t.Errorf("errors %q\nwant %q", got, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("refusing it allocated %d MiB, want < 16 MiB", alloc>>20)
			}
			t.Logf("refused in %v", time.Since(start))
		})
	}
}

func TestLimitsSet(t *testing.T) {
	var l policy.Limits
	for name, v := range map[string]string{"replicas": "500", "manifestBytes": "1Mi", "contentBytes": "1000", "files": "0"} {
		if err := l.Set(name, v); err != nil {
			t.Fatalf("Set(%s, %s): %v", name, v, err)
		}
	}
	want := policy.Limits{Replicas: 500, ManifestBytes: 1 << 20, ContentBytes: 1000}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
	if d := l.WithDefaults(); d.Files != policy.DefaultLimits().Files || d.Replicas != 500 {
		t.Errorf("WithDefaults = %+v: want files defaulted, replicas kept", d)
	}
	for _, bad := range [][2]string{{"replica", "1"}, {"replicas", "-1"}, {"replicas", "1Mi"}, {"manifestBytes", "lots"}} {
		if err := l.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%s, %s) accepted", bad[0], bad[1])
		}
	}
	if err := (policy.Limits{Services: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "limits.services") {
		t.Errorf("Validate of a negative limit: %v", err)
	}
}
