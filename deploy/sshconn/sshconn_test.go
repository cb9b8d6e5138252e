package sshconn

import (
	"slices"
	"testing"
)

func TestArgs(t *testing.T) {
	got, err := Target{URL: "ssh://deploy@edge.example.com:2222", KeyFile: "/k/id", KnownHostsFile: "/k/known"}.Args()
	want := []string{"-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
		"-o", "UserKnownHostsFile=/k/known", "-i", "/k/id", "-o", "IdentitiesOnly=yes", "-p", "2222", "-l", "deploy",
		"--", "edge.example.com", "docker", "system", "dial-stdio"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Args = %q, %v\nwant %q", got, err, want)
	}
	got, err = Target{URL: "ssh://edge"}.Args()
	if err != nil || !slices.Equal(got[len(got)-5:], []string{"--", "edge", "docker", "system", "dial-stdio"}) || slices.Contains(got, "-p") || slices.Contains(got, "-l") {
		t.Errorf("Args without user, port or files = %q, %v", got, err)
	}
	for _, bad := range []string{"tcp://edge:2376", "ssh://", "ssh://edge/var/run/docker.sock", "edge"} {
		if _, err := (Target{URL: bad}).Args(); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
