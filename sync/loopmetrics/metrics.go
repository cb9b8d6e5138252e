// Package loopmetrics holds the sync loop's Prometheus series, all named
// driftless_*: replicas, sync and health by app, pass durations and errors,
// repairs, fetches, and a pass's time by phase.
package loopmetrics

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the loop's Prometheus series, all named driftless_*.
type Metrics struct {
	desiredReplicas *prometheus.GaugeVec
	readyReplicas   *prometheus.GaugeVec
	syncStatus      *prometheus.GaugeVec
	health          *prometheus.GaugeVec
	duration        *prometheus.HistogramVec
	Errors          *prometheus.CounterVec
	lastSuccess     *prometheus.GaugeVec
	Repairs         *prometheus.CounterVec
	FetchDuration   *prometheus.HistogramVec
	FetchErrors     *prometheus.CounterVec
	// phases splits a pass's time by what it waited on or computed, so a
	// user can see where a slow pass goes (the phase* constants).
	phases *prometheus.HistogramVec

	// exported holds, by app, the services whose replica series exist,
	// so a pass deletes only those of services that went away instead of
	// recreating every series each time.
	mu       sync.Mutex
	exported map[string][]string
}

// The phases of a pass, in order. A pass runs only those it needs: an
// engine event skips fetch and load, a pass with nothing to change skips
// apply, and build runs only for images built from the repository.
const (
	PhaseFetch   = "fetch"   // the Git fetch of the tracked ref
	PhaseLoad    = "load"    // reading and validating a new revision
	PhaseBuild   = "build"   // image builds from the repository
	PhaseObserve = "observe" // listing what runs on the engine
	PhaseCompute = "compute" // diff, policy and health: pure work
	PhaseApply   = "apply"   // carrying out the plan
	PhaseStatus  = "status"  // the new status, history and store writes
)

// ObservePhase records one phase's duration since t0.
func (m *Metrics) ObservePhase(phase string, t0 time.Time) {
	m.phases.WithLabelValues(phase).Observe(time.Since(t0).Seconds())
}

func New(reg prometheus.Registerer, queueLen func() int) (*Metrics, error) {
	if reg == nil {
		// Keep the series working without exporting them.
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		desiredReplicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "driftless_app_desired_replicas", Help: "Replicas declared per service in the enforced revision."}, []string{"app", "service"}),
		readyReplicas:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "driftless_app_ready_replicas", Help: "Ready replicas per service."}, []string{"app", "service"}),
		syncStatus:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "driftless_app_sync_status", Help: "1 for the app's current sync status (Synced, OutOfSync, Unknown)."}, []string{"app", "status"}),
		health:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "driftless_app_health", Help: "1 for the app's current health."}, []string{"app", "health"}),
		duration:        prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "driftless_reconcile_duration_seconds", Help: "Duration of reconcile passes.", Buckets: prometheus.ExponentialBuckets(0.01, 3, 10)}, []string{"app"}),
		Errors:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_reconcile_errors_total", Help: "Failed passes by kind (source, validation, engine, apply)."}, []string{"app", "kind"}),
		lastSuccess:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "driftless_last_success_timestamp_seconds", Help: "Unix time of the app's last successful pass."}, []string{"app"}),
		Repairs:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_drift_repairs_total", Help: "Changes made outside Git that were repaired."}, []string{"app"}),
		FetchDuration:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "driftless_git_fetch_duration_seconds", Help: "Duration of git fetches.", Buckets: prometheus.ExponentialBuckets(0.01, 3, 10)}, []string{"app"}),
		FetchErrors:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_git_fetch_errors_total", Help: "Failed git fetches."}, []string{"app"}),
		// From 50 µs: an idle pass's compute and status take well under a
		// millisecond, and that is what the buckets must resolve.
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "driftless_pass_phase_seconds", Help: "Time of each phase of a reconcile pass (fetch, load, build, observe, compute, apply, status).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 12)}, []string{"phase"}),
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "driftless_queue_depth", Help: "Apps waiting for a pass."}, func() float64 { return float64(queueLen()) })
	for _, c := range []prometheus.Collector{m.desiredReplicas, m.readyReplicas, m.syncStatus, m.health, m.duration, m.Errors, m.lastSuccess, m.Repairs, m.FetchDuration, m.FetchErrors, m.phases, depth} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// observe updates the per-app series from a pass's status.
func (m *Metrics) Observe(s status.AppStatus, app string, now, start time.Time) {
	m.duration.WithLabelValues(app).Observe(now.Sub(start).Seconds())
	if !s.LastSuccess.IsZero() {
		m.lastSuccess.WithLabelValues(app).Set(float64(s.LastSuccess.Unix()))
	}
	for _, st := range []drift.SyncStatus{drift.SyncSynced, drift.SyncOutOfSync, status.SyncUnknown} {
		m.syncStatus.WithLabelValues(app, string(st)).Set(boolFloat(s.Sync == st))
	}
	for _, h := range []drift.Health{drift.HealthHealthy, drift.HealthProgressing, drift.HealthDegraded, status.HealthSuspended, drift.HealthMissing, status.HealthUnknown} {
		m.health.WithLabelValues(app, string(h)).Set(boolFloat(s.Health == h))
	}
	m.observeReplicas(s, app)
}

// observeReplicas sets the app's replica series. Services come and go
// with revisions; the series of removed ones are dropped.
func (m *Metrics) observeReplicas(s status.AppStatus, app string) {
	names := make([]string, 0, len(s.Services))
	for _, svc := range s.Services {
		names = append(names, svc.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, gone := range m.exported[app] {
		if !slices.Contains(names, gone) {
			m.desiredReplicas.DeleteLabelValues(app, gone)
			m.readyReplicas.DeleteLabelValues(app, gone)
		}
	}
	for _, svc := range s.Services {
		m.desiredReplicas.WithLabelValues(app, svc.Name).Set(float64(svc.Desired))
		m.readyReplicas.WithLabelValues(app, svc.Name).Set(float64(svc.Ready))
	}
	if m.exported == nil {
		m.exported = map[string][]string{}
	}
	m.exported[app] = names
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Forget drops every series of an app that is gone (removed when its
// source no longer declares it), so /metrics does not report it forever.
func (m *Metrics) Forget(app string) {
	l := prometheus.Labels{"app": app}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.desiredReplicas, m.readyReplicas, m.syncStatus, m.health, m.duration, m.Errors, m.lastSuccess, m.Repairs, m.FetchDuration, m.FetchErrors,
	} {
		v.DeletePartialMatch(l)
	}
	m.mu.Lock()
	delete(m.exported, app)
	m.mu.Unlock()
}
