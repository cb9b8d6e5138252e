package manifest

import "time"

// KindApp is the native kind of the document that holds an app's own
// settings (at most one per app): for now, its releases' watch window.
const KindApp = "App"

// ReleaseSettings are what a repository may say about its own releases'
// watch window (compose: top-level x-driftless.release; native: a
// document of kind App). They override the local release: settings field
// by field; the HTTP check stays local, since a commit must not make the
// agent fetch a URL of its choosing.
type ReleaseSettings struct {
	Watch       time.Duration `json:"watch,omitempty"`
	UnreadyFor  time.Duration `json:"unreadyFor,omitempty"`
	MaxRestarts *int          `json:"maxRestarts,omitempty"`
	// Source is where the settings are written.
	Source Position `json:"source"`
}
