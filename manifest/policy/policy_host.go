package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// Host is how the policy sees the machine the containers run on. The zero
// Host judges host paths as written; the agent and the CLI pass the real
// machine (internal/hostpath), tests a fake.
type Host struct {
	// Resolve returns where an absolute host path lands: every symlink
	// followed, and what does not exist yet appended as written (Docker
	// creates it below what exists). nil: paths land where written.
	Resolve func(path string) (string, error)
	// Sockets are engine sockets of this machine beyond the well-known
	// places (DOCKER_HOST's, $XDG_RUNTIME_DIR/docker.sock): they need
	// docker-socket as the Docker socket does.
	Sockets []string
	// StateDir is where apps' state directories live (<data>/state):
	// each bind of a state directory must land inside its app's
	// directory there, symlinks followed. "": not judged (no engine of
	// this machine will mount them).
	StateDir string
}

// hostTarget is a place on the host that a mount must not reach unless
// the policy allows it by name, whatever hostPaths say.
type hostTarget struct {
	path    string // clean and absolute
	pattern bool   // path's components are path.Match patterns
	// below: what lies below the path is as powerful (a kernel
	// filesystem), not only the path and the directories above it.
	below bool
	allow string
	what  string // for messages
}

const kernelFiles = "the host's kernel and device files (/proc, /sys, /dev)"

// hostTargets are the well-known places; /var/run is /run on every
// current distribution, but a host path is judged as written too.
var hostTargets = []hostTarget{
	{path: "/run/docker.sock", allow: AllowDockerSocket, what: "the Docker socket"},
	{path: "/var/run/docker.sock", allow: AllowDockerSocket, what: "the Docker socket"},
	{path: "/run/user/*/docker.sock", pattern: true, allow: AllowDockerSocket, what: "a rootless Docker socket"},
	{path: "/var/run/user/*/docker.sock", pattern: true, allow: AllowDockerSocket, what: "a rootless Docker socket"},
	{path: "/run/containerd/containerd.sock", allow: AllowDockerSocket, what: "the containerd socket"},
	{path: "/var/run/containerd/containerd.sock", allow: AllowDockerSocket, what: "the containerd socket"},
	{path: "/proc", below: true, allow: AllowSystemPaths, what: kernelFiles},
	{path: "/sys", below: true, allow: AllowSystemPaths, what: kernelFiles},
	{path: "/dev", below: true, allow: AllowSystemPaths, what: kernelFiles},
}

// reachedBy reports whether mounting hp exposes the target: the target
// itself, a directory above it, or (below) anything under it.
func (t hostTarget) reachedBy(hp string) bool {
	h, w := components(hp), components(t.path)
	for i := range min(len(h), len(w)) {
		if t.pattern {
			if ok, _ := path.Match(w[i], h[i]); !ok {
				return false
			}
		} else if w[i] != h[i] {
			return false
		}
	}
	return len(h) <= len(w) || t.below
}

func components(p string) []string {
	p = path.Clean(p)
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// hostView is what one check knows of the host: the targets and the
// allowed prefixes, each as written and where it lands.
type hostView struct {
	policy   Policy
	resolve  func(string) (string, error)
	targets  []hostTarget
	prefixes []string
}

func newHostView(p Policy, host Host) *hostView {
	v := &hostView{policy: p, resolve: host.Resolve, targets: slices.Clone(hostTargets)}
	for _, s := range host.Sockets {
		if path.IsAbs(s) {
			v.targets = append(v.targets, hostTarget{path: path.Clean(s), allow: AllowDockerSocket, what: "the Docker socket"})
		}
	}
	for _, h := range p.HostPaths {
		v.prefixes = append(v.prefixes, path.Clean(h))
	}
	if v.resolve == nil {
		return v
	}
	// A socket or an allowed directory reached through a symlink is
	// reached all the same.
	for _, t := range v.targets {
		if t.pattern {
			continue
		}
		if landed, err := v.resolve(t.path); err == nil && path.Clean(landed) != t.path {
			t.path = path.Clean(landed)
			v.targets = append(v.targets, t)
		}
	}
	for _, h := range v.prefixes {
		if landed, err := v.resolve(h); err == nil && path.Clean(landed) != h {
			v.prefixes = append(v.prefixes, path.Clean(landed))
		}
	}
	return v
}

func (v *hostView) underPrefix(hp string) bool {
	for _, prefix := range v.prefixes {
		if hp == prefix || prefix == "/" || strings.HasPrefix(hp, prefix+"/") {
			return true
		}
	}
	return false
}

// check judges one host path, written and where it lands: "" when the
// policy allows it, else the refusal. alt is another way to get what the
// manifest wants, for the hostPaths message.
func (v *hostView) check(hp, alt string) string {
	written, landed := path.Clean(hp), path.Clean(hp)
	if v.resolve != nil {
		l, err := v.resolve(written)
		if err != nil {
			return fmt.Sprintf("cannot tell where host path %s leads on the host (%v); driftless follows a host path's symlinks before it allows the mount", written, err)
		}
		landed = path.Clean(l)
	}
	if msg, named := v.checkTargets(written, landed); named {
		return msg
	}
	switch {
	case !v.underPrefix(written):
		return fmt.Sprintf("host path %s is outside the paths this app may mount; allow it with `hostPaths: [%s]` in driftless.yaml (or `--allow-host-path %s`)%s",
			written, written, written, alt)
	case !v.underPrefix(landed):
		return fmt.Sprintf("host path %s leads to %s on the host (symlinks followed), which is outside the paths this app may mount; remove the symlink, or allow %s with `hostPaths: [%s]` in driftless.yaml (or `--allow-host-path %s`)",
			written, landed, landed, landed, landed)
	}
	return ""
}

// checkTargets judges the targets that need an allow by name. named: the
// path reaches one, so the names decide and hostPaths do not matter (as
// for the Docker socket before); msg is the refusal when one is missing.
func (v *hostView) checkTargets(written, landed string) (msg string, named bool) {
	var names, whats []string
	byWritten := false
	for _, t := range v.targets {
		w, l := t.reachedBy(written), t.reachedBy(landed)
		if !w && !l {
			continue
		}
		named = true
		if v.policy.Allows(t.allow) || slices.Contains(names, t.allow) {
			continue
		}
		names, whats = append(names, t.allow), append(whats, t.what)
		byWritten = byWritten || w
	}
	if len(names) == 0 {
		return "", named
	}
	subject := "mounting " + written
	if !byWritten {
		subject += " (which leads to " + landed + " on the host)"
	}
	verb := "is"
	if len(whats) > 1 {
		verb = "are"
	}
	slices.Sort(names)
	return fmt.Sprintf("%s gives the container %s, which %s root on the host; %s", subject, strings.Join(whats, " and "), verb, allowHint(names...)), true
}

// CheckHostPaths judges every host path the app mounts — binds, and local
// volumes that bind a device — where it lands on host: under the policy's
// hostPaths, and the engine sockets and kernel files only when allowed by
// name. CheckPolicy includes it; the agent runs it again at every pass,
// since a symlink can change without a commit.
func CheckHostPaths(app *manifest.App, p Policy, host Host) manifest.ErrorList {
	// The view resolves every sensitive path's symlinks: built only when
	// the app mounts a host path, since the agent asks at every pass and
	// most apps mount none.
	var hv *hostView
	view := func() *hostView {
		if hv == nil {
			hv = newHostView(p, host)
		}
		return hv
	}
	var errs manifest.ErrorList
	add := func(ref manifest.FieldRef, format string, args ...any) {
		errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: fmt.Sprintf(format, args...)})
	}
	// Jobs' containers mount host paths as services' do.
	services := slices.Clone(app.Services)
	for _, job := range app.Jobs {
		services = append(services, job.Service)
	}
	for i := range services {
		svc := &services[i]
		for j, b := range svc.Spec.Binds {
			if b.StatePath != "" {
				if msg := stateDirCheck(host, app.Name, b.StatePath); msg != "" {
					add(svc.Field(yamlpos.IndexPath("binds", j)), "%s", msg)
				}
			}
			if b.HostPath == "" || view().timeFileAllowed(b) {
				continue
			}
			if msg := view().check(b.HostPath, timeFileHint(b)); msg != "" {
				add(svc.Field(yamlpos.IndexPath("binds", j)), "%s", msg)
			}
		}
	}
	for i := range app.Volumes {
		vol := &app.Volumes[i]
		if volumeKindOf(vol.Spec) != volumeBind {
			continue
		}
		device := vol.Spec.DriverOpts["device"]
		ref := vol.Field("driverOpts.device")
		if !path.IsAbs(device) {
			add(ref, "volume %s binds a host directory with the local driver's options: device must be an absolute host path, got %q", vol.DisplayName(), device)
			continue
		}
		if msg := view().check(device, ", or drop the driver options for a volume Docker keeps"); msg != "" {
			add(ref, "volume %s binds a host path: %s", vol.DisplayName(), msg)
		}
	}
	return errs
}

// volumeKind is what a volume's driver and options do on the host.
type volumeKind int

const (
	volumeManaged    volumeKind = iota // Docker keeps the data (or tmpfs), or an external volume
	volumeBind                         // the local driver bound to a host path: a bind mount by another name
	volumeFilesystem                   // the local driver mounting a filesystem: NFS, CIFS, a disk, an overlay
	volumePlugin                       // a volume plugin
)

// volumeKindOf classifies a volume as Docker's local driver reads its
// options (type, o, device: mount -t type -o o device; size: a quota).
// A tmpfs is memory, as a service's tmpfs mount: no host power.
func volumeKindOf(s manifest.VolumeSpec) volumeKind {
	if s.External {
		return volumeManaged
	}
	if s.Driver != "" && s.Driver != manifest.DefaultVolumeDriver {
		return volumePlugin
	}
	o := s.DriverOpts
	bind := slices.ContainsFunc(strings.Split(o["o"], ","), func(f string) bool {
		f = strings.TrimSpace(f)
		return f == "bind" || f == "rbind"
	})
	if bind || (o["type"] == "none" && o["device"] != "") {
		return volumeBind
	}
	for k := range o {
		switch k {
		case "type", "o", "device", "size":
		default:
			return volumeFilesystem // Docker refuses it; no guess at what it means
		}
	}
	if o["type"] == "tmpfs" || (o["type"] == "" && o["o"] == "" && o["device"] == "") {
		return volumeManaged
	}
	return volumeFilesystem
}

// checkVolumeDrivers refuses volume plugins and local driver options that
// have the host mount a filesystem, unless allowed by name; binds are
// CheckHostPaths'. External volumes are not created by driftless: their
// options are not the commit's.
func (p Policy) checkVolumeDrivers(app *manifest.App) manifest.ErrorList {
	if p.Allows(AllowVolumeDrivers) {
		return nil
	}
	var errs manifest.ErrorList
	for i := range app.Volumes {
		vol := &app.Volumes[i]
		var ref manifest.FieldRef
		var msg string
		switch volumeKindOf(vol.Spec) {
		case volumePlugin:
			ref = vol.Field("driver")
			msg = fmt.Sprintf("volume %s uses the volume driver %q, a plugin that acts on the host with its privileges", vol.DisplayName(), vol.Spec.Driver)
		case volumeFilesystem:
			ref = vol.Field("driverOpts")
			msg = fmt.Sprintf("volume %s has the host mount %s: the local driver's options are host power, as a bind mount is", vol.DisplayName(), filesystemOf(vol.Spec.DriverOpts))
		default:
			continue
		}
		errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: msg + "; " + allowHint(AllowVolumeDrivers)})
	}
	return errs
}

// filesystemOf names what the options mount, without their values (a
// CIFS password is an option).
func filesystemOf(opts map[string]string) string {
	if t := opts["type"]; t != "" {
		return fmt.Sprintf("a filesystem of type %q", t)
	}
	return "what its options say (" + strings.Join(sortedKeys(opts), ", ") + ")"
}
