package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
)

// RepoTree is the content of a file or directory of one revision that a
// bind mount materializes.
type RepoTree struct {
	// Dir: the mount source is a directory (Files' paths are relative to
	// it); otherwise Files holds exactly one entry with an empty Path.
	Dir   bool
	Files []RepoFile // sorted by Path
}

// RepoFile is one regular file of a RepoTree.
type RepoFile struct {
	Path string // slash-separated, relative to the tree; "" for a single file
	Exec bool   // executable bit
	Data []byte
	// Link is a symlink's target (build contexts only; Data holds it
	// too); "" for a regular file.
	Link string
}

// Hash identifies the tree's content: the SHA-256, all 64 hex characters,
// over each file's path, executable bit and data. Two revisions with the
// same content have the same hash. It names the tree's directory on the
// host, which every app shares: a prefix would let two contents made to
// collide (2^32 work at 16 characters) share one directory across apps.
func (t *RepoTree) Hash() string {
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	if t.Dir {
		write([]byte("dir"))
	} else {
		write([]byte("file"))
	}
	for _, f := range t.Files {
		write([]byte(f.Path))
		if f.Exec {
			write([]byte{1})
		} else {
			write([]byte{0})
		}
		write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LegacyContentIDLen is how many hex characters of a content hash the
// service hash covers: the length content hashes had before they were
// full, so a spec hash recorded by an older version still matches and an
// upgrade recreates nothing (see HashService).
const LegacyContentIDLen = 16

// Errors of CleanRepoPath and ReadRepoTree.
var ErrLeavesRepo = errors.New("leaves the app directory")

// CleanRepoPath turns a relative bind source as written ("./conf",
// "conf/nginx.conf", ".") into a clean slash path relative to the app
// directory, refusing any path that leaves it.
func CleanRepoPath(p string) (string, error) {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return "", fmt.Errorf("%q is not a relative path", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q %w", p, ErrLeavesRepo)
	}
	return clean, nil
}
