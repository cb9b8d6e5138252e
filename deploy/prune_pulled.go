package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"

	"github.com/driftless-dev/driftless/deploy/pullrecord"
	"github.com/driftless-dev/driftless/drift"
)

// pruneInput is what pruning the images pulled for one app looks at: one
// image list, one container list (users by image ID) and the records.
type pruneInput struct {
	app     string
	dryRun  bool
	images  []image.Summary
	users   map[string][]string
	pulled  map[string][]pullrecord.Record
	desired map[string][]string
}

// refKey is a reference in one comparable form: "docker.io/library/nginx:1"
// for a tag, "NAME@sha256:…" when it has a digest (the engine keeps a
// pinned "NAME:tag@sha256:…" under the digest only).
func refKey(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	if d, ok := named.(reference.Digested); ok {
		return named.Name() + "@" + d.Digest().String()
	}
	return reference.TagNameOnly(named).String()
}

func repoName(ref string) string {
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		return named.Name()
	}
	return ref
}

// prunePulled judges (and, unless a dry run, removes) each image pulled
// for in.app that is still on the engine.
func (e *Engine) prunePulled(ctx context.Context, in pruneInput) []PrunedImage {
	byID := map[string]image.Summary{}
	idOf := map[string]string{} // refKey of every name on the engine → image ID
	for _, img := range in.images {
		byID[img.ID] = img
		for _, n := range append(slices.Clone(img.RepoTags), img.RepoDigests...) {
			idOf[refKey(n)] = img.ID
		}
	}
	claims, wanted, mine := in.holds(idOf)
	var out []PrunedImage
	for id, recs := range mine {
		img, ok := byID[id]
		if !ok {
			// Gone already (removed by hand, or the tag was pulled again
			// and the old image pruned): the record has nothing to offer.
			if !in.dryRun {
				for _, r := range recs {
					e.pulls.Forget(r)
				}
			}
			continue
		}
		if img.Labels[drift.LabelBuilt] == "true" {
			continue // a build's image: judged by its labels, not by a pull
		}
		p := PrunedImage{ID: id, Origin: OriginPulled, Tags: slices.Sorted(slices.Values(img.RepoTags)), Size: img.Size, InUse: slices.Sorted(slices.Values(in.users[id]))}
		if len(p.Tags) == 0 {
			p.Tags = slices.Sorted(slices.Values(img.RepoDigests))
		}
		p.Kept = keepReason(img, recs, wanted[id], claims[id])
		if len(p.InUse) == 0 && p.Kept == "" && !in.dryRun {
			e.removeImage(ctx, &p)
			if p.Removed {
				for _, r := range recs {
					e.pulls.Forget(r)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// keepReason says why a pulled image no container uses must stay, or "".
func keepReason(img image.Summary, recs []pullrecord.Record, wanted bool, claims []string) string {
	if wanted {
		return "the app's desired state names it"
	}
	if len(claims) > 0 {
		return strings.Join(slices.Compact(slices.Sorted(slices.Values(claims))), ", ")
	}
	// A name driftless did not pull for the app (a tag someone added, a
	// digest of another repository) is someone else's: keep the image.
	ours, repos := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		ours[refKey(r.Image)] = true
		repos[repoName(r.Image)] = true
	}
	var foreign []string
	for _, t := range img.RepoTags {
		if !ours[refKey(t)] {
			foreign = append(foreign, t)
		}
	}
	for _, d := range img.RepoDigests {
		if !repos[repoName(d)] {
			foreign = append(foreign, d)
		}
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		return fmt.Sprintf("also named %s, which driftless did not pull for the app", strings.Join(foreign, ", "))
	}
	return ""
}

// holds is what each image means to the apps: claims by other apps
// ("pulled by B", "wanted by B"), what in.app still wants, and in.app's
// own records by image ID.
func (in pruneInput) holds(idOf map[string]string) (claims map[string][]string, wanted map[string]bool, mine map[string][]pullrecord.Record) {
	claims, wanted, mine = map[string][]string{}, map[string]bool{}, map[string][]pullrecord.Record{}
	for app, refs := range in.desired {
		for _, ref := range refs {
			id, ok := idOf[refKey(ref)]
			switch {
			case !ok:
			case app == in.app:
				wanted[id] = true
			default:
				claims[id] = append(claims[id], "wanted by app "+app)
			}
		}
	}
	for app, recs := range in.pulled {
		for _, r := range recs {
			if app == in.app {
				mine[r.ID] = append(mine[r.ID], r)
			} else {
				claims[r.ID] = append(claims[r.ID], "pulled by app "+app)
			}
		}
	}
	return claims, wanted, mine
}
