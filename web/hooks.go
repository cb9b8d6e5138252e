package web

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/web/webhook"
)

// secretFor is the secret an app's webhooks are signed with.
func (s *Server) secretFor(src AppSource) string {
	if src.WebhookSecret != "" {
		return src.WebhookSecret
	}
	return s.opts.WebhookSecret
}

func (s *Server) webhook(p webhook.Provider) gin.HandlerFunc {
	return func(c *gin.Context) {
		result := func(code int, res string, body gin.H) {
			s.webhooks.WithLabelValues(p.Name, res).Inc()
			c.JSON(code, body)
		}
		fail := func(code int, res, msg string) {
			s.log.Warn("webhook refused", "provider", p.Name, "status", code, "reason", msg, "remote", c.Request.RemoteAddr)
			result(code, res, gin.H{"error": msg})
		}

		client := clientOf(c.Request)
		body, refused := s.receiveHook(c, client)
		if refused != nil {
			fail(refused.code, refused.result, refused.msg)
			return
		}

		sources := s.opts.Sources()
		sig := p.Signature(c.Request.Header)
		if sig == "" {
			fail(http.StatusUnauthorized, "unauthorized", "unsigned webhook: set the webhook secret in "+p.Name+" so it sends "+p.SigHeader)
			return
		}
		secrets := s.knownSecrets(sources)
		if len(secrets) == 0 {
			fail(http.StatusUnauthorized, "unauthorized", "no webhook secret is configured: start the agent with --webhook-secret or give the app a webhook secret")
			return
		}
		if !slices.ContainsFunc(secrets, func(sec string) bool { return p.Verify(sig, body, sec) }) {
			s.failures.fail(client)
			fail(http.StatusUnauthorized, "unauthorized", "signature in "+p.SigHeader+" does not match any configured webhook secret")
			return
		}

		ev, err := p.Parse(c.Request.Header, body)
		if err != nil {
			fail(http.StatusBadRequest, "bad_request", "malformed "+p.Name+" payload: "+err.Error())
			return
		}
		if ev.Ping {
			result(http.StatusOK, "ping", gin.H{"ok": "ping received; pushes to tracked branches will queue a sync"})
			return
		}
		if ev.Event != "" {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": fmt.Sprintf("event %q is not a push", ev.Event)})
			return
		}

		sameRepo := matchRepo(sources, ev.Repos)
		if len(sameRepo) == 0 {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": "no app tracks repository " + firstOr(ev.Repos, "(none given)")})
			return
		}
		// The signature must come from a secret of an app tracking this
		// repository: a secret given to one team's repo must not trigger
		// another's.
		var authorized []AppSource
		for _, src := range sameRepo {
			if sec := s.secretFor(src); sec != "" && p.Verify(sig, body, sec) {
				authorized = append(authorized, src)
			}
		}
		if len(authorized) == 0 {
			fail(http.StatusUnauthorized, "unauthorized", "signature does not match the webhook secret of any app tracking "+firstOr(ev.Repos, "this repository"))
			return
		}
		var targets []string
		var follows []string
		for _, src := range authorized {
			if matchRef(src, ev.Refs) {
				targets = append(targets, src.Name)
			} else {
				follows = append(follows, trackedRef(src))
			}
		}
		if len(targets) == 0 {
			result(http.StatusAccepted, "ignored", gin.H{"ignored": fmt.Sprintf("push to %s: apps tracking this repository follow %s",
				strings.Join(ev.Refs, ", "), strings.Join(follows, ", "))})
			return
		}
		var queued []string
		for _, app := range targets {
			if err := s.opts.Agent.Enqueue(app, "webhook"); err != nil {
				s.log.Warn("webhook could not queue a sync", "app", app, "err", err)
				continue
			}
			queued = append(queued, app)
		}
		if len(queued) == 0 {
			fail(http.StatusServiceUnavailable, "error", "the agent did not accept the sync; see its log")
			return
		}
		s.log.Info("webhook queued sync", "provider", p.Name, "apps", queued, "refs", ev.Refs)
		result(http.StatusAccepted, "queued", gin.H{"queued": queued})
	}
}

// hookRefusal is why a delivery is refused: status, metric result and
// message.
type hookRefusal struct {
	code        int
	result, msg string
}

// receiveHook reads the payload of a client not refused for too many bad
// signatures.
func (s *Server) receiveHook(c *gin.Context, client string) ([]byte, *hookRefusal) {
	if wait := s.failures.retryAfter(client); wait > 0 {
		c.Header("Retry-After", retryAfterSeconds(wait))
		return nil, &hookRefusal{http.StatusTooManyRequests, "rate_limited", "too many wrongly signed webhooks from this address; retry after the Retry-After seconds"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes))
	if err == nil {
		return body, nil
	}
	switch code := bodyStatus(err); code {
	case http.StatusRequestEntityTooLarge:
		return nil, &hookRefusal{code, "too_large", fmt.Sprintf("payload exceeds %d bytes", s.opts.MaxBodyBytes)}
	case http.StatusRequestTimeout:
		return nil, &hookRefusal{code, "timeout", s.bodyErrorMessage(err)}
	}
	return nil, &hookRefusal{http.StatusBadRequest, "bad_request", "reading payload: " + err.Error()}
}

// knownSecrets are the distinct webhook secrets of all apps and the
// global one.
func (s *Server) knownSecrets(sources []AppSource) []string {
	var secrets []string
	for _, src := range sources {
		if sec := s.secretFor(src); sec != "" && !slices.Contains(secrets, sec) {
			secrets = append(secrets, sec)
		}
	}
	if s.opts.WebhookSecret != "" && !slices.Contains(secrets, s.opts.WebhookSecret) {
		secrets = append(secrets, s.opts.WebhookSecret)
	}
	return secrets
}

func firstOr(xs []string, def string) string {
	if len(xs) > 0 {
		return xs[0]
	}
	return def
}

func trackedRef(src AppSource) string {
	switch {
	case src.BranchMatch != "":
		return "branches " + src.BranchMatch
	case src.Tag != "":
		return "refs/tags/" + src.Tag
	case src.Branch != "":
		return "refs/heads/" + src.Branch
	}
	return "the default branch"
}

func matchRepo(sources []AppSource, repos []string) []AppSource {
	var norm []string
	for _, r := range repos {
		if n := webhook.NormalizeRepo(r); n != "" {
			norm = append(norm, n)
		}
	}
	var out []AppSource
	for _, src := range sources {
		if n := webhook.NormalizeRepo(src.Repo); n != "" && slices.Contains(norm, n) {
			out = append(out, src)
		}
	}
	return out
}

// matchRef reports whether a push of refs concerns the app. An app without
// branch or tag follows the remote's default branch, which a push payload
// does not reliably name, so any branch push matches: a spare pass only
// costs a fetch.
func matchRef(src AppSource, refs []string) bool {
	if len(refs) == 0 {
		return true
	}
	for _, ref := range refs {
		switch {
		case src.BranchMatch != "":
			// A source of previews: a push to (or the deletion of) any
			// matching branch changes its set of apps.
			if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
				if m, _ := path.Match(src.BranchMatch, b); m {
					return true
				}
			}
		case src.Tag != "":
			if ref == "refs/tags/"+src.Tag {
				return true
			}
		case src.Branch != "":
			if ref == "refs/heads/"+src.Branch {
				return true
			}
		default:
			if strings.HasPrefix(ref, "refs/heads/") {
				return true
			}
		}
	}
	return false
}
