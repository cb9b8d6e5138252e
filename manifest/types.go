// Package manifest holds driftless's desired-state model: the normalized form
// of an app's manifests, its hashes, the values it is written in, and the
// positions and errors that point back into the files. Every layer imports
// it and it imports none of them: the front ends that produce it are
// manifest/native and manifest/compose, and manifest/appdir picks one.
//
// Everything here is pure: it never talks to Docker, Git or the clock.
package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// APIVersion is the only manifest apiVersion this release understands.
const APIVersion = "driftless.dev/v1"

// Kinds of manifest objects.
const (
	KindService = "Service"
	KindNetwork = "Network"
	KindVolume  = "Volume"
)

// DefaultNetwork is the implicit network every service without an explicit
// networks list joins. Its Docker name is "<app>-default".
const DefaultNetwork = "default"

// Restart policies.
const (
	RestartAlways    = "always"
	RestartOnFailure = "on-failure"
	RestartNever     = "never"
)

// Update strategies.
const (
	StrategyRolling  = "rolling"
	StrategyRecreate = "recreate"
)

// Position points at a place in a manifest file. Line and Column are 1-based;
// zero means unknown.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func (p Position) String() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return p.File
	}
}

// Formats of an app directory: the two front ends that produce an App.
const (
	FormatNative  = "driftless"
	FormatCompose = "compose"
)

// App is the desired state of one app: every object declared under its path
// in one revision, normalized, defaults applied, each list sorted by name.
// Native manifests and compose files both become an App; nothing downstream
// knows which front end produced it, except Format and the positions in
// messages.
type App struct {
	Name     string    `json:"name"`
	Format   string    `json:"format,omitempty"` // FormatNative or FormatCompose
	Services []Service `json:"services"`
	Networks []Network `json:"networks"`
	Volumes  []Volume  `json:"volumes"`
	// Jobs run one container to completion each (see Job); they are not
	// services: the differ never sees them.
	Jobs []Job `json:"jobs,omitempty"`
	// Warnings are problems that do not refuse the revision, such as a
	// compose variable that is not set and interpolates to "".
	Warnings ErrorList `json:"warnings,omitempty"`
	// Release is what the repository says about its releases' watch
	// window; nil when it says nothing.
	Release *ReleaseSettings `json:"release,omitempty"`
	// Content holds, by content hash, the repository files that bind
	// mounts with a RepoPath materialize. It is not part of any hash
	// itself: each mount's ContentHash is.
	Content map[string]*RepoTree `json:"-"`
	// Builds are the images the revision builds, by the content-addressed
	// reference the services run (see ResolveBuilds). Like Content, not
	// hashed itself: each service's Build and Image are.
	Builds map[string]*BuildContext `json:"-"`
	// SecretKey digests secret values in hashes and displays (see
	// SecretKey); the loader sets it from load.Options.SecretKey.
	SecretKey SecretKey `json:"-"`
	// SecretData holds, by their digest (SecretRef.Digest), the decrypted
	// values the services' secrets deliver as files. Memory only: never
	// marshalled, never hashed (each secret's Digest is).
	SecretData map[string][]byte `json:"-"`
}

// Service returns the named service, or nil.
func (a *App) Service(name string) *Service {
	for i := range a.Services {
		if a.Services[i].Name == name {
			return &a.Services[i]
		}
	}
	return nil
}

// Service is one declared service: a set of identical replicas.
type Service struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Spec   ServiceSpec       `json:"spec"`
	// Hash is the stable hash of the normalized spec and labels, ignoring
	// fields that must not force a recreate (replicas, dependsOn). A container
	// is replaced only when its recorded hash differs from this one.
	Hash   string   `json:"hash"`
	Source Position `json:"source"`
	// Fields locates fields of the spec in the file that declared them, by
	// model path ("privileged", "binds[0]", "capAdd[1]"), for messages
	// about them (the host-power policy). Missing entries fall back to
	// Source.
	Fields map[string]FieldRef `json:"-"`
	// ComposeName is the service's name in the compose file ("my_api"),
	// which `docker compose` labels its containers with; "" for native
	// manifests. It identifies containers to adopt from compose.
	ComposeName string `json:"composeName,omitempty"`

	// PullPolicy says when the image is pulled: PullMissing (default),
	// PullAlways or PullNever. It is not part of the spec (or its hash):
	// changing it changes how the next rollout gets its image, not what
	// runs.
	PullPolicy string `json:"pullPolicy,omitempty"`
	// ImageUpdate, when set, has driftless check the registry for a new
	// digest of the image's tag on a schedule and roll the service out
	// when it moved. Not hashed either: the resolved digest, pinned into
	// Spec.Image by the loop, is what changes the hash.
	ImageUpdate *ImageUpdate `json:"imageUpdate,omitempty"`
}

// Pull policies of a service.
const (
	PullMissing = "missing" // pull only when the engine lacks the image
	PullAlways  = "always"  // pull on each rollout (create or replace)
	PullNever   = "never"   // never pull: the image must be on the engine
)

// ImageUpdate is a service's opt-in to tag updates.
type ImageUpdate struct {
	// Interval is a Go duration ("1h") or a cron spec ("0 3 * * *",
	// "@every 10m"): how often the tag's digest is resolved.
	Interval string `json:"interval"`
}

// FieldRef is where a model field was written, and how the user wrote its
// path ("spec.privileged" in a native manifest, "services.web.privileged"
// in a compose file).
type FieldRef struct {
	Pos   Position
	Field string
}

// Field returns where the model field was declared.
func (s *Service) Field(path string) FieldRef {
	if r, ok := s.Fields[path]; ok {
		return r
	}
	return FieldRef{Pos: s.Source, Field: path}
}

// Hook is a command run in a running replica, as docker exec runs one:
// as User (default the container's), privileged or not (policy-gated as a
// privileged container), in WorkingDir, with Env added.
type Hook struct {
	Command    []string          `json:"command"`
	User       string            `json:"user,omitempty"`
	Privileged bool              `json:"privileged,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
}

// ServiceSpec is the normalized spec of a service. Every field has its
// default applied; lists that are sets are sorted.
type ServiceSpec struct {
	Image    string   `json:"image"`
	Replicas int      `json:"replicas"`
	Command  []string `json:"command,omitempty"`
	Args     []string `json:"args,omitempty"`
	// ClearEntrypoint runs the container without the image's entrypoint
	// (compose's entrypoint: []): Command is empty, and Args, or else the
	// image's command, are the whole command line, as Docker runs them.
	ClearEntrypoint bool              `json:"clearEntrypoint,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	// SecretEnv names env keys whose values are secret: they are passed to the
	// container but never shown in plans, status, history, logs or the UI.
	SecretEnv []string `json:"secretEnv,omitempty"`
	// Secrets are SOPS-encrypted files of the repository the service uses
	// (native manifests); EnvFrom puts their values in the environment.
	Secrets   []SecretRef   `json:"secrets,omitempty"`
	EnvFrom   []EnvFrom     `json:"envFrom,omitempty"`
	Ports     []Port        `json:"ports,omitempty"`
	Networks  []string      `json:"networks"`
	Volumes   []VolumeMount `json:"volumes,omitempty"`
	Resources Resources     `json:"resources"`
	Readiness *Readiness    `json:"readiness,omitempty"`
	Restart   string        `json:"restart"`
	// RestartNeverDeclared: Restart is never because the manifest says
	// so (native restart: never; compose restart: "no" or
	// deploy.restart_policy.condition: none), not by compose's default.
	// On Swarm an undeclared never is Swarm's default, restart on any
	// exit, as with docker stack deploy: without it Swarm does not
	// replace the tasks of a node drained or lost. Absent (false) it
	// leaves the spec hash as it was.
	RestartNeverDeclared bool     `json:"restartNeverDeclared,omitempty"`
	Update               Update   `json:"update"`
	DependsOn            []string `json:"dependsOn,omitempty"`
	// StopGracePeriodSeconds is how long Docker waits after SIGTERM.
	StopGracePeriodSeconds int `json:"stopGracePeriodSeconds"`

	// Everything below was added for compose files and is optional in
	// both formats. Each field is omitted from JSON when zero, so specs
	// that do not use it keep the hash they had before it existed.

	// DependsOnCondition says, per dependency, what "ready" means:
	// DependsStarted, DependsHealthy or DependsCompleted. A dependency not
	// listed here is DependsHealthy (driftless's readiness). Like
	// DependsOn it is not hashed.
	DependsOnCondition map[string]string `json:"dependsOnCondition,omitempty"`
	// DependsOnRestart are the dependencies (sorted, each in DependsOn)
	// whose recreation replaces this service's replicas too (compose's
	// depends_on restart: true): the differ's business, so, like
	// DependsOn, not hashed.
	DependsOnRestart []string `json:"dependsOnRestart,omitempty"`
	// RestartMaxRetries bounds on-failure restarts; 0 is unbounded.
	RestartMaxRetries int `json:"restartMaxRetries,omitempty"`
	// Healthcheck is the Docker healthcheck of the replicas. nil keeps the
	// image's own. A replica with a Docker healthcheck and no Readiness is
	// ready when Docker says healthy.
	Healthcheck *Healthcheck `json:"healthcheck,omitempty"`
	// MinReady is how long a replica must have run since its last start,
	// without restarting, before it counts as ready (Kubernetes'
	// minReadySeconds, compose's update_config.monitor). nil: the engine's
	// settle time for a replica without readiness section or healthcheck
	// (2s), nothing more for one with; 0: ready once running (or once its
	// probe passes). Hashed: it is in the replicas' recorded spec, which
	// is where readiness is judged from.
	MinReady *time.Duration `json:"minReady,omitempty"`

	User       string `json:"user,omitempty"`
	WorkingDir string `json:"workingDir,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	Domainname string `json:"domainname,omitempty"`
	Init       bool   `json:"init,omitempty"`
	StopSignal string `json:"stopSignal,omitempty"`
	TTY        bool   `json:"tty,omitempty"`
	StdinOpen  bool   `json:"stdinOpen,omitempty"`

	// NetworkMode is "" (join Networks, the normal case), NetworkBridge
	// (Docker's default bridge) or NetworkDefault (the same, as Docker
	// records "default"), NetworkNone, NetworkHost (policy-gated),
	// or "service:NAME" (NetworkServicePrefix: the network namespace of
	// service NAME's one replica). Networks is empty unless NetworkMode
	// is "".
	NetworkMode string `json:"networkMode,omitempty"`
	// Addresses are fixed addresses per network (by manifest name), on
	// networks whose subnet the app declares; only with one replica.
	Addresses map[string]Address `json:"addresses,omitempty"`
	// NetworkPriority orders the networks a replica joins (by manifest
	// name, default 0): the highest first, equal ones by name. Only the
	// order of the container's interfaces follows (eth0 is the first).
	NetworkPriority map[string]int `json:"networkPriority,omitempty"`
	// Aliases are extra DNS names per network (by manifest name); the
	// service name is always one.
	Aliases    map[string][]string `json:"aliases,omitempty"`
	ExtraHosts []string            `json:"extraHosts,omitempty"` // "host:ip", sorted
	DNS        []string            `json:"dns,omitempty"`
	DNSSearch  []string            `json:"dnsSearch,omitempty"`
	DNSOptions []string            `json:"dnsOptions,omitempty"`
	MacAddress string              `json:"macAddress,omitempty"`

	Binds []BindMount  `json:"binds,omitempty"`
	Tmpfs []TmpfsMount `json:"tmpfs,omitempty"`
	// AnonymousVolumes are volumes without a name in the file (compose's
	// "- /var/lib/postgresql/data"): one Docker volume per replica slot
	// and target, kept when the slot's container is replaced (see
	// AnonymousVolumeName).
	AnonymousVolumes []AnonymousVolume `json:"anonymousVolumes,omitempty"`

	Privileged     bool            `json:"privileged,omitempty"`
	ReadOnlyRootfs bool            `json:"readOnlyRootfs,omitempty"`
	CapAdd         []string        `json:"capAdd,omitempty"`  // sorted, upper case without CAP_
	CapDrop        []string        `json:"capDrop,omitempty"` // sorted, upper case without CAP_
	SecurityOpt    []string        `json:"securityOpt,omitempty"`
	Devices        []Device        `json:"devices,omitempty"`
	DeviceRequests []DeviceRequest `json:"deviceRequests,omitempty"` // GPUs, by the engine's device drivers (policy-gated as devices)
	// VolumesFrom mounts what another service's first replica mounts
	// (compose's volumes_from), in order; the dependency on it is in
	// DependsOn.
	VolumesFrom  []VolumesFrom     `json:"volumesFrom,omitempty"`
	GroupAdd     []string          `json:"groupAdd,omitempty"`
	PID          string            `json:"pid,omitempty"` // "" or "host" (policy-gated)
	IPC          string            `json:"ipc,omitempty"` // "", "private", "shareable" or "host" (policy-gated)
	Sysctls      map[string]string `json:"sysctls,omitempty"`
	Ulimits      []Ulimit          `json:"ulimits,omitempty"` // sorted by name
	ShmSizeBytes int64             `json:"shmSizeBytes,omitempty"`
	Logging      *Logging          `json:"logging,omitempty"`

	// UTS is "host" to share the host's hostname namespace; "" is the
	// container's own. Changing the hostname still needs SYS_ADMIN.
	UTS string `json:"uts,omitempty"`
	// UsernsMode is "host" to run outside the engine's user namespace
	// remapping (policy-gated: the container's root is the host's then);
	// "" is the engine's default.
	UsernsMode string `json:"usernsMode,omitempty"`
	// CgroupNS is the cgroup namespace: "private", "host" or "" for the
	// engine's default (private on cgroup v2 hosts, host on v1).
	CgroupNS string `json:"cgroupns,omitempty"`
	// Runtime is the OCI runtime the engine runs the replicas with, by the
	// name the engine's configuration gives it ("runc", "nvidia",
	// "runsc"); "" is the engine's default.
	Runtime string `json:"runtime,omitempty"`
	// DeviceCgroupRules let the replicas use devices by class and number
	// ("c 189:* rmw"), as devices appear later (policy-gated as devices).
	DeviceCgroupRules []string `json:"deviceCgroupRules,omitempty"`

	// PostStart runs in each replica, in order, right after driftless
	// starts it; PreStop right before driftless stops it (compose's
	// post_start and pre_stop). Not on the engine's own restarts.
	PostStart []Hook `json:"postStart,omitempty"`
	PreStop   []Hook `json:"preStop,omitempty"`

	// Platform is the image platform ("linux/arm64") the replicas run,
	// pulled and created for; "" is the engine's own.
	Platform string `json:"platform,omitempty"`
	// Links are compose's legacy links, "SERVICE:ALIAS" by model names
	// (sorted): ALIAS resolves to the service's replicas for this service
	// only. Each target is a dependency too, as in compose.
	Links []string `json:"links,omitempty"`

	// Build says how Image is built from the revision; nil for an image
	// that is pulled. With a Build, Image is the content-addressed name
	// ResolveBuilds gives it.
	Build *Build `json:"build,omitempty"`

	// Swarm holds what only a Swarm target can do (compose's deploy.mode,
	// placement, update_config failure handling, rollback_config); nil
	// for apps on one engine, which refuse those keys.
	Swarm *SwarmSpec `json:"swarm,omitempty"`
}

// Targets: where an app's services run.
const (
	TargetEngine = "engine" // containers on one Docker engine (default)
	TargetSwarm  = "swarm"  // Swarm services on a Swarm manager
)

// SwarmSpec is the part of a service's spec only Swarm carries out.
type SwarmSpec struct {
	// Global runs one task on every eligible node (deploy.mode: global);
	// Replicas is then ignored.
	Global             bool     `json:"global,omitempty"`
	Constraints        []string `json:"constraints,omitempty"` // as written, e.g. node.role==manager
	Preferences        []string `json:"preferences,omitempty"` // spread descriptors, e.g. node.labels.zone
	MaxReplicasPerNode uint64   `json:"maxReplicasPerNode,omitempty"`
	// Update and Rollback are Swarm's update_config and rollback_config.
	// The spec's Update still gives parallelism, order and delay of an
	// update.
	Update   SwarmUpdate  `json:"update,omitzero"`
	Rollback *SwarmUpdate `json:"rollback,omitempty"`
}

// SwarmUpdate is how Swarm rolls tasks and what it does when one fails.
type SwarmUpdate struct {
	Parallelism     uint64        `json:"parallelism,omitempty"`
	Delay           time.Duration `json:"delay,omitempty"`
	FailureAction   string        `json:"failureAction,omitempty"` // pause (Swarm's default), continue, rollback
	Monitor         time.Duration `json:"monitor,omitempty"`
	MaxFailureRatio float32       `json:"maxFailureRatio,omitempty"`
	Order           string        `json:"order,omitempty"` // stop-first, start-first
}

// Dependency conditions (compose's depends_on condition).
const (
	DependsStarted   = "started"   // the dependency's replicas run
	DependsHealthy   = "healthy"   // the dependency's replicas are ready
	DependsCompleted = "completed" // the dependency's replicas exited 0
)

// Network modes besides the default (the app's networks).
const (
	NetworkBridge = "bridge"
	// NetworkDefault is Docker's name for its default mode, bridge on
	// Linux: the same network, recorded as written (compose writes it).
	NetworkDefault = "default"
	NetworkNone    = "none"
	NetworkHost    = "host"
	// NetworkServicePrefix starts the mode that shares another service's
	// network namespace: "service:vpn".
	NetworkServicePrefix = "service:"
)

// NetworkService is the service whose network namespace the replicas
// share (NetworkMode "service:NAME"), or "".
func (s *ServiceSpec) NetworkService() string {
	name, ok := strings.CutPrefix(s.NetworkMode, NetworkServicePrefix)
	if !ok {
		return ""
	}
	return name
}

// Address is a replica's fixed address on one network.
type Address struct {
	IPv4 string `json:"ipv4,omitempty"`
	IPv6 string `json:"ipv6,omitempty"`
}

// DockerRestartPolicy is the Docker restart policy the spec's Restart
// means. "always" becomes unless-stopped, not always: a replica someone
// stopped by hand must stay stopped across a daemon restart, so it shows
// up as drift that driftless heals (and records) instead of being
// silently revived by the daemon.
func (s *ServiceSpec) DockerRestartPolicy() (name string, maxRetries int) {
	switch s.Restart {
	case RestartNever:
		return "no", 0
	case RestartOnFailure:
		return "on-failure", s.RestartMaxRetries
	}
	return "unless-stopped", 0
}

// DependsCondition is the condition the service waits for on dep.
func (s *ServiceSpec) DependsCondition(dep string) string {
	if c, ok := s.DependsOnCondition[dep]; ok {
		return c
	}
	return DependsHealthy
}

// Healthcheck is a Docker healthcheck, as Docker takes it.
type Healthcheck struct {
	// Test is Docker's form: ["CMD", prog, args...], ["CMD-SHELL", line],
	// or ["NONE"] to disable the image's healthcheck.
	Test          []string      `json:"test"`
	Interval      time.Duration `json:"interval,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	StartPeriod   time.Duration `json:"startPeriod,omitempty"`
	StartInterval time.Duration `json:"startInterval,omitempty"`
	Retries       int           `json:"retries,omitempty"`
}

// Disabled reports whether the healthcheck turns the image's off.
func (h *Healthcheck) Disabled() bool {
	return h != nil && len(h.Test) > 0 && h.Test[0] == "NONE"
}

// BindMount mounts a file or directory that is not a Docker volume:
// exactly one of HostPath (an absolute path on the host, policy-gated),
// RepoPath (a path in the revision, materialized read-only by driftless
// under its data directory) and StatePath (a directory of the app's state
// under the data directory) is set.
type BindMount struct {
	HostPath string `json:"hostPath,omitempty"`
	// RepoPath is slash-separated and relative to the app directory.
	RepoPath string `json:"repoPath,omitempty"`
	// StatePath is a directory of the app's state, slash-separated and
	// relative to the app's state directory (see StateHostPath): created
	// on first use, kept across revisions, never emptied or removed. Only
	// the path is part of the spec: its content is data, not
	// configuration.
	StatePath string `json:"statePath,omitempty"`
	// ContentHash identifies RepoPath's content at this revision (see
	// RepoTree.Hash); it is part of the spec, so a changed file rolls the
	// services that mount it.
	ContentHash string `json:"contentHash,omitempty"`
	MountPath   string `json:"mountPath"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	// CreateHostPath creates a missing HostPath (compose's short syntax);
	// false makes a missing one an error at create time.
	CreateHostPath bool `json:"createHostPath,omitempty"`
	// Propagation is Docker's bind propagation ("rprivate", ...); "" is
	// Docker's default.
	Propagation string `json:"propagation,omitempty"`
	// SELinux is "z" or "Z" to relabel; "" leaves labels alone.
	SELinux string `json:"selinux,omitempty"`
	// Object is set, for a Swarm target only, on a compose secret or
	// config read from a repository file: Swarm delivers it as a Swarm
	// secret or config of that name (versioned by ContentHash) instead of
	// a bind mount.
	Object *FileObject `json:"object,omitempty"`
}

// FileObject is a compose secret or config by kind and name.
type FileObject struct {
	Kind string `json:"kind"` // FileSecret or FileConfig
	Name string `json:"name"` // its key under the top-level secrets: or configs:
}

// Kinds of FileObject.
const (
	FileSecret = "secret"
	FileConfig = "config"
)

// TmpfsMount is an in-memory file system.
type TmpfsMount struct {
	MountPath string `json:"mountPath"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	Mode      uint32 `json:"mode,omitempty"` // permission bits, 0 = Docker's default
	// Options are the mount options beyond size and mode, as the kernel
	// takes them: exec, noexec, suid, nosuid, dev, nodev, uid=N, gid=N
	// (see TmpfsOptions); in the order written.
	Options []string `json:"options,omitempty"`
}

// Device gives the container a host device (policy-gated).
type Device struct {
	HostPath      string `json:"hostPath"`
	ContainerPath string `json:"containerPath"`
	Permissions   string `json:"permissions,omitempty"` // "rwm" when empty
}

// DeviceRequest asks a device driver of the engine (nvidia) for devices,
// as Docker's HostConfig.DeviceRequests (docker run --gpus) do.
type DeviceRequest struct {
	// Driver is the device driver ("nvidia"); "" lets the engine pick
	// one by Capabilities.
	Driver string `json:"driver,omitempty"`
	// Count is how many devices (DeviceCountAll: every one); 0 with
	// DeviceIDs, which then name the devices.
	Count     int      `json:"count,omitempty"`
	DeviceIDs []string `json:"deviceIDs,omitempty"` // as written: their order is the container's
	// Capabilities are Docker's: any one of the lists, each of whose
	// capabilities the driver must have ([[gpu]]).
	Capabilities [][]string        `json:"capabilities,omitempty"`
	Options      map[string]string `json:"options,omitempty"` // the driver's
}

// DeviceCountAll is a DeviceRequest's Count for every device the driver
// has (compose's count: all).
const DeviceCountAll = -1

// Ulimit is one resource limit of the container's processes.
type Ulimit struct {
	Name string `json:"name"`
	Soft int64  `json:"soft"`
	Hard int64  `json:"hard"`
}

// Logging is the container's log driver.
type Logging struct {
	Driver  string            `json:"driver,omitempty"`
	Options map[string]string `json:"options,omitempty"`
}

// IsSecretEnv reports whether the env key's value must be redacted.
func (s *ServiceSpec) IsSecretEnv(key string) bool {
	for _, k := range s.SecretEnv {
		if k == key {
			return true
		}
	}
	return false
}

// Port publishes a container port. HostPort 0 means not published on the
// host, unless AnyHostPort is set.
type Port struct {
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol"` // tcp (default) or udp
	// HostIP binds the published port to one host address; "" is all.
	HostIP string `json:"hostIP,omitempty"`
	// AnyHostPort publishes the port on a host port Docker picks from
	// its ephemeral range at each start (compose `ports: ["80"]`, `docker
	// run -p 0:80`); HostPort is then 0. Such ports never collide, so
	// replicas and surging updates may have them.
	AnyHostPort bool `json:"anyHostPort,omitempty"`
}

// Published tells whether the port is published on the host.
func (p Port) Published() bool { return p.HostPort != 0 || p.AnyHostPort }

func (p Port) String() string {
	switch {
	case p.AnyHostPort && p.HostIP != "":
		host := p.HostIP
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return fmt.Sprintf("%s:0:%d/%s", host, p.ContainerPort, p.Protocol)
	case p.AnyHostPort:
		return fmt.Sprintf("0:%d/%s", p.ContainerPort, p.Protocol)
	case p.HostPort == 0:
		return fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
	case p.HostIP != "":
		host := p.HostIP
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return fmt.Sprintf("%s:%d:%d/%s", host, p.HostPort, p.ContainerPort, p.Protocol)
	}
	return fmt.Sprintf("%d:%d/%s", p.HostPort, p.ContainerPort, p.Protocol)
}

// VolumeMount mounts a Volume object of the same app into the container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// SELinux is "z" or "Z" to relabel the volume's content (shared or
	// private); "" is Docker's default for volumes, which is "z".
	SELinux string `json:"selinux,omitempty"`
	// NoCopy keeps Docker from copying the image's content at MountPath
	// into the volume when it is empty (compose's volume.nocopy).
	NoCopy bool `json:"noCopy,omitempty"`
}

// AnonymousVolume mounts a volume that belongs to one replica slot. It
// is never read-only: Docker refuses a read-only anonymous volume (it
// could only ever be empty).
type AnonymousVolume struct {
	MountPath string `json:"mountPath"`
	// NoCopy: the volume starts empty, without the image's content at
	// MountPath (see VolumeMount.NoCopy).
	NoCopy bool `json:"noCopy,omitempty"`
}

// Resources are limits. Zero means unlimited.
type Resources struct {
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	NanoCPUs    int64 `json:"nanoCPUs,omitempty"`
	// PidsLimit bounds the number of processes; 0 is unlimited.
	PidsLimit int64 `json:"pidsLimit,omitempty"`
	// MemoryReservationBytes is a soft limit; 0 is none.
	MemoryReservationBytes int64 `json:"memoryReservationBytes,omitempty"`

	// CPUShares is the relative CPU weight (Docker's default 1024);
	// 0 is the default.
	CPUShares int64 `json:"cpuShares,omitempty"`
	// CPUSet pins the replicas to these CPUs ("0-3", "0,2"); "" is any.
	CPUSet string `json:"cpuset,omitempty"`
	// CPUPeriod and CPUQuota are the CFS period and quota in
	// microseconds; 0 is the default.
	CPUPeriod int64 `json:"cpuPeriod,omitempty"`
	CPUQuota  int64 `json:"cpuQuota,omitempty"`
	// MemorySwapBytes is memory plus swap; -1 is unlimited swap, 0 is
	// Docker's default (twice the memory limit).
	MemorySwapBytes int64 `json:"memorySwapBytes,omitempty"`
	// MemorySwappiness is the kernel's swappiness for the replicas,
	// 1 to 100; 0 is the host's (compose leaves 0 unset too).
	MemorySwappiness int64 `json:"memorySwappiness,omitempty"`
	// OOMScoreAdj biases the kernel's OOM killer (-1000 to 1000).
	OOMScoreAdj int `json:"oomScoreAdj,omitempty"`
	// OOMKillDisable keeps the OOM killer away from the replicas (needs a
	// memory limit to be safe).
	OOMKillDisable bool `json:"oomKillDisable,omitempty"`
	// Blkio is the block IO weight and per-device limits; nil is none.
	Blkio *Blkio `json:"blkio,omitempty"`
}

// Readiness decides when a replica counts as ready. Exactly one of HTTPGet,
// TCPSocket and Exec is set.
type Readiness struct {
	HTTPGet             *HTTPGetProbe   `json:"httpGet,omitempty"`
	TCPSocket           *TCPSocketProbe `json:"tcpSocket,omitempty"`
	Exec                *ExecProbe      `json:"exec,omitempty"`
	InitialDelaySeconds int             `json:"initialDelaySeconds"`
	PeriodSeconds       int             `json:"periodSeconds"`
	TimeoutSeconds      int             `json:"timeoutSeconds"`
	SuccessThreshold    int             `json:"successThreshold"`
	FailureThreshold    int             `json:"failureThreshold"`
}

// HTTPGetProbe is ready on a 2xx or 3xx answer.
type HTTPGetProbe struct {
	Path string `json:"path"`
	Port int    `json:"port"`
}

// TCPSocketProbe is ready when a TCP connection is accepted.
type TCPSocketProbe struct {
	Port int `json:"port"`
}

// ExecProbe runs a command inside the container (as a Docker healthcheck).
type ExecProbe struct {
	Command []string `json:"command"`
	// Shell runs Command[0] with the image's shell (Docker's CMD-SHELL).
	Shell bool `json:"shell,omitempty"`
}

// Update says how a changed spec is rolled out.
type Update struct {
	Strategy       string `json:"strategy"` // rolling (default) or recreate
	MaxSurge       int    `json:"maxSurge"`
	MaxUnavailable int    `json:"maxUnavailable"`
	// Delay is the pause between batches of a rolling update.
	Delay time.Duration `json:"delay,omitempty"`
	// Canary replicas get a new spec first and are watched for
	// CanaryWatch before the rest are replaced (0: no canary step). Not
	// part of the spec hash: changing them replaces nothing.
	Canary      int           `json:"canary,omitempty"`
	CanaryWatch time.Duration `json:"canaryWatch,omitempty"`
}

// Network is a declared Docker network. Its Docker name is "<app>-<name>",
// or the one its spec gives.
type Network struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Spec     NetworkSpec       `json:"spec"`
	Hash     string            `json:"hash"`
	Source   Position          `json:"source"`
	Implicit bool              `json:"implicit,omitempty"` // the default network, not declared in a file
}

// DockerName is the network's name on the engine.
func (n *Network) DockerName(app string) string {
	switch {
	case n.Spec.External:
		return n.Spec.ExternalName
	case n.Spec.Name != "":
		return n.Spec.Name
	}
	return ObjectName(app, n.Name)
}

// NetworkSpec is the normalized spec of a network.
type NetworkSpec struct {
	Driver     string            `json:"driver"` // bridge (default)
	Internal   bool              `json:"internal,omitempty"`
	Attachable bool              `json:"attachable,omitempty"`
	EnableIPv6 bool              `json:"enableIPv6,omitempty"`
	DriverOpts map[string]string `json:"driverOpts,omitempty"`
	// Subnet is the IPv4 subnet the manifest declares; empty: driftless
	// allocates one from its address pool at create time, outside the
	// spec (and its hash).
	Subnet string `json:"subnet,omitempty"`
	// SubnetV6 is the IPv6 subnet the manifest declares (with
	// EnableIPv6); empty: Docker picks one.
	SubnetV6 string `json:"subnetV6,omitempty"`
	// Gateway is the IPv4 gateway the manifest gives Subnet; empty:
	// Docker's, the subnet's first address.
	Gateway string `json:"gateway,omitempty"`
	// IPRange is the part of Subnet Docker assigns addresses from to
	// containers without a fixed one; empty: the whole subnet.
	IPRange string `json:"ipRange,omitempty"`
	// Name is the Docker name the manifest gives the network (compose's
	// name:); empty: <app>-<name>. driftless owns it by label all the
	// same.
	Name string `json:"name,omitempty"`
	// External networks exist already under ExternalName: driftless never
	// creates, changes or removes them, and reports a missing one.
	External     bool   `json:"external,omitempty"`
	ExternalName string `json:"externalName,omitempty"`
}

// Volume is a declared Docker volume. Its Docker name is "<app>-<name>",
// or the one its spec gives.
type Volume struct {
	Name string `json:"name"`
	// ComposeName is the volume's key in the compose file; see
	// Service.ComposeName.
	ComposeName string            `json:"composeName,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Spec        VolumeSpec        `json:"spec"`
	Hash        string            `json:"hash"`
	Source      Position          `json:"source"`
	// Fields locates the driver and its options ("driver", "driverOpts",
	// "driverOpts.device") for the policy's messages, as Service.Fields.
	Fields map[string]FieldRef `json:"-"`
}

// Field returns where the model field was declared.
func (v *Volume) Field(path string) FieldRef {
	if r, ok := v.Fields[path]; ok {
		return r
	}
	return FieldRef{Pos: v.Source, Field: path}
}

// DisplayName is the volume's name as the user wrote it: its compose key,
// or its manifest name.
func (v *Volume) DisplayName() string {
	if v.ComposeName != "" {
		return v.ComposeName
	}
	return v.Name
}

// DockerName is the volume's name on the engine.
func (v *Volume) DockerName(app string) string {
	switch {
	case v.Spec.External:
		return v.Spec.ExternalName
	case v.Spec.Name != "":
		return v.Spec.Name
	}
	return ObjectName(app, v.Name)
}

// VolumeSpec is the normalized spec of a volume.
type VolumeSpec struct {
	Driver     string            `json:"driver"` // local (default)
	DriverOpts map[string]string `json:"driverOpts,omitempty"`
	// Name is the Docker name the manifest gives the volume; see
	// NetworkSpec.Name.
	Name string `json:"name,omitempty"`
	// External volumes exist already under ExternalName; see NetworkSpec.
	External     bool   `json:"external,omitempty"`
	ExternalName string `json:"externalName,omitempty"`
}

// Network returns the named network, or nil.
func (a *App) Network(name string) *Network {
	for i := range a.Networks {
		if a.Networks[i].Name == name {
			return &a.Networks[i]
		}
	}
	return nil
}

// Volume returns the named volume, or nil.
func (a *App) Volume(name string) *Volume {
	for i := range a.Volumes {
		if a.Volumes[i].Name == name {
			return &a.Volumes[i]
		}
	}
	return nil
}

// NetworkDockerName is the Docker name of a network the app declares (or
// the implicit default), by manifest name.
func (a *App) NetworkDockerName(name string) string {
	if n := a.Network(name); n != nil {
		return n.DockerName(a.Name)
	}
	return ObjectName(a.Name, name)
}

// VolumeDockerName is the Docker name of a volume the app declares, by
// manifest name.
func (a *App) VolumeDockerName(name string) string {
	if v := a.Volume(name); v != nil {
		return v.DockerName(a.Name)
	}
	return ObjectName(a.Name, name)
}

// ObjectName is the Docker name of an app's network or volume.
func ObjectName(app, name string) string { return app + "-" + name }

// ContainerName is the Docker name of a replica.
func ContainerName(app, service string, slot int) string {
	// Not fmt.Sprintf: the differ names every replica at every pass.
	return app + "-" + service + "-" + strconv.Itoa(slot)
}

// Error is one problem in a manifest, located by file:line:column and the
// field path inside the document.
type Error struct {
	Pos   Position `json:"pos"`
	Field string   `json:"field,omitempty"` // e.g. spec.replicas
	Msg   string   `json:"message"`
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Field, e.Msg)
}

// ErrorList is every problem found in a revision, sorted by position.
// A revision with any error is refused as a whole.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// SecretRef is a SOPS-encrypted file of the repository a service uses.
// Its value is delivered as a file: driftless writes it to a tmpfs on the
// host and bind-mounts it read-only at Target; EnvFrom may put it in the
// environment as well.
type SecretRef struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"` // relative to the app directory
	// Env, instead of File, names the variable of the app's environment
	// the value is (compose's secrets.NAME.environment); the front end
	// reads it and puts it in App.SecretData under its Digest.
	Env string `json:"env,omitempty"`
	Key string `json:"key,omitempty"` // one top-level key of a YAML, JSON or dotenv secret
	// Target is the path in the container; default /run/secrets/NAME
	// (compose's convention).
	Target string `json:"target,omitempty"`
	// UID and GID own the file (numeric; "" is the agent's user); Mode is
	// its permission bits, default 0444 (compose's).
	UID  string `json:"uid,omitempty"`
	GID  string `json:"gid,omitempty"`
	Mode int    `json:"mode,omitempty"`
	// AllowPlaintext accepts a file that is not SOPS-encrypted and delivers
	// it as it is; without it such a file refuses the revision.
	AllowPlaintext bool `json:"allowPlaintext,omitempty"`
	// Digest is the agent key's digest of the plaintext: it joins the spec
	// hash, so a secret changed in Git rolls the services that use it,
	// and it shows that it changed without showing anything of it.
	Digest string `json:"digest,omitempty"`
}

// EnvFrom puts a secret's values in the environment: each top-level key
// of a structured secret becomes a variable; a single value (binary, or
// one key) becomes the variable named after the secret (db-password →
// DB_PASSWORD). The variables are secretEnv.
type EnvFrom struct {
	Secret string `json:"secret"`
}

// DependencyCycles finds each cycle of the graph once, starting at its
// alphabetically first node, in a stable order. Edges to unknown nodes and
// to the node itself are ignored (reported elsewhere). Both front ends
// use it.
func DependencyCycles(deps map[string][]string) [][]string {
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[string]int{}
	reported := map[string]bool{}
	var cycles [][]string
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onStack
		stack = append(stack, name)
		for _, d := range deps[name] {
			if _, known := deps[d]; !known || d == name {
				continue
			}
			switch state[d] {
			case unvisited:
				visit(d)
			case onStack:
				cycle := slices.Clone(stack[slices.Index(stack, d):])
				start := slices.Index(cycle, slices.Min(cycle))
				cycle = append(cycle[start:], cycle[:start]...)
				if key := strings.Join(cycle, " -> "); !reported[key] {
					reported[key] = true
					cycles = append(cycles, cycle)
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range sortedKeys(deps) {
		if state[name] == unvisited {
			visit(name)
		}
	}
	return cycles
}
