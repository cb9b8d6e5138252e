package readiness

import (
	"log/slog"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// A replica without a readiness section is ready when its Docker
// healthcheck (declared or the image's) says healthy; without any
// healthcheck the settle time decides.
func TestReadinessFromDockerHealth(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		readiness *manifest.Readiness
		health    string
		output    string
		uptime    time.Duration
		ready     bool
		reason    string
	}{
		{"healthy", nil, "healthy", "", time.Second, true, ""},
		{"starting", nil, "starting", "", time.Minute, false, "healthcheck starting"},
		{"unhealthy with output", nil, "unhealthy", "curl: (7) connection refused\n", time.Minute, false, "healthcheck unhealthy: curl: (7) connection refused"},
		{"no healthcheck, settled", nil, "", "", 3 * time.Second, true, ""},
		{"no healthcheck, not yet settled", nil, "", "", time.Second, false, "running for 1s; ready after 2s without restarting"},
		{"exec readiness keeps its meaning", &manifest.Readiness{Exec: &manifest.ExecProbe{Command: []string{"x"}}}, "unhealthy", "no", time.Minute, false, "healthcheck unhealthy: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil, 2*time.Second, slog.New(slog.DiscardHandler))
			defer p.Stop()
			p.Now = func() time.Time { return started.Add(tt.uptime) }
			p.Update(Info{ID: "c1", App: "shop", State: drift.StateRunning, Health: tt.health, HealthOutput: tt.output,
				Readiness: tt.readiness, StartedAt: started, Inspected: true})
			ready, reason, _, _ := p.Result("c1")
			if ready != tt.ready || reason != tt.reason {
				t.Errorf("ready %v reason %q, want %v %q", ready, reason, tt.ready, tt.reason)
			}
		})
	}
}
