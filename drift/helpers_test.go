package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

const (
	testApp = "shop"
	testRev = "abc1234def567890"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// hashOf stands in for the parser's hash: anything but replicas and
// dependsOn changes it.
func hashOf(s manifest.ServiceSpec) string {
	s.Replicas, s.DependsOn = 0, nil
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// service builds a declared service with normalized defaults; mods edit
// the spec before it is hashed.
func service(name string, replicas int, mods ...func(*manifest.ServiceSpec)) manifest.Service {
	spec := manifest.ServiceSpec{
		Image:                  "shop/" + name + ":v1",
		Replicas:               replicas,
		Networks:               []string{manifest.DefaultNetwork},
		Restart:                manifest.RestartAlways,
		Update:                 manifest.Update{Strategy: manifest.StrategyRolling, MaxSurge: 1},
		StopGracePeriodSeconds: 10,
	}
	for _, m := range mods {
		m(&spec)
	}
	return manifest.Service{Name: name, Spec: spec, Hash: hashOf(spec)}
}

func image(img string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) { s.Image = img }
}

func restart(policy string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) { s.Restart = policy }
}

func dependsOn(deps ...string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) { s.DependsOn = deps }
}

func networks(nets ...string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) { s.Networks = nets }
}

func hostPort(port int) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.Ports = append(s.Ports, manifest.Port{ContainerPort: port, HostPort: port, Protocol: "tcp"})
	}
}

func mount(vol string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.Volumes = append(s.Volumes, manifest.VolumeMount{Name: vol, MountPath: "/data"})
	}
}

func env(kv ...string) func(*manifest.ServiceSpec) {
	return func(s *manifest.ServiceSpec) {
		s.Env = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			s.Env[kv[i]] = kv[i+1]
		}
	}
}

// desiredApp declares the services plus every network and volume they use,
// as the parser would.
func desiredApp(services ...manifest.Service) *manifest.App {
	a := &manifest.App{Name: testApp, Services: services}
	nets, vols := map[string]bool{}, map[string]bool{}
	for _, s := range services {
		for _, n := range s.Spec.Networks {
			if !nets[n] {
				nets[n] = true
				a.Networks = append(a.Networks, manifest.Network{Name: n, Spec: manifest.NetworkSpec{Driver: "bridge"},
					Hash: "net-" + n, Implicit: n == manifest.DefaultNetwork})
			}
		}
		for _, m := range s.Spec.Volumes {
			if !vols[m.Name] {
				vols[m.Name] = true
				a.Volumes = append(a.Volumes, manifest.Volume{Name: m.Name, Spec: manifest.VolumeSpec{Driver: "local"}, Hash: "vol-" + m.Name})
			}
		}
	}
	return a
}

// replica is a converged, running, ready container of the service's slot.
func replica(s manifest.Service, slot int) Container {
	spec := s.Spec.Redacted(nil) // as deploy records it (the test apps' key is nil)
	name := manifest.ContainerName(testApp, s.Name, slot)
	nets := make([]string, len(spec.Networks))
	for i, n := range spec.Networks {
		nets[i] = manifest.ObjectName(testApp, n)
	}
	var ports []int
	for _, p := range spec.Ports {
		if p.HostPort != 0 {
			ports = append(ports, p.HostPort)
		}
	}
	return Container{
		ID: "id-" + name, Name: name, App: testApp, Service: s.Name, Slot: slot,
		SpecHash: s.Hash, Revision: "0ld0ld0", Spec: &spec,
		Image: spec.Image, State: StateRunning, Status: "Up 3 minutes",
		Created: t0.Add(-time.Hour), Networks: nets, HostPorts: ports, Ready: true,
	}
}

// converged is the actual state of an app that runs exactly as declared.
func converged(a *manifest.App) Actual {
	var act Actual
	for _, n := range a.Networks {
		act.Networks = append(act.Networks, Network{ID: "net-id-" + n.Name, Name: manifest.ObjectName(testApp, n.Name),
			App: testApp, Resource: n.Name, SpecHash: n.Hash, Driver: n.Spec.Driver})
	}
	for _, v := range a.Volumes {
		act.Volumes = append(act.Volumes, Volume{Name: manifest.ObjectName(testApp, v.Name),
			App: testApp, Resource: v.Name, SpecHash: v.Hash, Driver: v.Spec.Driver})
	}
	for _, s := range a.Services {
		for slot := 1; slot <= s.Spec.Replicas; slot++ {
			act.Containers = append(act.Containers, replica(s, slot))
		}
	}
	return act
}

// edit changes the named container of the actual state in place.
func edit(act *Actual, name string, f func(*Container)) {
	for i := range act.Containers {
		if act.Containers[i].Name == name {
			f(&act.Containers[i])
			return
		}
	}
	panic("no container " + name)
}

// drop removes the named containers from the actual state.
func drop(act *Actual, names ...string) {
	var keep []Container
	for _, c := range act.Containers {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+c.Name+" ") {
			keep = append(keep, c)
		}
	}
	act.Containers = keep
}

func input(d *manifest.App, act Actual, opts Options) Input {
	if opts.Revision == "" {
		opts.Revision = testRev
	}
	if opts.Now.IsZero() {
		opts.Now = t0
	}
	return Input{App: testApp, Desired: d, Actual: act, Options: opts}
}

var columnGap = regexp.MustCompile(`(\S) {2,}`)

// normalizeColumns lets table tests state plans without counting the
// alignment padding (TestRenderAlignment checks that exactly).
func normalizeColumns(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = columnGap.ReplaceAllString(strings.TrimRight(l, " "), "$1  ")
	}
	return strings.Join(lines, "\n")
}

// checkPlan computes the plan and compares its rendering with want; every
// change is also checked for what the applier relies on (checkStructure).
func checkPlan(t *testing.T, in Input, want string) Plan {
	t.Helper()
	plan := Compute(in)
	checkStructure(t, in, plan)
	got := normalizeColumns(plan.String())
	want = strings.TrimLeft(want, "\n")
	if got != want {
		t.Errorf("plan differs\n--- got:\n%s\n--- want:\n%s", got, want)
	}
	return plan
}

// checkStructure checks what the applier acts on, beyond the words: each
// container change names its service and slot, a new replica gets the
// stable name of its slot, and every change to an existing container
// carries the ID of that container, in that slot, with a cause.
func checkStructure(t *testing.T, in Input, plan Plan) {
	t.Helper()
	byID := map[string]Container{}
	for _, c := range in.Actual.Containers {
		byID[c.ID] = c
	}
	for _, c := range in.Actual.ForeignContainers {
		byID[c.ID] = c
	}
	for _, list := range [][]Change{plan.Changes, plan.Deferred, plan.Pruneable} {
		for _, c := range list {
			if c.Cause != CauseGit && c.Cause != CauseDrift {
				t.Errorf("%s %s: cause %q", c.Action, c.Name, c.Cause)
			}
			if c.Kind != KindContainer {
				continue
			}
			if c.Action == ActionCreate || c.Action == ActionReplace {
				if want := manifest.ContainerName(in.App, c.Service, c.Slot); c.Name != want {
					t.Errorf("%s %s: a new replica of %s/%d must be named %s", c.Action, c.Name, c.Service, c.Slot, want)
				}
			}
			if c.Action == ActionCreate {
				if c.ID != "" {
					t.Errorf("create %s carries ID %s", c.Name, c.ID)
				}
				continue
			}
			have, ok := byID[c.ID]
			switch {
			case !ok:
				t.Errorf("%s %s: ID %q is not an observed container", c.Action, c.Name, c.ID)
			case c.Adopt == "" && have.Slot != c.Slot:
				t.Errorf("%s %s: slot %d, but container %s holds slot %d", c.Action, c.Name, c.Slot, c.ID, have.Slot)
			case c.Adopt == "" && c.Action != ActionReplace && dockerName(have.Name) != c.Name:
				t.Errorf("%s %s: container %s is named %s", c.Action, c.Name, c.ID, dockerName(have.Name))
			}
		}
	}
}
