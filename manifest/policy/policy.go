package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// Host powers a manifest may only use when the app's configuration allows
// them by name (driftless.yaml `allow:`, `driftless run --allow`). A commit
// must not be able to take the host by default.
const (
	AllowPrivileged    = "privileged"     // privileged: true
	AllowHostNetwork   = "host-network"   // network mode host
	AllowHostPID       = "host-pid"       // pid: host
	AllowHostIPC       = "host-ipc"       // ipc: host
	AllowHostUserns    = "host-userns"    // userns mode host: no user namespace remapping
	AllowRuntimes      = "runtimes"       // an OCI runtime other than the engine's default
	AllowDevices       = "devices"        // host devices and device requests (GPUs)
	AllowCapabilities  = "capabilities"   // capabilities beyond Docker's defaults
	AllowUnconfined    = "unconfined"     // security options that turn off seccomp, AppArmor or SELinux
	AllowDockerSocket  = "docker-socket"  // a mount that reaches an engine's socket (Docker's, rootless Docker's, containerd's)
	AllowSystemPaths   = "system-paths"   // a mount that reaches the host's /proc, /sys or /dev
	AllowVolumeDrivers = "volume-drivers" // a volume plugin, or local driver options that mount a filesystem
)

// AllowNames are the names Policy.Allow accepts.
var AllowNames = []string{AllowCapabilities, AllowDevices, AllowDockerSocket, AllowHostIPC, AllowHostNetwork, AllowHostPID, AllowHostUserns, AllowPrivileged, AllowRuntimes,
	AllowSystemPaths, AllowUnconfined, AllowVolumeDrivers}

// defaultCaps are the capabilities Docker grants every container; adding
// one of them again gives nothing new.
var defaultCaps = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
	"NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// Policy is what an app's manifests may do to the host. The zero Policy
// allows no host power: no absolute host paths, nothing in AllowNames.
type Policy struct {
	Allow []string `json:"allow,omitempty"`
	// HostPaths are absolute path prefixes that bind mounts of host paths
	// may use ("/srv/shop" allows "/srv/shop/conf", not "/srv/shopping").
	HostPaths []string `json:"hostPaths,omitempty"`
	// HomeDir is what ~ in a bind source stands for (compose's ~/data);
	// "" refuses ~. The path it leads to needs HostPaths like any other.
	HomeDir string `json:"homeDir,omitempty"`
}

// Allows reports whether the named power is allowed.
func (p Policy) Allows(name string) bool { return slices.Contains(p.Allow, name) }

// Validate checks the policy's own values.
func (p Policy) Validate() error {
	for _, a := range p.Allow {
		if !slices.Contains(AllowNames, a) {
			return fmt.Errorf("allow: unknown name %q: must be one of %s", a, strings.Join(AllowNames, ", "))
		}
	}
	for _, h := range p.HostPaths {
		if !path.IsAbs(h) {
			return fmt.Errorf("hostPaths: %q is not an absolute path", h)
		}
	}
	if p.HomeDir != "" && !path.IsAbs(p.HomeDir) {
		return fmt.Errorf("homeDir: %q is not an absolute path", p.HomeDir)
	}
	return nil
}

// CheckPolicy returns one error for every use of a host power the policy
// does not allow, located where the manifest declares it, with the setting
// that would allow it. Both front ends' apps go through it. Host paths are
// judged where they land on host (see Host); the zero Host judges them as
// written.
func CheckPolicy(app *manifest.App, p Policy, host Host) manifest.ErrorList {
	var errs manifest.ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		deny := func(field, format string, args ...any) {
			ref := svc.Field(field)
			errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: fmt.Sprintf(format, args...)})
		}
		p.checkNamespaces(&svc.Spec, deny)
		p.checkPrivileges(&svc.Spec, deny)
	}
	errs = append(errs, p.checkVolumeDrivers(app)...)
	return append(errs, CheckHostPaths(app, p, host)...)
}

// denyFunc records a refusal of the field at model path field.
type denyFunc func(field, format string, args ...any)

func allowHint(names ...string) string {
	return fmt.Sprintf("allow it for this app with `allow: [%s]` in driftless.yaml (or `--allow %s`)", strings.Join(names, ", "), strings.Join(names, ","))
}

// checkNamespaces refuses the host's namespaces.
func (p Policy) checkNamespaces(s *manifest.ServiceSpec, deny denyFunc) {
	if s.NetworkMode == manifest.NetworkHost && !p.Allows(AllowHostNetwork) {
		deny("networkMode", "the host's network namespace gives the container every host port and interface; %s", allowHint(AllowHostNetwork))
	}
	if s.PID == "host" && !p.Allows(AllowHostPID) {
		deny("pid", "the host's PID namespace lets the container see and signal every host process; %s", allowHint(AllowHostPID))
	}
	if s.IPC == "host" && !p.Allows(AllowHostIPC) {
		deny("ipc", "the host's IPC namespace is shared with every host process; %s", allowHint(AllowHostIPC))
	}
	if s.Runtime != "" && !p.Allows(AllowRuntimes) {
		// The engine's default runtime is what its owner chose for every
		// container (gVisor's runsc, say); another one grants what its
		// own configuration says (nvidia's: GPUs by environment variable).
		deny("runtime", "runtime %q replaces the engine's default runtime, and grants what that runtime's configuration grants; %s", s.Runtime, allowHint(AllowRuntimes))
	}
	if s.UsernsMode == "host" && !p.Allows(AllowHostUserns) {
		deny("usernsMode", "outside the engine's user namespace remapping the container's root is the host's root; %s", allowHint(AllowHostUserns))
	}
}

// checkPrivileges refuses privilege beyond Docker's defaults.
func (p Policy) checkPrivileges(s *manifest.ServiceSpec, deny denyFunc) {
	if s.Privileged && !p.Allows(AllowPrivileged) {
		deny("privileged", "a privileged container can take over the host; %s", allowHint(AllowPrivileged))
	}
	for _, hooks := range []struct {
		field string
		list  []manifest.Hook
	}{{"postStart", s.PostStart}, {"preStop", s.PreStop}} {
		for j, h := range hooks.list {
			if h.Privileged && !p.Allows(AllowPrivileged) {
				deny(yamlpos.IndexPath(hooks.field, j)+".privileged", "a privileged hook runs as a privileged container would, and can take over the host; %s", allowHint(AllowPrivileged))
			}
		}
	}
	for j, d := range s.Devices {
		if !p.Allows(AllowDevices) {
			deny(yamlpos.IndexPath("devices", j), "host device %s gives the container direct hardware access; %s", d.HostPath, allowHint(AllowDevices))
		}
	}
	for j, rule := range s.DeviceCgroupRules {
		if !p.Allows(AllowDevices) {
			deny(yamlpos.IndexPath("deviceCgroupRules", j), "device rule %q lets the container use host devices; %s", rule, allowHint(AllowDevices))
		}
	}
	for j, r := range s.DeviceRequests {
		if !p.Allows(AllowDevices) {
			deny(yamlpos.IndexPath("deviceRequests", j), "device request %s gives the container direct hardware access (GPUs); %s", r, allowHint(AllowDevices))
		}
	}
	for j, c := range s.CapAdd {
		if !slices.Contains(defaultCaps, c) && !p.Allows(AllowCapabilities) {
			deny(yamlpos.IndexPath("capAdd", j), "capability %s is beyond Docker's defaults; %s", c, allowHint(AllowCapabilities))
		}
	}
	for j, o := range s.SecurityOpt {
		if unconfined(o) && !p.Allows(AllowUnconfined) {
			deny(yamlpos.IndexPath("securityOpt", j), "%q turns off the kernel's confinement of the container; %s", o, allowHint(AllowUnconfined))
		}
	}
}

// unconfined reports a security option that disables a confinement.
func unconfined(opt string) bool {
	o := strings.ReplaceAll(opt, ":", "=")
	switch o {
	case "seccomp=unconfined", "apparmor=unconfined", "label=disable", "systempaths=unconfined":
		return true
	}
	return false
}
