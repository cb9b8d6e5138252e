package gitsource

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// DefaultTimeout bounds one Fetch when Config.Timeout is zero. It is
// generous because the first fetch is a full clone.
const DefaultTimeout = 5 * time.Minute

// defaultBranch is tracked when the remote does not advertise HEAD.
const defaultBranch = "main"

// Config says which repository, ref and path to track.
type Config struct {
	URL    string
	Branch string // one of Branch, Tag, Commit; all empty = remote HEAD
	Tag    string
	Commit string // full or abbreviated (7+ hex) SHA
	Path   string // sub-path holding the manifests; "" or "." = repo root
	Dir    string // where the clone lives (created if missing)
	Auth   Auth
	Logger *slog.Logger
	// Timeout bounds one Fetch (0 = DefaultTimeout); ctx may end it sooner.
	Timeout time.Duration
	// AllowInsecureTransport accepts http://, git://, file:// and local
	// paths, which New refuses by default (see CheckTransport).
	AllowInsecureTransport bool
}

// Auth holds credentials. They come from here only, never from the URL,
// so that they cannot leak through the URL into logs, errors or the
// clone's config file.
type Auth struct {
	Username, Password string // HTTPS basic; a token goes in Password (Username defaults to "git")

	SSHKeyFile       string
	SSHKeyPassphrase string
	// KnownHostsFile is required for ssh unless InsecureIgnoreHostKey.
	KnownHostsFile        string
	InsecureIgnoreHostKey bool
}

// FetchResult is what one Fetch found.
type FetchResult struct {
	Revision Revision // head of the tracked ref after the fetch
	// Changed is true on the first Fetch of a Source and whenever the head
	// differs from the previous Fetch.
	Changed bool
	// ForcePushed is true when the new head is not a descendant of
	// Previous: history was rewritten (force-push, or a tag moved sideways).
	ForcePushed bool
	// Previous is the head before this fetch ("" if none is known; after a
	// restart it is the head stored in the clone).
	Previous string
}

// Source polls one ref of one repository. Methods are safe for concurrent
// use; they serialize on the repository because go-git's storage is not
// safe for concurrent use.
type Source struct {
	cfg      Config
	url      string // normalized, credential-free
	protocol string
	path     string // cleaned manifests path, "" = root
	auth     transport.AuthMethod
	log      *slog.Logger

	mu      sync.Mutex
	repo    *git.Repository
	last    string // head returned by the previous Fetch (or stored in the clone)
	fetched bool   // Fetch has succeeded once on this Source
	// suspect: reading the clone failed in a way the network cannot
	// explain; the next Fetch clones again if it fails the same way.
	suspect bool
}

var hexSHA = regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`)

// New validates cfg and prepares authentication. It does no network I/O
// and does not touch cfg.Dir yet.
func New(cfg Config) (*Source, error) {
	s := &Source{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.URL == "" {
		return nil, errors.New("gitsource: repository URL is empty")
	}
	if cfg.Dir == "" {
		return nil, errors.New("gitsource: clone directory is empty")
	}
	set := 0
	for _, v := range []string{cfg.Branch, cfg.Tag, cfg.Commit} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("gitsource: set at most one of branch, tag and commit")
	}
	s.cfg.Branch = strings.TrimPrefix(cfg.Branch, "refs/heads/")
	s.cfg.Tag = strings.TrimPrefix(cfg.Tag, "refs/tags/")
	if s.cfg.Branch != "" {
		if err := plumbing.NewBranchReferenceName(s.cfg.Branch).Validate(); err != nil {
			return nil, fmt.Errorf("gitsource: invalid branch name %q", cfg.Branch)
		}
	}
	if s.cfg.Tag != "" {
		if err := plumbing.NewTagReferenceName(s.cfg.Tag).Validate(); err != nil {
			return nil, fmt.Errorf("gitsource: invalid tag name %q", cfg.Tag)
		}
	}
	if cfg.Commit != "" && !hexSHA.MatchString(cfg.Commit) {
		return nil, fmt.Errorf("gitsource: commit %q is not a SHA (7 to 40 hex digits)", cfg.Commit)
	}
	s.cfg.Commit = strings.ToLower(cfg.Commit)

	p, err := cleanSubPath(cfg.Path)
	if err != nil {
		return nil, err
	}
	s.path = p

	if !cfg.AllowInsecureTransport {
		if err := CheckTransport(cfg.URL); err != nil {
			return nil, fmt.Errorf("gitsource: %w; allow insecure transports for this source to accept it", err)
		}
	}
	if err := s.parseURL(); err != nil {
		return nil, err
	}
	if err := s.setupAuth(); err != nil {
		return nil, err
	}
	return s, nil
}

func cleanSubPath(p string) (string, error) {
	p = strings.Trim(filepath.ToSlash(p), "/")
	p = path.Clean(p)
	if p == "." {
		return "", nil
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("gitsource: manifests path %q leaves the repository", p)
	}
	return p, nil
}

// parseURL normalizes the URL and rejects embedded credentials.
func (s *Source) parseURL() error {
	raw := s.cfg.URL
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return fmt.Errorf("gitsource: invalid repository URL %q: %v", scrubSecrets(raw), scrubSecrets(err.Error()))
	}
	s.protocol = ep.Protocol
	switch ep.Protocol {
	case "http", "https":
		if ep.User != "" || ep.Password != "" {
			return fmt.Errorf("gitsource: repository URL %s contains credentials; remove them and set the username/token via the git auth settings instead", scrubSecrets(raw))
		}
		s.url = raw
	case "ssh":
		if ep.Password != "" {
			return fmt.Errorf("gitsource: repository URL %s contains a password; use an SSH key instead", scrubSecrets(raw))
		}
		s.url = raw
	case "git":
		s.url = raw
	case "file":
		// An absolute path keeps the URL stable across working directories,
		// which matters for reusing the clone.
		p := ep.Path
		if strings.HasPrefix(raw, "file://") {
			if u, err := url.Parse(raw); err == nil {
				p = u.Path
			}
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("gitsource: repository path %q: %v", raw, err)
		}
		s.url = abs
	default:
		return fmt.Errorf("gitsource: unsupported repository URL scheme %q (use https, ssh, git or a local path)", ep.Protocol)
	}
	return nil
}

func (s *Source) setupAuth() error {
	a := s.cfg.Auth
	hasHTTP := a.Username != "" || a.Password != ""
	hasSSH := a.SSHKeyFile != "" || a.SSHKeyPassphrase != "" || a.KnownHostsFile != "" || a.InsecureIgnoreHostKey
	switch s.protocol {
	case "http", "https":
		if hasSSH {
			return fmt.Errorf("gitsource: SSH key settings given for %s URL %s; use username/token, or an ssh:// URL", s.protocol, s.url)
		}
		if hasHTTP {
			user := a.Username
			if user == "" {
				user = "git"
			}
			s.auth = &githttp.BasicAuth{Username: user, Password: a.Password}
			if s.protocol == "http" {
				s.log.Warn("git credentials are sent unencrypted over plain http", "url", s.url)
			}
		}
	case "ssh":
		if hasHTTP {
			return fmt.Errorf("gitsource: username/token given for ssh URL %s; use an SSH key, or an https:// URL", s.url)
		}
		return s.setupSSHAuth(a)
	default:
		if hasHTTP || hasSSH {
			return fmt.Errorf("gitsource: credentials given for %s URL %s, which does not use them", s.protocol, s.url)
		}
	}
	return nil
}

// setupSSHAuth prepares key authentication and host key checking.
func (s *Source) setupSSHAuth(a Auth) error {
	if a.SSHKeyFile == "" {
		return fmt.Errorf("gitsource: ssh URL %s needs an SSH key file", s.url)
	}
	var hostKeys gossh.HostKeyCallback
	switch {
	case a.InsecureIgnoreHostKey:
		s.log.Warn("ssh host key checking is disabled for the git source", "url", s.url)
		hostKeys = gossh.InsecureIgnoreHostKey()
	case a.KnownHostsFile == "":
		return fmt.Errorf("gitsource: ssh URL %s needs a known_hosts file (or explicitly disable host key checking)", s.url)
	default:
		cb, err := gitssh.NewKnownHostsCallback(a.KnownHostsFile)
		if err != nil {
			return fmt.Errorf("gitsource: known_hosts file %s: %v", a.KnownHostsFile, err)
		}
		hostKeys = cb
	}
	ep, err := transport.NewEndpoint(s.url)
	if err != nil {
		return fmt.Errorf("gitsource: invalid repository URL %s: %v", s.url, err)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, a.SSHKeyPassphrase)
	if err != nil {
		return fmt.Errorf("gitsource: SSH key file %s: %s", a.SSHKeyFile, scrubSecrets(err.Error(), a.SSHKeyPassphrase))
	}
	keys.HostKeyCallback = hostKeys
	s.auth = keys
	return nil
}

// ErrInsecureTransport: the repository URL uses a transport that lets
// someone other than the repository's owner change what is deployed. It
// is a configuration error: a human must switch to https:// or ssh://, or
// opt in.
var ErrInsecureTransport = errors.New("insecure git transport")

// InsecureTransportError says which URL was refused and why. URL has no
// credentials, so the error is safe to log and show.
type InsecureTransportError struct {
	URL    string // credential-free
	Scheme string // http, git or file ("file" also for local paths)
	Reason string
}

func (e *InsecureTransportError) Error() string {
	return fmt.Sprintf("repository %s is refused: %s", e.URL, e.Reason)
}

func (e *InsecureTransportError) Unwrap() error { return ErrInsecureTransport }

// CheckTransport accepts https://, ssh:// and scp-like user@host:path
// URLs, and refuses http://, git://, file:// and local paths with an
// *InsecureTransportError (errors.Is ErrInsecureTransport). Only the
// transport is judged: a URL that is malformed in other ways passes here
// and fails in New. The URL in the error carries no credentials.
func CheckTransport(raw string) error {
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil // not a URL at all: New says so, with its own message
	}
	var reason string
	switch strings.ToLower(ep.Protocol) {
	case "https", "ssh":
		return nil
	case "http":
		reason = "http:// is unencrypted and unauthenticated: anyone on the network path can change what is deployed and read the credentials sent"
	case "git":
		reason = "git:// is unauthenticated and unencrypted: anyone on the network path can change what is deployed"
	case "file":
		reason = "a local repository is not checked by any server: anyone who can write to it on this host can change what is deployed"
	default:
		return nil // unsupported schemes are New's to refuse
	}
	return &InsecureTransportError{URL: RedactURL(raw), Scheme: strings.ToLower(ep.Protocol), Reason: reason}
}

// RedactURL drops the credentials of a scheme URL ("http://user:pass@h/r"
// becomes "http://h/r") and leaves scp-like URLs and paths as they are:
// their user part is a login name, never a secret.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !strings.Contains(raw, "://") {
		return scrubSecrets(raw)
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// Describe is the credential-free URL plus ref and path, for status and UI.
func (s *Source) Describe() string {
	var ref string
	switch {
	case s.cfg.Branch != "":
		ref = "branch " + s.cfg.Branch
	case s.cfg.Tag != "":
		ref = "tag " + s.cfg.Tag
	case s.cfg.Commit != "":
		ref = "commit " + s.cfg.Commit
	default:
		ref = "default branch"
	}
	p := s.path
	if p == "" {
		p = "."
	}
	return fmt.Sprintf("%s (%s, path %s)", s.url, ref, p)
}

// refName names the tracked ref in messages.
func (s *Source) refName() string {
	switch {
	case s.cfg.Branch != "":
		return "branch " + s.cfg.Branch
	case s.cfg.Tag != "":
		return "tag " + s.cfg.Tag
	case s.cfg.Commit != "":
		return "commit " + s.cfg.Commit
	}
	return "default branch (remote HEAD)"
}
