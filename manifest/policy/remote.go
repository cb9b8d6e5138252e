package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// CheckRemoteEngine returns one error, located where the manifest
// declares it, for everything a service or job asks for that needs the
// agent's host while the app is placed on an engine that may be on
// another host. httpGet/tcpSocket readiness probes are allowed: the
// agent runs them through its probe container on that engine
// (deploy/remoteprobe). Repository files and secret files are allowed:
// they are copied into each created
// container through the engine API (deploy's Options.Remote) — except
// into a read-only root filesystem, where the engine refuses the copy,
// and a secret under a tmpfs mount, which would hide it once the
// container starts. State directories are named volumes on that engine
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
			if feature, hint := remoteSecretProblem(&svc.Spec); feature != "" {
				refuse("secrets", feature, hint)
			}
		}
	})
	return errs
}

// remoteSecretProblem is the first secret file of spec that cannot be
// copied into the container where it would be read, and what to do.
func remoteSecretProblem(spec *manifest.ServiceSpec) (feature, hint string) {
	for _, ref := range spec.Secrets {
		source := "file " + ref.File
		if ref.Env != "" {
			source = "from " + ref.Env
		}
		if spec.ReadOnlyRootfs {
			return fmt.Sprintf("secret %s with a read-only root filesystem (the secret is copied into the container's filesystem)", source),
				"drop read_only (readOnlyRootfs), or place the app on an engine on this host"
		}
		if t := underTmpfs(spec, ref.Target); t != "" {
			return fmt.Sprintf("secret %s at %s under the tmpfs %s (the secret is copied into the container's filesystem, which the tmpfs hides)", source, ref.Target, t),
				"give the secret a target outside the tmpfs, or place the app on an engine on this host"
		}
	}
	return "", ""
}

// underTmpfs is the tmpfs mount of spec that target lies under, or "".
func underTmpfs(spec *manifest.ServiceSpec, target string) string {
	target = path.Clean(target)
	for _, t := range spec.Tmpfs {
		m := path.Clean(t.MountPath)
		if target == m || strings.HasPrefix(target, strings.TrimSuffix(m, "/")+"/") {
			return t.MountPath
		}
	}
	return ""
}
