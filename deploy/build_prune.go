package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/drift"
)

// PrunedImage is one image driftless built or pulled for an app, and
// what pruning does with it.
type PrunedImage struct {
	ID string `json:"id"`
	// Origin is OriginBuilt or OriginPulled.
	Origin string   `json:"origin"`
	Tags   []string `json:"tags"`
	Size   int64    `json:"size"`
	InUse  []string `json:"inUse,omitempty"` // names of the containers that use it: kept
	// Kept says why an image no container uses is kept (a pulled image
	// the app still wants, that another app pulled or wants, or that has
	// names driftless did not pull).
	Kept string `json:"kept,omitempty"`
	// Removed: the image is gone (false in a dry run and for kept ones).
	Removed bool   `json:"removed"`
	Err     string `json:"error,omitempty"`
}

// Where a pruned image came from.
const (
	OriginBuilt  = "built"
	OriginPulled = "pulled"
)

// PruneReport is what PruneImages found and did.
type PruneReport struct {
	App    string        `json:"app"`
	DryRun bool          `json:"dryRun"`
	Images []PrunedImage `json:"images"`
	// Freed is the size of the images removed (or, in a dry run, that
	// would be).
	Freed int64 `json:"freed"`
}

// imageLister is what pruning needs beyond dockerAPI; *client.Client has
// it.
type imageLister interface {
	ImageList(ctx context.Context, options client.ImageListOptions) (client.ImageListResult, error)
}

// PruneImages removes the images driftless built for app (they carry its
// build labels) and those it pulled for app (see deploy/pullrecord) that no
// container on the engine uses, running or not, the app's or anyone's. A
// pulled image is also kept while the app's desired state names it, while
// another app pulled or wants it, and while it has names driftless did not
// pull. With dryRun nothing is removed: the report says what would be.
// Other images are never touched.
func (e *Engine) PruneImages(ctx context.Context, app string, dryRun bool) (PruneReport, error) {
	rep := PruneReport{App: app, DryRun: dryRun, Images: []PrunedImage{}}
	lister, ok := e.raw.(imageLister)
	if !ok {
		return rep, fmt.Errorf("this engine connection cannot list images")
	}
	// Records first: an unreadable one stops pruning before anything goes.
	pulled, desired, err := e.pulls.All()
	if err != nil {
		return rep, err
	}
	f := client.Filters{}
	f.Add("label", drift.LabelBuilt+"=true", drift.LabelApp+"="+app)
	built, err := lister.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return rep, fmt.Errorf("%w: list images: %w", drift.ErrEngineUnreachable, err)
	}
	// Every container counts, stopped ones too: removing the image of a
	// stopped container would leave it unable to start again.
	cl, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return rep, fmt.Errorf("%w: list containers: %w", drift.ErrEngineUnreachable, err)
	}
	users := map[string][]string{}
	for _, c := range cl.Items {
		name := strings.TrimPrefix(firstName(c.Names), "/")
		users[c.ImageID] = append(users[c.ImageID], name)
	}
	for _, img := range built.Items {
		p := PrunedImage{ID: img.ID, Origin: OriginBuilt, Tags: slices.Sorted(slices.Values(img.RepoTags)), Size: img.Size, InUse: users[img.ID]}
		slices.Sort(p.InUse)
		if len(p.InUse) == 0 && !dryRun {
			e.removeImage(ctx, &p)
		}
		rep.Images = append(rep.Images, p)
	}
	if len(pulled[app]) > 0 {
		all, err := lister.ImageList(ctx, client.ImageListOptions{})
		if err != nil {
			return rep, fmt.Errorf("%w: list images: %w", drift.ErrEngineUnreachable, err)
		}
		rep.Images = append(rep.Images, e.prunePulled(ctx, pruneInput{app: app, dryRun: dryRun, images: all.Items, users: users, pulled: pulled, desired: desired})...)
	}
	slices.SortFunc(rep.Images, func(a, b PrunedImage) int {
		return strings.Compare(strings.Join(a.Tags, ","), strings.Join(b.Tags, ","))
	})
	for _, p := range rep.Images {
		if (dryRun && len(p.InUse) == 0 && p.Kept == "") || p.Removed {
			rep.Freed += p.Size
		}
	}
	return rep, nil
}

// removeImage removes an image by each of its names, then by ID: removing
// by ID alone refuses an image with several names unless forced, and
// force would also remove it from under a container created meanwhile.
func (e *Engine) removeImage(ctx context.Context, p *PrunedImage) {
	for _, t := range p.Tags {
		if _, err := e.api.ImageRemove(ctx, t, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
			if ok, _ := e.ImageExists(ctx, p.ID); !ok {
				break // its last name went with an earlier one
			}
			p.Err = err.Error()
			return
		}
	}
	if ok, err := e.ImageExists(ctx, p.ID); err == nil && ok {
		if _, err := e.api.ImageRemove(ctx, p.ID, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
			p.Err = err.Error()
			return
		}
	}
	p.Removed = true
}
