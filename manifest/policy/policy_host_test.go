package policy_test

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// issueVolumes is issue 24's example: the host's root and the Docker
// socket through named volumes, with no allow at all.
const issueVolumes = `services:
  x:
    image: alpine
    volumes: [hostroot:/host, sock:/var/run/docker.sock]
volumes:
  hostroot: {driver_opts: {type: none, o: bind, device: /}}
  sock: {driver_opts: {type: none, o: bind, device: /var/run/docker.sock}}
`

func TestComposeVolumeDriverOptionsAreHostPower(t *testing.T) {
	got := loadtest.ComposeErrors(t, map[string]string{"compose.yaml": issueVolumes}, load.Options{})
	want := []string{
		"compose.yaml:6:57: volumes.hostroot.driver_opts.device: volume hostroot binds a host path: mounting / gives the container the Docker socket and the host's kernel and device files (/proc, /sys, /dev), which are root on the host; allow it for this app with `allow: [docker-socket, system-paths]` in driftless.yaml (or `--allow docker-socket,system-paths`)",
		"compose.yaml:7:53: volumes.sock.driver_opts.device: volume sock binds a host path: mounting /var/run/docker.sock gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The names the messages give are enough.
	if _, err := loadtest.LoadComposeFiles(t, map[string]string{"compose.yaml": issueVolumes},
		load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDockerSocket, policy.AllowSystemPaths}}}); err != nil {
		t.Errorf("with docker-socket and system-paths: %v", err)
	}
}

func TestVolumePolicy(t *testing.T) {
	srv := policy.Policy{HostPaths: []string{"/srv/shop"}}
	tests := []struct {
		name   string
		volume string // the volume's compose declaration
		policy policy.Policy
		want   string // the error's start; "" accepted
	}{
		{"plain", `{}`, policy.Policy{}, ""},
		{"labels only", `{labels: {a: b}}`, policy.Policy{}, ""},
		{"tmpfs with options", `{driver_opts: {type: tmpfs, device: tmpfs, o: "size=64m,uid=1000"}}`, policy.Policy{}, ""},
		{"quota size", `{driver_opts: {size: 10G}}`, policy.Policy{}, ""},
		{"external", `{external: true, name: other}`, policy.Policy{}, ""},
		{"bind under hostPaths", `{driver_opts: {type: none, o: bind, device: /srv/shop/data}}`, srv, ""},
		{"rbind under hostPaths", `{driver_opts: {type: none, o: "rbind,ro", device: /srv/shop/data}}`, srv, ""},
		{"bind outside hostPaths", `{driver_opts: {type: none, o: bind, device: /srv/shopping}}`, srv,
			"compose.yaml:6:52: volumes.vol.driver_opts.device: volume vol binds a host path: host path /srv/shopping is outside the paths this app may mount; allow it with `hostPaths: [/srv/shopping]`"},
		{"type none with a device is a bind", `{driver_opts: {type: none, device: /etc}}`, policy.Policy{},
			"compose.yaml:6:43: volumes.vol.driver_opts.device: volume vol binds a host path: host path /etc is outside"},
		{"bind whatever the type", `{driver_opts: {type: ext4, o: bind, device: /etc}}`, policy.Policy{},
			"compose.yaml:6:52: volumes.vol.driver_opts.device: volume vol binds a host path: host path /etc is outside"},
		{"bind of a tmpfs", `{driver_opts: {type: tmpfs, o: "size=1m,bind", device: tmpfs}}`, policy.Policy{},
			`compose.yaml:6:63: volumes.vol.driver_opts.device: volume vol binds a host directory with the local driver's options: device must be an absolute host path, got "tmpfs"`},
		{"bind of the containerd socket", `{driver_opts: {o: bind, device: /run/containerd/containerd.sock}}`, policy.Policy{HostPaths: []string{"/"}},
			"compose.yaml:6:40: volumes.vol.driver_opts.device: volume vol binds a host path: mounting /run/containerd/containerd.sock gives the container the containerd socket, which is root on the host; allow it for this app with `allow: [docker-socket]`"},
		{"nfs", `{driver_opts: {type: nfs, o: "addr=10.0.0.1,rw", device: ":/export"}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount a filesystem of type "nfs": the local driver's options are host power, as a bind mount is; allow it for this app with ` + "`allow: [volume-drivers]`"},
		{"nfs allowed", `{driver_opts: {type: nfs, o: "addr=10.0.0.1,rw", device: ":/export"}}`, policy.Policy{Allow: []string{policy.AllowVolumeDrivers}}, ""},
		{"cifs does not show its password", `{driver_opts: {type: cifs, o: "username=u,password=hunter2", device: //nas/x}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount a filesystem of type "cifs"`},
		{"a block device", `{driver_opts: {type: ext4, device: /dev/sda1}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount a filesystem of type "ext4"`},
		{"overlay", `{driver_opts: {type: overlay, o: "lowerdir=/,upperdir=/u,workdir=/w", device: overlay}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount a filesystem of type "overlay"`},
		{"options without a type", `{driver_opts: {o: "addr=10.0.0.1"}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount what its options say (o)`},
		{"an option Docker does not know", `{driver_opts: {mountpoint: /x}}`, policy.Policy{},
			`compose.yaml:6:9: volumes.vol.driver_opts: volume vol has the host mount what its options say (mountpoint)`},
		{"a plugin", `{driver: rexray/ebs}`, policy.Policy{},
			`compose.yaml:6:17: volumes.vol.driver: volume vol uses the volume driver "rexray/ebs", a plugin that acts on the host with its privileges; allow it for this app with ` + "`allow: [volume-drivers]`"},
		{"a plugin allowed", `{driver: rexray/ebs, driver_opts: {size: "10"}}`, policy.Policy{Allow: []string{policy.AllowVolumeDrivers}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"compose.yaml": "services:\n  x:\n    image: alpine\n    volumes: [vol:/v]\nvolumes:\n  vol: " + tc.volume + "\n"}
			_, err := loadtest.LoadComposeFiles(t, files, load.Options{Policy: tc.policy})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Errorf("accepted, want %s", tc.want)
			default:
				if got := loadtest.ErrorLines(t, err); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
					t.Errorf("errors:\n%s\nwant one starting\n%s", strings.Join(got, "\n"), tc.want)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the message shows an option's value: %v", err)
				}
			}
		})
	}
}

// The native front end's volumes go through the same checks, located at
// driverOpts.
func TestNativeVolumeDriverOptionsAreHostPower(t *testing.T) {
	const doc = `apiVersion: driftless.dev/v1
kind: Service
metadata: {name: x}
spec:
  image: alpine
  volumes: [{name: hostroot, mountPath: /host}, {name: sock, mountPath: /var/run/docker.sock}, {name: share, mountPath: /share}, {name: ebs, mountPath: /ebs}]
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: hostroot}
spec: {driverOpts: {type: none, o: bind, device: /}}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: sock}
spec:
  driverOpts:
    type: none
    o: bind
    device: /var/run/docker.sock
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: share}
spec: {driverOpts: {type: nfs, o: "addr=10.0.0.1"}}
---
apiVersion: driftless.dev/v1
kind: Volume
metadata: {name: ebs}
spec: {driver: rexray/ebs}
`
	fsys := fstest.MapFS{"app.yaml": {Data: []byte(doc)}}
	_, err := appdir.LoadWith(fsys, ".", "shop", load.Options{})
	got := loadtest.ErrorLines(t, err)
	want := []string{
		"app.yaml:11:50: spec.driverOpts.device: volume hostroot binds a host path: mounting / gives the container the Docker socket and the host's kernel and device files (/proc, /sys, /dev), which are root on the host; allow it for this app with `allow: [docker-socket, system-paths]` in driftless.yaml (or `--allow docker-socket,system-paths`)",
		"app.yaml:20:13: spec.driverOpts.device: volume sock binds a host path: mounting /var/run/docker.sock gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)",
		`app.yaml:25:8: spec.driverOpts: volume share has the host mount a filesystem of type "nfs": the local driver's options are host power, as a bind mount is; allow it for this app with ` + "`allow: [volume-drivers]` in driftless.yaml (or `--allow volume-drivers`)",
		`app.yaml:30:16: spec.driver: volume ebs uses the volume driver "rexray/ebs", a plugin that acts on the host with its privileges; allow it for this app with ` + "`allow: [volume-drivers]` in driftless.yaml (or `--allow volume-drivers`)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	all := load.Options{Policy: policy.Policy{Allow: []string{policy.AllowDockerSocket, policy.AllowSystemPaths, policy.AllowVolumeDrivers}}}
	if _, err := appdir.LoadWith(fsys, ".", "shop", all); err != nil {
		t.Errorf("with every name the messages give: %v", err)
	}
}

// Sockets and kernel files need their names whatever hostPaths say; a path
// is judged as written and where it lands.
func TestHostTargets(t *testing.T) {
	everything := policy.Policy{HostPaths: []string{"/"}}
	tests := []struct {
		hostPath string
		policy   policy.Policy
		want     []string // allow names the refusal asks for; nil accepted
	}{
		{"/srv/data", everything, nil},
		{"/var/run/docker.sock", everything, []string{policy.AllowDockerSocket}},
		{"/run/docker.sock", everything, []string{policy.AllowDockerSocket}},
		{"/run", everything, []string{policy.AllowDockerSocket}},
		{"/var", everything, []string{policy.AllowDockerSocket}},
		{"/run/containerd", everything, []string{policy.AllowDockerSocket}},
		{"/run/containerd/containerd.sock", everything, []string{policy.AllowDockerSocket}},
		{"/run/user/1000/docker.sock", everything, []string{policy.AllowDockerSocket}},
		{"/run/user/1000", everything, []string{policy.AllowDockerSocket}},
		{"/var/run/user/0/docker.sock", everything, []string{policy.AllowDockerSocket}},
		{"/run/user/1000/pulse", everything, nil},
		{"/run/lock", everything, nil},
		{"/proc", everything, []string{policy.AllowSystemPaths}},
		{"/proc/1/root", everything, []string{policy.AllowSystemPaths}},
		{"/sys/fs/cgroup", everything, []string{policy.AllowSystemPaths}},
		{"/dev/sda", everything, []string{policy.AllowSystemPaths}},
		{"/devices", everything, nil},
		{"/", everything, []string{policy.AllowDockerSocket, policy.AllowSystemPaths}},
		{"/", policy.Policy{Allow: []string{policy.AllowDockerSocket}}, []string{policy.AllowSystemPaths}},
		{"/", policy.Policy{Allow: []string{policy.AllowDockerSocket, policy.AllowSystemPaths}}, nil},
		{"/proc", policy.Policy{Allow: []string{policy.AllowSystemPaths}}, nil},
		{"/run/user/1000/docker.sock", policy.Policy{Allow: []string{policy.AllowDockerSocket}}, nil},
	}
	for _, tc := range tests {
		errs := policy.CheckHostPaths(appBinding(tc.hostPath), tc.policy, policy.Host{})
		if got := refusedNames(errs); !slices.Equal(got, tc.want) {
			t.Errorf("%s with %+v: refused for %q (%v), want %q", tc.hostPath, tc.policy, got, errs, tc.want)
		}
	}
}

// fakeHost resolves with a table of symlinks: link path → target.
func fakeHost(links map[string]string) policy.Host {
	return policy.Host{Resolve: func(p string) (string, error) {
		if target, ok := links["error:"+p]; ok {
			return "", errors.New(target)
		}
		for n := 0; n < 10; n++ {
			changed := false
			for link, target := range links {
				if p == link || strings.HasPrefix(p, link+"/") {
					p = path.Join(target, strings.TrimPrefix(p, link))
					changed = true
				}
			}
			if !changed {
				break
			}
		}
		return p, nil
	}}
}

func TestHostPathsAreJudgedWhereTheyLand(t *testing.T) {
	host := fakeHost(map[string]string{
		"/srv/shop/link":    "/var/run/docker.sock",
		"/srv/shop/rootlnk": "/",
		"/srv/shop/etc":     "/etc",
		"/srv/shop/inside":  "/srv/shop/real",
		"/var/run":          "/run",
		"/data":             "/mnt/disk/data",
		"/srv/engine.sock":  "/opt/engine/docker.sock",
		"error:/srv/shop/x": "permission denied",
	})
	shop := policy.Policy{HostPaths: []string{"/srv/shop"}}
	tests := []struct {
		hostPath string
		policy   policy.Policy
		host     policy.Host
		want     string // the refusal; "" accepted
	}{
		{"/srv/shop/link", shop, host, "mounting /srv/shop/link (which leads to /run/docker.sock on the host) gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)"},
		{"/srv/shop/link", shop, policy.Host{}, ""},
		{"/srv/shop/rootlnk/etc", shop, host, "host path /srv/shop/rootlnk/etc leads to /etc on the host (symlinks followed), which is outside the paths this app may mount; remove the symlink, or allow /etc with `hostPaths: [/etc]` in driftless.yaml (or `--allow-host-path /etc`)"},
		{"/srv/shop/rootlnk", shop, host, "mounting /srv/shop/rootlnk (which leads to / on the host) gives the container the Docker socket and the host's kernel and device files (/proc, /sys, /dev), which are root on the host; allow it for this app with `allow: [docker-socket, system-paths]` in driftless.yaml (or `--allow docker-socket,system-paths`)"},
		{"/srv/shop/etc/passwd", shop, host, "host path /srv/shop/etc/passwd leads to /etc/passwd on the host (symlinks followed), which is outside the paths this app may mount; remove the symlink, or allow /etc/passwd with `hostPaths: [/etc/passwd]` in driftless.yaml (or `--allow-host-path /etc/passwd`)"},
		{"/srv/shop/inside/data", shop, host, ""},
		{"/srv/shop/x", shop, host, "cannot tell where host path /srv/shop/x leads on the host (permission denied); driftless follows a host path's symlinks before it allows the mount"},
		// An allowed directory that is itself a symlink allows where it
		// leads.
		{"/data/db", policy.Policy{HostPaths: []string{"/data"}}, host, ""},
		// The directory itself, by its other name.
		{"/mnt/disk/data/db", policy.Policy{HostPaths: []string{"/data"}}, host, ""},
		{"/mnt/disk/other", policy.Policy{HostPaths: []string{"/data"}}, host, "host path /mnt/disk/other is outside the paths this app may mount"},
		// A socket the environment names, and through a symlink.
		{"/srv/engine.sock", policy.Policy{HostPaths: []string{"/srv"}}, policy.Host{Resolve: host.Resolve, Sockets: []string{"/opt/engine/docker.sock"}},
			"mounting /srv/engine.sock (which leads to /opt/engine/docker.sock on the host) gives the container the Docker socket"},
		{"/srv/engine.sock", policy.Policy{HostPaths: []string{"/srv"}, Allow: []string{policy.AllowDockerSocket}}, policy.Host{Resolve: host.Resolve, Sockets: []string{"/opt/engine/docker.sock"}}, ""},
	}
	for _, tc := range tests {
		errs := policy.CheckHostPaths(appBinding(tc.hostPath), tc.policy, tc.host)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.hostPath, errs)
		case tc.want == "":
		case len(errs) != 1 || !strings.HasPrefix(errs[0].Msg, tc.want):
			t.Errorf("%s: errors %v\nwant one starting %s", tc.hostPath, errs, tc.want)
		}
	}
}

// The sockets of the well-known list are judged where they land too: an
// engine whose socket was moved behind a symlink.
func TestSocketBehindASymlink(t *testing.T) {
	host := fakeHost(map[string]string{"/run/docker.sock": "/srv/engine/docker.sock"})
	errs := policy.CheckHostPaths(appBinding("/srv/engine"), policy.Policy{HostPaths: []string{"/srv"}}, host)
	if got := refusedNames(errs); !slices.Equal(got, []string{policy.AllowDockerSocket}) {
		t.Errorf("refused for %q (%v), want docker-socket", got, errs)
	}
}

// A load with a Host judges where bind volumes land as well, at the
// volume's device.
func TestLoadJudgesBindVolumesWhereTheyLand(t *testing.T) {
	files := map[string]string{"compose.yaml": `services:
  x:
    image: alpine
    volumes: [data:/data]
volumes:
  data:
    driver_opts: {type: none, o: bind, device: /srv/shop/data}
`}
	opts := load.Options{Policy: policy.Policy{HostPaths: []string{"/srv/shop"}}}
	if _, err := loadtest.LoadComposeFiles(t, files, opts); err != nil {
		t.Fatalf("as written: %v", err)
	}
	opts.Host = fakeHost(map[string]string{"/srv/shop/data": "/var/run/docker.sock", "/var/run": "/run"})
	got := loadtest.ComposeErrors(t, files, opts)
	want := "compose.yaml:7:48: volumes.data.driver_opts.device: volume data binds a host path: mounting /srv/shop/data (which leads to /run/docker.sock on the host) gives the container the Docker socket"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("errors:\n%s\nwant one starting\n%s", strings.Join(got, "\n"), want)
	}
}

func appBinding(hostPath string) *manifest.App {
	return &manifest.App{Services: []manifest.Service{{Name: "x", Spec: manifest.ServiceSpec{Binds: []manifest.BindMount{{HostPath: hostPath, MountPath: "/m"}}}}}}
}

// refusedNames are the allow names the refusals ask for, or "hostPaths".
func refusedNames(errs manifest.ErrorList) []string {
	var names []string
	for _, e := range errs {
		_, rest, ok := strings.Cut(e.Msg, "`allow: [")
		if !ok {
			names = append(names, "hostPaths")
			continue
		}
		list, _, _ := strings.Cut(rest, "]")
		names = append(names, strings.Split(list, ", ")...)
	}
	return names
}

// A job's container is judged where its host paths land, as a service's,
// on every pass.
func TestJobHostPathsJudgedWhereTheyLand(t *testing.T) {
	host := fakeHost(map[string]string{"/run/docker.sock": "/srv/engine/docker.sock"})
	svc := appBinding("/srv/engine").Services[0]
	app := &manifest.App{Jobs: []manifest.Job{{Name: "backup", Service: svc}}}
	errs := policy.CheckHostPaths(app, policy.Policy{HostPaths: []string{"/srv"}}, host)
	if got := refusedNames(errs); !slices.Equal(got, []string{policy.AllowDockerSocket}) {
		t.Errorf("refused for %q (%v), want docker-socket", got, errs)
	}
}
