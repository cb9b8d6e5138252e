package main

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// run runs driftless with args and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// publicCommands are the names `driftless --help` lists, cobra's
// completion command included.
func publicCommands() []string {
	var names []string
	for _, c := range commands() {
		if !c.Hidden {
			names = append(names, c.Name())
		}
	}
	return append(names, "completion")
}

func TestHelpExitsZeroOnEveryCommand(t *testing.T) {
	for _, name := range append(publicCommands(), "") {
		for _, help := range []string{"--help", "-h"} {
			args := []string{help}
			if name != "" {
				args = []string{name, help}
			}
			code, out, errb := run(t, args...)
			if code != 0 || errb != "" || !strings.Contains(out, "Usage:\n  "+strings.TrimSpace("driftless "+name)) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out, errb)
			}
		}
	}
	for _, args := range [][]string{{}, {"help"}, {"help", "logs"}} {
		if code, out, _ := run(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
}

func TestUnknownFlagExitsTwoWithTheUsage(t *testing.T) {
	for _, name := range publicCommands() {
		code, out, errb := run(t, name, "--no-such-flag")
		if code != 2 || out != "" || !strings.Contains(errb, "unknown flag: --no-such-flag") ||
			!strings.Contains(errb, "Usage:\n  driftless "+name) {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", name, code, out, errb)
		}
	}
}

func TestUnknownCommandExitsTwoWithTheUsage(t *testing.T) {
	code, out, errb := run(t, "deploy")
	if code != 2 || out != "" || !strings.Contains(errb, `unknown command "deploy"`) || !strings.Contains(errb, "Available Commands:") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
	}
	_, out, _ = run(t, "--help")
	for _, name := range publicCommands() {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("--help does not list %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "workload") {
		t.Errorf("--help lists the hidden workload command:\n%s", out)
	}
}

// pflag would read -output=json as -o "utput=json"; a long flag with one
// dash is refused with its two-dash spelling instead.
func TestSingleDashLongFlagsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "-follow", "shop"}, "-follow: long flags take two dashes: --follow"},
		{[]string{"validate", "../../examples/shop", "-output=json"}, "-output=json: long flags take two dashes: --output"},
		{[]string{"diff", "-app", "shop"}, "--app"},
	} {
		code, out, errb := run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errb, tc.want) || !strings.Contains(errb, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming %q", tc.args, code, out, errb, tc.want)
		}
	}
}

// Flags may come before or after the path, in long or short form, the way
// people type them (`driftless validate examples/shop --app shop`).
func TestFlagsMayFollowThePath(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "../../examples/shop", "--app", "shopx", "--output", "json"},
		{"validate", "--app=shopx", "../../examples/shop", "-o", "json"},
		{"validate", "-ojson", "../../examples/shop", "--app", "shopx"},
	} {
		code, out, errb := run(t, args...)
		var res struct {
			App   string `json:"app"`
			Valid bool   `json:"valid"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.App != "shopx" || !res.Valid {
			t.Errorf("%v: exit %d, %+v (%v), stderr %q", args, code, res, err, errb)
		}
	}
}

// The short flags docker, argocd and flux users type.
func TestShorthands(t *testing.T) {
	for _, tc := range []struct{ cmd, short, long string }{
		{"logs", "f", "follow"},
		{"logs", "n", "tail"},
		{"validate", "o", "output"},
		{"diff", "o", "output"},
		{"status", "o", "output"},
		{"history", "o", "output"},
		{"prune-images", "o", "output"},
	} {
		cmds := commands()
		i := slices.IndexFunc(cmds, func(c *cobra.Command) bool { return c.Name() == tc.cmd })
		if i < 0 {
			t.Fatalf("no command %s", tc.cmd)
		}
		if f := cmds[i].Flags().ShorthandLookup(tc.short); f == nil || f.Name != tc.long {
			t.Errorf("%s -%s: %v, want --%s", tc.cmd, tc.short, f, tc.long)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errb := run(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "driftless") || errb != "" {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errb)
		}
	}
	// The scripts ask the binary for candidates: these are what they offer.
	_, out, _ := run(t, "__complete", "")
	for _, name := range publicCommands() {
		if !strings.Contains(out, "\n"+name+"\t") && !strings.HasPrefix(out, name+"\t") {
			t.Errorf("completion does not offer %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "workload") {
		t.Errorf("completion offers the hidden workload command:\n%s", out)
	}
	if _, out, _ := run(t, "__complete", "logs", "--f"); !strings.Contains(out, "--follow") {
		t.Errorf("completion of logs --f: %q", out)
	}
}

func TestVersionText(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/driftless-dev/driftless", Version: "v0.0.0-20261203101010-17304a7aaf21+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "17304a7aaf21b386f60d99bdb3e93f322dab4080"},
			{Key: "vcs.time", Value: "2026-12-03T10:10:10Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := versionText("dev", info)
	for _, want := range []string{
		"driftless v0.0.0-20261203101010-17304a7aaf21+dirty\n",
		"revision:  17304a7aaf21 (modified)\n",
		"committed: 2026-12-03T10:10:10Z\n",
		"go:        go1.26.0 ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("versionText: %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "17304a7aaf21b") {
		t.Errorf("the revision is shown in full: %q", got)
	}
	// A release set with -ldflags wins; a build without VCS has no revision.
	info.Settings = info.Settings[:0]
	info.Main.Version = "(devel)"
	if got := versionText("v1.2.0", info); !strings.HasPrefix(got, "driftless v1.2.0\n") || strings.Contains(got, "revision") {
		t.Errorf("release build: %q", got)
	}
	if got := versionText("dev", info); !strings.HasPrefix(got, "driftless dev\n") {
		t.Errorf("(devel) build: %q", got)
	}
	if got := versionText("dev", nil); got != "driftless dev\n" {
		t.Errorf("no build info: %q", got)
	}
}

func TestVersionCommandAndFlagAgree(t *testing.T) {
	code, cmdOut, _ := run(t, "version")
	flagCode, flagOut, _ := run(t, "--version")
	if code != 0 || flagCode != 0 || cmdOut != flagOut || !strings.HasPrefix(cmdOut, "driftless ") {
		t.Fatalf("version: exit %d %q; --version: exit %d %q", code, cmdOut, flagCode, flagOut)
	}
}

// Workload images run `driftless workload ...` with the workload's own
// flags, which take one dash: they reach it exactly as given.
func TestWorkloadGetsItsArgumentsAsGiven(t *testing.T) {
	if code, out, errb := run(t, "workload", "-crash", "-message", "hi"); code != 1 || !strings.Contains(out, "crashing at start") {
		t.Errorf("workload -crash: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if code, _, errb := run(t, "workload", "probe"); code != 2 || !strings.Contains(errb, "usage: driftless workload probe") {
		t.Errorf("workload probe: exit %d, stderr %q", code, errb)
	}
}
