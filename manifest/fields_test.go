package manifest

import (
	"strings"
	"testing"
)

func TestCheckDeviceCgroupRule(t *testing.T) {
	for rule, ok := range map[string]bool{
		"c 189:* rmw": true, "a *:* r": true, "b 8:0 w": true, "c 1:3 mr": true,
		"": false, "c 189 rmw": false, "x 1:2 r": false, "c a:1 r": false, "c 1:2 rx": false, "c 1:2": false, "c 1:2 r extra": false,
	} {
		if err := CheckDeviceCgroupRule(rule); (err == nil) != ok {
			t.Errorf("%q: error %v, want accepted %v", rule, err, ok)
		}
	}
}

func TestValidRuntimeName(t *testing.T) {
	for name, ok := range map[string]bool{"runc": true, "io.containerd.runc.v2": true, "nvidia": true, "run_sc-1": true, "": false, "a/b": false, "run c": false} {
		if ValidRuntimeName(name) != ok {
			t.Errorf("%q: valid %v, want %v", name, !ok, ok)
		}
	}
}

// A rule the check accepts is one Docker parses: three fields, a known
// type, numeric or * device numbers, access of r, w and m.
func FuzzCheckDeviceCgroupRule(f *testing.F) {
	for _, s := range []string{"c 189:* rmw", "a *:* r", "b 8:0 w", "c 1:2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		if CheckDeviceCgroupRule(rule) != nil {
			return
		}
		fields := strings.Fields(rule)
		if len(fields) != 3 || !strings.Contains("abc", fields[0]) || len(fields[0]) != 1 || strings.Trim(fields[2], "rwm") != "" || fields[2] == "" {
			t.Fatalf("accepted %q", rule)
		}
	})
}
