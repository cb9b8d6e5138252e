package deploy

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
)

// pushAPI is what pushing needs beyond dockerAPI; *client.Client has it.
// Asserted like buildAPI, so the applier's fakes need not implement it.
type pushAPI interface {
	ImagePush(ctx context.Context, image string, options client.ImagePushOptions) (client.ImagePushResponse, error)
}

// PushError is a push the registry refused or could not take, naming the
// image, the registry and why (the kinds of a pull).
type PushError struct {
	Image    string
	Registry string
	Kind     PullErrorKind
	Err      error
}

func (e *PushError) Error() string {
	var hint string
	switch e.Kind {
	case PullAuth:
		hint = "authentication failed (401/denied): give credentials that may push to " + e.Registry + " (registries: in driftless.yaml, or Docker's config.json)"
	case PullUnreachable:
		hint = "registry unreachable"
	case PullUntrusted:
		hint = "TLS certificate not trusted: install the registry's CA on the engine's host as /etc/docker/certs.d/" + e.Registry + "/ca.crt"
	default:
		hint = "push failed"
	}
	return fmt.Sprintf("image %s could not be pushed to registry %s: %s: %s", e.Image, e.Registry, hint, firstLine(e.Err.Error()))
}

func (e *PushError) Unwrap() error { return e.Err }

// PushImage pushes ref (name:tag) for app to its registry with the app's
// credentials, telling progress (which may be nil) each layer's state
// change. Layers the registry has are not sent again, so pushing an
// image that is there already costs a few requests.
func (e *Engine) PushImage(ctx context.Context, app, ref string, progress PullProgress) error {
	api, ok := e.api.(pushAPI)
	if !ok {
		return fmt.Errorf("pushing %s: this engine connection cannot push images", ref)
	}
	host, auth, err := e.registryAuth(ctx, app, ref)
	if err != nil {
		return &PushError{Image: ref, Registry: host, Kind: PullOther, Err: err}
	}
	resp, err := api.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		if client.IsErrConnectionFailed(err) || ctx.Err() != nil {
			return fmt.Errorf("push image %s: %w", ref, err)
		}
		return &PushError{Image: ref, Registry: host, Kind: classifyPull(err, ref, host), Err: err}
	}
	defer resp.Close()
	if err := followStream(resp.JSONMessages(ctx), progress); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &PushError{Image: ref, Registry: host, Kind: classifyPull(err, ref, host), Err: err}
	}
	return nil
}
