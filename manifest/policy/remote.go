package policy

import (
	"fmt"

	"github.com/driftless-dev/driftless/manifest"
)

// CheckRemoteEngine returns one error, located where the manifest
// declares it, for everything a service or job asks for that needs the
// agent's host while the app is placed on an engine that may be on
// another host: secret files are bind mounts of files the agent writes
// on its own disk. httpGet/tcpSocket readiness probes are allowed: the
// agent runs them through its probe container on that engine
// (deploy/remoteprobe). Repository files are allowed: they are copied into each created
// container through the engine API (deploy's Options.Remote) — except
// into a read-only root filesystem, where the engine refuses the copy.
// State directories are named volumes on that engine
// (manifest.StateVolumeName). Docker healthchecks (exec readiness) and
// named volumes work on any engine.
func CheckRemoteEngine(app *manifest.App, engine string) manifest.ErrorList {
	var errs manifest.ErrorList
	app.WithJobServices(func(app *manifest.App) {
		for i := range app.Services {
			svc := &app.Services[i]
			refuse := func(field, feature, hint string) {
				ref := svc.Field(field)
				errs = append(errs, &manifest.Error{Pos: ref.Pos, Field: ref.Field,
					Msg: fmt.Sprintf("%s is not supported on a remote engine yet (engine %s is not on the agent's host): %s", feature, engine, hint)})
			}
			for i, b := range svc.Spec.Binds {
				switch {
				case b.RepoPath != "" && svc.Spec.ReadOnlyRootfs:
					refuse(fmt.Sprintf("binds[%d]", i), fmt.Sprintf("repository file %s with a read-only root filesystem (the file is copied into the container's filesystem)", b.RepoPath), "drop read_only (readOnlyRootfs), or COPY the file into an image with build:")
				}
			}
			if len(svc.Spec.Secrets) > 0 {
				refuse("secrets", fmt.Sprintf("secret file %s (written on the agent's host)", svc.Spec.Secrets[0].File), "place the app on an engine on this host")
			}
		}
	})
	return errs
}
