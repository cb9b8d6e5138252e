// Package hookrun runs a service's lifecycle hooks (compose's post_start
// and pre_stop) in a running container, as docker exec runs a command,
// one after the other, and says which one failed and how.
package hookrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/execrun"
	"github.com/driftless-dev/driftless/manifest"
)

// Timeout bounds one hook: a hook that never ends would hold its replica's
// change, and the pass, for ever.
const Timeout = 10 * time.Minute

// outputTail is how much of a failed hook's output its error quotes.
const outputTail = 512

// API is what running a hook needs of the engine.
type API = execrun.API

// Failed is a hook that ran and failed: it exited non-zero or did not
// finish within Timeout. Other errors are the engine's.
type Failed struct{ Msg string }

func (f *Failed) Error() string { return f.Msg }

// Run runs hooks in container id, in order, and stops at the first that
// fails or exits non-zero. kind names them in errors ("post_start").
func Run(ctx context.Context, api API, id, kind string, hooks []manifest.Hook) error {
	for i, h := range hooks {
		code, out, err := run(ctx, api, id, h)
		what := fmt.Sprintf("%s hook %d (%s)", kind, i+1, strings.Join(h.Command, " "))
		switch {
		case errors.Is(err, errTimeout):
			return &Failed{Msg: fmt.Sprintf("%s %v", what, err)}
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		case code != 0 && out != "":
			return &Failed{Msg: fmt.Sprintf("%s exited with status %d: %s", what, code, out)}
		case code != 0:
			return &Failed{Msg: fmt.Sprintf("%s exited with status %d", what, code)}
		}
	}
	return nil
}

var errTimeout = fmt.Errorf("did not finish within %s", Timeout)

// run runs one hook to its end: its exit code and the tail of its output.
func run(ctx context.Context, api API, id string, h manifest.Hook) (int, string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, Timeout, errTimeout)
	defer cancel()
	env := make([]string, 0, len(h.Env))
	for _, k := range slices.Sorted(maps.Keys(h.Env)) {
		env = append(env, k+"="+h.Env[k])
	}
	out := &tail{}
	code, err := execrun.Run(ctx, api, id, client.ExecCreateOptions{Cmd: h.Command, User: h.User, Privileged: h.Privileged,
		WorkingDir: h.WorkingDir, Env: env}, out)
	if err != nil {
		return 0, "", err
	}
	return code, out.String(), nil
}

// tail keeps the last outputTail bytes written to it.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - outputTail; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	return strings.Join(strings.Fields(string(bytes.ToValidUTF8(t.buf, []byte("?")))), " ")
}
