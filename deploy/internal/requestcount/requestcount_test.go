package requestcount

import (
	"strings"
	"testing"
)

func TestRequestOp(t *testing.T) {
	for path, want := range map[string]string{
		"GET /v1.41/_ping":                                  "GET /_ping",
		"GET /v1.41/containers/json":                        "GET /containers/json",
		"GET /v1.41/containers/abc123/json":                 "GET /containers/{id}/json",
		"POST /v1.41/containers/abc123/start":               "POST /containers/{id}/start",
		"DELETE /v1.41/containers/abc123":                   "DELETE /containers/{id}",
		"POST /v1.41/networks/create":                       "POST /networks/create",
		"GET /v1.41/images/registry.example.com/a/b:1/json": "GET /images/{id}/json",
		"DELETE /v1.41/images/registry.example.com/a/b:1":   "DELETE /images/{id}",
		"GET /v1.41/events":                                 "GET /events",
		"GET /_ping":                                        "GET /_ping",
	} {
		method, p, _ := strings.Cut(path, " ")
		if got := Op(method, p); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}
