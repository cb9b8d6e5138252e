package gitsource

import (
	"io/fs"
	"path"
	"testing/fstest"
	"time"
)

// lazyBlobBytes is the size above which Files leaves a blob in the object
// store until it is read. The loader checks each file's size against the
// app's limits before reading it, so a file no limit would let through is
// never brought into memory.
const lazyBlobBytes = 1 << 20

// treeFS is a revision's files: small ones in memory, large ones read from
// the object store on first use.
type treeFS struct {
	fstest.MapFS // small files, directories, and placeholders for large ones
	large        map[string]largeBlob
}

type largeBlob struct {
	size    int64
	mode    fs.FileMode
	modTime time.Time
	read    func() ([]byte, error)
}

func (t *treeFS) Open(name string) (fs.File, error) {
	b, ok := t.large[name]
	if !ok {
		return t.MapFS.Open(name)
	}
	data, err := b.read()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return fstest.MapFS{name: &fstest.MapFile{Data: data, Mode: b.mode, ModTime: b.modTime}}.Open(name)
}

func (t *treeFS) ReadFile(name string) ([]byte, error) {
	if b, ok := t.large[name]; ok {
		data, err := b.read()
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		return data, nil
	}
	return t.MapFS.ReadFile(name)
}

// Stat answers a large file's size without reading it.
func (t *treeFS) Stat(name string) (fs.FileInfo, error) {
	if b, ok := t.large[name]; ok {
		return largeInfo{name: path.Base(name), b: b}, nil
	}
	return t.MapFS.Stat(name)
}

type largeInfo struct {
	name string
	b    largeBlob
}

func (i largeInfo) Name() string       { return i.name }
func (i largeInfo) Size() int64        { return i.b.size }
func (i largeInfo) Mode() fs.FileMode  { return i.b.mode }
func (i largeInfo) ModTime() time.Time { return i.b.modTime }
func (i largeInfo) IsDir() bool        { return false }
func (i largeInfo) Sys() any           { return nil }
