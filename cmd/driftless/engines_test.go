package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

// `driftless status APP` names the engine of an app on a named engine,
// and says nothing of it for the local engine.
func TestStatusNamesTheEngine(t *testing.T) {
	var out bytes.Buffer
	printAppStatus(&out, status.AppStatus{Name: "shop", Engine: "edge"}, time.Now())
	if !strings.Contains(out.String(), "  engine:   edge\n") {
		t.Errorf("no engine line in:\n%s", out.String())
	}
	out.Reset()
	printAppStatus(&out, status.AppStatus{Name: "shop"}, time.Now())
	if strings.Contains(out.String(), "engine:") {
		t.Errorf("an engine line for the local engine:\n%s", out.String())
	}
}
