package manifest

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinImageUpdateInterval bounds how often a tag is resolved: each check is
// a request to the registry.
const MinImageUpdateInterval = time.Second

// ParseImageUpdateInterval reads an imageUpdate interval: a Go duration
// ("1h") or a cron spec in the standard five-field form or a descriptor
// ("0 3 * * *", "@every 10m").
func ParseImageUpdateInterval(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("is required: a duration (\"1h\") or a cron spec (\"0 3 * * *\")")
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < MinImageUpdateInterval {
			return nil, fmt.Errorf("%q is too short: check a tag at most once a second", s)
		}
		return cron.Every(d), nil
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a duration (\"1h\") nor a cron spec (\"0 3 * * *\", \"@every 10m\")", s)
	}
	return sched, nil
}

// pullPolicyOf normalizes a native pullPolicy; ok is false when it is not
// one of the three.
func pullPolicyOf(s string) (string, bool) {
	switch s {
	case "", PullMissing:
		return PullMissing, true
	case PullAlways, PullNever:
		return s, true
	}
	return "", false
}

// validateImageHandling checks and normalizes a native service's
// pullPolicy and imageUpdate onto the service.
func validateImageHandling(r reporter, raw *rawServiceSpec, svc *Service) {
	policy, ok := pullPolicyOf(raw.PullPolicy)
	if !ok {
		r.errorf("spec.pullPolicy", "must be missing, always or never, got %q", raw.PullPolicy)
	}
	svc.PullPolicy = policy
	if raw.ImageUpdate == nil {
		return
	}
	if _, err := ParseImageUpdateInterval(raw.ImageUpdate.Interval); err != nil {
		r.errorf("spec.imageUpdate.interval", "%v", err)
		return
	}
	if policy == PullNever {
		r.errorf("spec.imageUpdate", "cannot be used with pullPolicy: never (an update must pull the new digest)")
		return
	}
	if strings.Contains(raw.Image, "@") {
		r.errorf("spec.imageUpdate", "image %q is pinned by digest and can never move: remove imageUpdate or use a tag", raw.Image)
		return
	}
	svc.ImageUpdate = &ImageUpdate{Interval: strings.TrimSpace(raw.ImageUpdate.Interval)}
}

// composePullPolicy maps compose's pull_policy onto the model. refusal is
// non-empty when the value cannot be honoured.
func composePullPolicy(s string) (policy, refusal string) {
	switch {
	case s == "" || s == "missing" || s == "if_not_present":
		return PullMissing, ""
	case s == "always":
		return PullAlways, ""
	case s == "never":
		return PullNever, ""
	case s == "build":
		return "", "\"build\" is not supported: build and tag the image, then set image:"
	case s == "daily" || s == "weekly" || strings.HasPrefix(s, "every_"):
		return "", fmt.Sprintf("%q is not supported: use x-driftless: {imageUpdate: {interval: 24h}} to follow a tag", s)
	}
	return "", fmt.Sprintf("%q is not a pull policy: use missing, always or never", s)
}
