package execrun

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// slowExit answers as an engine that records the exit code a few inspects
// after the output stream ended, or never (running stays true).
type slowExit struct {
	out       map[stdcopy.StdType]string
	runningAt int // inspects that still say running
	inspects  int
	asked     client.ExecCreateOptions
}

func (f *slowExit) ExecCreate(_ context.Context, _ string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	f.asked = o
	return client.ExecCreateResult{ID: "e1"}, nil
}

func (f *slowExit) ExecAttach(context.Context, string, client.ExecAttachOptions) (client.ExecAttachResult, error) {
	server, conn := net.Pipe()
	go func() {
		for _, std := range []stdcopy.StdType{stdcopy.Stdout, stdcopy.Stderr} {
			frame := binary.BigEndian.AppendUint32([]byte{byte(std), 0, 0, 0}, uint32(len(f.out[std])))
			_, _ = server.Write(append(frame, f.out[std]...))
		}
		server.Close()
	}()
	return client.ExecAttachResult{HijackedResponse: client.NewHijackedResponse(conn, "")}, nil
}

func (f *slowExit) ExecInspect(context.Context, string, client.ExecInspectOptions) (client.ExecInspectResult, error) {
	f.inspects++
	return client.ExecInspectResult{ID: "e1", Running: f.inspects <= f.runningAt, ExitCode: 7}, nil
}

// Both streams reach the writer, and the exit code is the one recorded
// once the engine says the process is no longer running.
func TestRunWaitsForTheExitCode(t *testing.T) {
	f := &slowExit{out: map[stdcopy.StdType]string{stdcopy.Stdout: "out ", stdcopy.Stderr: "err"}, runningAt: 3}
	var out strings.Builder
	code, err := Run(context.Background(), f, "c1", client.ExecCreateOptions{Cmd: []string{"check"}}, &out)
	if err != nil || code != 7 || out.String() != "out err" || f.inspects != 4 {
		t.Errorf("code %d, err %v, output %q after %d inspects; want 7, nil, %q after 4", code, err, out.String(), f.inspects, "out err")
	}
	if !f.asked.AttachStdout || !f.asked.AttachStderr {
		t.Errorf("created as %+v: want both streams attached", f.asked)
	}
}

// A process whose exit is never recorded ends with the context, and the
// error is the context's cause, for the caller to word.
func TestRunEndsWithTheContext(t *testing.T) {
	f := &slowExit{runningAt: 1 << 30}
	cause := errors.New("hook timed out")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	if _, err := Run(ctx, f, "c1", client.ExecCreateOptions{Cmd: []string{"sleep"}}, &strings.Builder{}); !errors.Is(err, cause) {
		t.Errorf("error %v, want the context's cause", err)
	}
}
