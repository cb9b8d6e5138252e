package jobrun

import (
	"archive/tar"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

func testJob() (*manifest.App, *manifest.Job) {
	j := manifest.Job{Name: "migrate", Type: manifest.JobPreSync, Timeout: time.Minute, Service: manifest.Service{Name: "migrate", Spec: manifest.ServiceSpec{
		Image: "shop/web:1", Replicas: 1, Restart: manifest.RestartNever, Networks: []string{manifest.DefaultNetwork}, Command: []string{"migrate"},
	}}}
	j.Hash = manifest.HashJob(nil, j)
	return &manifest.App{Name: "shop", Jobs: []manifest.Job{j}}, &j
}

// A run's container is the job's spec as one replica, named and labelled
// as a job's run: no service, slot or spec label the differ would read,
// so observation never takes it for a replica.
func TestCreateConfigIsNoReplica(t *testing.T) {
	app, j := testJob()
	start := time.UnixMilli(1764806400123)
	rc, err := createConfig(Input{App: app, Job: j, Revision: "abc"}, start)
	if err != nil {
		t.Fatal(err)
	}
	l := rc.Create.Config.Labels
	if rc.Create.Name != "shop-job-migrate-1764806400123" || l[drift.LabelApp] != "shop" || l[drift.LabelJob] != "migrate" ||
		l[drift.LabelJobType] != "pre-sync" || l[drift.LabelService] != "" || l[drift.LabelSlot] != "" || l[drift.LabelSpec] != "" {
		t.Fatalf("name %s labels %v", rc.Create.Name, l)
	}
	if rc.Create.HostConfig.RestartPolicy.Name != container.RestartPolicyDisabled || rc.Create.Config.Entrypoint[0] != "migrate" {
		t.Fatalf("host config %+v", rc.Create.HostConfig.RestartPolicy)
	}
	c := dockerspec.ContainerFromSummary(container.Summary{ID: "x", Names: []string{"/" + rc.Create.Name}, Labels: l})
	if c.App != "" || c.Service != "" {
		t.Fatalf("observed as %+v", c)
	}
}

// fakeAPI keeps containers by ID; a started one exits with exit.
type fakeAPI struct {
	API
	items   []container.Summary
	exit    int
	removed []string
	hang    bool
	calls   []string // "copy PATHS", "start"
}

func (f *fakeAPI) ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	id := fmt.Sprint(len(f.items))
	f.items = append(f.items, container.Summary{ID: id, Names: []string{"/" + o.Name}, Labels: o.Config.Labels, State: container.StateCreated})
	return client.ContainerCreateResult{ID: id}, nil
}

func (f *fakeAPI) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.calls = append(f.calls, "start")
	return client.ContainerStartResult{}, nil
}

func (f *fakeAPI) CopyToContainer(ctx context.Context, id string, o client.CopyToContainerOptions) (client.CopyToContainerResult, error) {
	var names []string
	tr := tar.NewReader(o.Content)
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	f.calls = append(f.calls, "copy "+o.DestinationPath+" "+strings.Join(names, ","))
	return client.CopyToContainerResult{}, nil
}

func (f *fakeAPI) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	st := &container.State{Status: container.StateExited, ExitCode: f.exit, StartedAt: "2026-12-04T10:00:00Z", FinishedAt: "2026-12-04T10:00:01.5Z"}
	if f.hang {
		st = &container.State{Status: container.StateRunning, Running: true}
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{State: st}}, nil
}

func (f *fakeAPI) ContainerStop(ctx context.Context, id string, o client.ContainerStopOptions) (client.ContainerStopResult, error) {
	f.hang = false
	f.exit = 143
	return client.ContainerStopResult{}, nil
}

func (f *fakeAPI) ContainerLogs(ctx context.Context, id string, o client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	return nil, fmt.Errorf("no logs in tests")
}

func (f *fakeAPI) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	var out []container.Summary
	for _, c := range f.items {
		if c.State != "removed" {
			c.State = container.StateExited
			out = append(out, c)
		}
	}
	return client.ContainerListResult{Items: out}, nil
}

func (f *fakeAPI) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	for i := range f.items {
		if f.items[i].ID == id {
			f.items[i].State = "removed"
			f.removed = append(f.removed, f.items[i].Names[0])
		}
	}
	return client.ContainerRemoveResult{}, nil
}

// A failed run is retried backoffLimit times; the runs' containers but the
// newest KeepRuns are removed.
func TestRunRetriesAndKeepsTheLastRuns(t *testing.T) {
	app, j := testJob()
	j.BackoffLimit = 4
	f := &fakeAPI{exit: 3}
	ms := int64(0)
	clock := func() time.Time { ms++; return time.UnixMilli(1764806400000 + ms) }
	run := Run(context.Background(), f, Input{App: app, Job: j, Revision: "abc", Poll: time.Millisecond, Now: clock})
	if run.Attempts != 5 || run.ExitCode != 3 || !run.Failed() || run.Duration != 1500*time.Millisecond {
		t.Fatalf("run %+v", run)
	}
	slices.Sort(f.removed)
	if want := []string{"/shop-job-migrate-1764806400001", "/shop-job-migrate-1764806400003"}; !slices.Equal(f.removed, want) {
		t.Fatalf("removed %v, want the two oldest of five runs %v", f.removed, want)
	}
}

// A run still going at its timeout is stopped and reported timed out.
func TestRunTimesOut(t *testing.T) {
	app, j := testJob()
	j.Timeout = 20 * time.Millisecond
	f := &fakeAPI{hang: true}
	run := Run(context.Background(), f, Input{App: app, Job: j, Revision: "abc", Poll: time.Millisecond})
	if !run.TimedOut || !run.Failed() || run.ExitCode != -1 || run.Summary()[:9] != "timed out" {
		t.Fatalf("run %+v", run)
	}
}

// On an engine that may be on another host, a job's repository file and
// secret file are not bind-mounted: they are copied into the created
// container before it starts, in one request. On a local engine they are
// mounted and nothing is copied.
func TestRunCopiesRepositoryFiles(t *testing.T) {
	app, j := testJob()
	tree := &manifest.RepoTree{Files: []manifest.RepoFile{{Data: []byte("x=1\n")}}}
	app.Content = map[string]*manifest.RepoTree{tree.Hash(): tree}
	app.SecretData = map[string][]byte{"d1": []byte("hunter2")}
	j.Service.Spec.Binds = []manifest.BindMount{{RepoPath: "conf/app.conf", ContentHash: tree.Hash(), MountPath: "/etc/app.conf", ReadOnly: true}}
	j.Service.Spec.Secrets = []manifest.SecretRef{{Name: "db", Target: "/run/secrets/db", Mode: 0o444, Digest: "d1"}}

	rc, err := createConfig(Input{App: app, Job: j, Revision: "abc", FilesDir: "/data/files", SecretsDir: "/run/secrets-dir", Remote: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m := rc.Create.HostConfig.Mounts; len(m) != 0 {
		t.Errorf("mounts %+v, want none for a copied repository file and secret", m)
	}
	f := &fakeAPI{}
	run := Run(context.Background(), f, Input{App: app, Job: j, Revision: "abc", Poll: time.Millisecond, FilesDir: "/data/files", SecretsDir: "/run/secrets-dir", Remote: true})
	if run.Failed() || !slices.Equal(f.calls, []string{"copy / etc/app.conf,run/secrets/db", "start"}) {
		t.Errorf("run %+v, calls %q: want the file and the secret copied, then the start", run, f.calls)
	}

	local := &fakeAPI{}
	run = Run(context.Background(), local, Input{App: app, Job: j, Revision: "abc", Poll: time.Millisecond, FilesDir: "/data/files", SecretsDir: "/run/secrets-dir"})
	if run.Failed() || !slices.Equal(local.calls, []string{"start"}) {
		t.Errorf("on a local engine: run %+v, calls %q: want only the start", run, local.calls)
	}
}
