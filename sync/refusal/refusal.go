// Package refusal turns what a revision fails on before it can be
// applied — an untrusted signature, manifests in error, a missing path —
// into a status.Refusal (wait for a new commit), and what cannot be read
// into an error (retry). The loop and a source's discovery share it.
package refusal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/status"
)

// CommitVerifier is a source that can check commit signatures.
type CommitVerifier interface {
	VerifyCommit(ctx context.Context, sha string, v *gitsource.Verifier) (gitsource.Signer, error)
}

// Verify checks rev's signature when the app has verify on. A
// commit that is unsigned or not signed by a trusted key is refused (wait
// for a new commit); a clone that cannot be read is an error (retry).
// src is the app's source; without VerifyCommit it cannot check.
func Verify(ctx context.Context, src any, cfg config.AppConfig, rev gitsource.Revision) (gitsource.Signer, *status.Refusal, error) {
	if cfg.Verify == nil {
		return gitsource.Signer{}, nil, nil
	}
	cv, ok := src.(CommitVerifier)
	if !ok {
		return gitsource.Signer{}, nil, fmt.Errorf("verify is on for app %s, but its source cannot check signatures", cfg.Name)
	}
	signer, err := cv.VerifyCommit(ctx, rev.SHA, cfg.Verify)
	switch {
	case errors.Is(err, gitsource.ErrUnverified):
		return gitsource.Signer{}, &status.Refusal{Revision: rev, Reason: err.Error() + "; push a commit signed by a trusted key"}, nil
	case err != nil:
		return gitsource.Signer{}, nil, fmt.Errorf("verify signature of %s: %w", rev.Short(), err)
	}
	return signer, nil, nil
}

// Of turns a load error into a refusal of the revision (the
// manifests are wrong: wait for a new commit), or returns it as an error
// (the files could not be read: retry).
func Of(rev gitsource.Revision, cfg config.AppConfig, err error) (*status.Refusal, error) {
	var list manifest.ErrorList
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &list):
		r := &status.Refusal{Revision: rev, Reason: fmt.Sprintf("%d manifest error(s); fix them in a new commit", len(list))}
		for _, e := range list {
			located := *e
			located.Pos.File = path.Join(cfg.Path, e.Pos.File)
			r.Errors = append(r.Errors, located.Error())
		}
		return r, nil
	case errors.Is(err, fs.ErrNotExist):
		return &status.Refusal{Revision: rev, Reason: fmt.Sprintf("the manifests path %q does not exist in this commit: %v", DisplayPath(cfg.Path), err)}, nil
	}
	return nil, fmt.Errorf("read manifests of %s: %w", rev.Short(), err)
}

// DisplayPath is an app's manifests path as messages show it.
func DisplayPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
