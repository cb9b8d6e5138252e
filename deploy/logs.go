package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/secrets"
)

// ErrNotOwned is returned for a container or service name that none of the
// app's containers has: driftless shows logs of its own containers only.
var ErrNotOwned = errors.New("no container of the app has that name")

// DefaultLogTail is how many lines Logs returns when LogOptions.Tail is 0.
const DefaultLogTail = 100

// MaxLogTail bounds LogOptions.Tail.
const MaxLogTail = 10000

// LogOptions select the lines Logs returns.
type LogOptions struct {
	Tail   int  // last lines per container; 0 = DefaultLogTail
	Follow bool // keep streaming new lines until ctx ends or the container stops
}

// LogLine is one line of a container's output, secret values redacted.
type LogLine struct {
	// Container is the container's name, or for a Swarm app the task's
	// (<app>-<service>.<slot>).
	Container string `json:"container"`
	// Node is the Swarm node the task runs on; "" on one engine.
	Node   string `json:"node,omitempty"`
	Stream string `json:"stream"` // stdout or stderr
	Text   string `json:"text"`
}

// LogRedacted replaces a secretEnv value in log lines: the one marker the
// product uses for a hidden value.
const LogRedacted = secrets.Marker

// minLogSecretLen is the shortest value replaced in logs: a one- or
// two-character value ("1", "on") would blank out ordinary text.
const minLogSecretLen = 4

// LogRedactor replaces secret values in text.
type LogRedactor struct{ values []string }

// NewLogRedactor redacts the values of the env keys a spec marks secret:
// env is the container's KEY=VALUE list, secretKeys the spec's secretEnv.
func NewLogRedactor(env, secretKeys []string) LogRedactor {
	var r LogRedactor
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && len(v) >= minLogSecretLen && slices.Contains(secretKeys, k) && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	return r
}

// Line returns text with every secret value replaced.
func (r LogRedactor) Line(text string) string { return secrets.Scrub(text, r.values...) }

// LogTargets resolves what to show logs of: a container name, or a
// service name (all its replicas), among the app's own containers; "" =
// every container of the app. Names are sorted.
func (e *Engine) LogTargets(ctx context.Context, app, name string) ([]string, error) {
	res, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", drift.LabelApp+"="+app)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	cs := make([]drift.Container, 0, len(res.Items))
	for _, s := range res.Items {
		cs = append(cs, containerFromSummary(s))
	}
	return matchLogTargets(cs, app, name)
}

// matchLogTargets picks the app's containers named name, or of service
// name, or all of them for "".
func matchLogTargets(cs []drift.Container, app, name string) ([]string, error) {
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

// StreamLogs writes the last lines of one of app's containers to emit, then,
// with Follow, new lines as they come until ctx ends or the container
// stops. The container must carry the app's label (ErrNotOwned
// otherwise). Values of the keys its spec marks secretEnv are redacted.
// emit returning an error ends the stream with it.
func (e *Engine) StreamLogs(ctx context.Context, app, container string, opts LogOptions, emit func(LogLine) error) error {
	res, err := e.api.ContainerInspect(ctx, container, client.ContainerInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("container %q of app %s: %w", container, app, ErrNotOwned)
		}
		return fmt.Errorf("inspect %s: %w", container, err)
	}
	c := res.Container
	if c.Config == nil || c.Config.Labels[drift.LabelApp] != app {
		return fmt.Errorf("container %q of app %s: %w", container, app, ErrNotOwned)
	}
	var secretKeys []string
	if spec := parseSpecLabel(c.Config.Labels[drift.LabelSpec]); spec != nil {
		secretKeys = spec.SecretEnv
	}
	red := NewLogRedactor(c.Config.Env, secretKeys)
	tail := opts.Tail
	if tail <= 0 {
		tail = DefaultLogTail
	}
	tail = min(tail, MaxLogTail)
	rc, err := e.api.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Tail: strconv.Itoa(tail),
	})
	if err != nil {
		return fmt.Errorf("logs of %s: %w", container, err)
	}
	// Closing the stream when ctx ends unblocks the demultiplexer.
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	defer rc.Close()
	return demuxLines(rc, func(stream, text string) error {
		return emit(LogLine{Container: strings.TrimPrefix(c.Name, "/"), Stream: stream, Text: red.Line(text)})
	}, ctx.Err)
}

// DemuxLines splits a log stream as the engine multiplexes it (container,
// service and task logs alike) into lines of stdout and stderr, in the
// order they arrive, until r ends, emit fails or ctxErr reports the
// caller's context done. An error from emit closes r.
func DemuxLines(r io.ReadCloser, emit func(stream, text string) error, ctxErr func() error) error {
	return demuxLines(r, emit, ctxErr)
}

// maxLogLine bounds one line; longer ones are split.
const maxLogLine = 64 << 10

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
		sc.Buffer(make([]byte, 4096), maxLogLine)
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
