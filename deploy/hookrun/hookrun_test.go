package hookrun

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/manifest"
)

// fakeExec answers as an engine would for commands whose exit code and
// output are given, and records what it was asked to run.
type fakeExec struct {
	codes   map[string]int    // command (space-joined) -> exit code
	outputs map[string]string // command -> its stderr
	ran     []client.ExecCreateOptions
}

func (f *fakeExec) ExecCreate(_ context.Context, _ string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	f.ran = append(f.ran, o)
	return client.ExecCreateResult{ID: strings.Join(o.Cmd, " ")}, nil
}

func (f *fakeExec) ExecAttach(_ context.Context, id string, _ client.ExecAttachOptions) (client.ExecAttachResult, error) {
	server, conn := net.Pipe()
	go func() {
		// One frame of the multiplexed stream: stream, 3 zero bytes, size.
		out := f.outputs[id]
		frame := binary.BigEndian.AppendUint32([]byte{byte(stdcopy.Stderr), 0, 0, 0}, uint32(len(out)))
		_, _ = server.Write(append(frame, out...))
		server.Close()
	}()
	return client.ExecAttachResult{HijackedResponse: client.NewHijackedResponse(conn, "")}, nil
}

func (f *fakeExec) ExecInspect(_ context.Context, id string, _ client.ExecInspectOptions) (client.ExecInspectResult, error) {
	return client.ExecInspectResult{ID: id, ExitCode: f.codes[id]}, nil
}

// Hooks run in order, as written (env sorted), and stop at the first
// that exits non-zero; its error names it, its status and the end of its
// output, and is a *Failed (the replica's failure, not the engine's).
func TestRunStopsAtTheFirstFailingHook(t *testing.T) {
	long := strings.Repeat("x", 2*outputTail) + " disk\nfull "
	f := &fakeExec{codes: map[string]int{"flush": 3}, outputs: map[string]string{"flush": long}}
	hooks := []manifest.Hook{
		{Command: []string{"chown", "1001", "/data"}, User: "root", Env: map[string]string{"B": "2", "A": "1"}, WorkingDir: "/srv"},
		{Command: []string{"flush"}, Privileged: true},
		{Command: []string{"never"}},
	}
	err := Run(context.Background(), f, "c1", "pre_stop", hooks)
	var failed *Failed
	if !errors.As(err, &failed) {
		t.Fatalf("error %v (%T), want a *Failed", err, err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pre_stop hook 2 (flush) exited with status 3: xxx") || !strings.HasSuffix(msg, "x disk full") || len(msg) > outputTail+60 {
		t.Errorf("error %q: want the hook, its status and the last %d bytes of its output, spaces folded", msg, outputTail)
	}
	if len(f.ran) != 2 {
		t.Fatalf("ran %d hooks, want 2 (the third after a failure must not run)", len(f.ran))
	}
	first := f.ran[0]
	if first.User != "root" || first.WorkingDir != "/srv" || !slices.Equal(first.Env, []string{"A=1", "B=2"}) || !first.AttachStdout || !first.AttachStderr {
		t.Errorf("first hook created as %+v", first)
	}
	if !f.ran[1].Privileged {
		t.Errorf("the privileged hook ran unprivileged")
	}
	if err := Run(context.Background(), f, "c1", "post_start", hooks[:1]); err != nil {
		t.Errorf("a hook exiting 0: %v", err)
	}
}
