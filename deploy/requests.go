package deploy

import "github.com/prometheus/client_golang/prometheus"

// Collector exports driftless_observation_divergence_total,
// driftless_docker_requests_total and driftless_engine_connected.
func (e *Engine) Collector() prometheus.Collector {
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "driftless_engine_connected",
		Help: "1 while the agent follows the engine's event stream with its view built, 0 while the stream is down (the engine unreachable or restarting)."},
		func() float64 {
			if e.view.IsLive() {
				return 1
			}
			return 0
		})
	cs := collectors{e.view.Collector(), connected}
	if e.requests != nil {
		cs = append(cs, e.requests)
	}
	return cs
}

// collectors exports several collectors as one.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
