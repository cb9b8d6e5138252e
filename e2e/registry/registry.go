// Package registry starts a real image registry for end-to-end tests:
// Debian's docker-registry (the CNCF distribution registry) on a free
// loopback port, with its own storage directory and htpasswd auth. The
// engine treats 127.0.0.0/8 registries as insecure-allowed, so images
// are pushed to it over plain HTTP. The docker CLI logs in with a
// DOCKER_CONFIG of the test's own, never the machine's.
package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Binary is where Debian's docker-registry package installs the registry.
const Binary = "/usr/bin/docker-registry"

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", as in image names.
	Host     string
	User     string
	Password string
	// DockerConfig is a DOCKER_CONFIG directory whose config.json is
	// logged in to the registry (auths with base64 user:password).
	DockerConfig string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	out  *testenv.LockedBuffer
}

// Start runs a registry that accepts user/password and stops it when the
// test ends. The test is skipped when the registry is not installed.
func Start(t testing.TB, user, password string) *Registry {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("%s not installed (apt-get install docker-registry): %v", Binary, err)
	}
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	write(t, htpasswd, user+":"+string(hash)+"\n")
	host := freeAddr(t)
	config := filepath.Join(dir, "config.yml")
	write(t, config, fmt.Sprintf(`version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
http: {addr: %s}
auth:
  htpasswd: {realm: driftless-e2e, path: %s}
`, filepath.Join(dir, "storage"), host, htpasswd))
	r := &Registry{Host: host, User: user, Password: password, dir: dir, done: make(chan struct{}), out: &testenv.LockedBuffer{}}
	r.cmd = exec.Command(Binary, "serve", config)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(r.Stop)
	r.waitReady(t)
	r.DockerConfig = r.ConfigDir(t, user, password)
	return r
}

// Stop ends the registry (SIGKILL: it holds nothing worth a clean exit).
func (r *Registry) Stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

func (r *Registry) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			// 401 without credentials: it serves and checks auth.
			if resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-r.done:
			t.Fatalf("registry exited: %s", r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry did not answer on %s within 20s: %v\n%s", r.Host, err, r.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ConfigDir writes a DOCKER_CONFIG directory whose config.json holds
// user:password for the registry, as `docker login` writes it.
func (r *Registry) ConfigDir(t testing.TB, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	write(t, filepath.Join(dir, "config.json"), fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, r.Host, auth))
	return dir
}

// Push tags the local image as HOST/repo:tag, pushes it with the test's
// own docker configuration, and returns the reference and the pushed
// manifest's digest ("sha256:…").
func (r *Registry) Push(t testing.TB, local, repoTag string) (ref, digest string) {
	t.Helper()
	ref = r.Host + "/" + repoTag
	r.docker(t, "tag", local, ref)
	out := r.docker(t, "push", ref)
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "sha256:") {
			digest = f
		}
	}
	if digest == "" {
		t.Fatalf("docker push %s printed no digest:\n%s", ref, out)
	}
	return ref, digest
}

// RemoveLocal removes the engine's copy of ref (not the image it points
// at, if other tags hold it), so the next use must pull.
func (r *Registry) RemoveLocal(t testing.TB, ref string) {
	t.Helper()
	cmd := exec.Command("docker", "--config", r.DockerConfig, "image", "rm", ref)
	_ = cmd.Run()
}

func (r *Registry) docker(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", append([]string{"--config", r.DockerConfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
