package registry

import (
	"fmt"
	"regexp"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/driftless-dev/driftless/deploy/internal/engineerr"
)

// PullErrorKind says why a registry did not give an image, which decides
// what the loop does: auth and not found wait for a fix (a commit or new
// credentials) with backoff; unreachable is retried.
type PullErrorKind string

const (
	PullAuth        PullErrorKind = "auth"        // 401, denied: the credentials are missing or wrong
	PullNotFound    PullErrorKind = "not found"   // manifest unknown: no such repository or tag
	PullUnreachable PullErrorKind = "unreachable" // connection refused, timeout, DNS
	PullUntrusted   PullErrorKind = "untrusted"   // x509: the registry's certificate is not trusted
	PullOther       PullErrorKind = "error"
)

// PullError is a failed pull or tag resolution, naming the image, the
// registry and the kind of failure.
type PullError struct {
	Image    string
	Registry string
	Kind     PullErrorKind
	Err      error
}

func (e *PullError) Error() string {
	msg := engineerr.FirstLine(e.Err.Error())
	var hint string
	switch e.Kind {
	case PullAuth:
		hint = "authentication failed (401/denied): check the credentials for " + e.Registry + " (registries: in driftless.yaml, or Docker's config.json)"
	case PullNotFound:
		hint = "not found (manifest unknown): check the image name and tag"
	case PullUnreachable:
		hint = "registry unreachable: retrying"
	case PullUntrusted:
		hint = "TLS certificate not trusted: install the registry's CA on the engine's host as /etc/docker/certs.d/" + e.Registry + "/ca.crt (read at each pull, no restart)"
	default:
		hint = "pull failed"
	}
	return fmt.Sprintf("image %s could not be pulled from registry %s: %s: %s", e.Image, e.Registry, hint, msg)
}

func (e *PullError) Unwrap() error { return e.Err }

// classifyPull sorts an engine's pull error. The engine relays the
// registry's answer as text (and, for some, an errdefs class); both are
// read.
func ClassifyPull(err error, names ...string) PullErrorKind {
	msg := strings.ToLower(err.Error())
	// The image and registry named in the message are not evidence: a
	// registry on port 40153 is not a 401, a repository called denied-app
	// is not a denial.
	for _, n := range names {
		if n != "" {
			msg = strings.ReplaceAll(msg, strings.ToLower(n), " ")
		}
	}
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("x509:", "certificate signed by unknown authority", "certificate is not valid", "certificate has expired"):
		return PullUntrusted
	case has("unauthorized", "authentication required", "no basic auth credentials", "denied", "incorrect username or password", "forbidden") ||
		httpStatus401.MatchString(msg):
		return PullAuth
	case has("manifest unknown", "not found", "name unknown", "does not exist"):
		return PullNotFound
	case has("connection refused", "i/o timeout", "no such host", "timeout", "network is unreachable", "connection reset", "tls handshake", "dial tcp", "eof"):
		return PullUnreachable
	case engineerr.AnyIs(err, cerrdefs.IsUnauthorized), engineerr.AnyIs(err, cerrdefs.IsPermissionDenied):
		return PullAuth
	case engineerr.AnyIs(err, cerrdefs.IsNotFound):
		return PullNotFound
	}
	return PullOther
}

// httpStatus401 is a 401 status code standing alone, not digits of a port,
// an address or a digest.
var httpStatus401 = regexp.MustCompile(`(?:^|[^\w.:/@-])401(?:[^\w.:/-]|$)`)

// PushError is a push the registry refused or could not take, naming the
// image, the registry and why (the kinds of a pull).
type PushError struct {
	Image    string
	Registry string
	Kind     PullErrorKind
	Err      error
}

func (e *PushError) Error() string {
	var hint string
	switch e.Kind {
	case PullAuth:
		hint = "authentication failed (401/denied): give credentials that may push to " + e.Registry + " (registries: in driftless.yaml, or Docker's config.json)"
	case PullUnreachable:
		hint = "registry unreachable"
	case PullUntrusted:
		hint = "TLS certificate not trusted: install the registry's CA on the engine's host as /etc/docker/certs.d/" + e.Registry + "/ca.crt"
	default:
		hint = "push failed"
	}
	return fmt.Sprintf("image %s could not be pushed to registry %s: %s: %s", e.Image, e.Registry, hint, engineerr.FirstLine(e.Err.Error()))
}

func (e *PushError) Unwrap() error { return e.Err }
