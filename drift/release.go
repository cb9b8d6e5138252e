package drift

import (
	"slices"
	"strconv"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// A release is watched after it becomes ready: real failures often come
// later (a crash under traffic, a migration run on first request). The
// loop keeps a ReleaseWatch while the window is open and hands each
// observation to WatchRelease, which says whether the release regressed.
// Drift (a replica removed or stopped by a person) is not a regression:
// only what the new replicas do on their own counts.

// Release defaults, as Argo Rollouts' analysis and compose's healthcheck
// users would expect: a replica may be unready for a short while, but not
// restart on its own.
const (
	DefaultUnreadyFor       = 30 * time.Second
	DefaultCheckInterval    = 10 * time.Second
	DefaultFailureThreshold = 3
)

// ReleaseRules say how long a release is watched and what counts as a
// regression. A zero Watch turns watching (and automatic rollback) off.
type ReleaseRules struct {
	Watch       time.Duration `json:"watch,omitempty"`
	UnreadyFor  time.Duration `json:"unreadyFor,omitempty"`
	MaxRestarts int           `json:"maxRestarts,omitempty"`
	Check       *HTTPCheck    `json:"check,omitempty"`
}

// HTTPCheck is an optional probe of the release from outside: a GET of
// URL every Interval must answer ExpectStatus (any 2xx when 0);
// FailureThreshold failures in a row are a regression.
type HTTPCheck struct {
	URL              string        `json:"url"`
	ExpectStatus     int           `json:"expectStatus,omitempty"`
	Interval         time.Duration `json:"interval,omitempty"`
	FailureThreshold int           `json:"failureThreshold,omitempty"`
}

// Due reports whether the check should run now.
func (c *HTTPCheck) Due(last, now time.Time) bool {
	return c != nil && (last.IsZero() || now.Sub(last) >= c.Interval)
}

// ReleaseWatch is one release under watch. The loop persists it, so an
// agent restarted inside the window resumes it.
type ReleaseWatch struct {
	Revision string `json:"revision"`
	// RollbackTo is the last revision that passed its window: what a
	// regression rolls back to ("" when there is none).
	RollbackTo string `json:"rollbackTo,omitempty"`
	// Services are the services the release changed; only their new
	// replicas are watched.
	Services []string  `json:"services"`
	Started  time.Time `json:"started"`
	Until    time.Time `json:"until"`
	// Restarts are the watched replicas' restart counts when the window
	// opened: restarts before the release are not its fault.
	Restarts map[string]int `json:"restarts,omitempty"`
	// UnreadySince is when each watched replica was first seen running
	// but not ready.
	UnreadySince map[string]time.Time `json:"unreadySince,omitempty"`
	// CheckFailures counts failed HTTP checks in a row; LastCheck is when
	// the check last ran.
	CheckFailures int       `json:"checkFailures,omitempty"`
	LastCheck     time.Time `json:"lastCheck,omitzero"`
	// Canary: the window of a canary step (update.canary): passing it
	// lets the rest of the rollout go on, not the release.
	Canary bool `json:"canary,omitempty"`
}

// StartWatch opens the window of a release that changed services, as
// observed right after it became ready. applyStart is when its rollout
// began: restarts of replicas it created are its own, even those made
// before the window opened (a first replica that crashes while the last
// one rolls out); older replicas' past restarts are not.
func StartWatch(revision, rollbackTo string, services []string, rules ReleaseRules, desired *manifest.App, actual Actual, applyStart, now time.Time) ReleaseWatch {
	w := ReleaseWatch{Revision: revision, RollbackTo: rollbackTo, Services: slices.Sorted(slices.Values(services)),
		Started: now, Until: now.Add(rules.Watch), Restarts: map[string]int{}}
	created := applyStart.Truncate(time.Second) // Docker's list gives whole seconds
	for _, c := range actual.Containers {
		if desired != nil && c.App == desired.Name && slices.Contains(w.Services, c.Service) && c.RestartCount > 0 && c.Created.Before(created) {
			w.Restarts[c.Name] = c.RestartCount
		}
	}
	return w
}

// Remaining is how long the window stays open after now.
func (w ReleaseWatch) Remaining(now time.Time) time.Duration { return max(w.Until.Sub(now), 0) }

// Regression is why a release is rolled back.
type Regression struct {
	Service string `json:"service,omitempty"`
	Replica string `json:"replica,omitempty"`
	// Reason reads after the revision: "web-2 crash-looped 40s after the
	// release (exit 137, 3 restarts)".
	Reason string `json:"reason"`
}

// CheckResult is one run of the release's HTTP check.
type CheckResult struct {
	OK     bool
	Detail string // "503 Service Unavailable", "connection refused"
}

// ReleaseObservation is what the loop saw in one pass inside the window.
type ReleaseObservation struct {
	Desired *manifest.App
	Actual  Actual
	Now     time.Time
	// Check is the HTTP check run in this pass, if one was due.
	Check *CheckResult
	// JobFailure describes a failed post-sync job, or "".
	JobFailure string
}

// WatchRelease judges one observation of a release under watch. It returns
// the watch to keep (replicas' unready times, the check's failures) and
// the regression found, if any. It is pure.
func WatchRelease(w ReleaseWatch, rules ReleaseRules, obs ReleaseObservation) (ReleaseWatch, *Regression) {
	next := w
	next.UnreadySince = map[string]time.Time{}
	if obs.JobFailure != "" {
		return next, &Regression{Reason: obs.JobFailure}
	}
	if reg := watchCheck(&next, rules, obs); reg != nil {
		return next, reg
	}
	if obs.Desired == nil {
		return next, nil
	}
	unreadyFor := rules.UnreadyFor
	if unreadyFor <= 0 {
		unreadyFor = DefaultUnreadyFor
	}
	for i := range obs.Actual.Containers {
		c := &obs.Actual.Containers[i]
		if c.App != obs.Desired.Name || !slices.Contains(w.Services, c.Service) {
			continue
		}
		svc := obs.Desired.Service(c.Service)
		if svc == nil || c.SpecHash != svc.Hash {
			// A replica of another spec: not the release's.
			continue
		}
		if reg := replicaRegression(c, w, rules, obs.Now); reg != nil {
			return next, reg
		}
		if c.State == StateRunning && !c.Ready {
			since, seen := w.UnreadySince[c.Name]
			if !seen {
				since = obs.Now
			}
			next.UnreadySince[c.Name] = since
			if obs.Now.Sub(since) >= unreadyFor {
				why := ""
				if c.ReadyReason != "" {
					why = ": " + c.ReadyReason
				}
				return next, &Regression{Service: c.Service, Replica: dockerName(c.Name),
					Reason: dockerName(c.Name) + " was not ready for " + unreadyFor.String() + ", " + after(w.Started, since) + " after the release" + why}
			}
		}
	}
	return next, nil
}

// replicaRegression is a new replica failing on its own: it exited with an
// error nobody sent it, Docker is restarting it, or it restarted more often
// than allowed.
func replicaRegression(c *Container, w ReleaseWatch, rules ReleaseRules, now time.Time) *Regression {
	name := dockerName(c.Name)
	killed := c.ExitCode == exitSIGKILL || c.ExitCode == exitSIGTERM
	what := ""
	switch {
	case c.State == StateRestarting || c.RestartCount-w.Restarts[c.Name] > rules.MaxRestarts:
		what = "crash-looped"
	case c.State == StateExited && c.ExitCode != 0 && !killed:
		what = "exited"
	case c.State == StateDead:
		what = "died"
	default:
		return nil
	}
	at := now
	if !c.FinishedAt.IsZero() && c.FinishedAt.After(w.Started) {
		at = c.FinishedAt
	}
	detail := count(c.RestartCount-w.Restarts[c.Name], "restart", "restarts")
	if c.ExitCode != 0 {
		// A replica Docker has already restarted lists no exit code.
		detail = "exit " + strconv.Itoa(c.ExitCode) + ", " + detail
	}
	return &Regression{Service: c.Service, Replica: name, Reason: name + " " + what + " " + after(w.Started, at) + " after the release (" + detail + ")"}
}

// watchCheck counts the HTTP check's result.
func watchCheck(w *ReleaseWatch, rules ReleaseRules, obs ReleaseObservation) *Regression {
	if obs.Check == nil || rules.Check == nil {
		return nil
	}
	w.LastCheck = obs.Now
	if obs.Check.OK {
		w.CheckFailures = 0
		return nil
	}
	w.CheckFailures++
	threshold := rules.Check.FailureThreshold
	if threshold <= 0 {
		threshold = DefaultFailureThreshold
	}
	if w.CheckFailures < threshold {
		return nil
	}
	return &Regression{Reason: "the release check " + rules.Check.URL + " failed " + count(w.CheckFailures, "time", "times") +
		" in a row (" + obs.Check.Detail + "), " + after(w.Started, obs.Now) + " after the release"}
}

// after is how long after the release start something happened, rounded
// for people.
func after(start, at time.Time) string {
	d := at.Sub(start)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}
