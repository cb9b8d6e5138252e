package policy_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest/internal/loadtest"
)

// The container settings a Swarm service cannot carry are refused on a
// Swarm target where the file writes them, not dropped.
func TestSwarmRefusesContainerTuning(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"links: [db]", "links are not supported for Swarm services"},
		{"volumes: ['data:/data:Z']", "SELinux labels (z, Z) on volumes are not supported for Swarm services"},
		{"tmpfs: ['/config:exec']", "Swarm services take tmpfs size and mode only"},
		{"tmpfs: ['/tmp:rw,noexec,size=64m']", "Swarm services take tmpfs size and mode only"},
		{"cpu_shares: 512", "cpu_shares, cpuset, cpu_period and cpu_quota are not supported for Swarm services"},
		{"oom_score_adj: 100", "memswap_limit, mem_swappiness, oom_score_adj and oom_kill_disable are not supported for Swarm services"},
		{"blkio_config: {weight: 300}", "blkio_config (block IO weight and limits) is not supported for Swarm services"},
		{"platform: linux/arm64", "platform is not supported for Swarm services"},
		{"entrypoint: []", "a Swarm service cannot be told to run without the image's entrypoint"},
	} {
		files := loadtest.Web(tc.line)
		files["compose.yaml"] += "  db:\n    image: shop/db:1\nvolumes: {data: {}}\n"
		got := strings.Join(loadtest.ComposeErrors(t, files, swarmOpts), "\n")
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "(target: swarm)") {
			t.Errorf("%s: got %q, want %q", tc.line, got, tc.want)
		}
	}
}

// A tmpfs written rw (what it is anyway) with a size is what a Swarm
// service can carry: accepted.
func TestSwarmTakesTmpfsRW(t *testing.T) {
	if _, err := loadtest.LoadComposeFiles(t, loadtest.Web("tmpfs: ['/tmp:rw,size=64m']"), swarmOpts); err != nil {
		t.Errorf("tmpfs rw with a size on Swarm: %v", err)
	}
}
