package manifest

import (
	"fmt"
	"strings"
	"time"

	"github.com/distribution/reference"

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

// TaggedAs reports whether a service's image ref runs whatever the tag
// ref names, so that moving that tag changes what it should run: the same
// repository and tag once both are normalized (nginx is
// docker.io/library/nginx:latest). A ref pinned to a digest runs that
// digest whatever its tag names.
func TaggedAs(image, tag string) bool {
	a, errA := reference.ParseNormalizedNamed(image)
	b, errB := reference.ParseNormalizedNamed(tag)
	if errA != nil || errB != nil {
		return false
	}
	if _, pinned := a.(reference.Digested); pinned {
		return false
	}
	return reference.TagNameOnly(a).String() == reference.TagNameOnly(b).String()
}
