package deploy

import "github.com/prometheus/client_golang/prometheus"

// Collector exports driftless_observation_divergence_total and
// driftless_docker_requests_total.
func (e *Engine) Collector() prometheus.Collector {
	cs := collectors{e.view.Collector()}
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
