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
		minReady  *time.Duration
		health    string
		output    string
		uptime    time.Duration
		ready     bool
		reason    string
	}{
		{"healthy", nil, nil, "healthy", "", time.Second, true, ""},
		{"starting", nil, nil, "starting", "", time.Minute, false, "healthcheck starting"},
		{"unhealthy with output", nil, nil, "unhealthy", "curl: (7) connection refused\n", time.Minute, false, "healthcheck unhealthy: curl: (7) connection refused"},
		{"no healthcheck, settled", nil, nil, "", "", 3 * time.Second, true, ""},
		{"no healthcheck, not yet settled", nil, nil, "", "", time.Second, false, "running for 1s; ready after 2s without restarting"},
		{"exec readiness keeps its meaning", &manifest.Readiness{Exec: &manifest.ExecProbe{Command: []string{"x"}}}, nil, "unhealthy", "no", time.Minute, false, "healthcheck unhealthy: no"},
		// minReady replaces the settle time, and holds back a probe's pass.
		{"minReady 0: ready once running", nil, dur(0), "", "", 0, true, ""},
		{"minReady longer than the settle time", nil, dur(5 * time.Second), "", "", 3 * time.Second, false, "running for 3s; ready after 5s without restarting"},
		{"minReady run", nil, dur(5 * time.Second), "", "", 5 * time.Second, true, ""},
		{"healthy, minReady not yet run", nil, dur(5 * time.Second), "healthy", "", time.Second, false, "running for 1s; ready after 5s without restarting"},
		{"healthy, minReady run", nil, dur(5 * time.Second), "healthy", "", 6 * time.Second, true, ""},
		{"unhealthy: minReady does not help", nil, dur(5 * time.Second), "unhealthy", "", time.Minute, false, "healthcheck unhealthy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil, 2*time.Second, slog.New(slog.DiscardHandler))
			defer p.Stop()
			p.Now = func() time.Time { return started.Add(tt.uptime) }
			p.Update(Info{ID: "c1", App: "shop", State: drift.StateRunning, Health: tt.health, HealthOutput: tt.output,
				Readiness: tt.readiness, MinReady: tt.minReady, StartedAt: started, Inspected: true})
			ready, reason, _, _ := p.Result("c1")
			if ready != tt.ready || reason != tt.reason {
				t.Errorf("ready %v reason %q, want %v %q", ready, reason, tt.ready, tt.reason)
			}
		})
	}
}

// Only a running replica judged by the settle time has a known moment at
// which it becomes ready; for the others a readiness wait keeps looking.
func TestSettleLeft(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		info      Info
		uptime    time.Duration
		left      time.Duration
		ok        bool
		unknownID bool
	}{
		{"settling", Info{State: drift.StateRunning, Inspected: true}, 500 * time.Millisecond, 1500 * time.Millisecond, true, false},
		{"settled", Info{State: drift.StateRunning, Inspected: true}, 3 * time.Second, 0, true, false},
		{"settling for minReady", Info{State: drift.StateRunning, Inspected: true, MinReady: dur(10 * time.Second)}, 3 * time.Second, 7 * time.Second, true, false},
		{"start time not known", Info{State: drift.StateRunning}, time.Second, 0, false, false},
		{"healthcheck", Info{State: drift.StateRunning, Inspected: true, Health: "starting"}, time.Second, 0, false, false},
		{"httpGet", Info{State: drift.StateRunning, Inspected: true, Readiness: &manifest.Readiness{HTTPGet: &manifest.HTTPGetProbe{Port: 8080}}}, time.Second, 0, false, false},
		{"exited", Info{State: drift.StateExited, Inspected: true}, time.Second, 0, false, false},
		{"unknown", Info{}, time.Second, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(nil, 2*time.Second, slog.New(slog.DiscardHandler))
			defer p.Stop()
			p.Now = func() time.Time { return started.Add(tt.uptime) }
			if !tt.unknownID {
				info := tt.info
				info.ID, info.App, info.StartedAt = "c1", "shop", started
				p.Update(info)
			}
			left, ok := p.SettleLeft("c1")
			if left != tt.left || ok != tt.ok {
				t.Errorf("SettleLeft = %s, %v; want %s, %v", left, ok, tt.left, tt.ok)
			}
		})
	}
}

func dur(d time.Duration) *time.Duration { return &d }
