package main

import (
	"context"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/deploy/logstream"
)

// fakeLogs emits the given lines for any target.
type fakeLogs []logstream.Line

func (f fakeLogs) StreamLogs(_ context.Context, _, _ string, _ logstream.Options, emit func(logstream.Line) error) error {
	for _, l := range f {
		if err := emit(l); err != nil {
			return err
		}
	}
	return nil
}

func TestPrintLogsNamesSwarmTasks(t *testing.T) {
	tests := []struct {
		name    string
		lines   fakeLogs
		targets []string
		stdout  string
		stderr  string
	}{
		{"one container: bare lines", fakeLogs{{Container: "shop-web-1", Stream: "stdout", Text: "up"}}, []string{"shop-web-1"},
			"up\n", ""},
		{"several containers: named", fakeLogs{{Container: "shop-web-1", Stream: "stdout", Text: "up"}}, []string{"shop-web-1", "shop-web-2"},
			"shop-web-1 | up\nshop-web-1 | up\n", ""},
		// A Swarm service is one target, but its lines come from tasks on
		// several nodes: each is named like docker service logs does.
		{"Swarm tasks: task@node", fakeLogs{
			{Container: "shop-web.1", Node: "node-1", Stream: "stdout", Text: "up"},
			{Container: "shop-web.2", Node: "node-2", Stream: "stderr", Text: "oops"},
		}, []string{"shop-web"}, "shop-web.1@node-1 | up\n", "shop-web.2@node-2 | oops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if err := printLogs(context.Background(), tt.lines, "shop", tt.targets, logstream.Options{}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}
