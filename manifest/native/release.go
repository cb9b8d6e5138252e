package native

import (
	"time"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
)

// RawRelease is release settings as a repository writes them.
type RawRelease struct {
	Watch       *yamlpos.Duration `json:"watch"`
	UnreadyFor  *yamlpos.Duration `json:"unreadyFor"`
	MaxRestarts *int              `json:"maxRestarts"`
	// Check is refused with a reason: it stays in the local config (its
	// presence is read from the document's positions).
	Check *yamlpos.Ignored `json:"check"`
}

// CheckRelease validates release settings at prefix and returns them.
func CheckRelease(r yamlpos.Reporter, prefix string, raw *RawRelease, at manifest.Position) *manifest.ReleaseSettings {
	out := &manifest.ReleaseSettings{MaxRestarts: raw.MaxRestarts, Source: at}
	r.Duration(prefix+".watch", raw.Watch, time.Second)
	r.Duration(prefix+".unreadyFor", raw.UnreadyFor, time.Second)
	r.IntRange(prefix+".maxRestarts", raw.MaxRestarts, 0, 1000)
	if _, written := r.Doc.Pos[prefix+".check"]; written {
		r.Errorf(prefix+".check", "stays in the agent's driftless.yaml (release.check): a commit must not choose a URL the agent fetches")
	}
	if raw.Watch != nil {
		out.Watch, _ = manifest.ParseDuration(string(*raw.Watch))
	}
	if raw.UnreadyFor != nil {
		out.UnreadyFor, _ = manifest.ParseDuration(string(*raw.UnreadyFor))
	}
	return out
}

// rawAppDoc is the App document: settings of the app as a whole.
type rawAppDoc struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   *rawMeta    `json:"metadata"`
	Spec       *rawAppSpec `json:"spec"`
}

type rawAppSpec struct {
	Release *RawRelease `json:"release"`
}

// validateAppDoc checks an App document's settings.
func validateAppDoc(c *yamlpos.Collector, o *object) {
	if o.appRaw == nil || o.appRaw.Release == nil {
		return
	}
	o.release = CheckRelease(yamlpos.Reporter{Errs: c, Doc: o.doc}, "spec.release", o.appRaw.Release, o.doc.At("spec.release"))
}
