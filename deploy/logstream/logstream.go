// Package logstream owns the shape of a container's log output as driftless
// shows it: the line and option types, the redaction of secret values, the
// demultiplexing of the engine's stdout/stderr stream, and which of an
// app's containers a name selects. Both back ends (deploy, deploy/swarm)
// produce these lines and the web server and CLI consume them, so they
// live apart from the Docker applier.
package logstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/secrets"
)

// ErrNotOwned is returned for a container or service name that none of the
// app's containers has: driftless shows logs of its own containers only.
var ErrNotOwned = errors.New("no container of the app has that name")

// DefaultTail is how many lines a log request returns when Options.Tail is 0.
const DefaultTail = 100

// MaxTail bounds Options.Tail.
const MaxTail = 10000

// Options select the lines a log request returns.
type Options struct {
	Tail   int  // last lines per container; 0 = DefaultLogTail
	Follow bool // keep streaming new lines until ctx ends or the container stops
}

// Line is one line of a container's output, secret values redacted.
type Line struct {
	// Container is the container's name, or for a Swarm app the task's
	// (<app>-<service>.<slot>).
	Container string `json:"container"`
	// Node is the Swarm node the task runs on; "" on one engine.
	Node   string `json:"node,omitempty"`
	Stream string `json:"stream"` // stdout or stderr
	Text   string `json:"text"`
}

// Redacted replaces a secretEnv value in log lines: the one marker the
// product uses for a hidden value.
const Redacted = secrets.Marker

// minSecretLen is the shortest value replaced in logs: a one- or
// two-character value ("1", "on") would blank out ordinary text.
const minSecretLen = 4

// Redactor replaces secret values in text.
type Redactor struct{ values []string }

// NewRedactor redacts the values of the env keys a spec marks secret:
// env is the container's KEY=VALUE list, secretKeys the spec's secretEnv.
func NewRedactor(env, secretKeys []string) Redactor {
	var r Redactor
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && len(v) >= minSecretLen && slices.Contains(secretKeys, k) && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	return r
}

// Line returns text with every secret value replaced.
func (r Redactor) Line(text string) string { return secrets.Scrub(text, r.values...) }

// MatchTargets picks the app's containers named name, or of service
// name, or all of them for "".
func MatchTargets(cs []drift.Container, app, name string) ([]string, error) {
	var byName, byService, all []string
	for _, c := range cs {
		if c.App != app {
			continue // the label filter should make this impossible; ownership is checked again
		}
		all = append(all, c.Name)
		if c.Name == name {
			byName = append(byName, c.Name)
		}
		if c.Service == name {
			byService = append(byService, c.Name)
		}
	}
	var out []string
	switch {
	case name == "":
		out = all
	case len(byName) > 0:
		out = byName
	default:
		out = byService
	}
	if len(out) == 0 {
		if name == "" {
			return nil, fmt.Errorf("app %s has no containers: %w", app, ErrNotOwned)
		}
		slices.Sort(all)
		return nil, fmt.Errorf("%q is neither a container nor a service of app %s (its containers: %s): %w", name, app, strings.Join(all, ", "), ErrNotOwned)
	}
	slices.Sort(out)
	return out, nil
}

// DemuxLines splits a log stream as the engine multiplexes it (container,
// service and task logs alike) into lines of stdout and stderr, in the
// order they arrive, until r ends, emit fails or ctxErr reports the
// caller's context done. An error from emit closes r.
func DemuxLines(r io.ReadCloser, emit func(stream, text string) error, ctxErr func() error) error {
	return demuxLines(r, emit, ctxErr)
}

// maxLine bounds one line; longer ones are split.
const maxLine = 64 << 10

// demuxLines splits Docker's multiplexed stream into lines of stdout and
// stderr, in the order they arrive. An error from emit closes r.
func demuxLines(r io.ReadCloser, emit func(stream, text string) error, ctxErr func() error) error {
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	copyDone := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(outW, errW, r)
		outW.CloseWithError(err)
		errW.CloseWithError(err)
		copyDone <- err
	}()
	lines := make(chan [2]string)
	readDone := make(chan error, 2)
	scan := func(name string, pr *io.PipeReader) {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 4096), maxLine)
		for sc.Scan() {
			lines <- [2]string{name, sc.Text()}
		}
		err := sc.Err()
		pr.CloseWithError(err) // unblock the copier if the scanner gave up
		readDone <- err
	}
	go scan("stdout", outR)
	go scan("stderr", errR)
	var emitErr error
	for open := 2; open > 0; {
		select {
		case l := <-lines:
			if emitErr == nil {
				emitErr = emit(l[0], l[1])
				if emitErr != nil {
					// Stop the stream; keep draining so the scanners finish.
					r.Close()
					outR.CloseWithError(emitErr)
					errR.CloseWithError(emitErr)
				}
			}
		case <-readDone:
			open--
		}
	}
	copyErr := <-copyDone
	if emitErr != nil {
		return emitErr
	}
	if err := ctxErr(); err != nil {
		return err
	}
	if copyErr != nil && !errors.Is(copyErr, io.ErrClosedPipe) {
		return fmt.Errorf("reading container logs: %w", copyErr)
	}
	return nil
}
