package gitsource

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Sentinels for errors.Is. Their doc says what the sync loop should do next.
var (
	// ErrUnreachable: the git server did not answer (down, DNS, timeout,
	// 5xx). Keep serving the last good revision; retry with backoff.
	ErrUnreachable = errors.New("git server unreachable")
	// ErrAuth: the server or its host key was refused. A human must fix the
	// credentials or known_hosts; retry slowly.
	ErrAuth = errors.New("git authentication failed: check the credentials and, for ssh, the known_hosts file")
	// ErrRepoNotFound: the server says the repository does not exist (some
	// hosts also say this when credentials are missing). Needs a human.
	ErrRepoNotFound = errors.New("git repository not found: check the URL and the credentials")
	// ErrRefNotFound: the tracked branch, tag or commit does not exist on the
	// remote (or the remote is empty). Needs a human; retry slowly.
	ErrRefNotFound = errors.New("tracked git ref not found")
	// ErrPathMissing: the manifests path does not exist at that commit.
	ErrPathMissing = errors.New("manifests path missing in commit")
	// ErrCommitNotFound: Files/Revision got a SHA that is not in the local
	// clone (never fetched, or a typo).
	ErrCommitNotFound = errors.New("commit not in the local clone")
)

// sourceError carries a message that has already been scrubbed of
// credentials. It deliberately does not unwrap to the raw go-git error,
// whose text may contain them; only to the sentinel and, if any, the
// context error.
type sourceError struct {
	msg  string
	errs []error
}

func (e *sourceError) Error() string   { return e.msg }
func (e *sourceError) Unwrap() []error { return e.errs }

// newError builds "<what>: <kind>: <cause>" with secrets removed.
func (s *Source) newError(kind error, what string, cause error) error {
	var parts []string
	if what != "" {
		parts = append(parts, what)
	}
	var chain []error
	if kind != nil {
		parts = append(parts, kind.Error())
		chain = append(chain, kind)
	}
	if cause != nil {
		parts = append(parts, cause.Error())
		for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
			if errors.Is(cause, ctxErr) {
				chain = append(chain, ctxErr)
			}
		}
	}
	return &sourceError{msg: s.scrub(strings.Join(parts, ": ")), errs: chain}
}

// classify maps a go-git/transport error to one of the sentinels, or nil
// when it is not a known network/auth condition.
func classify(err error) error {
	var keyErr *knownhosts.KeyError
	var httpErr *githttp.Err
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.Is(err, context.Canceled):
		return nil // shutting down, not a server problem
	case errors.Is(err, context.DeadlineExceeded):
		return ErrUnreachable
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod),
		errors.As(err, &keyErr):
		return ErrAuth
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrRepoNotFound
	case errors.Is(err, transport.ErrEmptyRemoteRepository),
		errors.Is(err, git.NoMatchingRefSpecError{}):
		return ErrRefNotFound
	case errors.As(err, &httpErr):
		if httpErr.StatusCode() >= 500 || httpErr.StatusCode() == 429 {
			return ErrUnreachable
		}
		return nil
	case errors.As(err, &netErr), errors.As(err, &urlErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ErrUnreachable
	}
	// x/crypto/ssh does not always wrap its handshake errors.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unable to authenticate"),
		strings.Contains(msg, "knownhosts:"),
		strings.Contains(msg, "host key"):
		return ErrAuth
	case strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "no such host"),
		strings.Contains(msg, "i/o timeout"),
		strings.Contains(msg, "connection reset"):
		return ErrUnreachable
	}
	return nil
}

// userinfoInURL matches the "user:password@" part of scheme URLs.
var userinfoInURL = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@`)

// scrub removes credentials from text meant for errors and logs: the
// configured password/passphrase wherever it appears and any userinfo in
// URLs.
func (s *Source) scrub(text string) string {
	return scrubSecrets(text, s.cfg.Auth.Password, s.cfg.Auth.SSHKeyPassphrase)
}

func scrubSecrets(text string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "xxxxx")
		}
	}
	return userinfoInURL.ReplaceAllString(text, "${1}xxxxx@")
}
