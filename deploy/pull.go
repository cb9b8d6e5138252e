package deploy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/driftless-dev/driftless/deploy/dockerspec"
	"github.com/driftless-dev/driftless/deploy/registry"
	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/manifest"
)

// registryAuth is the X-Registry-Auth value for pulling image for app.
func (e *Engine) registryAuth(ctx context.Context, app, image string) (host, encoded string, err error) {
	host, err = registry.Host(image)
	if err != nil {
		return "", "", err
	}
	if e.opts.Credentials == nil {
		return host, "", nil
	}
	ac, err := e.opts.Credentials.Lookup(ctx, app, host)
	if err != nil {
		return host, "", fmt.Errorf("credentials for registry %s: %w", host, err)
	}
	encoded, err = registry.EncodeAuth(ac)
	return host, encoded, err
}

// RegistryAuth is the X-Registry-Auth value for pulling image as app:
// the app's credentials for the image's registry, "" for none. A Swarm
// service carries it so that every node can pull a private image, as
// `docker stack deploy --with-registry-auth` does.
func (e *Engine) RegistryAuth(ctx context.Context, app, image string) (string, error) {
	host, auth, err := e.registryAuth(ctx, app, image)
	if err != nil {
		return "", fmt.Errorf("image %s, registry %s: %w", image, host, err)
	}
	return auth, nil
}

// PullProgress is told each layer's state changes while an image is
// pulled: "a1b2c3d4e5f6: Downloading 1.2MB/3.4MB", "Digest: sha256:…".
type PullProgress func(line string)

// Pull pulls image for app with the app's registry credentials, telling
// progress (which may be nil) each layer's state change.
func (e *Engine) Pull(ctx context.Context, app, image string, progress PullProgress) error {
	return e.pullFor(ctx, app, image, nil, progress)
}

// pullFor pulls image for a platform (a service's platform:), or for the
// engine's own when platform is nil.
func (e *Engine) pullFor(ctx context.Context, app, image string, platform *ocispec.Platform, progress PullProgress) error {
	host, auth, err := e.registryAuth(ctx, app, image)
	if err != nil {
		return &registry.PullError{Image: image, Registry: host, Kind: registry.PullOther, Err: err}
	}
	opts := client.ImagePullOptions{RegistryAuth: auth}
	if platform != nil {
		opts.Platforms = []ocispec.Platform{*platform}
	}
	resp, err := e.api.ImagePull(ctx, image, opts)
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return fmt.Errorf("pull image %s: %w", image, err)
		}
		return &registry.PullError{Image: image, Registry: host, Kind: registry.ClassifyPull(err, image, host), Err: err}
	}
	defer resp.Close()
	if err := followStream(resp.JSONMessages(ctx), progress); err != nil {
		return &registry.PullError{Image: image, Registry: host, Kind: registry.ClassifyPull(err, image, host), Err: err}
	}
	if res, err := e.api.ImageInspect(ctx, image); err == nil {
		e.pulls.Pull(app, image, res.ID, auth == "")
	} else {
		e.log.Warn("could not inspect a pulled image to record it; prune-images will not offer it", "app", app, "image", image, "err", err)
	}
	return nil
}

// followStream reads a pull's or a push's message stream to its end,
// telling progress (which may be nil) each layer's state change. The
// error is the stream's own, or the first one the engine reported in it.
func followStream(msgs iter.Seq2[jsonstream.Message, error], progress PullProgress) error {
	layers := map[string]string{}
	for msg, err := range msgs {
		if err != nil {
			return err
		}
		if msg.Error != nil && msg.Error.Message != "" {
			return errors.New(msg.Error.Message)
		}
		if line := progressLine(layers, msg); line != "" && progress != nil {
			progress(line)
		}
	}
	return nil
}

// progressLine is one compact line per change of a layer's state, and per
// quarter of a download or extraction (not per byte count update: a few
// lines per layer, so the CLI and the dashboard's live status move without
// flooding), or "" for a message that changes nothing.
func progressLine(layers map[string]string, m jsonstream.Message) string {
	if m.Status == "" {
		return ""
	}
	if m.ID == "" {
		return m.Status
	}
	state := m.Status
	if p := m.Progress; p != nil && p.Total > 0 {
		state += fmt.Sprintf(" %d/4", min(p.Current*4/p.Total, 4))
	}
	if layers[m.ID] == state {
		return ""
	}
	layers[m.ID] = state
	line := m.ID + ": " + m.Status
	if p := m.Progress; p != nil && p.Total > 0 {
		line += fmt.Sprintf(" %s/%s", humanBytes(p.Current), humanBytes(p.Total))
	}
	return line
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// ensureImage gets the service's image as its pull policy says, once per
// Apply: missing pulls when absent, always pulls (this is a rollout: a
// create or replace), never only checks. A failure is a rollout failure
// of the service (back off, Degraded, the old replicas keep serving),
// except an engine that cannot be reached.
func (r *run) ensureImage(ctx context.Context, s *step, svc *manifest.Service) error {
	ref := svc.Spec.Image
	r.imagesMu.Lock()
	c, ok := r.images[ref]
	if !ok {
		c = &imageCheck{}
		r.images[ref] = c
	}
	r.imagesMu.Unlock()
	c.once.Do(func() { c.err = r.getImage(ctx, s, svc) })
	return c.err
}

func (r *run) getImage(ctx context.Context, s *step, svc *manifest.Service) error {
	ref := svc.Spec.Image
	if svc.PullPolicy != manifest.PullAlways {
		img, present, err := r.e.inspectImage(ctx, ref)
		if err != nil {
			return err
		}
		if present {
			// Present is not enough when another app pulled it: this
			// app's own credentials must be able to pull it too.
			return pullFailure(r.e.checkPullAccess(ctx, r.app, ref, img))
		}
		if svc.PullPolicy == manifest.PullNever {
			return &drift.Failure{Cause: drift.FailureRollout, Summary: fmt.Sprintf("image %s is not on the engine and pullPolicy is never: load or build it there, or set pullPolicy: missing", ref)}
		}
	}
	return pullFailure(r.e.pullFor(ctx, r.app, ref, dockerspec.Platform(&svc.Spec), func(line string) {
		r.emit(s, drift.PhasePull, "pull "+ref+": "+line, nil)
	}))
}

// pullFailure makes a *registry.PullError a rollout failure of the service: auth
// and not found wait for a fix, backing off; an unreachable registry is
// retried at the base delay until it answers.
func pullFailure(err error) error {
	var pe *registry.PullError
	if errors.As(err, &pe) {
		return &drift.Failure{Cause: drift.FailureRollout, Summary: pe.Error(), Transient: pe.Kind == registry.PullUnreachable}
	}
	return err
}

// ResolveDigest asks the image's registry, with the app's credentials,
// which manifest digest the image's tag names now ("sha256:…"): one HEAD
// of the manifest (see registry_client.go), nothing pulled. When the
// registry cannot be asked directly (no route from the agent, an auth
// scheme it does not speak), the engine is asked instead.
func (e *Engine) ResolveDigest(ctx context.Context, app, image string) (string, error) {
	host, err := registry.Host(image)
	if err != nil {
		return "", &registry.PullError{Image: image, Registry: host, Kind: registry.PullOther, Err: err}
	}
	ac := registrytypes.AuthConfig{}
	if e.opts.Credentials != nil {
		if ac, err = e.opts.Credentials.Lookup(ctx, app, host); err != nil {
			return "", &registry.PullError{Image: image, Registry: host, Kind: registry.PullOther, Err: fmt.Errorf("credentials for registry %s: %w", host, err)}
		}
	}
	d, err := e.reg.HeadDigest(ctx, image, ac)
	if err == nil || !errors.Is(err, registry.ErrNoAnswer) {
		return d, err
	}
	e.log.Debug("tag check: asking the engine", "image", image, "reason", err)
	return e.resolveViaEngine(ctx, host, image, ac)
}

// ResolveDigestViaEngine resolves the tag through the engine's
// GET /distribution/{image}/json only (four registry requests: a ping, a
// HEAD, the manifest and the config); the benchmark compares it.
func (e *Engine) ResolveDigestViaEngine(ctx context.Context, app, image string) (string, error) {
	host, err := registry.Host(image)
	if err != nil {
		return "", err
	}
	ac := registrytypes.AuthConfig{}
	if e.opts.Credentials != nil {
		if ac, err = e.opts.Credentials.Lookup(ctx, app, host); err != nil {
			return "", err
		}
	}
	return e.resolveViaEngine(ctx, host, image, ac)
}

func (e *Engine) resolveViaEngine(ctx context.Context, host, image string, ac registrytypes.AuthConfig) (string, error) {
	auth, err := registry.EncodeAuth(ac)
	if err != nil {
		return "", &registry.PullError{Image: image, Registry: host, Kind: registry.PullOther, Err: err}
	}
	res, err := e.api.DistributionInspect(ctx, image, client.DistributionInspectOptions{EncodedRegistryAuth: auth})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return "", fmt.Errorf("resolve image %s: %w", image, err)
		}
		return "", &registry.PullError{Image: image, Registry: host, Kind: registry.ClassifyPull(err, image, host), Err: err}
	}
	return res.Descriptor.Digest.String(), nil
}

// fillDigests sets each container's ImageDigest from its image's
// RepoDigests (inspected once per image ID).
func (e *Engine) fillDigests(ctx context.Context, cs []drift.Container) {
	for i := range cs {
		c := &cs[i]
		if c.ImageID == "" {
			continue
		}
		e.digestMu.Lock()
		repo, ok := e.digests[c.ImageID]
		e.digestMu.Unlock()
		if !ok {
			res, err := e.api.ImageInspect(ctx, c.ImageID)
			if err != nil {
				// Not worth failing an observation over: the digest is
				// for display, and the next pass asks again.
				continue
			}
			repo = res.RepoDigests
			e.digestMu.Lock()
			if e.digests == nil {
				e.digests = map[string][]string{}
			}
			e.digests[c.ImageID] = repo
			e.digestMu.Unlock()
		}
		c.ImageDigest = pickDigest(c.Image, c.ImageID, repo)
	}
}

// pickDigest is the digest of the repository the container names among
// the image's RepoDigests ("repo@sha256:…"), else the first, else the
// image ID.
func pickDigest(image, imageID string, repoDigests []string) string {
	name := image
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		name = named.Name()
	}
	first := ""
	for _, rd := range repoDigests {
		repo, digest, ok := strings.Cut(rd, "@")
		if !ok {
			continue
		}
		if first == "" {
			first = digest
		}
		if n, err := reference.ParseNormalizedNamed(repo); err == nil && n.Name() == name {
			return digest
		}
	}
	if first != "" {
		return first
	}
	return imageID
}
