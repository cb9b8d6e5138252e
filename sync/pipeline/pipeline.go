// Package pipeline is the one reconcile pipeline the agent's pass
// (sync/loop) and the one-shot CLI (driftless diff and apply) share: what
// a back end must offer them (Backend, with explicit no-op
// implementations rather than type assertions), what an app's settings
// are (Settings, from driftless.yaml or from flags), and how the differ's
// input is prepared from those settings, the desired app and what runs
// (Prepare). Having it once means that adopting a compose project or
// rendering Swarm specs cannot be remembered by one front end and
// forgotten by the other, and that the pure differ receives data, never
// a back end's callback.
package pipeline

import (
	"cmp"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
)

// Settings are what an app's configuration says about how it is planned:
// an app in driftless.yaml (FromConfig) or the flags of a one-shot
// command say the same things in the same words.
type Settings struct {
	// App is the app's name on its engine: its objects' label.
	App string
	// Prune removes owned objects no longer declared.
	Prune bool
	// SelfHeal: changes made outside Git are reverted (Assess calls a
	// service waiting only on them Progressing, not Degraded).
	SelfHeal bool
	// Adopt takes over the containers docker compose runs for
	// ComposeProject ("" = the app name).
	Adopt          bool
	ComposeProject string
	// Target is manifest.TargetSwarm for an app deployed as Swarm
	// services, "" for one engine.
	Target string
	// Shared are other apps' networks and volumes the app may use.
	Shared drift.Shared
	// SourceDir is the app's directory in its repository ("" outside
	// one), which messages join with manifest positions.
	SourceDir string
}

// FromConfig are the settings of an app in driftless.yaml.
func FromConfig(cfg config.AppConfig) Settings {
	return Settings{
		App:            cfg.NameOnEngine(),
		Prune:          cfg.Prune,
		SelfHeal:       cfg.SelfHeal,
		Adopt:          cfg.Adopt == config.AdoptCompose,
		ComposeProject: cfg.ComposeProject,
		Target:         cfg.SwarmTarget(),
		Shared:         cfg.Shared,
		SourceDir:      cfg.Path,
	}
}

// State is what the caller knows beyond the settings when it plans: the
// revision and the time, and what the agent remembers of earlier passes.
// A one-shot command knows only the first two; the rest stays zero.
type State struct {
	Revision string
	Now      time.Time
	// Backoff, Applied, FailedRollouts and ReadyDeadline are the agent's
	// memory, as drift.Options describes them.
	Backoff        map[string]time.Time
	Applied        map[string]drift.AppliedService
	FailedRollouts map[string]drift.RolloutFailure
	ReadyDeadline  time.Duration
}

// Desired is the desired app as the differ and the applier see it: when
// adopting a compose project, the volumes compose already has are used as
// they are, so that the adopted replicas keep their data. This is the one
// place adoption is decided.
func Desired(s Settings, app *manifest.App, actual drift.Actual) *manifest.App {
	if !s.Adopt {
		return app
	}
	return drift.AdoptComposeVolumes(app, actual, cmp.Or(s.ComposeProject, s.App))
}

// Prepare is the differ's input for desired against actual: the desired
// app as adopted (Desired), the options the settings and state give, and
// the Swarm specs the back end renders for it, computed here so that the
// differ compares data.
func Prepare(s Settings, st State, desired *manifest.App, actual drift.Actual, r Renderer) drift.Input {
	app := Desired(s, desired, actual)
	return drift.Input{
		App:     s.App,
		Desired: app,
		Actual:  actual,
		Options: drift.Options{
			Revision:       st.Revision,
			Prune:          s.Prune,
			Now:            st.Now,
			Backoff:        st.Backoff,
			Applied:        st.Applied,
			ReadyDeadline:  st.ReadyDeadline,
			NoSelfHeal:     !s.SelfHeal,
			FailedRollouts: st.FailedRollouts,
			ComposeProject: s.ComposeProject,
			Adopt:          s.Adopt,
			Target:         s.Target,
			SwarmSpecs:     r.SwarmSpecs(app),
			Shared:         s.Shared,
			SourceDir:      s.SourceDir,
		},
	}
}
