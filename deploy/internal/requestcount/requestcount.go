// Package requestcount counts the engine's Docker API requests by
// operation, for driftless_docker_requests_total.
package requestcount

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Hook counts every request to the Docker API by operation, for
// driftless_docker_requests_total: what the agent costs the engine.
func Hook(count *prometheus.CounterVec) func(*http.Request) error {
	return func(req *http.Request) error {
		count.WithLabelValues(Op(req.Method, req.URL.Path)).Inc()
		return nil
	}
}

// NewCounter is driftless_docker_requests_total, by operation.
func NewCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "driftless_docker_requests_total",
		Help: "Requests to the Docker API, by operation (method and path with object names replaced by {id})."}, []string{"op"})
}

// dockerVerbs are path segments that name an operation, not an object.
var dockerVerbs = map[string]bool{"json": true, "create": true, "prune": true, "load": true, "import": true, "search": true, "pull": true}

// Op is "GET /containers/json", "POST /containers/{id}/start",
// "DELETE /networks/{id}": the version prefix dropped and object names
// (which may contain slashes, as image references do) replaced, so the
// label's values stay few.
func Op(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 0 && strings.HasPrefix(parts[0], "v1.") {
		parts = parts[1:]
	}
	switch {
	case len(parts) == 0:
		return method + " /"
	case len(parts) == 1:
		return method + " /" + parts[0]
	case len(parts) == 2 && dockerVerbs[parts[1]]:
		return method + " /" + parts[0] + "/" + parts[1]
	case len(parts) == 2 || parts[0] == "images" && !dockerVerbs[parts[len(parts)-1]] && method == http.MethodDelete:
		return method + " /" + parts[0] + "/{id}"
	}
	return method + " /" + parts[0] + "/{id}/" + parts[len(parts)-1]
}
