// Package atomicfile writes a file through a temporary file and a rename,
// so a reader never sees half of it.
package atomicfile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteJSON writes v to path through a temporary file and a rename, so a
// reader never sees half a record.
func WriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return Write(path, data)
}

// Write writes data to path (0600) through a temporary file and a rename.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
