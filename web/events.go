package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// sseHeartbeat keeps idle connections open through proxies that close
// silent streams.
const sseHeartbeat = 25 * time.Second

// startStream begins a server-sent event response: it takes one of the
// stream slots (acquireStream) and writes the headers. ok false: the
// answer was already sent.
func (s *Server) startStream(c *gin.Context) (flusher http.Flusher, release func(), ok bool) {
	flusher, ok = c.Writer.(http.Flusher)
	if !ok {
		jsonError(c, http.StatusInternalServerError, "streaming is not supported by this connection")
		return nil, nil, false
	}
	release, ok = s.acquireStream(c)
	if !ok {
		return nil, nil, false
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	return flusher, release, true
}

// events streams "status" events while the client stays connected; pages
// use them to refetch what changed.
func (s *Server) events(c *gin.Context) {
	flusher, release, ok := s.startStream(c)
	if !ok {
		return
	}
	defer release()
	ch, unsubscribe := s.opts.Agent.Subscribe()
	defer unsubscribe()
	// Tell the browser how long to wait before reconnecting, and get the
	// headers out now so EventSource reports the stream as open.
	fmt.Fprint(c.Writer, "retry: 3000\n\n")
	flusher.Flush()

	heartbeat := time.NewTicker(sseHeartbeat)
	defer heartbeat.Stop()
	ctx := c.Request.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprint(c.Writer, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			data, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(c.Writer, "event: status\ndata: %s\n\n", data); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// acquireStream takes one of the stream slots for the request's client, or
// answers when a cap is reached: 429 when this client holds its share,
// 503 when the agent's ceiling is reached; both say when to retry.
func (s *Server) acquireStream(c *gin.Context) (release func(), ok bool) {
	release, refused := s.streams.acquire(clientOf(c.Request))
	switch refused {
	case streamClientFull:
		c.Header("Retry-After", "30")
		jsonError(c, http.StatusTooManyRequests, fmt.Sprintf("too many open live streams from your address (at most %d per client): close other dashboard tabs or followed logs, or retry later", s.streams.perClient))
		return nil, false
	case streamAllFull:
		c.Header("Retry-After", "30")
		jsonError(c, http.StatusServiceUnavailable, fmt.Sprintf("too many open event streams (at most %d); close other dashboard tabs or retry later", s.opts.MaxEventStreams))
		return nil, false
	}
	return release, true
}
