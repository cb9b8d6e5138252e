// Package drift computes what must change to make the running state match a
// revision: desired state (the parsed manifests of one app) and actual state
// (the Docker objects driftless owns, as plain data) in, a Plan out.
//
// The package is pure: no Docker, no Git, no clock. "Now" is an input.
package drift

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Labels that identify what driftless owns. An object without LabelApp is
// never changed by a plan.
const (
	LabelPrefix   = "dev.driftless."
	LabelApp      = LabelPrefix + "app"
	LabelService  = LabelPrefix + "service" // containers
	LabelSlot     = LabelPrefix + "slot"    // containers: replica slot, 1-based
	LabelSpecHash = LabelPrefix + "spec-hash"
	LabelRevision = LabelPrefix + "revision" // the commit that created the object
	LabelResource = LabelPrefix + "resource" // networks and volumes: the manifest name
	// LabelTarget marks an anonymous volume: the container path its
	// replica slot mounts it at (with LabelService and LabelSlot).
	LabelTarget = LabelPrefix + "target"
	// LabelSpec holds the normalized spec as JSON (secret env values
	// replaced by their hash), so field-level diffs need no inspect call.
	LabelSpec = LabelPrefix + "spec"
)

// Labels docker compose puts on what it creates. driftless never changes
// such an object unless the app adopts its project.
const (
	LabelComposeProject = "com.docker.compose.project"
	LabelComposeService = "com.docker.compose.service"
	LabelComposeNumber  = "com.docker.compose.container-number"
	LabelComposeVolume  = "com.docker.compose.volume"
)

// ContainerState is Docker's state word for a container.
type ContainerState string

const (
	StateCreated    ContainerState = "created"
	StateRunning    ContainerState = "running"
	StateRestarting ContainerState = "restarting"
	StatePaused     ContainerState = "paused"
	StateExited     ContainerState = "exited"
	StateDead       ContainerState = "dead"
	StateRemoving   ContainerState = "removing"
)

// Container is one observed container, as plain data taken from a single
// Docker list call.
type Container struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Identity, parsed from labels. Empty App means not owned by driftless.
	App      string `json:"app,omitempty"`
	Service  string `json:"service,omitempty"`
	Slot     int    `json:"slot,omitempty"`
	SpecHash string `json:"specHash,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Spec is the recorded normalized spec (from LabelSpec), nil if absent
	// or unreadable.
	Spec   *manifest.ServiceSpec `json:"-"`
	Labels map[string]string     `json:"-"`

	Image string `json:"image"`
	// ImageID is the ID of the image the container runs; ImageDigest is
	// its registry digest ("sha256:…", from the image's RepoDigests), or
	// the image ID when it has none (built or imported locally).
	ImageID     string         `json:"imageID,omitempty"`
	ImageDigest string         `json:"imageDigest,omitempty"`
	State       ContainerState `json:"state"`
	Status      string         `json:"status"`             // Docker's words: "Up 3 minutes", "Exited (1) 2 seconds ago"
	ExitCode    int            `json:"exitCode,omitempty"` // parsed from Status when exited
	Health      string         `json:"health,omitempty"`   // Docker healthcheck: starting, healthy, unhealthy
	Created     time.Time      `json:"created"`
	// StartedAt and FinishedAt are when the container last started and
	// last stopped, from the prober's inspect (a list gives only Status's
	// words, true at the moment of the list); zero when unknown.
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Networks are the Docker network names the container is attached to.
	Networks []string `json:"networks,omitempty"`
	// NetworkContainer is the ID of the container whose network namespace
	// this one shares (Docker's network mode container:<id>), or "".
	NetworkContainer string `json:"networkContainer,omitempty"`
	// VolumeNames are the Docker names of the volumes mounted, sorted; nil
	// when not observed (an empty list is an observation of none).
	VolumeNames []string `json:"volumeNames,omitempty"`
	// HostPorts are the host ports the container publishes.
	HostPorts []int `json:"hostPorts,omitempty"`

	// Node is the hostname of the Swarm node a task runs on (target swarm).
	Node string `json:"node,omitempty"`

	// Ready is filled in from driftless's own readiness prober, not Docker.
	Ready bool `json:"ready"`
	// ReadyReason explains a not-ready replica (probe output, exit code).
	ReadyReason string `json:"readyReason,omitempty"`
	// RestartCount comes from the prober's inspect on state changes, not from
	// the list call; zero when unknown.
	RestartCount int `json:"restartCount,omitempty"`
	// ComposeProject, ComposeService and ComposeNumber are docker
	// compose's labels, on containers compose made.
	ComposeProject string `json:"composeProject,omitempty"`
	ComposeService string `json:"composeService,omitempty"`
	ComposeNumber  int    `json:"composeNumber,omitempty"`
	// Config is what an inspect shows of the settings that can be changed
	// on a running container (docker update, network connect/disconnect,
	// docker rename); nil when the container was not inspected.
	Config *RuntimeConfig `json:"-"`
}

// RuntimeConfig is the part of a container's configuration that can be
// changed without recreating it, as the engine reports it.
type RuntimeConfig struct {
	MemoryBytes            int64
	MemoryReservationBytes int64
	NanoCPUs               int64
	PidsLimit              int64
	// CPUShares, CPUSet, CPUPeriod, CPUQuota and MemorySwapBytes are the
	// scheduler settings docker update changes too.
	CPUShares       int64
	CPUSet          string
	CPUPeriod       int64
	CPUQuota        int64
	MemorySwapBytes int64
	// RestartPolicy is Docker's name: "no", "always", "unless-stopped",
	// "on-failure".
	RestartPolicy     string
	RestartMaxRetries int
	// Aliases are the DNS aliases per Docker network name.
	Aliases map[string][]string
}

// Network is one observed Docker network.
type Network struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	App      string            `json:"app,omitempty"`
	Resource string            `json:"resource,omitempty"`
	SpecHash string            `json:"specHash,omitempty"`
	Driver   string            `json:"driver"`
	Labels   map[string]string `json:"-"`
	// Created is when Docker created it: of two networks with one name,
	// the older is kept (see Change.MergeInto).
	Created time.Time `json:"created,omitzero"`
}

// Volume is one observed Docker volume.
type Volume struct {
	Name     string            `json:"name"`
	App      string            `json:"app,omitempty"`
	Resource string            `json:"resource,omitempty"`
	SpecHash string            `json:"specHash,omitempty"`
	Driver   string            `json:"driver"`
	Labels   map[string]string `json:"-"`
	// Service, Slot and Target identify an anonymous volume (Target set):
	// the replica slot that mounts it and where.
	Service string `json:"service,omitempty"`
	Slot    int    `json:"slot,omitempty"`
	Target  string `json:"target,omitempty"`
}

// Anonymous reports whether the volume is a replica slot's anonymous
// volume rather than a declared one.
func (v *Volume) Anonymous() bool { return v.Target != "" }

// Actual is the observed state relevant to one app.
type Actual struct {
	// Containers, Networks and Volumes carry this app's labels.
	Containers []Container `json:"containers"`
	Networks   []Network   `json:"networks"`
	Volumes    []Volume    `json:"volumes"`
	// Foreign are containers, networks and volumes without driftless's
	// labels (or of another app) whose names or host ports may collide with
	// ours. They only ever appear in a plan as conflicts.
	ForeignContainers []Container `json:"foreignContainers,omitempty"`
	ForeignNetworks   []Network   `json:"foreignNetworks,omitempty"`
	ForeignVolumes    []Volume    `json:"foreignVolumes,omitempty"`
	// Services are the app's Swarm services (target swarm only); their
	// tasks are also in Containers, one row per task, for status.
	Services []SwarmService `json:"services,omitempty"`
	// Objects are the app's Swarm configs and secrets (target swarm).
	Objects []SwarmObject `json:"objects,omitempty"`
}

// SwarmObject is one observed Swarm config or secret driftless owns,
// named <app>_<name>_<hash8> and labelled with its app, compose name
// and content hash.
type SwarmObject struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"` // KindConfig or KindSecret
	App      string `json:"app,omitempty"`
	Resource string `json:"resource,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// SwarmService is one observed Swarm service driftless owns, as plain
// data from one list call (and one task list).
type SwarmService struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	App      string `json:"app,omitempty"`
	Service  string `json:"service,omitempty"`
	SpecHash string `json:"specHash,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Image is the image the spec names, without a pinned digest.
	Image string `json:"image"`
	// Global is deploy.mode: global; Replicas is then meaningless.
	Global   bool `json:"global,omitempty"`
	Replicas int  `json:"replicas"`
	// UpdateState is Swarm's UpdateStatus.State ("" after a create):
	// updating, paused, completed, rollback_started, rollback_paused,
	// rollback_completed; UpdateMessage is its message.
	UpdateState   string `json:"updateState,omitempty"`
	UpdateMessage string `json:"updateMessage,omitempty"`
	// PreviousSpecHash is the spec-hash label of the spec before the last
	// update: after a rollback it is the spec Swarm refused.
	PreviousSpecHash string `json:"previousSpecHash,omitempty"`
	// Objects are the names of the configs and secrets the service's
	// spec and previous spec use: Swarm needs the previous ones to roll
	// back.
	Objects []string `json:"objects,omitempty"`
	// TaskErrors are the errors of the service's latest failed tasks,
	// newest first, each with its task name and node ("web.2 on node-1:
	// task: non-zero exit (1)").
	TaskErrors []string `json:"taskErrors,omitempty"`
	// Spec is the running spec in comparable form; nil when the back end
	// did not read it. It holds environment values as they are, secrets
	// included: never serialised.
	Spec SwarmSpec `json:"-"`
}

// SwarmSpec is a Swarm service spec as comparable fields, path to value
// ("env.MESSAGE": "one", "resources.limits.memoryBytes": "67108864"),
// normalised by the Swarm back end (deploy/swarm.Fields) so that what
// Swarm fills in or defaults, and what only identifies the service, is
// not there on either side. Replicas are not in it: a scale is its own
// change.
type SwarmSpec map[string]string

// Swarm update states (UpdateStatus.State) that mean an update did not
// go through: Swarm paused it or rolled it back.
const (
	SwarmUpdatePaused            = "paused"
	SwarmUpdateRollbackStarted   = "rollback_started"
	SwarmUpdateRollbackPaused    = "rollback_paused"
	SwarmUpdateRollbackCompleted = "rollback_completed"
	SwarmUpdateUpdating          = "updating"
	SwarmUpdateCompleted         = "completed"
)

// Options are the judgement calls and inputs that are not state.
type Options struct {
	// Revision is the commit the desired state comes from; it is stamped on
	// what the plan creates and named in the "No changes" line.
	Revision string
	// Prune removes owned objects no longer declared. Off by default.
	Prune bool
	// AllowVolumeRemoval lets prune remove volumes. Off by default: data loss
	// is never implicit.
	AllowVolumeRemoval bool
	// Now is the time the plan is computed at.
	Now time.Time
	// Backoff holds containers (by name) whose repair must wait until the
	// given time, because they keep failing (crash loop). Their changes are
	// put in Plan.Deferred instead of Plan.Changes.
	Backoff map[string]time.Time
	// Applied is, per service, what the last successful apply converged to.
	// It lets the differ tell drift (a replica that was converged and is now
	// gone, stopped or changed outside Git) from a change that Git asked
	// for. Nil when unknown (one-shot CLI): then a missing or stopped replica
	// whose siblings carry the desired spec hash counts as drift.
	Applied map[string]AppliedService
	// ReadyDeadline is how long a running replica may stay not ready,
	// counted from its creation, before Assess calls it Degraded. Zero
	// means no deadline: such a replica stays Progressing.
	ReadyDeadline time.Duration
	// NoSelfHeal says changes made outside Git are left alone on purpose,
	// so a service waiting only on them is Degraded, not Progressing.
	// Assess only: Compute still plans them.
	NoSelfHeal bool
	// FailedRollouts are services (by name) whose new replicas failed to
	// come up. Assess reports such a service Degraded while the failed spec
	// hash is still the desired one.
	FailedRollouts map[string]RolloutFailure
	// ComposeProject is the docker compose project whose containers run
	// this app's services today ("" = the app name). Without Adopt they
	// are conflicts that hold their services back.
	ComposeProject string
	// Adopt replaces the compose project's containers with the app's own
	// replicas, one at a time, each new one ready before the old one goes.
	Adopt bool
	// Target is manifest.TargetSwarm for an app deployed as Swarm
	// services: the plan acts on services and overlay networks, never on
	// containers; "" is one engine.
	Target string
	// SwarmSpecs are the declared services (by name) as the Swarm back
	// end sends them, in the form of SwarmService.Spec: any field where
	// the two differ is drift. They are rendered before the differ runs
	// (sync/pipeline), so that it receives data, not a back end's
	// callback. Nil, or a service missing (a back end that cannot say):
	// only the image and the replica count are compared.
	SwarmSpecs map[string]SwarmSpec `json:"-"`
	// Shared are the external networks and volumes of other apps this
	// app may use; any other is a conflict (Conflict.Owner).
	Shared Shared
	// SourceDir is the app's directory in its repository, which the
	// desired state's manifest positions are relative to: messages join
	// the two, so that they name the file as the repository has it.
	SourceDir string
}

// Shared names, by Docker name, the external networks and volumes that
// carry another app's label and that an app may still join or mount: its
// `shared:` in driftless.yaml, or the CLI's --shared-network and
// --shared-volume. Nothing an app does reaches another app's objects
// unless the host's owner lists them here.
type Shared struct {
	Networks []string `json:"networks,omitempty"`
	Volumes  []string `json:"volumes,omitempty"`
}

// Validate checks the names: each a Docker object name, listed once.
func (s Shared) Validate() error {
	var errs []error
	for _, l := range []struct {
		key   string
		names []string
	}{{"networks", s.Networks}, {"volumes", s.Volumes}} {
		seen := map[string]bool{}
		for _, n := range l.names {
			switch {
			case !manifest.ValidDockerName(n):
				errs = append(errs, fmt.Errorf("shared.%s: %q is not a Docker %s name", l.key, n, strings.TrimSuffix(l.key, "s")))
			case seen[n]:
				errs = append(errs, fmt.Errorf("shared.%s: %q is listed twice", l.key, n))
			}
			seen[n] = true
		}
	}
	return errors.Join(errs...)
}

// ComposeProjectOf is the compose project name that belongs to the app.
func (o Options) ComposeProjectOf(app string) string { return o.composeProject(app) }

// composeProject is the compose project name that belongs to the app.
func (o Options) composeProject(app string) string {
	if o.ComposeProject != "" {
		return o.ComposeProject
	}
	return app
}

// RolloutFailure is a failed rollout of a service at one spec hash.
type RolloutFailure struct {
	Hash      string    `json:"hash"`
	Failure   Failure   `json:"failure"`   // what the applier saw
	NotBefore time.Time `json:"notBefore"` // when it will be tried again
}

// AppliedService records what a service was converged to.
type AppliedService struct {
	Hash     string `json:"hash"`
	Replicas int    `json:"replicas"`
}

// Input is everything Compute needs.
type Input struct {
	App     string
	Desired *manifest.App // nil or empty: nothing is declared
	Actual  Actual
	Options Options
}

// Action is what a change does; its string doubles as its display symbol,
// except for ActionUpdate (see Symbol).
type Action string

const (
	ActionCreate  Action = "+"
	ActionStart   Action = "~" // start a stopped or exited container in place
	ActionReplace Action = "-/+"
	ActionRemove  Action = "-"
	// ActionUpdate changes a running container in place: resources and
	// restart policy (docker update), networks and aliases (connect),
	// its name (rename). The process keeps running.
	ActionUpdate Action = "update"
	// ActionScale sets a Swarm service's replica count (docker service
	// scale); nothing else of the service changes.
	ActionScale Action = "scale"
)

// Symbol is how the action is shown: "+", "~", "-/+", "-"; an in-place
// update shows as "~" like a start (Terraform's "update in-place").
func (a Action) Symbol() string {
	if a == ActionUpdate || a == ActionScale {
		return "~"
	}
	return string(a)
}

// Kind is the kind of Docker object a change acts on.
type Kind string

const (
	KindContainer Kind = "container"
	KindNetwork   Kind = "network"
	KindVolume    Kind = "volume"
	// KindService is a Swarm service, KindConfig and KindSecret a Swarm
	// config and secret (target swarm).
	KindService Kind = "service"
	KindConfig  Kind = "config"
	KindSecret  Kind = "secret"
)

// Cause says why the gap exists: the desired state moved (a new commit), or
// the actual state moved outside Git (drift). Repairs of drift are recorded
// separately in history.
type Cause string

const (
	CauseGit   Cause = "git"
	CauseDrift Cause = "drift"
)

// FieldChange is one field's before and after, already redacted.
type FieldChange struct {
	Path   string `json:"path"` // e.g. image, env.LOG_LEVEL, replicas
	Before string `json:"before"`
	After  string `json:"after"`
}

// Change is one step of a plan: one Docker object, one action.
type Change struct {
	Action  Action `json:"action"`
	Kind    Kind   `json:"kind"`
	Name    string `json:"name"` // Docker object name, e.g. shop-web-3
	Service string `json:"service,omitempty"`
	Slot    int    `json:"slot,omitempty"`
	// ID is the existing object's ID (start, replace, remove).
	ID     string        `json:"id,omitempty"`
	Cause  Cause         `json:"cause"`
	Reason string        `json:"reason"` // for people only: deploy never branches on it
	Fields []FieldChange `json:"fields,omitempty"`
	// Resource is the manifest name of a network or volume.
	Resource string `json:"resource,omitempty"`
	// Target is set on an anonymous volume's change: the container path
	// the replica of Service and Slot mounts it at.
	Target string `json:"target,omitempty"`
	// NotBefore is set on deferred changes: when the backoff ends.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// MergeInto is set on the removal of a network that has the same
	// Docker name as another of the app's (a create interrupted after
	// Docker made it, then made again): the ID of the one that is kept.
	// Every container start fails while the name is ambiguous, so the
	// applier moves the duplicate's containers to the kept network and
	// removes it before any container is created or started.
	MergeInto string `json:"mergeInto,omitempty"`
	// Adopt names the docker compose project whose container ID is: the
	// applier may replace or remove that container although driftless does
	// not own it, and only because the app adopts that project.
	Adopt string `json:"adopt,omitempty"`
}

// Conflict is something in the way that driftless will not touch: a foreign
// object holding a name or host port that a declared object needs.
type Conflict struct {
	Kind   Kind   `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// Service is the declared service whose replicas the conflict holds
	// back, if any; Assess uses it to explain a missing replica.
	Service string `json:"service,omitempty"`
	// Owner is set when the app declares as external a network or volume
	// of another app (this one) that Options.Shared does not list: one
	// app does not reach another's objects, so Decide refuses a new
	// revision that does.
	Owner string `json:"owner,omitempty"`
}

// Plan is the ordered list of changes that closes the gap. It is plain data.
type Plan struct {
	App      string `json:"app"`
	Revision string `json:"revision"`
	// Changes are sorted: networks and volumes first, then containers by
	// service in dependsOn order, then by slot.
	Changes []Change `json:"changes"`
	// Deferred are changes held back by crash-loop backoff.
	Deferred  []Change   `json:"deferred,omitempty"`
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Pruneable are owned objects no longer declared that this plan keeps:
	// the removals --prune would make (volumes also need
	// --allow-volume-removal). They are shown, never executed.
	Pruneable []Change `json:"pruneable,omitempty"`
}

// Empty reports whether the plan has nothing to do now.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }
