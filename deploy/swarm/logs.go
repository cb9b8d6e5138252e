package swarm

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
)

// LabelSecretEnv lists, on a service, the env keys whose values are
// secret (the model's secretEnv), comma-separated: their values are
// redacted from the service's logs, as on one engine.
const LabelSecretEnv = drift.LabelPrefix + "secret-env"

// logAPI is what reading logs needs beyond api; *client.Client has it.
type logAPI interface {
	ServiceLogs(ctx context.Context, serviceID string, options client.ServiceLogsOptions) (client.ServiceLogsResult, error)
	TaskLogs(ctx context.Context, taskID string, options client.TaskLogsOptions) (client.TaskLogsResult, error)
}

// Swarm's log details name each line's node, service and task.
const (
	detailNode = "com.docker.swarm.node.id"
	detailTask = "com.docker.swarm.task.id"
)

// LogTargets resolves what to show logs of, through the manager: a
// service of the app (by its model name, "web", or its Swarm name,
// "shop-web"), or one task as status names it ("shop-web.1"); "" = every
// service of the app. logstream.ErrNotOwned when app has no such service or
// task. Names are sorted.
func (e *Engine) LogTargets(ctx context.Context, app, name string) ([]string, error) {
	svcs, err := e.appServices(ctx, app)
	if err != nil {
		return nil, err
	}
	var all []string
	for _, s := range svcs {
		all = append(all, s.Spec.Name)
		if name != "" && (name == s.Spec.Name || name == s.Spec.Labels[drift.LabelService]) {
			return []string{s.Spec.Name}, nil
		}
	}
	if name == "" {
		if len(all) == 0 {
			return nil, fmt.Errorf("app %s has no Swarm services: %w", app, logstream.ErrNotOwned)
		}
		return all, nil
	}
	if svc := taskService(svcs, name); svc != nil {
		if _, ok, err := e.findTask(ctx, *svc, name); err != nil || ok {
			return []string{name}, err
		}
	}
	return nil, fmt.Errorf("%q is neither a service nor a task of app %s (its services: %s): %w", name, app, strings.Join(all, ", "), logstream.ErrNotOwned)
}

// appServices are the services labelled as app's, sorted by name.
func (e *Engine) appServices(ctx context.Context, app string) ([]swarmtypes.Service, error) {
	res, err := e.api.ServiceList(ctx, client.ServiceListOptions{Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
	if err != nil {
		return nil, e.unreachable(err)
	}
	var out []swarmtypes.Service
	for _, s := range res.Items {
		if s.Spec.Labels[drift.LabelApp] == app { // checked again: ownership is the point
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b swarmtypes.Service) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
	return out, nil
}

// taskService is the service a task name ("<service>.<slot>" or
// "<service>.<node ID>") belongs to, or nil.
func taskService(svcs []swarmtypes.Service, name string) *swarmtypes.Service {
	i := strings.LastIndex(name, ".")
	if i <= 0 {
		return nil
	}
	for j := range svcs {
		if svcs[j].Spec.Name == name[:i] {
			return &svcs[j]
		}
	}
	return nil
}

// findTask is the task of svc that status shows under name: the one Swarm
// wants running in that slot, else the newest.
func (e *Engine) findTask(ctx context.Context, svc swarmtypes.Service, name string) (swarmtypes.Task, bool, error) {
	tasks, err := e.api.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", svc.ID)})
	if err != nil {
		return swarmtypes.Task{}, false, e.unreachable(err)
	}
	var best swarmtypes.Task
	found := false
	for _, t := range tasks.Items {
		if taskName(svc.Spec.Name, t) != name {
			continue
		}
		running := t.DesiredState == swarmtypes.TaskStateRunning
		if !found || (running && best.DesiredState != swarmtypes.TaskStateRunning) ||
			(running == (best.DesiredState == swarmtypes.TaskStateRunning) && t.Status.Timestamp.After(best.Status.Timestamp)) {
			best, found = t, true
		}
	}
	return best, found, nil
}

// StreamLogs writes the last lines of a service's tasks (or of one task)
// to emit, read through the manager (docker service logs), then with
// Follow new lines until ctx ends. Each line names its task and node.
// Values of the keys the service marks secret are redacted. target is
// one of LogTargets' names; it must be app's (logstream.ErrNotOwned).
func (e *Engine) StreamLogs(ctx context.Context, app, target string, opts logstream.Options, emit func(logstream.Line) error) error {
	la, ok := e.raw.(logAPI)
	if !ok {
		return fmt.Errorf("logs of %s: this connection to the Swarm manager cannot read logs", target)
	}
	svcs, err := e.appServices(ctx, app)
	if err != nil {
		return err
	}
	var svc *swarmtypes.Service
	var task swarmtypes.Task
	if i := slices.IndexFunc(svcs, func(s swarmtypes.Service) bool { return s.Spec.Name == target }); i >= 0 {
		svc = &svcs[i]
	} else if svc = taskService(svcs, target); svc != nil {
		t, found, err := e.findTask(ctx, *svc, target)
		if err != nil {
			return err
		}
		if !found {
			svc = nil
		}
		task = t
	}
	if svc == nil {
		return fmt.Errorf("%q of app %s: %w", target, app, logstream.ErrNotOwned)
	}
	tail := opts.Tail
	if tail <= 0 {
		tail = logstream.DefaultTail
	}
	tail = min(tail, logstream.MaxTail)
	var stream io.ReadCloser
	if task.ID != "" {
		stream, err = la.TaskLogs(ctx, task.ID, client.TaskLogsOptions{ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Tail: strconv.Itoa(tail), Details: true})
	} else {
		stream, err = la.ServiceLogs(ctx, svc.ID, client.ServiceLogsOptions{ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Tail: strconv.Itoa(tail), Details: true})
	}
	if err != nil {
		return fmt.Errorf("logs of %s: %w", target, e.classify(err))
	}
	// Closing the stream when ctx ends unblocks the demultiplexer.
	stop := context.AfterFunc(ctx, func() { stream.Close() })
	defer stop()
	defer stream.Close()
	red := serviceRedactor(*svc)
	names := &taskNamer{e: e, svc: *svc}
	return logstream.DemuxLines(stream, func(s, text string) error {
		details, msg := splitDetails(text)
		name, node := names.name(ctx, details)
		return emit(logstream.Line{Container: name, Node: node, Stream: s, Text: red.Line(msg)})
	}, ctx.Err)
}

// serviceRedactor redacts the values of the env keys the service's
// LabelSecretEnv lists.
func serviceRedactor(s swarmtypes.Service) logstream.Redactor {
	var env []string
	if c := s.Spec.TaskTemplate.ContainerSpec; c != nil {
		env = c.Env
	}
	var keys []string
	if l := s.Spec.Labels[LabelSecretEnv]; l != "" {
		keys = strings.Split(l, ",")
	}
	return logstream.NewRedactor(env, keys)
}

// splitDetails separates the details Swarm puts before each line
// ("com.docker.swarm.node.id=…,com.docker.swarm.service.id=…,
// com.docker.swarm.task.id=… text") from the text.
func splitDetails(line string) (map[string]string, string) {
	head, text, ok := strings.Cut(line, " ")
	if !ok || !strings.Contains(head, "=") {
		return nil, line
	}
	d := map[string]string{}
	for kv := range strings.SplitSeq(head, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		d[k] = v
	}
	return d, text
}

// taskNamer names a line's task and node as status does, looking the
// service's tasks and the nodes up again when a new task shows up (a
// followed service rolls).
type taskNamer struct {
	e     *Engine
	svc   swarmtypes.Service
	tasks map[string]string // task ID → name; "" = looked up, unknown
	nodes map[string]string // node ID → hostname
}

func (n *taskNamer) name(ctx context.Context, details map[string]string) (task, node string) {
	id, nodeID := details[detailTask], details[detailNode]
	if _, seen := n.tasks[id]; !seen && id != "" {
		n.refresh(ctx)
		if _, seen := n.tasks[id]; !seen {
			n.tasks[id] = ""
		}
	}
	task = n.tasks[id]
	if task == "" {
		task = n.svc.Spec.Name
		if id != "" {
			task += "." + id[:min(12, len(id))]
		}
	}
	return task, cmp.Or(n.nodes[nodeID], nodeID)
}

// refresh reads the service's tasks and the nodes; a failure leaves the
// IDs shown as they are.
func (n *taskNamer) refresh(ctx context.Context) {
	if n.tasks == nil {
		n.tasks, n.nodes = map[string]string{}, map[string]string{}
	}
	if tasks, err := n.e.api.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", n.svc.ID)}); err == nil {
		for _, t := range tasks.Items {
			n.tasks[t.ID] = taskName(n.svc.Spec.Name, t)
		}
	}
	if nodes, err := n.e.api.NodeList(ctx, client.NodeListOptions{}); err == nil {
		for _, nd := range nodes.Items {
			n.nodes[nd.ID] = nd.Description.Hostname
		}
	}
}
