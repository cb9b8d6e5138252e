package native

import (
	"strings"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// pullPolicyOf normalizes a native pullPolicy; ok is false when it is not
// one of the three.
func pullPolicyOf(s string) (string, bool) {
	switch s {
	case "", manifest.PullMissing:
		return manifest.PullMissing, true
	case manifest.PullAlways, manifest.PullNever:
		return s, true
	}
	return "", false
}

// validateImageHandling checks and normalizes a native service's
// pullPolicy and imageUpdate onto the service.
func validateImageHandling(r yamlpos.Reporter, raw *rawServiceSpec, svc *manifest.Service) {
	policy, ok := pullPolicyOf(raw.PullPolicy)
	if !ok {
		r.Errorf("spec.pullPolicy", "must be missing, always or never, got %q", raw.PullPolicy)
	}
	svc.PullPolicy = policy
	if raw.ImageUpdate == nil {
		return
	}
	if _, err := manifest.ParseImageUpdateInterval(raw.ImageUpdate.Interval); err != nil {
		r.Errorf("spec.imageUpdate.interval", "%v", err)
		return
	}
	if policy == manifest.PullNever {
		r.Errorf("spec.imageUpdate", "cannot be used with pullPolicy: never (an update must pull the new digest)")
		return
	}
	if strings.Contains(raw.Image, "@") {
		r.Errorf("spec.imageUpdate", "image %q is pinned by digest and can never move: remove imageUpdate or use a tag", raw.Image)
		return
	}
	svc.ImageUpdate = &manifest.ImageUpdate{Interval: strings.TrimSpace(raw.ImageUpdate.Interval)}
}
