package loop

import (
	"context"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// Tag updates: a service with imageUpdate follows its image's tag. On its
// schedule the pass asks the registry (one HEAD, no pull) which digest
// the tag names; the desired spec is the tag pinned to that digest
// ("shop/web:stable@sha256:…"), so a moved tag is a changed spec that the
// planner rolls out like any change (readiness-gated, rolling), and a
// digest whose rollout fails is backed off by its spec hash like a bad
// commit. The planner stays pure: the I/O is here, at the pass's edge.

// TriggerImageUpdate: a service's tag check is due.
const TriggerImageUpdate = "image-update"

// TagResolver resolves an image tag's current digest in its registry with
// the app's credentials (Options.Tags; the Docker engine implements it).
type TagResolver interface {
	ResolveDigest(ctx context.Context, app, image string) (string, error)
}

// followedTag is what the loop knows of one service's tag. It belongs to
// the worker processing the app, like the revision cache.
type followedTag struct {
	image  string    // the tag as the manifest writes it
	digest string    // the digest the service is pinned to; "" unknown
	next   time.Time // when to resolve again
}

// tagMove is a tag found pointing at a new digest.
type tagMove struct {
	service, image, from, to string
}

func (m tagMove) summary() string {
	return m.service + ": image " + m.image + " moved from " + m.from + " to " + m.to
}

// followTags resolves the tags of app's services that are due, records
// moves in the outcome, and says when the next check is due. A failed
// resolution keeps the digest the service is pinned to (the replicas that
// run keep running) and is tried again on the schedule.
func (p *pass) followTags(ctx context.Context, app *manifest.App, actual drift.Actual, o *passOutcome) {
	resolver := p.a.opts.Tags
	if r, ok := p.a.opts.Engines[p.in.cfg.Engine].(TagResolver); ok {
		resolver = r // with that engine's registry credentials
	}
	if app == nil || resolver == nil {
		return
	}
	now := p.a.now()
	for _, svc := range app.Services {
		if svc.ImageUpdate == nil {
			continue
		}
		sched, err := manifest.ParseImageUpdateInterval(svc.ImageUpdate.Interval)
		if err != nil {
			continue // the parser refused it already
		}
		ft := p.st.tags[svc.Name]
		if ft == nil || ft.image != svc.Spec.Image {
			// New, or the commit follows another tag: start from what runs.
			ft = &followedTag{image: svc.Spec.Image, digest: runningDigest(actual, svc.Name, svc.Spec.Image)}
			p.st.tags[svc.Name] = ft
		}
		if !now.Before(ft.next) {
			p.resolveTag(ctx, resolver, ft, svc.Name, o)
			ft.next = sched.Next(now)
		}
		if o.nextTagCheck.IsZero() || ft.next.Before(o.nextTagCheck) {
			o.nextTagCheck = ft.next
		}
	}
}

func (p *pass) resolveTag(ctx context.Context, resolver TagResolver, ft *followedTag, service string, o *passOutcome) {
	digest, err := resolver.ResolveDigest(ctx, p.in.cfg.NameOnEngine(), ft.image)
	if err != nil {
		if ctx.Err() == nil {
			p.a.log.Warn("image update: resolving the tag failed; the service keeps its image", "app", p.in.cfg.Name, "service", service, "err", err)
		}
		return
	}
	if ft.digest != "" && digest != ft.digest {
		o.tagMoves = append(o.tagMoves, tagMove{service: service, image: ft.image, from: ft.digest, to: digest})
	}
	ft.digest = digest
}

// runningDigest is the digest the service's replicas are pinned to, from
// their image reference ("tag@sha256:…"), so a restarted agent does not
// roll a service just to pin it again.
func runningDigest(actual drift.Actual, service, image string) string {
	for _, c := range actual.Containers {
		if c.Service != service || c.Spec == nil {
			continue
		}
		if d, ok := strings.CutPrefix(c.Spec.Image, image+"@"); ok {
			return d
		}
	}
	return ""
}

// pinTags is app with each followed tag pinned to its resolved digest. It
// returns app itself when nothing is pinned, and never changes it.
func pinTags(app *manifest.App, tags map[string]*followedTag) *manifest.App {
	if app == nil || len(tags) == 0 {
		return app
	}
	var out *manifest.App
	for i, svc := range app.Services {
		ft := tags[svc.Name]
		if svc.ImageUpdate == nil || ft == nil || ft.digest == "" || ft.image != svc.Spec.Image {
			continue
		}
		if out == nil {
			cp := *app
			cp.Services = append([]manifest.Service(nil), app.Services...)
			out = &cp
		}
		s := &out.Services[i]
		s.Spec.Image = svc.Spec.Image + "@" + ft.digest
		s.Hash = manifest.HashService(app.SecretKey, s.Labels, s.Spec)
	}
	if out == nil {
		return app
	}
	return out
}

// tagHistory is one history entry per moved tag.
func tagHistory(app string, moves []tagMove, now time.Time) []status.HistoryEntry {
	var out []status.HistoryEntry
	for _, m := range moves {
		out = append(out, status.HistoryEntry{Time: now, App: app, Kind: status.KindImage, Trigger: TriggerImageUpdate, Summary: m.summary()})
	}
	return out
}

// showPull puts a pull's progress line in the app's live status message
// ("applying 1a2b3c4: pull shop/web:2: a1b2c3: Downloading 1.2MB/3.4MB"),
// which the UI shows as it changes. The pass's status write replaces it.
func (a *Agent) showPull(name, rev, line string) {
	a.mu.Lock()
	if st, ok := a.apps[name]; ok {
		st.status.Message = "applying " + rev + ": " + line // status exception: pull progress, see above
	}
	a.mu.Unlock()
	a.notify(name, "status")
}

// replicaDigests is the image digest of each replica, by container name,
// for history.
func replicaDigests(actual *drift.Actual) map[string]string {
	if actual == nil {
		return nil
	}
	var out map[string]string
	for _, c := range actual.Containers {
		if c.ImageDigest == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[c.Name] = c.ImageDigest
	}
	return out
}
