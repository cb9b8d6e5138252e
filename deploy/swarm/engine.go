package swarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// api is the part of the Docker client this package uses; *client.Client
// satisfies it.
type api interface {
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	DaemonHost() string
	Close() error
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)

	ServiceList(ctx context.Context, options client.ServiceListOptions) (client.ServiceListResult, error)
	ServiceInspect(ctx context.Context, id string, options client.ServiceInspectOptions) (client.ServiceInspectResult, error)
	ServiceCreate(ctx context.Context, options client.ServiceCreateOptions) (client.ServiceCreateResult, error)
	ServiceUpdate(ctx context.Context, id string, options client.ServiceUpdateOptions) (client.ServiceUpdateResult, error)
	ServiceRemove(ctx context.Context, id string, options client.ServiceRemoveOptions) (client.ServiceRemoveResult, error)
	TaskList(ctx context.Context, options client.TaskListOptions) (client.TaskListResult, error)
	NodeList(ctx context.Context, options client.NodeListOptions) (client.NodeListResult, error)

	ConfigList(ctx context.Context, options client.ConfigListOptions) (client.ConfigListResult, error)
	ConfigCreate(ctx context.Context, options client.ConfigCreateOptions) (client.ConfigCreateResult, error)
	ConfigRemove(ctx context.Context, id string, options client.ConfigRemoveOptions) (client.ConfigRemoveResult, error)
	SecretList(ctx context.Context, options client.SecretListOptions) (client.SecretListResult, error)
	SecretCreate(ctx context.Context, options client.SecretCreateOptions) (client.SecretCreateResult, error)
	SecretRemove(ctx context.Context, id string, options client.SecretRemoveOptions) (client.SecretRemoveResult, error)

	NetworkList(ctx context.Context, options client.NetworkListOptions) (client.NetworkListResult, error)
	NetworkCreate(ctx context.Context, name string, options client.NetworkCreateOptions) (client.NetworkCreateResult, error)
	NetworkRemove(ctx context.Context, id string, options client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)

	Events(ctx context.Context, options client.EventsListOptions) client.EventsResult
}

// Options configure an Engine.
type Options struct {
	Host   string // "" = DOCKER_HOST / default socket
	Logger *slog.Logger
	// RolloutTimeout bounds how long Apply waits for Swarm to finish an
	// update (or a create) before it reports the rollout as failed;
	// default 3m. Swarm keeps rolling after that; the next pass looks
	// again.
	RolloutTimeout time.Duration
	// Poll is how often Apply looks at a rollout; default 500ms.
	Poll time.Duration
	// RequestTimeout bounds each request to the manager (boundedAPI);
	// default deploy.DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Builder builds the images of build: sections on the manager's
	// engine and pushes them; nil refuses every revision with builds.
	Builder Builder
	// Registries gives the credentials a service's image is pulled with
	// on every node; nil pulls anonymously.
	Registries Registries
}

// Registries encodes an app's credentials for an image's registry (the
// X-Registry-Auth value, "" for none); *deploy.Engine has it.
type Registries interface {
	RegistryAuth(ctx context.Context, app, image string) (string, error)
}

// Engine is a connection to a Swarm manager.
type Engine struct {
	// api bounds each request (boundedAPI); raw is the client itself, on
	// which the log stream is found.
	api  api
	raw  api
	opts Options
	log  *slog.Logger

	// apps maps service IDs to their app, so a service event (which does
	// not carry the service's labels) and the removal of a service find
	// their app.
	mu   sync.Mutex
	apps map[string]string

	// quirks are, by service name, fields Swarm returned otherwise than
	// driftless sent them in its last create or update (see learnQuirks);
	// guarded by mu.
	quirks map[string]quirk

	// stallWait is stallWait; tests shorten it.
	stallWait time.Duration

	// pushed are the built images pushed to their registry in this run;
	// guarded by mu.
	pushed map[string]bool
}

// New connects to the engine. It does not fail when the engine is down;
// Ping says.
func New(opts Options) (*Engine, error) {
	host := cmp.Or(opts.Host, os.Getenv(client.EnvOverrideHost), client.DefaultDockerHost)
	clientOpts := []client.Opt{client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, CheckRedirect: client.CheckRedirect}),
		client.FromEnv, client.WithHost(host)}
	if os.Getenv("DOCKER_CERT_PATH") == "" && os.Getenv("DOCKER_TLS_VERIFY") == "" {
		clientOpts = append(clientOpts, client.WithScheme("http"))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("configure Docker client: %w", err)
	}
	return newEngine(cli, opts), nil
}

func newEngine(a api, opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RolloutTimeout <= 0 {
		opts.RolloutTimeout = 3 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = deploy.DefaultRequestTimeout
	}
	return &Engine{api: &boundedAPI{api: a, timeout: opts.RequestTimeout}, raw: a, opts: opts, log: opts.Logger, apps: map[string]string{}, quirks: map[string]quirk{}, pushed: map[string]bool{}, stallWait: stallWait}
}

// Close closes the connection.
func (e *Engine) Close() error { return e.api.Close() }

// Ping checks that the engine answers and is a Swarm manager: an engine
// that is not one cannot run services, which the user must fix (docker
// swarm init, or point DOCKER_HOST at a manager).
func (e *Engine) Ping(ctx context.Context) error {
	if _, err := e.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return e.unreachable(err)
	}
	info, err := e.api.Info(ctx, client.InfoOptions{})
	if err != nil {
		return e.unreachable(err)
	}
	if !info.Info.Swarm.ControlAvailable {
		return fmt.Errorf("%w: the engine at %s is not a Swarm manager (swarm state %q): run driftless against a manager node, or `docker swarm init` there",
			drift.ErrEngineUnreachable, e.api.DaemonHost(), info.Info.Swarm.LocalNodeState)
	}
	return nil
}

// unreachable marks an error of the engine (not of the request) as such.
func (e *Engine) unreachable(err error) error {
	if errors.Is(err, drift.ErrEngineUnreachable) {
		return err
	}
	return fmt.Errorf("%w at %s: %w", drift.ErrEngineUnreachable, e.api.DaemonHost(), err)
}

// taskErrorWindow is how far back failed tasks count as the service's
// current task errors.
const taskErrorWindow = 10 * time.Minute

// ObserveForPlan is Observe with the foreign search, for the one-shot
// CLI: Swarm lists are label-filtered already, so there is no cheaper path.
func (e *Engine) ObserveForPlan(ctx context.Context, in drift.Input) (drift.Actual, error) {
	return e.Observe(ctx, in.App, true)
}

// Observe lists the app's services (and, withForeign, every other
// service, whose names may collide), their tasks and the nodes the tasks
// run on, and the app's networks. Tasks become the Containers rows status
// shows: "<service>.<slot>" on a node.
func (e *Engine) Observe(ctx context.Context, app string, withForeign bool) (drift.Actual, error) {
	var act drift.Actual
	opts := client.ServiceListOptions{}
	if !withForeign {
		opts.Filters = make(client.Filters).Add("label", drift.LabelApp+"="+app)
	}
	svcs, err := e.api.ServiceList(ctx, opts)
	if err != nil {
		return act, e.unreachable(err)
	}
	var ids []string
	for _, s := range svcs.Items {
		o := observeService(s)
		act.Services = append(act.Services, o)
		if o.App == app {
			ids = append(ids, s.ID)
		}
		if o.App != "" {
			e.mu.Lock()
			e.apps[s.ID] = o.App
			e.mu.Unlock()
		}
	}
	if len(ids) > 0 {
		if err := e.observeTasks(ctx, app, ids, &act); err != nil {
			return act, err
		}
	}
	nets, err := e.api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return act, e.unreachable(err)
	}
	netNames := map[string]string{}
	for _, n := range nets.Items {
		netNames[n.ID] = n.Name
	}
	for i, s := range svcs.Items {
		// The running spec, for drift to compare field by field (the spec
		// names networks by ID).
		if o := &act.Services[i]; o.App == app {
			o.Spec = e.withoutQuirks(o.Name, o.SpecHash, Fields(s.Spec, netNames))
		}
	}
	for _, n := range nets.Items {
		o := drift.Network{ID: n.ID, Name: n.Name, Driver: n.Driver, Labels: n.Labels,
			App: n.Labels[drift.LabelApp], Resource: n.Labels[drift.LabelResource], SpecHash: n.Labels[drift.LabelSpecHash]}
		if o.App == app {
			act.Networks = append(act.Networks, o)
		} else if withForeign {
			act.ForeignNetworks = append(act.ForeignNetworks, o)
		}
	}
	if act.Objects, err = e.observeObjects(ctx, app); err != nil {
		return act, err
	}
	slices.SortFunc(act.Services, func(a, b drift.SwarmService) int { return cmp.Compare(a.Name, b.Name) })
	return act, nil
}

// observeObjects lists the app's Swarm configs and secrets.
func (e *Engine) observeObjects(ctx context.Context, app string) ([]drift.SwarmObject, error) {
	f := make(client.Filters).Add("label", drift.LabelApp+"="+app)
	configs, err := e.api.ConfigList(ctx, client.ConfigListOptions{Filters: f})
	if err != nil {
		return nil, e.unreachable(err)
	}
	secrets, err := e.api.SecretList(ctx, client.SecretListOptions{Filters: f})
	if err != nil {
		return nil, e.unreachable(err)
	}
	var out []drift.SwarmObject
	obj := func(id, name string, kind drift.Kind, l map[string]string) drift.SwarmObject {
		return drift.SwarmObject{ID: id, Name: name, Kind: kind, App: l[drift.LabelApp], Resource: l[drift.LabelResource], Hash: l[drift.LabelSpecHash]}
	}
	for _, c := range configs.Items {
		out = append(out, obj(c.ID, c.Spec.Name, drift.KindConfig, c.Spec.Labels))
	}
	for _, s := range secrets.Items {
		out = append(out, obj(s.ID, s.Spec.Name, drift.KindSecret, s.Spec.Labels))
	}
	return out, nil
}

func observeService(s swarmtypes.Service) drift.SwarmService {
	l := s.Spec.Labels
	o := drift.SwarmService{ID: s.ID, Name: s.Spec.Name, App: l[drift.LabelApp], Service: l[drift.LabelService],
		SpecHash: l[drift.LabelSpecHash], Revision: l[drift.LabelRevision]}
	if c := s.Spec.TaskTemplate.ContainerSpec; c != nil {
		o.Image = stripDigest(c.Image)
	}
	switch {
	case s.Spec.Mode.Global != nil:
		o.Global = true
	case s.Spec.Mode.Replicated != nil && s.Spec.Mode.Replicated.Replicas != nil:
		o.Replicas = int(*s.Spec.Mode.Replicated.Replicas)
	}
	if u := s.UpdateStatus; u != nil {
		o.UpdateState, o.UpdateMessage = string(u.State), u.Message
	}
	if p := s.PreviousSpec; p != nil {
		o.PreviousSpecHash = p.Labels[drift.LabelSpecHash]
	}
	for _, spec := range []*swarmtypes.ServiceSpec{&s.Spec, s.PreviousSpec} {
		if spec == nil || spec.TaskTemplate.ContainerSpec == nil {
			continue
		}
		for _, c := range spec.TaskTemplate.ContainerSpec.Configs {
			o.Objects = append(o.Objects, c.ConfigName)
		}
		for _, c := range spec.TaskTemplate.ContainerSpec.Secrets {
			o.Objects = append(o.Objects, c.SecretName)
		}
	}
	return o
}

// stripDigest drops the digest Swarm pins a tag to ("img:tag@sha256:…"),
// so status shows what Git declares.
func stripDigest(ref string) string {
	if i := strings.Index(ref, "@"); i > 0 {
		return ref[:i]
	}
	return ref
}

func (e *Engine) observeTasks(ctx context.Context, app string, serviceIDs []string, act *drift.Actual) error {
	tasks, err := e.api.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", serviceIDs...)})
	if err != nil {
		return e.unreachable(err)
	}
	nodes, err := e.api.NodeList(ctx, client.NodeListOptions{})
	if err != nil {
		return e.unreachable(err)
	}
	hostname := map[string]string{}
	for _, n := range nodes.Items {
		hostname[n.ID] = n.Description.Hostname
	}
	byID := map[string]*drift.SwarmService{}
	for i := range act.Services {
		byID[act.Services[i].ID] = &act.Services[i]
	}
	rows, errs := taskRows(app, tasks.Items, byID, hostname, time.Now().Add(-taskErrorWindow))
	act.Containers = rows
	for id, list := range errs {
		byID[id].TaskErrors = list
	}
	return nil
}

// taskRows turns tasks into status rows: every task Swarm wants running,
// and, per service, the errors of tasks that failed since the cut-off,
// newest first.
func taskRows(app string, tasks []swarmtypes.Task, services map[string]*drift.SwarmService, hostname map[string]string, since time.Time) ([]drift.Container, map[string][]string) {
	slices.SortFunc(tasks, func(a, b swarmtypes.Task) int {
		return cmp.Or(b.Status.Timestamp.Compare(a.Status.Timestamp), cmp.Compare(a.ID, b.ID))
	})
	var rows []drift.Container
	errs := map[string][]string{}
	for _, t := range tasks {
		svc := services[t.ServiceID]
		if svc == nil {
			continue
		}
		name := taskName(svc.Name, t)
		node := cmp.Or(hostname[t.NodeID], t.NodeID)
		if t.DesiredState != swarmtypes.TaskStateRunning && t.DesiredState != swarmtypes.TaskStateReady {
			if t.Status.Err != "" && !t.Status.Timestamp.Before(since) && len(errs[svc.ID]) < 5 {
				errs[svc.ID] = append(errs[svc.ID], name+" on "+cmp.Or(node, "no node")+": "+t.Status.Err)
			}
			continue
		}
		row := drift.Container{ID: t.ID, Name: name, App: app, Service: svc.Service, Slot: t.Slot, Node: node,
			State: drift.ContainerState(t.Status.State), Status: taskStatus(t, node), Created: t.CreatedAt,
			Ready: t.Status.State == swarmtypes.TaskStateRunning}
		if c := t.Spec.ContainerSpec; c != nil {
			row.Image = stripDigest(c.Image)
		}
		if t.Status.Err != "" {
			row.ReadyReason = t.Status.Err
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b drift.Container) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return rows, errs
}

// taskName is the task as `docker service ps` names it: <service>.<slot>
// for a replicated service, <service>.<node ID> for a global one.
func taskName(service string, t swarmtypes.Task) string {
	if t.Slot > 0 {
		return service + "." + strconv.Itoa(t.Slot)
	}
	return service + "." + t.NodeID
}

func taskStatus(t swarmtypes.Task, node string) string {
	s := string(t.Status.State)
	if node != "" {
		s += " on " + node
	}
	if t.Status.Err != "" {
		s += ": " + t.Status.Err
	} else if t.Status.Message != "" && t.Status.Message != string(t.Status.State) {
		s += " (" + t.Status.Message + ")"
	}
	return s
}

// isNotFound reports a 404 from the engine.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
