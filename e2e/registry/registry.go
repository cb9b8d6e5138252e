// Package registry starts a real image registry for end-to-end tests:
// Debian's docker-registry (the CNCF distribution registry) on a free
// port, with its own storage directory and htpasswd auth. Start serves
// plain HTTP on loopback (the engine allows 127.0.0.0/8 registries
// without TLS). StartTLS serves HTTPS with a certificate from a CA the
// test makes, installed for the engine as
// /etc/docker/certs.d/HOST:PORT/ca.crt (the engine reads that directory
// at each pull: no restart, no reconfiguration). The docker CLI logs in
// with a DOCKER_CONFIG of the test's own, never the machine's.
package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// Binary is where Debian's docker-registry package installs the registry.
const Binary = "/usr/bin/docker-registry"

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", as in image names.
	Host     string
	User     string
	Password string
	// CertsDir is the engine's trust directory for this registry
	// (/etc/docker/certs.d/HOST:PORT) when it serves TLS; "" for HTTP.
	CertsDir string
	// Verified: the engine checks this registry's certificate against
	// CertsDir. The engine skips the check for registries in its
	// insecure ranges (127.0.0.0/8 by default), so a TLS registry listens
	// on the host's docker0 address when it can.
	Verified bool
	// DockerConfig is a DOCKER_CONFIG directory whose config.json is
	// logged in to the registry (auths with base64 user:password).
	DockerConfig string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	out  *testenv.LockedBuffer
	tls  *tlsFiles
}

// Start runs a registry that accepts user/password over plain HTTP on
// loopback and stops it when the test ends. The test is skipped when the
// registry is not installed.
func Start(t testing.TB, user, password string) *Registry {
	t.Helper()
	return start(t, user, password, false)
}

// StartTLS runs a registry that accepts user/password over HTTPS, its
// CA installed for the engine under /etc/docker/certs.d (removed when
// the test ends).
func StartTLS(t testing.TB, user, password string) *Registry {
	t.Helper()
	return start(t, user, password, true)
}

func start(t testing.TB, user, password string, withTLS bool) *Registry {
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
	ip := "127.0.0.1"
	if withTLS {
		ip = secureIP()
	}
	host := freeAddr(t, ip)
	r := &Registry{Host: host, User: user, Password: password, dir: dir, done: make(chan struct{}), out: &testenv.LockedBuffer{}}
	httpCfg := fmt.Sprintf("{addr: %s}", host)
	if withTLS {
		r.tls = makeTLS(t, dir, ip)
		httpCfg = fmt.Sprintf("{addr: %s, tls: {certificate: %s, key: %s}}", host, r.tls.cert, r.tls.key)
		r.Verified = ip != "127.0.0.1"
		r.InstallCA(t)
	}
	config := filepath.Join(dir, "config.yml")
	write(t, config, fmt.Sprintf(`version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
http: %s
auth:
  htpasswd: {realm: driftless-e2e, path: %s}
`, filepath.Join(dir, "storage"), httpCfg, htpasswd))
	r.cmd = exec.Command(Binary, "serve", config)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(r.Stop)
	removeImagesAtEnd(t, host)
	r.waitReady(t)
	r.DockerConfig = r.ConfigDir(t, user, password)
	return r
}

// removeImagesAtEnd removes, when the test ends, every image reference
// on the engine that names host: what the test pushed or tagged there and
// what the agent pulled from it. A run of the suite would otherwise leave
// a HOST:PORT/tXXXX/web:v1 on the engine for each registry it started.
// Tests start their registry before they name their app, so this runs
// after the app's containers are gone and the images are deleted, not
// only untagged. Without --digests the list leaves Digest empty, and an
// image whose tag moved on (<none>) could not be named.
func removeImagesAtEnd(t testing.TB, host string) {
	t.Cleanup(func() {
		out, err := exec.Command("docker", "image", "ls", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}").Output()
		if err != nil {
			t.Logf("list images of %s: %v", host, err)
			return
		}
		var refs []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || !strings.HasPrefix(f[0], host+"/") {
				continue
			}
			if f[1] != "<none>" {
				refs = append(refs, f[0]+":"+f[1])
			} else if f[2] != "<none>" {
				refs = append(refs, f[0]+"@"+f[2])
			}
		}
		if len(refs) == 0 {
			return
		}
		if out, err := exec.Command("docker", append([]string{"image", "rm", "--force"}, refs...)...).CombinedOutput(); err != nil {
			t.Logf("remove images of %s: %v\n%s", host, err, out)
		}
	})
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
	hc := &http.Client{Timeout: 5 * time.Second}
	scheme := "http"
	if r.tls != nil {
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.tls.pool}}
		scheme = "https"
	}
	for {
		resp, err := hc.Get(scheme + "://" + r.Host + "/v2/")
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
// user:password for the registry (and any other hosts given, such as a
// Proxy's), as `docker login` writes it.
func (r *Registry) ConfigDir(t testing.TB, user, password string, hosts ...string) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	var entries []string
	for _, h := range append([]string{r.Host}, hosts...) {
		entries = append(entries, fmt.Sprintf(`%q: {"auth": %q}`, h, auth))
	}
	write(t, filepath.Join(dir, "config.json"), `{"auths": {`+strings.Join(entries, ", ")+`}}`)
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

func freeAddr(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// URL is the registry's base URL ("https://HOST" with TLS).
func (r *Registry) URL() string {
	if r.tls != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// HTTPClient trusts the registry's CA (when it serves TLS).
func (r *Registry) HTTPClient() *http.Client {
	hc := &http.Client{Timeout: 30 * time.Second}
	if r.tls != nil {
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.tls.pool}}
	}
	return hc
}

// Retag puts repo's manifest of tag from under each of the tags to, with
// the registry API (no docker push: the blobs are there already).
func (r *Registry) Retag(t testing.TB, repo, from string, to ...string) {
	t.Helper()
	hc := r.HTTPClient()
	req, err := http.NewRequest(http.MethodGet, r.URL()+"/v2/"+repo+"/manifests/"+from, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(r.User, r.Password)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.index.v1+json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("get manifest %s:%s: %v %s %s", repo, from, err, resp.Status, body)
	}
	ctype := resp.Header.Get("Content-Type")
	for _, tag := range to {
		req, err := http.NewRequest(http.MethodPut, r.URL()+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(r.User, r.Password)
		req.Header.Set("Content-Type", ctype)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("put manifest %s:%s: %s %s", repo, tag, resp.Status, out)
		}
	}
}
