package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// tmpfsFlags are the tmpfs mount flags a service may set beyond size and
// mode (compose's short syntax "/config:exec,uid=1000"): what Docker
// passes to the kernel for a tmpfs, minus the flags that change how the
// mount is made rather than what it allows.
var tmpfsFlags = map[string]bool{
	"exec": true, "noexec": true, "suid": true, "nosuid": true, "dev": true, "nodev": true,
	"rw": true, "ro": true, "sync": true, "async": true, "dirsync": true,
	"atime": true, "noatime": true, "diratime": true, "nodiratime": true,
	"relatime": true, "norelatime": true, "strictatime": true, "nostrictatime": true,
}

// CheckTmpfsOption checks one tmpfs option besides size and mode: a flag
// (exec, noexec, suid, nosuid, dev, nodev, rw, ro, the atime family,
// sync, async, dirsync), uid=N / gid=N with a numeric id, or nr_inodes=N.
// It returns the option as Docker takes it.
func CheckTmpfsOption(o string) (string, error) {
	o = strings.TrimSpace(o)
	k, v, hasValue := strings.Cut(o, "=")
	switch {
	case tmpfsFlags[o]:
		return o, nil
	case hasValue && (k == "uid" || k == "gid" || k == "nr_inodes"):
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			what := "a numeric id"
			if k == "nr_inodes" {
				what = "a whole number"
			}
			return "", fmt.Errorf("%s must be %s, got %q", k, what, v)
		}
		return k + "=" + strconv.FormatUint(n, 10), nil
	}
	return "", fmt.Errorf("tmpfs option %q is not supported: use size=, mode=, uid=, gid=, nr_inodes=, rw, ro, exec, noexec, suid, nosuid, dev, nodev, sync, async, dirsync or an atime flag (noatime, relatime, ...)", o)
}

// DockerOptions is the tmpfs as HostConfig.Tmpfs takes it
// ("exec,uid=1000,size=16777216,mode=1777"): the only form that carries
// options beyond size and mode on API 1.41, and the one compose uses.
func (t TmpfsMount) DockerOptions() string {
	opts := append([]string(nil), t.Options...)
	if t.SizeBytes != 0 {
		opts = append(opts, "size="+strconv.FormatInt(t.SizeBytes, 10))
	}
	if t.Mode != 0 {
		opts = append(opts, "mode="+strconv.FormatUint(uint64(t.Mode), 8))
	}
	return strings.Join(opts, ",")
}

// ParsePlatform reads an image platform as compose writes it:
// "os/arch" or "os/arch/variant" ("linux/arm64", "linux/arm/v7").
func ParsePlatform(s string) (os, arch, variant string, err error) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t:") {
			parts = nil
			break
		}
	}
	switch len(parts) {
	case 2:
		return parts[0], parts[1], "", nil
	case 3:
		return parts[0], parts[1], parts[2], nil
	}
	return "", "", "", fmt.Errorf("invalid platform %q: write os/arch or os/arch/variant, such as linux/arm64", s)
}

// ValidCPUSet reports whether s is a CPU list as cpuset takes it: CPU
// numbers and ranges, comma-separated ("0-3", "0,2", "1-2,6").
func ValidCPUSet(s string) bool {
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return false
		}
		if isRange {
			b, err := strconv.ParseUint(hi, 10, 16)
			if err != nil || b < a {
				return false
			}
		}
	}
	return true
}

// CheckMemorySwap checks a swap limit (memory plus swap, -1 unlimited)
// against the memory limit, as Docker does at create: "" when it is
// accepted, else why not.
func CheckMemorySwap(memory, swap int64) string {
	switch {
	case swap == 0 || swap == -1:
		return ""
	case swap < 0:
		return "must be a memory quantity, or -1 for unlimited swap"
	case memory == 0:
		return "needs a memory limit: Docker sets swap only with one"
	case swap < memory:
		return fmt.Sprintf("must be at least the memory limit (%s): it counts memory plus swap", FormatMemory(memory))
	}
	return ""
}

// Namespace modes a service may set, by the native field: "" is always
// accepted (the container's own, or the engine's default).
var (
	UTSModes    = NamespaceModes{Values: []string{"host"}, Unset: "the container's own"}
	UsernsModes = NamespaceModes{Values: []string{"host"}, Unset: "the engine's default"}
	CgroupModes = NamespaceModes{Values: []string{"host", "private"}, Unset: "the engine's default"}
)

// NamespaceModes are the values one namespace mode accepts.
type NamespaceModes struct {
	Values []string
	Unset  string // what "" means, for the message
}

// Check returns why v is refused, or nil.
func (m NamespaceModes) Check(v string) error {
	if v == "" || slices.Contains(m.Values, v) {
		return nil
	}
	return fmt.Errorf("must be %s (or absent for %s), got %q", strings.Join(m.Values, " or "), m.Unset, v)
}

// ValidRuntimeName reports whether s can name a runtime in the engine's
// configuration (daemon.json "runtimes"): letters, digits, '.', '_', '-'.
func ValidRuntimeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckDeviceCgroupRule checks a device cgroup rule as Docker takes it:
// TYPE MAJOR:MINOR ACCESS, where TYPE is a (all), b (block) or c (char),
// MAJOR and MINOR are numbers or *, and ACCESS is made of r, w and m.
func CheckDeviceCgroupRule(rule string) error {
	bad := fmt.Errorf("invalid device cgroup rule %q: write TYPE MAJOR:MINOR ACCESS, such as \"c 189:* rmw\" (TYPE a, b or c; ACCESS of r, w, m)", rule)
	f := strings.Fields(rule)
	if len(f) != 3 || (f[0] != "a" && f[0] != "b" && f[0] != "c") {
		return bad
	}
	major, minor, ok := strings.Cut(f[1], ":")
	if !ok {
		return bad
	}
	for _, n := range []string{major, minor} {
		if n == "*" {
			continue
		}
		if _, err := strconv.ParseUint(n, 10, 32); err != nil {
			return bad
		}
	}
	if strings.Trim(f[2], "rwm") != "" || f[2] == "" {
		return bad
	}
	return nil
}
