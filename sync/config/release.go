package config

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

// fileRelease is an app's `release:`: how long a release is watched after
// it becomes ready, and what counts as a regression that rolls it back.
type fileRelease struct {
	Watch       string     `json:"watch"`
	UnreadyFor  string     `json:"unreadyFor"`
	MaxRestarts *int       `json:"maxRestarts"`
	Check       *fileCheck `json:"check"`
}

type fileCheck struct {
	URL              string `json:"url"`
	ExpectStatus     int    `json:"expectStatus"`
	Interval         string `json:"interval"`
	FailureThreshold int    `json:"failureThreshold"`
}

// parse reads the release settings; the zero rules (no watch) when absent.
func (fr *fileRelease) parse() (drift.ReleaseRules, []error) {
	var r drift.ReleaseRules
	if fr == nil {
		return r, nil
	}
	var errs []error
	duration := func(key, raw string, to *time.Duration) {
		if raw == "" {
			return
		}
		v, err := time.ParseDuration(raw)
		if err != nil || v <= 0 {
			errs = append(errs, fmt.Errorf("release.%s: %q is not a positive duration (like 30s or 5m)", key, raw))
			return
		}
		*to = v
	}
	duration("watch", fr.Watch, &r.Watch)
	r.UnreadyFor = drift.DefaultUnreadyFor
	duration("unreadyFor", fr.UnreadyFor, &r.UnreadyFor)
	if fr.MaxRestarts != nil {
		if *fr.MaxRestarts < 0 {
			errs = append(errs, fmt.Errorf("release.maxRestarts: %d must be 0 or more", *fr.MaxRestarts))
		}
		r.MaxRestarts = *fr.MaxRestarts
	}
	if fr.Watch == "" {
		errs = append(errs, errors.New("release.watch: required (how long to watch a release after it is ready, like 5m); without it nothing is rolled back automatically"))
	}
	if c := fr.Check; c != nil {
		check := &drift.HTTPCheck{URL: c.URL, ExpectStatus: c.ExpectStatus, Interval: drift.DefaultCheckInterval, FailureThreshold: c.FailureThreshold}
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("release.check.url: %q is not an http:// or https:// URL", c.URL))
		}
		if c.ExpectStatus != 0 && (c.ExpectStatus < 100 || c.ExpectStatus > 599) {
			errs = append(errs, fmt.Errorf("release.check.expectStatus: %d is not an HTTP status", c.ExpectStatus))
		}
		duration("check.interval", c.Interval, &check.Interval)
		if c.FailureThreshold < 0 {
			errs = append(errs, fmt.Errorf("release.check.failureThreshold: %d must be 1 or more", c.FailureThreshold))
		}
		if check.FailureThreshold <= 0 {
			check.FailureThreshold = drift.DefaultFailureThreshold
		}
		r.Check = check
	}
	return r, errs
}
