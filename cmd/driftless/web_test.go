package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/sync/config"
)

// An exposed listen address without a token is refused before the data
// directory or the engine is touched.
func TestRunRefusesExposedListenWithoutToken(t *testing.T) {
	t.Setenv("DRIFTLESS_API_TOKEN", "")
	data := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--repo", "https://git.example.com/acme/infra.git", "--listen", "0.0.0.0:18080", "--data", data}, &out, &out)
	if code == 0 {
		t.Fatalf("exit 0; output %s", &out)
	}
	for _, want := range []string{"0.0.0.0:18080", "--api-token-file", "--insecure-no-token"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q does not mention %s", &out, want)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data directory created before the refusal: %v", err)
	}
}

func TestWebOptionsFromFlagsAndConfig(t *testing.T) {
	cfg := config.Config{Listen: "0.0.0.0:8080", TLSCertFile: "/file/cert", TLSKeyFile: "/file/key"}
	o := webOptions(cfg, runFlags{trustLoopback: true})
	if o.DistrustLoopback || o.TLSCertFile != "/file/cert" || o.TLSKeyFile != "/file/key" || o.InsecureNoToken {
		t.Errorf("config only: %+v", o)
	}
	o = webOptions(cfg, runFlags{trustLoopback: false, tlsCert: "/flag/cert", tlsKey: "/flag/key", insecureNoToken: true})
	if !o.DistrustLoopback || o.TLSCertFile != "/flag/cert" || o.TLSKeyFile != "/flag/key" || !o.InsecureNoToken {
		t.Errorf("flags win: %+v", o)
	}
	cfg.DistrustLoopback = true
	if o := webOptions(cfg, runFlags{trustLoopback: true}); !o.DistrustLoopback {
		t.Error("trustLoopback: false in the file is undone by the flag's default")
	}
}

// A busy dashboard address fails the start before the data directory and
// its database exist, so a second `run` leaves nothing behind.
func TestRunOnABusyPortCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--repo", "https://git.example.com/acme/infra.git", "--listen", busy.Addr().String(), "--data", data}, &out, &out)
	if code == 0 || !strings.Contains(out.String(), "address already in use") || !strings.Contains(out.String(), "--listen") {
		t.Fatalf("exit %d; output %s", code, &out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data directory created by a run that could not start: %v", err)
	}
}
