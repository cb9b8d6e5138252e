package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProbeCommandRunsTheAgentsCheck: `driftless probe`, which the agent
// execs in the probe container of a remote engine, exits 0 when the check
// passes and 1 with the check's reason on stdout when not; it is hidden
// from the help and from completion, as probe-idle is.
func TestProbeCommandRunsTheAgentsCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"probe", "http", srv.URL + "/healthz"}, 0, ""},
		{[]string{"probe", "--timeout", "2s", "http", srv.URL + "/ready"}, 1, "GET " + srv.URL + "/ready: 503 Service Unavailable: warming up\n"},
		{[]string{"probe", "tcp", strings.TrimPrefix(srv.URL, "http://")}, 0, ""},
		{[]string{"probe", "tcp", closed}, 1, "connect " + closed + ": dial tcp " + closed + ": connect: connection refused\n"},
		{[]string{"probe", "udp", closed}, 2, "unknown probe \"udp\": want http or tcp\n"},
	} {
		code, out, errb := run(t, tc.args...)
		if code != tc.code || out != tc.out {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q", tc.args, code, out, errb, tc.code, tc.out)
		}
	}
	if code, _, errb := run(t, "probe", "http"); code != 2 || !strings.Contains(errb, "accepts 2 arg(s)") {
		t.Errorf("probe with one argument: exit %d, stderr %q", code, errb)
	}
	// probe-idle waits until its context ends (SIGTERM, in main).
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- dispatch(ctx, []string{"probe-idle"}, io.Discard, io.Discard) }()
	select {
	case code := <-done:
		t.Fatalf("probe-idle returned %d before being stopped", code)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("probe-idle stopped: exit %d, want 0", code)
	}
	_, help, _ := run(t, "--help")
	_, completion, _ := run(t, "__complete", "")
	for _, name := range []string{"probe", "probe-idle"} {
		if strings.Contains(help, "\n  "+name+" ") || strings.Contains(completion, name+"\t") {
			t.Errorf("the hidden %s command is offered:\n%s\n%s", name, help, completion)
		}
	}
}
