package config

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

func TestConfigRelease(t *testing.T) {
	base := "apps:\n  - name: shop\n    repo: https://git.example.com/shop.git\n"
	for _, tc := range []struct {
		name, release string
		want          drift.ReleaseRules
		err           string
	}{
		{name: "absent: off"},
		{name: "watch only", release: "{watch: 5m}", want: drift.ReleaseRules{Watch: 5 * time.Minute, UnreadyFor: 30 * time.Second}},
		{name: "everything", release: "{watch: 2m, unreadyFor: 10s, maxRestarts: 2, check: {url: 'http://127.0.0.1:8080/healthz', expectStatus: 204, interval: 3s, failureThreshold: 4}}",
			want: drift.ReleaseRules{Watch: 2 * time.Minute, UnreadyFor: 10 * time.Second, MaxRestarts: 2,
				Check: &drift.HTTPCheck{URL: "http://127.0.0.1:8080/healthz", ExpectStatus: 204, Interval: 3 * time.Second, FailureThreshold: 4}}},
		{name: "check defaults", release: "{watch: 1m, check: {url: 'https://shop.example.com/'}}",
			want: drift.ReleaseRules{Watch: time.Minute, UnreadyFor: 30 * time.Second,
				Check: &drift.HTTPCheck{URL: "https://shop.example.com/", Interval: 10 * time.Second, FailureThreshold: 3}}},
		{name: "no watch", release: "{unreadyFor: 10s}", err: "release.watch: required"},
		{name: "bad duration", release: "{watch: soon}", err: `release.watch: "soon" is not a positive duration`},
		{name: "negative restarts", release: "{watch: 1m, maxRestarts: -1}", err: "release.maxRestarts: -1 must be 0 or more"},
		{name: "bad url", release: "{watch: 1m, check: {url: 'ftp://x/'}}", err: `release.check.url: "ftp://x/" is not an http:// or https:// URL`},
		{name: "bad status", release: "{watch: 1m, check: {url: 'http://x/', expectStatus: 42}}", err: "release.check.expectStatus: 42 is not an HTTP status"},
		{name: "unknown field", release: "{watch: 1m, rollback: false}", err: "rollback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := base
			if tc.release != "" {
				yaml += "    release: " + tc.release + "\n"
			}
			cfg, err := parseConfig([]byte(yaml), t.TempDir(), func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Apps[0].Release
			if got.Watch != tc.want.Watch || got.UnreadyFor != tc.want.UnreadyFor || got.MaxRestarts != tc.want.MaxRestarts ||
				(got.Check == nil) != (tc.want.Check == nil) || (got.Check != nil && *got.Check != *tc.want.Check) {
				t.Fatalf("release %+v (check %+v), want %+v (check %+v)", got, got.Check, tc.want, tc.want.Check)
			}
		})
	}
}
