package swarm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	swarmtypes "github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/logstream"
	"github.com/driftless-dev/driftless/drift"
)

// logsAPI is a manager with one app's services, their tasks, two nodes
// and a log stream per service or task.
type logsAPI struct {
	api
	services []swarmtypes.Service
	tasks    []swarmtypes.Task
	streams  map[string]string // service or task ID → raw multiplexed stream
	opened   []string
}

func (f *logsAPI) ServiceList(_ context.Context, o client.ServiceListOptions) (client.ServiceListResult, error) {
	return client.ServiceListResult{Items: f.services}, nil
}

func (f *logsAPI) TaskList(context.Context, client.TaskListOptions) (client.TaskListResult, error) {
	return client.TaskListResult{Items: f.tasks}, nil
}

func (f *logsAPI) NodeList(context.Context, client.NodeListOptions) (client.NodeListResult, error) {
	return client.NodeListResult{Items: []swarmtypes.Node{
		{ID: "n1", Description: swarmtypes.NodeDescription{Hostname: "node-1"}},
		{ID: "n2", Description: swarmtypes.NodeDescription{Hostname: "node-2"}},
	}}, nil
}

func (f *logsAPI) ServiceLogs(_ context.Context, id string, o client.ServiceLogsOptions) (client.ServiceLogsResult, error) {
	if !o.Details {
		return nil, errors.New("details not asked for: lines cannot be named")
	}
	f.opened = append(f.opened, "service "+id)
	return io.NopCloser(strings.NewReader(f.streams[id])), nil
}

func (f *logsAPI) TaskLogs(_ context.Context, id string, o client.TaskLogsOptions) (client.TaskLogsResult, error) {
	f.opened = append(f.opened, "task "+id)
	return io.NopCloser(strings.NewReader(f.streams[id])), nil
}

// muxed is lines as the engine multiplexes them, each with Swarm's
// details: "stdout|t1|n1|text".
func muxed(lines ...string) string {
	var buf bytes.Buffer
	for _, l := range lines {
		p := strings.SplitN(l, "|", 4)
		stream := stdcopy.Stdout
		if p[0] == "stderr" {
			stream = stdcopy.Stderr
		}
		payload := "com.docker.swarm.node.id=" + p[2] + ",com.docker.swarm.service.id=s1,com.docker.swarm.task.id=" + p[1] + " " + p[3] + "\n"
		hdr := make([]byte, 8)
		hdr[0] = byte(stream)
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
		buf.Write(hdr)
		buf.WriteString(payload)
	}
	return buf.String()
}

func newLogsAPI() *logsAPI {
	web := swarmtypes.Service{ID: "s1", Spec: swarmtypes.ServiceSpec{
		Annotations:  swarmtypes.Annotations{Name: "shop-web", Labels: map[string]string{drift.LabelApp: "shop", drift.LabelService: "web", LabelSecretEnv: "API_KEY"}},
		TaskTemplate: swarmtypes.TaskSpec{ContainerSpec: &swarmtypes.ContainerSpec{Env: []string{"API_KEY=hunter2-secret", "MODE=prod"}}},
	}}
	running := func(id string, slot int, node string) swarmtypes.Task {
		return swarmtypes.Task{ID: id, ServiceID: "s1", Slot: slot, NodeID: node, DesiredState: swarmtypes.TaskStateRunning}
	}
	return &logsAPI{
		services: []swarmtypes.Service{web},
		tasks:    []swarmtypes.Task{running("t1", 1, "n1"), running("t2", 2, "n2")},
		streams: map[string]string{
			"s1": muxed("stdout|t1|n1|listening on :8080", "stderr|t2|n2|key is hunter2-secret", "stdout|t9|n2|from a task that is gone"),
			"t2": muxed("stdout|t2|n2|only task 2"),
		},
	}
}

func TestSwarmLogTargets(t *testing.T) {
	e := newEngine(newLogsAPI(), Options{})
	for _, tt := range []struct{ name, want string }{
		{"", "shop-web"},
		{"web", "shop-web"},
		{"shop-web", "shop-web"},
		{"shop-web.2", "shop-web.2"},
	} {
		got, err := e.LogTargets(context.Background(), "shop", tt.name)
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("LogTargets(%q) = %v, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	for _, foreign := range []string{"shop-web.7", "blog-web", "db"} {
		if _, err := e.LogTargets(context.Background(), "shop", foreign); !errors.Is(err, logstream.ErrNotOwned) || !strings.Contains(err.Error(), "shop-web") {
			t.Errorf("LogTargets(%q) err = %v, want ErrNotOwned naming the app's services", foreign, err)
		}
	}
}

func TestSwarmStreamLogs(t *testing.T) {
	f := newLogsAPI()
	e := newEngine(f, Options{})
	read := func(target string) []string {
		var got []string
		err := e.StreamLogs(context.Background(), "shop", target, logstream.Options{Tail: 10}, func(l logstream.Line) error {
			got = append(got, l.Stream+" "+l.Container+"@"+l.Node+" "+l.Text)
			return nil
		})
		if err != nil {
			t.Fatalf("StreamLogs(%s): %v", target, err)
		}
		slices.Sort(got)
		return got
	}
	// The whole service: every line named by its task and node as status
	// names them, the secret value redacted.
	want := []string{
		"stderr shop-web.2@node-2 key is " + logstream.Redacted,
		"stdout shop-web.1@node-1 listening on :8080",
		"stdout shop-web.t9@node-2 from a task that is gone",
	}
	if got := read("shop-web"); !slices.Equal(got, want) {
		t.Errorf("service logs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One task, as the dashboard's row asks for it.
	if got := read("shop-web.2"); !slices.Equal(got, []string{"stdout shop-web.2@node-2 only task 2"}) {
		t.Errorf("task logs: %v", got)
	}
	if !slices.Equal(f.opened, []string{"service s1", "task t2"}) {
		t.Errorf("streams opened: %v", f.opened)
	}
	err := e.StreamLogs(context.Background(), "blog", "shop-web", logstream.Options{}, func(logstream.Line) error { return nil })
	if !errors.Is(err, logstream.ErrNotOwned) {
		t.Errorf("another app's service: err = %v, want ErrNotOwned", err)
	}
}

func TestSplitDetails(t *testing.T) {
	d, text := splitDetails("com.docker.swarm.node.id=n1,com.docker.swarm.task.id=t%2C1 hello world")
	if text != "hello world" || d[detailNode] != "n1" || d[detailTask] != "t,1" {
		t.Errorf("splitDetails = %v, %q", d, text)
	}
	if d, text := splitDetails("plain line without details"); d != nil || text != "plain line without details" {
		t.Errorf("no details: %v, %q", d, text)
	}
}
