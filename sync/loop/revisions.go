package loop

import (
	"context"
	"errors"
	"fmt"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/appdir"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/refusal"
	"github.com/driftless-dev/driftless/sync/status"
)

// revisionCacheSize is how many parsed revisions an app keeps: the head,
// the enforced one, and a few recent ones to flip between on reverts.
const revisionCacheSize = 8

// revisionState is a parsed revision: valid (app set) or refused.
type revisionState struct {
	rev     gitsource.Revision
	app     *manifest.App
	refusal *status.Refusal
	// built: the images the revision builds were all there once in this
	// process (see buildCandidate).
	built bool
}

// revisionCache parses each commit once. It belongs to the worker that
// processes the app.
type revisionCache struct {
	parsed map[string]*revisionState
	order  []string
}

func newRevisionCache() *revisionCache {
	return &revisionCache{parsed: map[string]*revisionState{}}
}

// load parses rev's manifests with the app's options, once per commit. A
// revision that cannot be read (Git trouble) is an error; one whose
// manifests are wrong is a revisionState with a refusal.
func (c *revisionCache) load(ctx context.Context, src Source, cfg config.AppConfig, rev gitsource.Revision) (*revisionState, error) {
	if rs, ok := c.parsed[rev.SHA]; ok {
		rev.SignedBy = rs.rev.SignedBy // verified once, with the commit
		rs.rev = rev
		return rs, nil
	}
	rs := &revisionState{rev: rev}
	// The signature is checked before anything in the commit is read: an
	// unsigned commit's files are never parsed.
	signer, refused, err := refusal.Verify(ctx, src, cfg, rev)
	if err != nil {
		return nil, err
	}
	rs.rev.SignedBy, rs.refusal = signer, refused
	if refused != nil {
		c.add(rs)
		return rs, nil
	}
	fsys, err := src.Files(ctx, rev.SHA)
	switch {
	case errors.Is(err, gitsource.ErrPathMissing):
		rs.refusal = &status.Refusal{Revision: rev, Reason: fmt.Sprintf("the manifests path %q does not exist in this commit; fix the path in the config or add it to the repository", refusal.DisplayPath(cfg.Path))}
	case err != nil:
		return nil, fmt.Errorf("read revision %s: %w", rev.Short(), err)
	default:
		app, err := appdir.LoadWith(fsys, ".", cfg.NameOnEngine(), cfg.LoadOptions())
		if rs.refusal, err = refusal.Of(rev, cfg, err); err != nil {
			return nil, err
		}
		if p := cfg.Preview; p != nil && rs.refusal == nil {
			// A preview runs the branch's files beside the app and other
			// previews: its host ports move to its own block.
			if err := manifest.RemapHostPorts(app, p.Ports); err != nil {
				rs.refusal = &status.Refusal{Revision: rev, Reason: err.Error()}
			}
		}
		rs.app = app
		c.shareBuildContexts(app)
	}
	c.add(rs)
	return rs, nil
}

func (c *revisionCache) add(rs *revisionState) {
	c.parsed[rs.rev.SHA] = rs
	c.order = append(c.order, rs.rev.SHA)
	if len(c.order) > revisionCacheSize {
		delete(c.parsed, c.order[0])
		c.order = c.order[1:]
	}
}

// loadSHA parses the revision with the given SHA.
func (c *revisionCache) loadSHA(ctx context.Context, src Source, cfg config.AppConfig, sha string) (*revisionState, error) {
	rev, err := src.Revision(ctx, sha)
	if err != nil {
		return nil, err
	}
	return c.load(ctx, src, cfg, rev)
}
