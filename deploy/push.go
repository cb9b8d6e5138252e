package deploy

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/registry"
)

// pushAPI is what pushing needs beyond dockerAPI; *client.Client has it.
// Asserted like buildAPI, so the applier's fakes need not implement it.
type pushAPI interface {
	ImagePush(ctx context.Context, image string, options client.ImagePushOptions) (client.ImagePushResponse, error)
}

// PushImage pushes ref (name:tag) for app to its registry with the app's
// credentials, telling progress (which may be nil) each layer's state
// change. Layers the registry has are not sent again, so pushing an
// image that is there already costs a few requests.
func (e *Engine) PushImage(ctx context.Context, app, ref string, progress PullProgress) error {
	api, ok := e.raw.(pushAPI)
	if !ok {
		return fmt.Errorf("pushing %s: this engine connection cannot push images", ref)
	}
	host, auth, err := e.registryAuth(ctx, app, ref)
	if err != nil {
		return &registry.PushError{Image: ref, Registry: host, Kind: registry.PullOther, Err: err}
	}
	resp, err := api.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		if client.IsErrConnectionFailed(err) || ctx.Err() != nil {
			return fmt.Errorf("push image %s: %w", ref, err)
		}
		return &registry.PushError{Image: ref, Registry: host, Kind: registry.ClassifyPull(err, ref, host), Err: err}
	}
	defer resp.Close()
	if err := followStream(resp.JSONMessages(ctx), progress); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &registry.PushError{Image: ref, Registry: host, Kind: registry.ClassifyPull(err, ref, host), Err: err}
	}
	return nil
}
