package compose

import (
	"errors"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/go-units"
	"gopkg.in/yaml.v3"

	"github.com/driftless-dev/driftless/internal/yamlpos"
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/load"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// mapVolumes maps a service's volumes: named volumes, binds (from the
// repository when relative, from the host when absolute) and tmpfs.
func (sm *serviceMap) mapVolumes() {
	origins := sm.m.ix.itemNodes(sm.path("volumes"))
	if len(origins) != len(sm.s.Volumes) {
		origins = nil
	}
	for i, v := range sm.s.Volumes {
		attr := yamlpos.IndexPath("volumes", i)
		if origins != nil {
			sm.checkShortVolume(attr, origins[i])
		}
		switch v.Type {
		case types.VolumeTypeVolume:
			sm.mapNamedVolume(attr, v)
		case types.VolumeTypeBind:
			sm.mapBind(attr, v)
		case types.VolumeTypeTmpfs:
			sm.mapTmpfsVolume(attr, v)
		default:
			sm.refuse(attr, "volume type %q is not supported: use volume, bind or tmpfs", v.Type)
		}
	}
}

// shortVolumeOptions are the options of the short syntax; compose-go
// ignores others (so docker compose mounts read-write, unlabelled), and
// driftless does the same, with a warning that names the option.
var shortVolumeOptions = map[string]bool{
	"ro": true, "rw": true, "nocopy": true, "z": true, "Z": true,
	"rprivate": true, "private": true, "rshared": true, "shared": true, "rslave": true, "slave": true,
	"cached": true, "delegated": true, "consistent": true,
}

func (sm *serviceMap) checkShortVolume(attr string, fn fileNode) {
	if fn.node.Kind != yaml.ScalarNode {
		return
	}
	text, _, err := sm.m.in.Substitute(fn.node.Value)
	if err != nil {
		return
	}
	parts := strings.Split(text, ":")
	if len(parts) < 3 {
		return
	}
	for _, o := range strings.Split(parts[len(parts)-1], ",") {
		if !shortVolumeOptions[o] {
			sm.m.warnings.Add(fn.pos(), sm.path(attr), "unknown volume option %q is ignored, as compose ignores it (the mount is read-write, without an SELinux label): use ro, rw, z, Z, nocopy or a propagation, comma-separated (ro,z)", o)
		}
	}
}

func (sm *serviceMap) mapNamedVolume(attr string, v types.ServiceVolumeConfig) {
	if v.Source == "" {
		sm.mapAnonymousVolume(attr, v)
		return
	}
	if _, ok := sm.m.p.Volumes[v.Source]; !ok {
		sm.refuse(attr, "volume %q is not declared: add it under the top-level volumes:", v.Source)
		return
	}
	if vv := v.Volume; vv != nil {
		if vv.Subpath != "" {
			sm.refuse(attr+".volume.subpath", "volume subpaths are not supported yet: the Docker API has them from 1.45 (Engine 26), and driftless creates containers in the forms of API 1.41; mount the whole volume at another target")
		}
		if len(vv.Labels) > 0 {
			sm.refuse(attr+".volume.labels", "is not supported: set labels on the top-level volume")
		}
	}
	selinux := sm.volumeSELinux(attr, v)
	name, ok := sm.m.volNames[v.Source]
	if !ok || !sm.claimMountPath(attr, v.Target) {
		return
	}
	sm.spec.Volumes = append(sm.spec.Volumes, manifest.VolumeMount{Name: name, MountPath: v.Target, ReadOnly: v.ReadOnly, SELinux: selinux, NoCopy: v.Volume != nil && v.Volume.NoCopy})
}

// volumeSELinux is a named volume's SELinux label (":z", ":Z" or
// bind.selinux), which compose passes to Docker with the volume; the other
// bind options, and tmpfs or image options, do not apply to a volume.
func (sm *serviceMap) volumeSELinux(attr string, v types.ServiceVolumeConfig) string {
	if v.Tmpfs != nil || v.Image != nil {
		sm.refuse(attr, "tmpfs or image options on a named volume are not supported")
	}
	b := v.Bind
	if b == nil {
		return ""
	}
	if b.Propagation != "" || (b.Recursive != "" && b.Recursive != "enabled") {
		sm.refuse(attr, "bind propagation does not apply to a named volume (Docker refuses it): remove it, or bind a host path")
	}
	if b.SELinux != "" && b.SELinux != "z" && b.SELinux != "Z" {
		sm.refuse(attr+".bind.selinux", "must be z (shared label) or Z (private label), got %q", b.SELinux)
		return ""
	}
	return b.SELinux
}

func (sm *serviceMap) mapBind(attr string, v types.ServiceVolumeConfig) {
	b := manifest.BindMount{MountPath: v.Target, ReadOnly: v.ReadOnly}
	if bo := v.Bind; bo != nil {
		b.CreateHostPath = bool(bo.CreateHostPath)
		b.Propagation = bo.Propagation
		b.SELinux = bo.SELinux
		if bo.Recursive != "" && bo.Recursive != "enabled" {
			sm.refuse(attr+".bind.recursive", "%q is not supported", bo.Recursive)
		}
	}
	if v.Volume != nil && v.Volume.NoCopy {
		sm.refuse(attr, "nocopy applies to volumes, not binds")
	}
	switch src := v.Source; {
	case strings.HasPrefix(src, "~"):
		home, ok := sm.homePath(attr, src)
		if !ok {
			return
		}
		b.HostPath = home
	case path.IsAbs(src):
		b.HostPath = path.Clean(src)
	default:
		if !sm.mapRelativeBind(attr, src, &b) {
			return
		}
	}
	sm.addBind(attr, b)
}

// addBind adds a bind, refusing a second mount on the same path.
func (sm *serviceMap) addBind(attr string, b manifest.BindMount) {
	if sm.claimMountPath(attr, b.MountPath) {
		sm.spec.Binds = append(sm.spec.Binds, b)
	}
}

// claimMountPath reports whether target is an absolute path no other
// mount of the service (bind, tmpfs, volume, secret) uses yet, refusing
// it otherwise.
func (sm *serviceMap) claimMountPath(attr, target string) bool {
	if !path.IsAbs(target) {
		sm.refuse(attr, "the target %q must be an absolute path", target)
		return false
	}
	if prev, dup := sm.bindFrom[target]; dup {
		sm.refuse(attr, "%s is already mounted by %s", target, sm.path(prev))
		return false
	}
	sm.bindFrom[target] = attr
	return true
}

// repoTree reads a file or directory of the revision that a service
// mounts, and adds it to the app's content.
func (sm *serviceMap) repoTree(attr, src, what string) (string, *manifest.RepoTree, bool) {
	p, err := manifest.CleanRepoPath(src)
	if err != nil {
		if errors.Is(err, manifest.ErrLeavesRepo) {
			sm.refuse(attr, "%s %q leaves the app directory: driftless mounts files of the app's directory in the repository only", what, src)
		} else {
			sm.refuse(attr, "%s %v", what, err)
		}
		return "", nil, false
	}
	tree, err := load.ReadRepoTree(sm.m.fsys, path.Join(sm.m.root, p))
	return sm.repoTreeRead(attr, src, what, p, tree, err)
}

// repoTreeRead judges what ReadRepoTree returned for src, and adds the
// tree to the app's content.
func (sm *serviceMap) repoTreeRead(attr, src, what, p string, tree *manifest.RepoTree, err error) (string, *manifest.RepoTree, bool) {
	var limit *policy.LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sm.refuse(attr, "%s %q does not exist in the repository: compose would create an empty directory on the host, driftless mounts what the revision holds; commit it, or use a named volume", what, src)
		return "", nil, false
	case errors.As(err, &limit):
		sm.refuse(attr, "%s %q: %s; mount configuration, keep data in a volume", what, src, limit.AsError().Msg)
		return "", nil, false
	case err != nil:
		sm.refuse(attr, "cannot read %s %q: %v", what, src, err)
		return "", nil, false
	}
	hash := tree.Hash()
	sm.m.content[hash] = tree
	return p, tree, true
}

func (sm *serviceMap) mapTmpfsVolume(attr string, v types.ServiceVolumeConfig) {
	t := manifest.TmpfsMount{MountPath: v.Target}
	if v.Tmpfs != nil {
		t.SizeBytes = int64(v.Tmpfs.Size)
		t.Mode = v.Tmpfs.Mode
	}
	if v.Source != "" {
		sm.refuse(attr, "a tmpfs mount has no source")
	}
	sm.addTmpfs(attr, t)
}

// mapTmpfs maps the service's tmpfs list ("/run" or "/run:size=64m,mode=1777").
func (sm *serviceMap) mapTmpfs() {
	for i, entry := range sm.s.Tmpfs {
		attr := yamlpos.IndexPath("tmpfs", i)
		target, opts, _ := strings.Cut(entry, ":")
		t := manifest.TmpfsMount{MountPath: target}
		for _, o := range strings.Split(opts, ",") {
			if o == "" {
				continue
			}
			k, val, _ := strings.Cut(o, "=")
			switch k {
			case "size":
				n, err := units.RAMInBytes(val)
				if err != nil || n < 0 {
					sm.refuse(attr, "invalid size %q", val)
				}
				t.SizeBytes = n
			case "mode":
				m, err := strconv.ParseUint(val, 8, 32)
				if err != nil {
					sm.refuse(attr, "invalid mode %q: write octal permission bits such as 1777", val)
				}
				t.Mode = uint32(m)
			default:
				opt, err := manifest.CheckTmpfsOption(o)
				if err != nil {
					sm.refuse(attr, "%v", err)
					continue
				}
				t.Options = append(t.Options, opt)
			}
		}
		sm.addTmpfs(attr, t)
	}
}

func (sm *serviceMap) addTmpfs(attr string, t manifest.TmpfsMount) {
	if sm.claimMountPath(attr, t.MountPath) {
		sm.spec.Tmpfs = append(sm.spec.Tmpfs, t)
	}
}

// mapFileMounts mounts file-based configs read-only where compose puts
// them (/NAME, or the target); secrets become the service's secrets,
// delivered as files at /run/secrets/NAME or the target.
func (sm *serviceMap) mapFileMounts(section string, refs []types.ServiceSecretConfig, dir string) {
	for i, r := range refs {
		attr := yamlpos.IndexPath(section, i)
		obj, ok := sm.fileObject(section, r.Source)
		if !ok {
			sm.refuse(attr, "%s %q is not declared: add it under the top-level %s:", strings.TrimSuffix(section, "s"), r.Source, section)
			continue
		}
		inline := section == "configs" && obj.File == "" && (obj.Content != "" || obj.Environment != "")
		if section == "configs" {
			sm.warnConfigOwnership(attr, r, inline)
		}
		fromEnv := section == "secrets" && obj.File == "" && obj.Environment != ""
		if obj.File == "" && !inline && !fromEnv {
			continue // refused at the top level
		}
		target := r.Target
		switch {
		case target == "":
			target = dir + r.Source
		case !path.IsAbs(target):
			target = dir + target
		}
		top := yamlpos.ChildPath(section, r.Source) + ".file"
		if fromEnv {
			sm.addEnvSecret(attr, r, obj, target)
			continue
		}
		if section == "secrets" {
			sm.addSecret(attr, top, r, obj, target)
			continue
		}
		var (
			p    string
			tree *manifest.RepoTree
		)
		if inline {
			p, tree, ok = sm.inlineConfig(r.Source, obj, r.Mode != nil && *r.Mode&0o111 != 0)
		} else {
			p, tree, ok = sm.repoTreeAt(top, obj.File)
		}
		if !ok {
			continue
		}
		b := manifest.BindMount{RepoPath: p, ContentHash: tree.Hash(), MountPath: target, ReadOnly: true}
		if sm.m.opts.Target == manifest.TargetSwarm {
			b.Object = &manifest.FileObject{Kind: strings.TrimSuffix(section, "s"), Name: r.Source}
		}
		sm.addBind(attr, b)
	}
}

// warnConfigOwnership says what becomes of a config's uid, gid and mode.
// Every config is one shared read-only copy, readable by every user (0444,
// 0555 when executable): compose ignores all three for a file: config and
// writes a content: one with them; driftless makes an inline config
// executable when the mode asks, and warns about the rest.
func (sm *serviceMap) warnConfigOwnership(attr string, r types.ServiceSecretConfig, inline bool) {
	if !inline {
		if r.UID != "" || r.GID != "" || r.Mode != nil {
			sm.warn(attr, "uid, gid and mode have no effect on a config from a file (as in compose): it is mounted read-only, readable by every user, executable when Git marks it so")
		}
		return
	}
	modeKept := r.Mode == nil || *r.Mode == 0o444 || *r.Mode == 0o555
	if r.UID != "" || r.GID != "" || !modeKept {
		sm.warn(attr, "is mounted read-only as 0444 (0555 when the mode gives execute), owned by root and readable by every user: uid, gid and other mode bits are not applied")
	}
}

// addSecret adds a compose secret to the service: the same model as a
// native spec.secrets entry, decrypted by resolveSecrets, whose errors are
// located at the top-level secret's file:.
func (sm *serviceMap) addSecret(attr, top string, r types.ServiceSecretConfig, obj types.FileObjectConfig, target string) {
	p, err := manifest.CleanRepoPath(obj.File)
	if err != nil {
		sm.refuseSecretOnce(top, "secret file %q: %v: driftless reads secrets from the app's directory in the repository", obj.File, err)
		return
	}
	ref := manifest.SecretRef{Name: r.Source, File: p, Target: target, UID: r.UID, GID: r.GID, AllowPlaintext: secretAllowsPlaintext(obj)}
	sm.deliverSecret(attr, top, ref, r)
}

// addEnvSecret adds a secret whose value is a variable of the project
// environment (secrets.NAME.environment). The app's environment is not
// in Git and may hold secrets; .env is a plaintext file of the repository,
// so a value only it sets is refused as a plaintext secret file is.
func (sm *serviceMap) addEnvSecret(attr string, r types.ServiceSecretConfig, obj types.FileObjectConfig, target string) {
	top := yamlpos.ChildPath("secrets", r.Source) + ".environment"
	v, set := sm.m.in.Lookup(obj.Environment)
	_, fromApp := sm.m.opts.Environment[obj.Environment]
	allowed := secretAllowsPlaintext(obj) || sm.m.opts.AllowPlaintext
	switch {
	case !set:
		sm.refuseSecretOnce(top, "secret %q: variable %s is not set: set it in the app's environment (environment: in driftless.yaml; the shell's for the CLI)", r.Source, obj.Environment)
		return
	case !fromApp && !allowed:
		sm.refuseSecretOnce(top, "secret %q: variable %s is set only by .env, a plaintext file of the repository, and secrets in Git must be encrypted: set it in the app's environment (environment: in driftless.yaml) instead, or accept it with x-driftless: {allowPlaintext: true} on the top-level secret or decryption: {allowPlaintext: true} for the app", r.Source, obj.Environment)
		return
	}
	ref := manifest.SecretRef{Name: r.Source, Env: obj.Environment, Target: target, UID: r.UID, GID: r.GID}
	ref.Digest = sm.m.opts.SecretKey.Digest(v)
	if sm.m.secretData == nil {
		sm.m.secretData = map[string][]byte{}
	}
	sm.m.secretData[ref.Digest] = []byte(v)
	sm.deliverSecret(attr, top, ref, r)
}

// refuseSecretOnce reports a problem of a top-level secret once, however
// many services use it.
func (sm *serviceMap) refuseSecretOnce(top, format string, args ...any) {
	if sm.m.reported == nil {
		sm.m.reported = map[string]bool{}
	}
	if !sm.m.reported[top] {
		sm.m.errs.Add(sm.m.ix.at(top), top, format, args...)
	}
	sm.m.reported[top] = true
}

// deliverSecret checks how a secret is delivered (target, owner, mode)
// and adds it to the service; top is where its source is declared.
func (sm *serviceMap) deliverSecret(attr, top string, ref manifest.SecretRef, r types.ServiceSecretConfig) {
	if r.Mode != nil {
		ref.Mode = int(*r.Mode)
	}
	for _, field := range slices.Sorted(maps.Keys(load.SecretDeliveryProblems(ref))) {
		sm.refuse(attr, "%s: %s", field, load.SecretDeliveryProblems(ref)[field])
	}
	if !sm.claimMountPath(attr, ref.Target) {
		return
	}
	sm.fields[yamlpos.IndexPath("secrets", len(sm.spec.Secrets))+".file"] = manifest.FieldRef{Pos: sm.m.ix.at(top), Field: top}
	sm.spec.Secrets = append(sm.spec.Secrets, ref)
}

// secretAllowsPlaintext reads a top-level secret's
// x-driftless: {allowPlaintext: true}.
func secretAllowsPlaintext(obj types.FileObjectConfig) bool {
	x, _ := obj.Extensions["x-driftless"].(map[string]any)
	b, _ := x["allowPlaintext"].(bool)
	return b
}

func (sm *serviceMap) fileObject(section, name string) (types.FileObjectConfig, bool) {
	if section == "secrets" {
		o, ok := sm.m.p.Secrets[name]
		return types.FileObjectConfig(o), ok
	}
	o, ok := sm.m.p.Configs[name]
	return types.FileObjectConfig(o), ok
}

// repoTreeAt reads a file that a top-level object names; problems are
// reported there, once.
func (sm *serviceMap) repoTreeAt(field, src string) (string, *manifest.RepoTree, bool) {
	if sm.m.reported == nil {
		sm.m.reported = map[string]bool{}
	}
	errsBefore := len(sm.m.errs.Errs)
	at := &serviceMap{m: sm.m, base: field, cname: sm.cname}
	p, tree, ok := at.repoTree("", src, "file")
	if !ok && sm.m.reported[field] {
		sm.m.errs.Errs = sm.m.errs.Errs[:errsBefore]
	}
	sm.m.reported[field] = true
	return p, tree, ok
}
