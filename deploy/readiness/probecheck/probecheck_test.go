package probecheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTTPAndTCPReasons: the check passes on 2xx and 3xx (a redirect is
// not followed), and fails with the words a readiness reason carries: the
// URL, the status and the start of the body; a refused connection.
func TestHTTPAndTCPReasons(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			if r.Header.Get("User-Agent") != "driftless-probe" {
				http.Error(w, "user agent "+r.Header.Get("User-Agent"), http.StatusBadRequest)
			}
		case "/moved":
			http.Redirect(w, r, "/nowhere", http.StatusFound)
		case "/long":
			http.Error(w, strings.Repeat("x", 1000), http.StatusInternalServerError)
		default:
			http.Error(w, "  not yet  ", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr)
	ln.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := NewClient()
	p := atoi(t, port)
	if got := HTTPURL(host, p, "healthz"); got != srv.URL+"/healthz" {
		t.Errorf("HTTPURL without a leading slash = %q", got)
	}
	for _, tc := range []struct{ target, want string }{
		{HTTPURL(host, p, "/healthz"), ""},
		{HTTPURL(host, p, "/moved"), ""},
		{HTTPURL(host, p, "/ready"), "GET " + srv.URL + "/ready: 503 Service Unavailable: not yet"},
		{HTTPURL("127.0.0.1", closed.Port, "/"), "GET http://" + closed.String() + "/: dial tcp " + closed.String() + ": connect: connection refused"},
	} {
		err := HTTP(ctx, c, tc.target)
		if got := errText(err); got != tc.want {
			t.Errorf("HTTP(%s) = %q, want %q", tc.target, got, tc.want)
		}
	}
	if err := HTTP(ctx, c, HTTPURL(host, p, "/long")); len(errText(err)) > len("GET "+srv.URL+"/long: 500 Internal Server Error: ")+BodyLimit {
		t.Errorf("a long body is quoted whole: %d bytes", len(errText(err)))
	}
	if err := TCP(ctx, TCPAddr(host, p)); err != nil {
		t.Errorf("TCP to a listening port: %v", err)
	}
	addr := TCPAddr("127.0.0.1", closed.Port)
	if got, want := errText(TCP(ctx, addr)), "connect "+addr+": dial tcp "+addr+": connect: connection refused"; got != want {
		t.Errorf("TCP to a closed port = %q, want %q", got, want)
	}
	if got := TCPAddr("fd00::1", 80); got != "[fd00::1]:80" {
		t.Errorf("TCPAddr of an IPv6 address = %q", got)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
