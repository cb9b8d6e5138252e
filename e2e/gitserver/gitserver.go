// Package gitserver runs real git servers on loopback for tests: git
// daemon (git://) and git http-backend (http://, optionally behind basic
// auth). Repositories are bare repos under a base directory; Repo is a
// working clone that commits and pushes to one, as a user would.
//
// Both servers ship with the git package itself (under `git --exec-path`);
// nothing beyond `git` needs to be installed.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a running git server; Stop simulates an outage.
type Server struct {
	URL   string // base URL; append "/<name>.git"
	stop  func()
	start func(t testing.TB) func() // serves again on the same address; nil for HTTP
}

// Stop shuts the server down; it is also done at test cleanup.
func (s *Server) Stop() { s.stop() }

// Start serves again on the same address and base directory after Stop,
// as a git host coming back from an outage. Only git daemon servers can.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.start == nil {
		t.Fatal("gitserver: only a git daemon server can be started again")
	}
	s.stop()
	s.stop = s.start(t)
}

// StartDaemon serves every repository under baseDir over git:// and
// returns the base URL.
func StartDaemon(t testing.TB, baseDir string) string {
	return RunDaemon(t, baseDir).URL
}

// StartHTTP serves every repository under baseDir over smart HTTP and
// returns the base URL. With a non-empty user, requests need that basic
// auth.
func StartHTTP(t testing.TB, baseDir, user, pass string) string {
	return RunHTTP(t, baseDir, user, pass).URL
}

// RunDaemon is StartDaemon returning a stoppable Server.
func RunDaemon(t testing.TB, baseDir string) *Server {
	t.Helper()
	port := freePort(t)
	start := func(t testing.TB) func() { return startDaemon(t, baseDir, port) }
	return &Server{
		URL:   "git://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		stop:  start(t),
		start: start,
	}
}

// startDaemon runs git daemon on port until the returned stop is called
// (or the test ends).
func startDaemon(t testing.TB, baseDir string, port int) (stop func()) {
	t.Helper()
	// Run git-daemon directly: `git daemon` would fork it as a child that
	// outlives a kill of the wrapper.
	cmd := exec.Command(execPath(t, "git-daemon"),
		"--export-all", "--base-path="+baseDir, "--reuseaddr", "--informative-errors",
		// The default limit, 32, makes git daemon kill a running fetch to
		// admit a new one; seventeen apps polling one daemon hit it, and
		// the agent then reports a Git server fault the test did not make.
		"--max-connections=0",
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), baseDir)
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start git daemon: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("git daemon exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon not listening on %s: %v; stderr: %s", addr, err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stop
}

// RunHTTP is StartHTTP returning a stoppable Server.
func RunHTTP(t testing.TB, baseDir, user, pass string) *Server {
	t.Helper()
	var handler http.Handler = &cgi.Handler{
		Path:   execPath(t, "git-http-backend"),
		Stderr: io.Discard, // "not a git repository" noise for 404 tests
		Env: append(gitEnv(),
			"GIT_PROJECT_ROOT="+baseDir,
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
	if user != "" {
		backend := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			backend.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(handler) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, stop: srv.Close}
}

// ClosedURL returns a git:// URL on a loopback port nobody listens on.
func ClosedURL(t testing.TB, name string) string {
	return "git://127.0.0.1:" + strconv.Itoa(freePort(t)) + "/" + name
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func execPath(t testing.TB, name string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v (is git installed?)", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not available: %v", name, err)
	}
	return p
}

// gitEnv isolates git from the user's and system's configuration so tests
// behave the same everywhere.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
	)
}
