package workload

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestEnvSteersBehaviour(t *testing.T) {
	env := map[string]string{"WORKLOAD_NEVER_READY": "true", "WORKLOAD_EXIT_AFTER": "3s", "MESSAGE": "hi"}
	cfg, err := ParseArgs(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.NeverReady || cfg.ExitAfter != 3*time.Second || cfg.Message != "hi" || cfg.Listen != ":8080" {
		t.Fatalf("env not applied: %+v", cfg)
	}
	cfg, err = ParseArgs([]string{"--never-ready=false", "--listen", ":9"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NeverReady || cfg.Listen != ":9" {
		t.Fatalf("flags must override env: %+v", cfg)
	}
}

func TestCrashExitsWithCodeOne(t *testing.T) {
	var out bytes.Buffer
	if code := Run(context.Background(), Config{Crash: true}, &out); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
}

func TestHealthzFollowsReadiness(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want int
	}{
		{"ready", Config{}, http.StatusOK},
		{"never ready", Config{NeverReady: true}, http.StatusServiceUnavailable},
		{"warming up", Config{ReadyAfter: time.Hour}, http.StatusServiceUnavailable},
		{"broken after a while", Config{UnreadyAfter: time.Nanosecond}, http.StatusServiceUnavailable},
		{"not broken yet", Config{UnreadyAfter: time.Hour}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			tc.cfg.Listen = addr
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int)
			go func() { done <- Run(ctx, tc.cfg, &bytes.Buffer{}) }()
			defer func() { cancel(); <-done }()
			var resp *http.Response
			var err error
			for i := 0; i < 100; i++ {
				resp, err = http.Get(fmt.Sprintf("http://%s/healthz", addr))
				if err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
