package workload

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseArgsToleratesArgumentsOfOtherImages: a compose `command:` meant
// for the real image (redis-server --appendonly yes, prometheus
// --config.file=...) does not stop the workload; its own flags still work
// wherever they are, and a bad value of its own flags is still an error.
func TestParseArgsToleratesArgumentsOfOtherImages(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args      []string
		wantArgs  []string
		wantMsg   string
		wantListn string
	}{
		{[]string{"redis-server", "--appendonly", "yes"}, []string{"redis-server", "--appendonly", "yes"}, "", ":8080"},
		{[]string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.retention.time=15d"},
			[]string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.retention.time=15d"}, "", ":8080"},
		{[]string{"worker", "--message", "hi", "--queue", "orders", "--listen=:9"}, []string{"worker", "--queue", "orders"}, "hi", ":9"},
		{[]string{"--never-ready", "serve", "--", "--message", "x"}, []string{"serve", "--message", "x"}, "", ":8080"},
		{nil, nil, "", ":8080"},
	} {
		cfg, err := ParseArgs(tc.args, noEnv)
		if err != nil {
			t.Fatalf("ParseArgs(%q): %v", tc.args, err)
		}
		if !slices.Equal(cfg.Args, tc.wantArgs) || cfg.Message != tc.wantMsg || cfg.Listen != tc.wantListn {
			t.Errorf("ParseArgs(%q) = args %q, message %q, listen %q; want %q, %q, %q",
				tc.args, cfg.Args, cfg.Message, cfg.Listen, tc.wantArgs, tc.wantMsg, tc.wantListn)
		}
	}
	if _, err := ParseArgs([]string{"--exit-after", "soon"}, noEnv); err == nil {
		t.Error("a bad value of the workload's own flag must still be an error")
	}
}

// TestExitAfterWithExitCodeZeroIsAJob: WORKLOAD_EXIT_CODE=0 makes the
// workload a one-shot job that completes; the default stays a failure.
func TestExitAfterWithExitCodeZeroIsAJob(t *testing.T) {
	env := map[string]string{"WORKLOAD_EXIT_AFTER": "10ms", "WORKLOAD_EXIT_CODE": "0", "WORKLOAD_LISTEN": "127.0.0.1:0"}
	cfg, err := ParseArgs(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if code := Run(context.Background(), cfg, &bytes.Buffer{}); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	delete(env, "WORKLOAD_EXIT_CODE")
	cfg, err = ParseArgs(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if code := Run(context.Background(), cfg, &bytes.Buffer{}); code != 1 {
		t.Errorf("exit code %d without WORKLOAD_EXIT_CODE, want 1", code)
	}
}

func TestProbe(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer ok.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		target  string
		wantErr string
	}{
		{ok.URL + "/healthz", ""},
		{ok.URL + "/other", "503"},
		{"tcp://" + strings.TrimPrefix(ok.URL, "http://"), ""},
		{"tcp://" + closed, "refused"},
		{"http://" + closed + "/", "refused"},
		{"udp://" + closed, "unsupported scheme"},
		{"localhost", "want http"},
	} {
		err := Probe(ctx, tc.target, time.Second)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Probe(%s) = %v, want healthy", tc.target, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Probe(%s) = %v, want an error with %q", tc.target, err, tc.wantErr)
		}
	}
}
