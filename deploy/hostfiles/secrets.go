package hostfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/driftless-dev/driftless/manifest"
)

// Secrets are delivered as files: each decrypted value a service uses is
// written to SecretsDir/<app>/<service>/<digest>.<owner>.<mode> on a tmpfs
// (never a disk, so a reboot or a stolen disk leaves no plaintext) and
// bind-mounted read-only at the secret's target. The name is the agent
// key's digest of the value, never a plain hash of it, so a rotated secret
// is a new file and the name tells nothing about the value. Directories
// are 0700: only root (the agent, the Docker daemon) can look in.

// DefaultSecretsDir is where secret files go when Options leave SecretsDir
// empty: $DRIFTLESS_SECRETS_DIR, else /run/driftless/secrets.
func DefaultSecretsDir() string {
	if d := os.Getenv("DRIFTLESS_SECRETS_DIR"); d != "" {
		return d
	}
	return "/run/driftless/secrets"
}

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// ErrSecretsDirNotTmpfs: the secrets directory is not on a tmpfs and the
// agent could not mount one there.
var ErrSecretsDirNotTmpfs = errors.New("the secrets directory is not on a tmpfs")

// secretFileName names a secret's file by the keyed digest of its value,
// plus the owner and mode it is written with (the same value may be
// delivered to two targets with different owners).
func secretFileName(ref manifest.SecretRef) string {
	uid, gid := ref.UID, ref.GID
	if uid == "" {
		uid = "-"
	}
	if gid == "" {
		gid = "-"
	}
	return fmt.Sprintf("%s.%s.%s.%04o", ref.Digest, uid, gid, ref.Mode)
}

// secretPath is the host path of one secret file of a service: pure, it
// only names the path writeSecrets writes.
func SecretPath(secretsDir, app, service string, ref manifest.SecretRef) (string, error) {
	if secretsDir == "" {
		return "", errors.New("no secrets directory (deploy.Options.SecretsDir)")
	}
	if ref.Digest == "" || strings.ContainsAny(ref.Digest, `/\.`) {
		return "", fmt.Errorf("secret %s: it was not decrypted with the app", ref.Name)
	}
	return filepath.Join(secretsDir, app, service, secretFileName(ref)), nil
}

// ensureSecretsDir makes the secrets directory, root-only, and checks that
// it is a tmpfs; if it is not, it mounts one there (which needs root or
// CAP_SYS_ADMIN) and otherwise refuses. Checked once per engine, when the
// first secret is written: an agent without secrets needs none of this.
func (s *Store) ensureSecretsDir() error {
	if s.secretsReady {
		return nil
	}
	dir := s.SecretsDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the secrets directory %s: %w (run the agent as root, or point --secrets-dir at a tmpfs directory it may write)", dir, err)
	}
	if !isTmpfs(dir) {
		err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0700")
		if err != nil || !isTmpfs(dir) {
			return fmt.Errorf("%w: %s, and mounting one there failed (%v): secrets are never written to a disk; mount a tmpfs there (mount -t tmpfs -o mode=0700 tmpfs %s), run the agent as root, or point --secrets-dir at a tmpfs",
				ErrSecretsDirNotTmpfs, dir, err, dir)
		}
		s.Log.Info("mounted a tmpfs for secret files", "dir", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("secrets directory: %w", err)
	}
	s.secretsReady = true
	return nil
}

func isTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && int64(st.Type) == tmpfsMagic
}

// writeSecrets writes the service's secret files that are not on the tmpfs
// (any more: a reboot empties it), before a replica is created or started.
// With Remote it writes nothing: the engine's host is not this one, and
// the values are copied into each created container instead
// (deploy/internal/copyin).
func (s *Store) WriteSecrets(app *manifest.App, svc *manifest.Service) error {
	if len(svc.Spec.Secrets) == 0 || s.Remote {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureSecretsDir(); err != nil {
		return fmt.Errorf("service %s: %w", svc.Name, err)
	}
	for _, ref := range svc.Spec.Secrets {
		p, err := SecretPath(s.SecretsDir, app.Name, svc.Name, ref)
		if err != nil {
			return fmt.Errorf("service %s: %w", svc.Name, err)
		}
		data, ok := app.SecretData[ref.Digest]
		if !ok {
			return fmt.Errorf("service %s: secret %s: its value was not decrypted with the app", svc.Name, ref.Name)
		}
		if err := writeSecretFile(p, data, ref); err != nil {
			return fmt.Errorf("service %s: secret %s: %w", svc.Name, ref.Name, err)
		}
	}
	return nil
}

// writeSecretFile writes one secret file unless it is there: a temporary
// file (0600) beside it, owned and moded as asked, then renamed, so a file
// under its final name is always complete.
func writeSecretFile(p string, data []byte, ref manifest.SecretRef) error {
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		return nil
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, TmpPrefix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	uid, gid := -1, -1
	if ref.UID != "" {
		uid, _ = strconv.Atoi(ref.UID)
	}
	if ref.GID != "" {
		gid, _ = strconv.Atoi(ref.GID)
	}
	if uid >= 0 || gid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			return fail(fmt.Errorf("owner %s:%s: %w", ref.UID, ref.GID, err))
		}
	}
	if err := f.Chmod(fs.FileMode(ref.Mode)); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removeUnusedSecrets deletes the secret files under SecretsDir/<app>
// (every app's when app is "") that no container of driftless mounts, and
// the directories that are left empty. It runs at the end of each apply
// of an app, when no replica of it is being created, so a rotated secret's
// old plaintext is gone as soon as its last replica is.
// Files younger than minAge stay: with app "" another app's replica may
// be about to be created with one.
func (s *Store) RemoveUnusedSecrets(ctx context.Context, app string, minAge time.Duration) ([]string, error) {
	root := s.SecretsDir
	if root == "" {
		return nil, nil
	}
	base := root
	if app != "" {
		base = filepath.Join(root, app)
	}
	if _, err := os.Lstat(base); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	used, err := s.mountedUnder(ctx, root)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed, dirs []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if used[p] {
			return nil
		}
		if info, err := d.Info(); err != nil || time.Since(info.ModTime()) < minAge {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		removed = append(removed, p)
		return nil
	})
	// Deepest first; a directory still holding files stays.
	for i := len(dirs) - 1; i >= 0; i-- {
		if dirs[i] != root {
			_ = os.Remove(dirs[i])
		}
	}
	return removed, err
}

// mountedUnder lists, in one call, the host paths under dir that a
// container of driftless (running or not) mounts.
func (s *Store) mountedUnder(ctx context.Context, dir string) (map[string]bool, error) {
	mounts, err := s.Mounts(ctx)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	used := map[string]bool{}
	for _, src := range mounts {
		if strings.HasPrefix(filepath.Clean(src), prefix) {
			used[filepath.Clean(src)] = true
		}
	}
	return used, nil
}
