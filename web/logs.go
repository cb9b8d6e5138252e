package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/deploy/logstream"
)

// LogSource reads container logs. *deploy.Engine satisfies it.
type LogSource interface {
	// LogTargets lists the app's containers named name or of service name
	// (logstream.ErrNotOwned when none).
	LogTargets(ctx context.Context, app, name string) ([]string, error)
	StreamLogs(ctx context.Context, app, container string, opts logstream.Options, emit func(logstream.Line) error) error
}

// logRequest is a validated logs query.
type logRequest struct {
	app, container string
	opts           logstream.Options
}

// parseLogRequest reads ?container=, ?tail= and ?follow= and checks the
// container is the app's own. It answers the error itself and returns
// false.
func (s *Server) parseLogRequest(c *gin.Context, app, container string, answer func(int, string)) (logRequest, bool) {
	if s.opts.Logs == nil {
		answer(http.StatusNotImplemented, "this agent does not serve container logs (no engine attached to the web server)")
		return logRequest{}, false
	}
	r := logRequest{app: app, container: container, opts: logstream.Options{Tail: logstream.DefaultTail}}
	if container == "" {
		answer(http.StatusBadRequest, "name the container: ?container=NAME (one of the app's containers, as on its page)")
		return r, false
	}
	if v := c.Query("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > logstream.MaxTail {
			answer(http.StatusBadRequest, fmt.Sprintf("tail must be an integer from 1 to %d, not %q", logstream.MaxTail, v))
			return r, false
		}
		r.opts.Tail = n
	}
	switch v := c.Query("follow"); v {
	case "", "0", "false":
	case "1", "true":
		r.opts.Follow = true
	default:
		answer(http.StatusBadRequest, fmt.Sprintf("follow must be 1 or 0, not %q", v))
		return r, false
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 10*time.Second)
	defer cancel()
	targets, err := s.opts.Logs.LogTargets(ctx, app, container)
	if errors.Is(err, logstream.ErrNotOwned) || (err == nil && !slices.Contains(targets, container)) {
		// A service name resolves to its replicas; the API wants one
		// container, and never one that is not the app's.
		answer(http.StatusNotFound, fmt.Sprintf("%q is not a container of app %s; driftless shows logs of its own containers only", container, app))
		return r, false
	}
	if err != nil {
		answer(http.StatusBadGateway, "listing the app's containers failed: "+err.Error()+"; is the Docker engine up?")
		return r, false
	}
	return r, true
}

// logsJSON is the answer of a logs request without follow.
type logsJSON struct {
	Container string           `json:"container"`
	Lines     []logstream.Line `json:"lines"`
}

// readLogs returns the last lines of a container.
func (s *Server) readLogs(ctx context.Context, r logRequest) ([]logstream.Line, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lines := []logstream.Line{}
	err := s.opts.Logs.StreamLogs(ctx, r.app, r.container, logstream.Options{Tail: r.opts.Tail}, func(l logstream.Line) error {
		lines = append(lines, l)
		return nil
	})
	return lines, err
}

// apiLogs serves GET /api/v1/apps/:app/logs?container=NAME&tail=N&follow=1.
func (s *Server) apiLogs(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	r, ok := s.parseLogRequest(c, st.Name, c.Query("container"), func(code int, msg string) { jsonError(c, code, msg) })
	if !ok {
		return
	}
	if r.opts.Follow {
		s.followLogs(c, r)
		return
	}
	lines, err := s.readLogs(c.Request.Context(), r)
	if err != nil {
		s.logError(c, err)
		return
	}
	c.JSON(http.StatusOK, logsJSON{Container: r.container, Lines: lines})
}

func (s *Server) logError(c *gin.Context, err error) {
	if errors.Is(err, logstream.ErrNotOwned) {
		jsonError(c, http.StatusNotFound, err.Error())
		return
	}
	jsonError(c, http.StatusBadGateway, "reading the logs failed: "+err.Error())
}

// followLogs streams lines as server-sent events ("line", then "end" when
// the container stops) until the client goes away: the request's context
// bounds the engine's stream.
func (s *Server) followLogs(c *gin.Context, r logRequest) {
	flusher, release, ok := s.startStream(c)
	if !ok {
		return
	}
	defer release()

	var mu sync.Mutex // the heartbeat and the stream share the writer
	write := func(event string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(c.Writer, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	}
	mu.Lock()
	// No automatic reconnect after the end: it would replay the tail.
	fmt.Fprint(c.Writer, "retry: 3000\n\n")
	flusher.Flush()
	mu.Unlock()

	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	go func() {
		t := time.NewTicker(sseHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				_, err := fmt.Fprint(c.Writer, ": keep-alive\n\n")
				if err == nil {
					flusher.Flush()
				}
				mu.Unlock()
				if err != nil {
					cancel()
					return
				}
			}
		}
	}()
	err := s.opts.Logs.StreamLogs(ctx, r.app, r.container, r.opts, func(l logstream.Line) error { return write("line", l) })
	if ctx.Err() != nil {
		return // the client left
	}
	reason := "the container stopped"
	if err != nil {
		reason = "reading the logs failed: " + err.Error()
	}
	_ = write("end", map[string]string{"reason": reason})
}

type logsData struct {
	pageHeader
	App       string
	Container string
	Tail      int
	Lines     []logstream.Line
	Error     string
	FollowURL string
}

// logsPage shows the last lines of one container; app.js follows it live.
func (s *Server) logsPage(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	name := c.Param("container")
	r, ok := s.parseLogRequest(c, st.Name, name, func(code int, msg string) { s.errorPage(c, code, "No logs", msg) })
	if !ok {
		return
	}
	d := logsData{pageHeader: s.header(c, name+" · logs"), App: st.Name, Container: name, Tail: r.opts.Tail}
	lines, err := s.readLogs(c.Request.Context(), r)
	if err != nil {
		d.Error = err.Error()
	}
	d.Lines = lines
	d.FollowURL = "/api/v1/apps/" + url.PathEscape(st.Name) + "/logs?" + url.Values{
		"container": {name}, "tail": {strconv.Itoa(r.opts.Tail)}, "follow": {"1"},
	}.Encode()
	s.render(c, http.StatusOK, "logs", d)
}
