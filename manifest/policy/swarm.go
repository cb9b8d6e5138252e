package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// CheckSwarm returns one error, located where the manifest declares it,
// for everything a service asks for that a Swarm target cannot carry out
// (or that this release does not map to Swarm yet). Both front ends' apps
// go through it when the app's target is TargetSwarm, after
// RepoFilesAsConfigs. A Swarm task may run on any node, so nothing may
// depend on the agent's host: repository directories and driftless's own
// readiness probes. Repository files become Swarm configs, secrets Swarm
// secrets; images built from the repository are built on the manager.
func CheckSwarm(app *manifest.App) manifest.ErrorList {
	var errs manifest.ErrorList
	for i := range app.Services {
		svc := &app.Services[i]
		refuse := func(field, format string, args ...any) {
			ref := svc.Field(field)
			errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field, Msg: fmt.Sprintf(format, args...) + " (target: swarm)"})
		}
		if name := app.Name + "-" + svc.Name; len(name) > manifest.MaxDNSLabel {
			refuse("", "the Swarm service name %s is longer than %d characters, which Swarm refuses: shorten the app or service name", name, manifest.MaxDNSLabel)
		}
		checkSwarmService(&svc.Spec, refuse)
		checkSwarmTuning(&svc.Spec, refuse)
		for i, b := range svc.Spec.Binds {
			if b.StatePath != "" {
				refuse(fmt.Sprintf("binds[%d]", i), "state directory ./%s would live on the agent's host, and a Swarm task may run on another node: keep the data in a named volume", b.StatePath)
			}
			if b.RepoPath == "" {
				continue
			}
			t := app.Content[b.ContentHash]
			switch {
			case b.Object == nil || t == nil || t.Dir:
				refuse(fmt.Sprintf("binds[%d]", i), "repository directory %s cannot be mounted into Swarm tasks (a task may run on another node): mount its files one by one (each becomes a Swarm config), declare them under configs:, or COPY them into an image with build:", b.RepoPath)
			case len(t.Files) == 1 && len(t.Files[0].Data) > maxSwarmObjectBytes(b.Object.Kind):
				refuse(fmt.Sprintf("binds[%d]", i), "%s holds %d bytes, more than a Swarm %s can hold (%d KiB): COPY it into an image with build:, or put it in a volume",
					b.RepoPath, len(t.Files[0].Data), b.Object.Kind, maxSwarmObjectBytes(b.Object.Kind)>>10)
			}
		}
	}
	for _, n := range app.Networks {
		if d := n.Spec.Driver; d != "" && d != "bridge" && d != "overlay" && !n.Spec.External {
			errs = append(errs, &manifest.Error{Pos: n.Source, Field: "driver", Msg: fmt.Sprintf("network driver %q cannot span nodes: use overlay (target: swarm)", d)})
		}
	}
	return errs
}

// checkSwarmRuntime refuses what a Swarm container spec cannot say: the
// namespace modes, the runtime and device cgroup rules.
func checkSwarmRuntime(s *manifest.ServiceSpec, refuse denyFunc) {
	switch {
	case s.UTS != "":
		refuse("uts", "uts namespace modes are not supported for Swarm services")
	case s.UsernsMode != "":
		refuse("usernsMode", "user namespace modes are not supported for Swarm services")
	case s.CgroupNS != "":
		refuse("cgroupns", "cgroup namespace modes are not supported for Swarm services")
	case s.Runtime != "":
		refuse("runtime", "Swarm services run with the engine's default runtime")
	case len(s.DeviceCgroupRules) > 0:
		refuse("deviceCgroupRules", "Swarm services cannot be given device cgroup rules")
	}
}

func checkSwarmService(s *manifest.ServiceSpec, refuse denyFunc) {
	checkSwarmRuntime(s, refuse)
	checkSwarmEngineOnly(s, refuse)
	switch {
	case s.Readiness != nil:
		refuse("readiness", "driftless's own readiness probes do not run against Swarm tasks: declare a healthcheck, which Swarm uses to gate its rolling update")
	case s.MinReady != nil:
		refuse("minReadySeconds", "driftless's own readiness does not judge Swarm tasks: Swarm's update monitor does (deploy.update_config.monitor in a compose file)")
	case s.NetworkMode != "":
		refuse("networkMode", "network mode %q is not supported for Swarm services: use the app's overlay networks", s.NetworkMode)
	case len(s.Addresses) > 0:
		refuse("addresses", "Swarm gives each task its address: fixed addresses are for apps on one engine")
	case s.Privileged:
		refuse("privileged", "Swarm services cannot run privileged")
	case len(s.Devices) > 0:
		refuse("devices", "Swarm services cannot be given host devices")
	case len(s.VolumesFrom) > 0:
		refuse("volumesFrom[0]", "a Swarm task cannot mount another task's volumes: share a named volume between the services")
	case len(s.DeviceRequests) > 0:
		refuse("deviceRequests[0]", "Swarm services cannot be given device requests (GPUs): Swarm schedules devices as generic resources, which are not supported")
	case s.PID != "" || s.IPC != "":
		refuse("pid", "Swarm services share no namespaces with the host")
	case len(s.SecurityOpt) > 0:
		refuse("securityOpt", "security options are not supported for Swarm services")
	case len(s.DNS) > 0:
		refuse("dns", "DNS servers are not supported for Swarm services yet (dns_search and dns_opt are)")
	case s.MacAddress != "" || s.ShmSizeBytes != 0:
		refuse("macAddress", "mac_address and shm_size are not supported for Swarm services")
	}
	if slices.ContainsFunc(s.Ports, func(p manifest.Port) bool { return p.HostIP != "" }) {
		refuse("ports", "Swarm publishes ports on every node's ingress: a host IP cannot be given")
	}
	if len(s.AnonymousVolumes) > 0 {
		// The compose front end refuses these at the volume entry; this is
		// the native manifest's spec.anonymousVolumes.
		refuse("anonymousVolumes", "anonymous volumes are not supported for Swarm services (Swarm makes a new one for every task, so its data does not survive an update): use a named volume")
	}
	if w := s.Swarm; w != nil && w.Global && s.Replicas != 1 {
		refuse("replicas", "a global service runs one task per node: do not set replicas")
	}
}

// Swarm's limits on the size of a config and a secret (swarmkit's
// MaxConfigSize and MaxSecretSize).
const (
	maxSwarmConfigBytes = 1000 << 10
	maxSwarmSecretBytes = 500 << 10
)

func maxSwarmObjectBytes(kind string) int {
	if kind == manifest.FileSecret {
		return maxSwarmSecretBytes
	}
	return maxSwarmConfigBytes
}

// RepoFilesAsConfigs delivers each repository file a service binds (not
// a directory) as a Swarm config, as compose configs already are: a task
// may run on a node without the agent's copy of the revision, and a
// config travels with the service to whichever node runs it. The config
// is named after the file's path (RepoFileConfigName) and versioned by
// its content hash like any other. On one engine nothing changes: the
// file is bind-mounted read-only from the agent's data directory.
func RepoFilesAsConfigs(app *manifest.App) {
	for i := range app.Services {
		binds := app.Services[i].Spec.Binds
		for j := range binds {
			b := &binds[j]
			if b.RepoPath == "" || b.Object != nil {
				continue
			}
			if t := app.Content[b.ContentHash]; t != nil && !t.Dir && len(t.Files) == 1 {
				b.Object = &manifest.FileObject{Kind: manifest.FileConfig, Name: RepoFileConfigName(app.Name, b.RepoPath)}
			}
		}
	}
}

// maxSwarmObjectName is Swarm's limit on a config's or secret's name.
const maxSwarmObjectName = 64

// RepoFileConfigName is the config name of a bound repository file: its
// path with every character Swarm does not take in a name made a '-'
// ("conf/nginx.conf" is "conf-nginx.conf"), cut so that the versioned name
// <app>_<name>_<hash8> fits Swarm's 64 characters. Two files that end up
// with the same name still get two configs when their content differs
// (the hash is part of the versioned name), and share one when it does
// not.
func RepoFileConfigName(app, repoPath string) string {
	b := []byte(repoPath)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	name := string(b)
	if n := maxSwarmObjectName - len(app) - len("__12345678"); len(name) > n {
		name = name[len(name)-max(n, 1):] // the end names the file
	}
	name = strings.Trim(name, "-._")
	if name == "" {
		return "file"
	}
	return name
}

// checkSwarmEngineOnly refuses what driftless does itself to containers on
// one engine, where Swarm decides for its tasks.
func checkSwarmEngineOnly(s *manifest.ServiceSpec, refuse denyFunc) {
	switch {
	case len(s.PostStart) > 0 || len(s.PreStop) > 0:
		refuse(map[bool]string{true: "postStart", false: "preStop"}[len(s.PostStart) > 0], "Swarm starts and stops tasks itself: lifecycle hooks are for apps on one engine")
	case len(s.NetworkPriority) > 0:
		refuse("networkPriority", "Swarm attaches a task's networks itself: network priorities are for apps on one engine")
	case s.ClearEntrypoint:
		refuse("clearEntrypoint", "a Swarm service cannot be told to run without the image's entrypoint: give entrypoint: the command to run")
	}
}
