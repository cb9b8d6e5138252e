// Package manifest holds driftless's desired-state model: the normalized form
// of the YAML manifests in an app's Git path, and the strict parser that
// produces it.
//
// Everything here is pure: it reads from an fs.FS and never talks to Docker,
// Git or the clock.
package manifest

import (
	"fmt"
	"strings"
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

// App is the desired state of one app: every object declared under its path
// in one revision, normalized, defaults applied, each list sorted by name.
type App struct {
	Name     string    `json:"name"`
	Services []Service `json:"services"`
	Networks []Network `json:"networks"`
	Volumes  []Volume  `json:"volumes"`
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
}

// ServiceSpec is the normalized spec of a service. Every field has its
// default applied; lists that are sets are sorted.
type ServiceSpec struct {
	Image    string            `json:"image"`
	Replicas int               `json:"replicas"`
	Command  []string          `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// SecretEnv names env keys whose values are secret: they are passed to the
	// container but never shown in plans, status, history, logs or the UI.
	SecretEnv []string      `json:"secretEnv,omitempty"`
	Ports     []Port        `json:"ports,omitempty"`
	Networks  []string      `json:"networks"`
	Volumes   []VolumeMount `json:"volumes,omitempty"`
	Resources Resources     `json:"resources"`
	Readiness *Readiness    `json:"readiness,omitempty"`
	Restart   string        `json:"restart"`
	Update    Update        `json:"update"`
	DependsOn []string      `json:"dependsOn,omitempty"`
	// StopGracePeriodSeconds is how long Docker waits after SIGTERM.
	StopGracePeriodSeconds int `json:"stopGracePeriodSeconds"`
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

// Port publishes a container port. HostPort 0 means not published on the host.
type Port struct {
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol"` // tcp (default) or udp
}

func (p Port) String() string {
	if p.HostPort == 0 {
		return fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
	}
	return fmt.Sprintf("%d:%d/%s", p.HostPort, p.ContainerPort, p.Protocol)
}

// VolumeMount mounts a Volume object of the same app into the container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Resources are limits. Zero means unlimited.
type Resources struct {
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	NanoCPUs    int64 `json:"nanoCPUs,omitempty"`
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
}

// Update says how a changed spec is rolled out.
type Update struct {
	Strategy       string `json:"strategy"` // rolling (default) or recreate
	MaxSurge       int    `json:"maxSurge"`
	MaxUnavailable int    `json:"maxUnavailable"`
}

// Network is a declared Docker network. Its Docker name is "<app>-<name>".
type Network struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Spec     NetworkSpec       `json:"spec"`
	Hash     string            `json:"hash"`
	Source   Position          `json:"source"`
	Implicit bool              `json:"implicit,omitempty"` // the default network, not declared in a file
}

// NetworkSpec is the normalized spec of a network.
type NetworkSpec struct {
	Driver   string `json:"driver"` // bridge (default)
	Internal bool   `json:"internal,omitempty"`
}

// Volume is a declared Docker volume. Its Docker name is "<app>-<name>".
type Volume struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Spec   VolumeSpec        `json:"spec"`
	Hash   string            `json:"hash"`
	Source Position          `json:"source"`
}

// VolumeSpec is the normalized spec of a volume.
type VolumeSpec struct {
	Driver string `json:"driver"` // local (default)
}

// ObjectName is the Docker name of an app's network or volume.
func ObjectName(app, name string) string { return app + "-" + name }

// ContainerName is the Docker name of a replica.
func ContainerName(app, service string, slot int) string {
	return fmt.Sprintf("%s-%s-%d", app, service, slot)
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
