package secrets

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadKey(dir); !errors.Is(err, ErrNoAgentKey) {
		t.Fatalf("ReadKey of an empty dir = %v, want ErrNoAgentKey", err)
	}
	k1, created, err := LoadOrCreateKey(dir)
	if err != nil || !created || len(k1) != keySize {
		t.Fatalf("first LoadOrCreateKey = %d bytes, created %v, %v", len(k1), created, err)
	}
	st, err := os.Stat(KeyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %s, want 0600", st.Mode().Perm())
	}
	k2, created, err := LoadOrCreateKey(dir)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second LoadOrCreateKey: created %v, same key %v, %v", created, bytes.Equal(k1, k2), err)
	}
	k3, err := ReadKey(dir)
	if err != nil || !bytes.Equal(k1, k3) {
		t.Fatalf("ReadKey after create: same %v, %v", bytes.Equal(k1, k3), err)
	}
	other, _, err := LoadOrCreateKey(t.TempDir())
	if err != nil || bytes.Equal(k1, other) {
		t.Fatalf("two data dirs share a key (or %v)", err)
	}
}

func TestReadKeyRefusesABadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(KeyPath(dir), make([]byte, keySize), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key: err = %v, want a chmod hint", err)
	}
	if err := os.Chmod(KeyPath(dir), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(KeyPath(dir), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKey(dir); err == nil || !strings.Contains(err.Error(), "holds 5 bytes") {
		t.Errorf("short key: err = %v", err)
	}
}
