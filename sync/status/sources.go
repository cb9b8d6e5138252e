package status

import (
	"time"

	"github.com/driftless-dev/driftless/gitsource"
)

// SourceSet is one sources: entry as the agent last read it: the
// repository that says which apps exist, and the apps it gave.
type SourceSet struct {
	Name string `json:"name"`
	// Generator says how apps are found: "directories apps/*" or
	// "file driftless-apps.yaml".
	Generator string       `json:"generator"`
	Source    SourceStatus `json:"source"`
	Prune     bool         `json:"prune"`
	// Revision is the last revision whose set of apps was accepted.
	Revision *gitsource.Revision `json:"revision,omitempty"`
	// Apps are the apps the accepted revision declares, by name.
	Apps []string `json:"apps"`
	// Refused is a later revision whose set of apps was refused (an
	// invalid driftless-apps.yaml, a name collision, too many apps): the
	// accepted set keeps running.
	Refused *Refusal `json:"refused,omitempty"`
	// LeftGit are apps the accepted revision no longer declares, kept
	// because the source does not prune.
	LeftGit []string `json:"leftGit,omitempty"`
}

// LeftGit marks an app whose source no longer declares it. Nothing of it
// is touched: it is shown with what it runs until it returns to Git, or is
// removed by a source with prune: true.
type LeftGit struct {
	Source   string    `json:"source"`
	Revision string    `json:"revision"` // the source revision without the app
	Since    time.Time `json:"since"`
}

// Preview marks an app that previews a branch: the branch, the URL the
// source's preview.url gives, and its host ports ("20010-20019"; "" when
// it publishes none).
type Preview struct {
	Branch string `json:"branch"`
	URL    string `json:"url,omitempty"`
	Ports  string `json:"ports,omitempty"`
}

// KindApps is a history entry about the set of apps: an app a source
// added, removed, or no longer declares.
const KindApps HistoryKind = "apps"
