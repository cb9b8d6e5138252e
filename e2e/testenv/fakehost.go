package testenv

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeHost stands in, on loopback, for a notification destination
// (shoutrrr's generic webhook, POST /hook: HookURL) and for the commit
// status API GitHub and Gitea share (POST [base]/repos/OWNER/NAME/statuses/SHA),
// and keeps what arrived.
type FakeHost struct {
	t        testing.TB
	Addr     string // host:port
	mu       sync.Mutex
	messages []HostMessage
	statuses []HostStatus
}

// HostMessage is one notification the fake host received.
type HostMessage struct {
	At             time.Time
	Title, Message string
}

// HostStatus is one commit status the fake host received.
type HostStatus struct {
	Repo, SHA, State, Context, Description, TargetURL string
	Authorization, Accept                             string // the request's headers
}

var statusPath = regexp.MustCompile(`/repos/([^/]+/[^/]+)/statuses/([^/]+)$`)

// StartFakeHost serves until the test ends.
func StartFakeHost(t testing.TB) *FakeHost {
	t.Helper()
	h := &FakeHost{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.Addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return h
}

// HookURL is the shoutrrr URL of the fake host's webhook.
func (h *FakeHost) HookURL() string {
	return "generic://" + h.Addr + "/hook?template=json&disabletls=yes"
}

func (h *FakeHost) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]string
	if err := json.Unmarshal(data, &body); err != nil {
		h.t.Errorf("%s %s: body is not a JSON object of strings: %s", r.Method, r.URL.Path, data)
	}
	if r.Method != http.MethodPost {
		h.t.Errorf("%s %s: want POST", r.Method, r.URL.Path)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := statusPath.FindStringSubmatch(r.URL.Path)
	switch {
	case r.URL.Path == "/hook":
		h.messages = append(h.messages, HostMessage{At: time.Now(), Title: body["title"], Message: body["message"]})
	case m != nil:
		h.statuses = append(h.statuses, HostStatus{Repo: m[1], SHA: m[2], State: body["state"], Context: body["context"],
			Description: body["description"], TargetURL: body["target_url"],
			Authorization: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")})
		w.WriteHeader(http.StatusCreated)
	default:
		h.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// Messages are the messages received, in arrival order.
func (h *FakeHost) Messages() []HostMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.messages)
}

// Titles are the titles of the messages that contain want, in arrival
// order.
func (h *FakeHost) Titles(want string) []string {
	var out []string
	for _, m := range h.Messages() {
		if strings.Contains(m.Title, want) {
			out = append(out, m.Title)
		}
	}
	return out
}

// Message is the first message whose title contains titlePart.
func (h *FakeHost) Message(titlePart string) (HostMessage, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.messages {
		if strings.Contains(m.Title, titlePart) {
			return m, true
		}
	}
	return HostMessage{}, false
}

// Statuses are the commit statuses posted for sha, in order.
func (h *FakeHost) Statuses(sha string) []HostStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []HostStatus
	for _, s := range h.statuses {
		if s.SHA == sha {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor polls ok until it holds, failing the test after timeout with
// everything that arrived.
func (h *FakeHost) WaitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			h.mu.Lock()
			defer h.mu.Unlock()
			t.Fatalf("%s: not within %s; messages %+v, statuses %+v", what, timeout, h.messages, h.statuses)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
