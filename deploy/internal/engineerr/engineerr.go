// Package engineerr holds the error helpers deploy and its registry client
// share: a predicate anywhere in an error's chain (a Docker 404 among
// them), an error's first line, and the error in a JSON progress stream.
package engineerr

import (
	"errors"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
)

// AnyIs reports whether pred holds for err or any error it wraps.
func AnyIs(err error, pred func(error) bool) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if pred(e) {
			return true
		}
	}
	return false
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// IsNotFound reports a Docker 404 anywhere in err's chain.
func IsNotFound(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if cerrdefs.IsNotFound(e) {
			return true
		}
	}
	return false
}
