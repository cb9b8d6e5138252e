// Package secrets holds what driftless does with secret material outside
// the pure planner: the per-agent key that digests secret values, and the
// decryption of SOPS-encrypted files of a revision.
package secrets

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/driftless-dev/driftless/manifest"
)

// KeyFile is the key's file name in the data directory.
const KeyFile = "secret-salt"

// keySize is 256 bits: HMAC-SHA256's block-sized keys gain nothing more.
const keySize = 32

// ErrNoAgentKey means the data directory holds no key yet.
var ErrNoAgentKey = errors.New("no secret key in the data directory")

// KeyPath is where dataDir's key lives.
func KeyPath(dataDir string) string { return filepath.Join(dataDir, KeyFile) }

// ReadKey reads dataDir's key. A missing file is ErrNoAgentKey (wrapped); a
// file that is not private (group or others may read it) or has the wrong
// size is refused, so a key copied carelessly is noticed.
func ReadKey(dataDir string) (manifest.SecretKey, error) {
	p := KeyPath(dataDir)
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, ErrNoAgentKey)
	}
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret key %s is readable by others (mode %s): run chmod 600 %s", p, st.Mode().Perm(), p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	if len(b) != keySize {
		return nil, fmt.Errorf("secret key %s holds %d bytes, want %d: remove it to have a new one made (services with secrets are then replaced once)", p, len(b), keySize)
	}
	return manifest.SecretKey(b), nil
}

// LoadOrCreateKey reads dataDir's key, creating it (mode 0600, from
// crypto/rand) when there is none. created says whether it was made now.
// The file is created exclusively, so two processes starting together
// agree on one key.
func LoadOrCreateKey(dataDir string) (key manifest.SecretKey, created bool, err error) {
	key, err = ReadKey(dataDir)
	if !errors.Is(err, ErrNoAgentKey) {
		return key, false, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	b := make([]byte, keySize)
	if _, err := rand.Read(b); err != nil {
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	p := KeyPath(dataDir)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		key, err := ReadKey(dataDir) // another process won the race
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(p)
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(p)
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return nil, false, fmt.Errorf("secret key: %w", err)
	}
	return manifest.SecretKey(b), true, nil
}
