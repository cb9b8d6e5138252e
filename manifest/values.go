package manifest

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Value syntaxes of service fields, shared by both front ends: each parser
// returns the normalized value or an error that reads after the field name.

// CheckSubnet checks a declared network subnet: an IPv4 CIDR without host
// bits, small enough to hold a gateway and a container.
func CheckSubnet(s string) error {
	if s == "" {
		return nil
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || !p.Addr().Is4():
		return fmt.Errorf("subnet %q must be an IPv4 CIDR such as 10.20.0.0/24", s)
	case p.Masked() != p:
		return fmt.Errorf("subnet %s has host bits set; did you mean %s?", s, p.Masked())
	case p.Bits() > 30:
		return fmt.Errorf("subnet %s is too small for a gateway and a container: use /30 or larger", s)
	}
	return nil
}

// MaxSeconds bounds every duration field: a day is more than any probe or
// grace period needs, and keeps durations far from overflowing.
const MaxSeconds = 86400

// ParseDuration parses a Go/compose duration ("10s", "1m30s", "500ms"):
// not negative, at most a day.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit, such as 10s, 1m30s or 500ms", s)
	case d < 0:
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	case d > MaxSeconds*time.Second:
		return 0, fmt.Errorf("invalid duration %q: must be at most 24h", s)
	}
	return d, nil
}

// signals are the Linux signal names Docker accepts, without SIG.
var signals = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "IOT": 6, "BUS": 7, "FPE": 8, "KILL": 9,
	"USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "STKFLT": 16, "CHLD": 17,
	"CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25,
	"VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "POLL": 29, "PWR": 30, "SYS": 31,
}

// ParseSignal normalizes a stop signal: "SIGTERM", "term" and "TERM" become
// "SIGTERM"; a number 1..64 stays a number ("15"); real-time signals are
// written "SIGRTMIN+3".
func ParseSignal(s string) (string, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return "", fmt.Errorf("invalid signal %d: must be 1..64", n)
		}
		return strconv.Itoa(n), nil
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if _, ok := signals[name]; ok {
		return "SIG" + name, nil
	}
	if realtimeSignal(name) {
		return "SIG" + name, nil
	}
	return "", fmt.Errorf("invalid signal %q: use a name such as SIGTERM, TERM or SIGQUIT, or a number", s)
}

// realtimeSignal reports RTMIN, RTMIN+n, RTMAX and RTMAX-n (n 1..15).
func realtimeSignal(name string) bool {
	if name == "RTMIN" || name == "RTMAX" {
		return true
	}
	off, ok := strings.CutPrefix(name, "RTMIN+")
	if !ok {
		off, ok = strings.CutPrefix(name, "RTMAX-")
	}
	n, err := strconv.Atoi(off)
	return ok && err == nil && n >= 1 && n <= 15
}

// Capabilities are the Linux capabilities (without CAP_) Docker knows, and
// ALL.
var Capabilities = []string{
	"ALL", "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE", "CHOWN",
	"DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE",
	"LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST",
	"NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT",
	"SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE",
	"SYS_TIME", "SYS_TTY_CONFIG", "WAKE_ALARM",
}

// NormalizeCapability writes a capability as the model keeps it: upper
// case, without CAP_ ("cap_net_admin" -> "NET_ADMIN").
func NormalizeCapability(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	return strings.TrimPrefix(c, "CAP_")
}

// ValidCapability reports whether c (normalized) is a known capability.
func ValidCapability(c string) bool {
	_, found := slices.BinarySearch(Capabilities, c)
	return found
}

var (
	userPart    = `[A-Za-z0-9_][A-Za-z0-9_.-]*\$?`
	userPattern = regexp.MustCompile(`^` + userPart + `(:` + userPart + `)?$`)
	// hostnamePattern is an RFC 1123 host name: dot-separated labels of
	// letters, digits and '-'.
	hostnamePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	sysctlPattern   = regexp.MustCompile(`^[a-z][a-z0-9_]*([./][A-Za-z0-9_*:-]+)+$`)
)

// ValidUser reports whether u is name|uid[:group|gid].
func ValidUser(u string) bool { return userPattern.MatchString(u) }

// ValidHostname reports whether h is an RFC 1123 host name of at most 253
// characters.
func ValidHostname(h string) bool { return len(h) <= 253 && hostnamePattern.MatchString(h) }

// namespacedSysctls are the kernel parameters Docker lets a container set:
// those in its own IPC or network namespace.
var namespacedSysctls = []string{
	"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem", "kernel.shmall", "kernel.shmmax",
	"kernel.shmmni", "kernel.shm_rmid_forced",
}

// CheckSysctl returns why Docker would refuse the kernel parameter, or nil.
// With the host's network, net.* parameters would change the host's.
func CheckSysctl(name, networkMode string) error {
	n := strings.ReplaceAll(name, "/", ".")
	switch {
	case !sysctlPattern.MatchString(name):
		return fmt.Errorf("invalid sysctl name %q: dot-separated, such as net.core.somaxconn", name)
	case strings.HasPrefix(n, "net."):
		if networkMode == NetworkHost {
			return fmt.Errorf("sysctl %s would change the host's network stack: not allowed with networkMode host", name)
		}
	case slices.Contains(namespacedSysctls, n), strings.HasPrefix(n, "fs.mqueue."):
	default:
		return fmt.Errorf("sysctl %s is not namespaced, so Docker refuses it: only net.*, fs.mqueue.* and kernel.msg*/sem/shm* can be set per container", name)
	}
	return nil
}

// CheckExtraHost checks "host:ip" (Docker's host-gateway allowed as ip).
func CheckExtraHost(e string) error {
	host, ip, ok := strings.Cut(e, ":")
	switch {
	case !ok:
		return fmt.Errorf("invalid extra host %q: write host:ip", e)
	case !ValidHostname(host):
		return fmt.Errorf("invalid extra host %q: %q is not a host name", e, host)
	case ip == "host-gateway":
		return nil
	}
	if _, err := netip.ParseAddr(strings.Trim(ip, "[]")); err != nil {
		return fmt.Errorf("invalid extra host %q: %q is not an IP address", e, ip)
	}
	return nil
}

// CheckMAC checks an Ethernet MAC address.
func CheckMAC(m string) error {
	hw, err := net.ParseMAC(m)
	if err != nil || len(hw) != 6 {
		return fmt.Errorf("invalid MAC address %q: write six hex pairs such as 02:42:ac:11:00:02", m)
	}
	return nil
}
