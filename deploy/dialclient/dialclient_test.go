package dialclient

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"
)

// TestReadsReuseConnectionsChangesAndPingsDoNot: over an expensive dial,
// lists and inspects share a kept-alive connection, while every start and
// every ping dials anew, so a daemon that closed its listener (shutting
// down) refuses them.
func TestReadsReuseConnectionsChangesAndPingsDoNot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/exec"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Id":"e1"}`))
		case strings.HasSuffix(r.URL.Path, "/containers/json"):
			_, _ = w.Write([]byte("[]"))
		case strings.HasSuffix(r.URL.Path, "/json"):
			_, _ = w.Write([]byte(`{"Id":"c1","State":{"Running":true}}`))
		case strings.HasSuffix(r.URL.Path, "/start"):
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var dials atomic.Int32
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
	c, err := New(dial, "ssh://host", func(*http.Request) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	for range 5 {
		if _, err := c.ContainerList(ctx, client.ContainerListOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerInspect(ctx, "c1", client.ContainerInspectOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecCreate(ctx, "c1", client.ExecCreateOptions{Cmd: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("10 reads and 5 exec creates (and the version check) dialed %d times, want 1", n)
	}

	dials.Store(0)
	for range 3 {
		if _, err := c.ContainerStart(ctx, "c1", client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Ping(ctx, client.PingOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The changes' client checks the version once, over a connection of
	// its own too.
	if n := dials.Load(); n < 6 {
		t.Errorf("3 starts and 3 pings dialed %d times, want one each", n)
	}
	if got := c.DaemonHost(); got != "ssh://host" {
		t.Errorf("DaemonHost = %q", got)
	}
}
