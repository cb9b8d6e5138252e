package deploy

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/driftless-dev/driftless/deploy/registry"
)

// An image on the engine is there for every app: once one app has pulled
// a private image, pullPolicy missing would let any app run it. So, as
// Kubernetes' ensure-secret-pulled-images check does, a container is
// created from an image another app pulled with credentials only when
// this app's own credentials can pull it too: one manifest HEAD of the
// image's digest, nothing pulled, remembered per credential identity and
// digest. Left alone, as Kubernetes leaves preloaded images: images
// without a registry origin (built or loaded here), images this app
// pulled itself, images nobody pulled through driftless (docker pull by
// hand), and images pulled anonymously (public).

// inspectImage is the image ref names on the engine, and whether it is
// there.
func (e *Engine) inspectImage(ctx context.Context, ref string) (image.InspectResponse, bool, error) {
	res, err := e.api.ImageInspect(ctx, ref)
	if err == nil {
		return res.InspectResponse, true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return image.InspectResponse{}, false, nil
	}
	return image.InspectResponse{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
}

// checkPullAccess returns nil when app may create a container from img
// (what ref names on the engine), else the *registry.PullError a pull with the
// app's own credentials meets.
func (e *Engine) checkPullAccess(ctx context.Context, app, ref string, img image.InspectResponse) error {
	if len(img.RepoDigests) == 0 {
		return nil // built or loaded here: no registry to ask
	}
	need, err := e.pulledByAnother(app, img.ID)
	if err != nil || !need {
		return err
	}
	var first error
	for _, origin := range origins(ref, img.RepoDigests) {
		err := e.confirmPull(ctx, app, origin)
		if err == nil {
			return nil
		}
		var pe *registry.PullError
		if !errors.As(err, &pe) {
			return err // the engine, not the registry: no verdict
		}
		if first == nil {
			first = &registry.PullError{Image: ref, Registry: pe.Registry, Kind: pe.Kind,
				Err: fmt.Errorf("another app pulled it onto the engine, and this app may run it only if its own credentials can pull it: %w", pe.Err)}
		}
	}
	return first
}

// pulledByAnother reports whether an app other than app pulled the image
// id with credentials, and app did not pull it itself. A record that
// cannot be read is an error: without it the answer could be wrong.
func (e *Engine) pulledByAnother(app, id string) (bool, error) {
	pulled, _, err := e.pulls.All()
	if err != nil {
		return false, err
	}
	other := false
	for a, recs := range pulled {
		for _, r := range recs {
			switch {
			case r.ID != id:
			case a == app:
				return false, nil
			case !r.Anonymous:
				other = true
			}
		}
	}
	return other, nil
}

// origins are the image's repository digests ("host/repo@sha256:…") to
// ask, those of ref's repository first.
func origins(ref string, repoDigests []string) []string {
	name := ""
	if n, err := reference.ParseNormalizedNamed(ref); err == nil {
		name = n.Name()
	}
	var first, rest []string
	for _, rd := range repoDigests {
		n, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if _, ok := n.(reference.Canonical); !ok {
			continue
		}
		if n.Name() == name {
			first = append(first, n.String())
		} else {
			rest = append(rest, n.String())
		}
	}
	return append(first, rest...)
}

// confirmPull asks origin's registry, with app's credentials, for the
// manifest (one HEAD; the engine when the registry cannot be asked
// directly); a yes is remembered for the credentials' identity.
func (e *Engine) confirmPull(ctx context.Context, app, origin string) error {
	host, err := registry.Host(origin)
	if err != nil {
		return err
	}
	ac, err := e.lookupCredentials(ctx, app, host)
	if err != nil {
		return &registry.PullError{Image: origin, Registry: host, Kind: registry.PullOther, Err: err}
	}
	key := registry.CredentialIdentity(host, ac) + "\x00" + origin
	if e.reg.MayPull(key) {
		return nil
	}
	_, err = e.reg.HeadDigest(ctx, origin, ac)
	if errors.Is(err, registry.ErrNoAnswer) {
		e.log.Debug("pull access: asking the engine", "image", origin, "reason", err)
		_, err = e.resolveViaEngine(ctx, host, origin, ac)
	}
	if err != nil {
		return err
	}
	e.reg.RememberPull(key)
	return nil
}

// lookupCredentials are app's credentials for host; zero for anonymous.
func (e *Engine) lookupCredentials(ctx context.Context, app, host string) (registrytypes.AuthConfig, error) {
	if e.opts.Credentials == nil {
		return registrytypes.AuthConfig{}, nil
	}
	ac, err := e.opts.Credentials.Lookup(ctx, app, host)
	if err != nil {
		return registrytypes.AuthConfig{}, fmt.Errorf("credentials for registry %s: %w", host, err)
	}
	return ac, nil
}
