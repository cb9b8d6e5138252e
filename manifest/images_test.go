package manifest_test

import (
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
)

// A moved tag concerns the services that name it, however written.
func TestTaggedAs(t *testing.T) {
	for _, tc := range []struct {
		image, tag string
		want       bool
	}{
		{"nginx", "nginx:latest", true},
		{"nginx:1.27", "docker.io/library/nginx:1.27", true},
		{"shop/web:1", "shop/web:1", true},
		{"shop/web:1", "shop/web:2", false},
		{"registry.local:5000/web:1", "web:1", false},
		{"shop/web:1@sha256:" + strings.Repeat("a", 64), "shop/web:1", false},
		{"not a ref", "shop/web:1", false},
	} {
		if got := manifest.TaggedAs(tc.image, tc.tag); got != tc.want {
			t.Errorf("TaggedAs(%q, %q) = %v, want %v", tc.image, tc.tag, got, tc.want)
		}
	}
}
