package web

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
)

// The tests in this file check what the agent's web face shows and allows
// to a client on the network, against the real binary, a git daemon and
// the real engine.

const webToken = "e2e-websec-token-4f1c"

// webRepo points an app at a repository the git daemon does not have, so
// the agent stays not ready with an error naming the app (something for
// /readyz to hide) and deploys nothing; it returns the source flags.
func webRepo(t *testing.T) (app string, sourceFlags []string) {
	t.Helper()
	app = testenv.UniqueApp(t)
	base := t.TempDir()
	server := gitserver.RunDaemon(t, base)
	gitserver.Init(t, base, "infra")
	return app, []string{"run", "--repo", server.URL + "/absent.git", "--branch", "main", "--path", "apps/" + app, "--app", app, "--interval", "1s", "--allow-insecure-transport"}
}

// webAgent is a driftless process started on a listen address of the
// test's choosing (testenv.StartAgent always listens on loopback, plain
// HTTP).
type webAgent struct {
	base string // scheme://127.0.0.1:port
	port string
	http *http.Client
	out  *testenv.LockedBuffer
	done chan struct{}
}

// freeWildcardPort is a port nobody listens on, on any address.
func freeWildcardPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// startWebAgent runs `driftless args... --listen listen --data DIR` and
// waits until /healthz answers 200 through client at scheme://127.0.0.1.
func startWebAgent(t *testing.T, env []string, scheme string, client *http.Client, listen string, args ...string) *webAgent {
	t.Helper()
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatal(err)
	}
	a := &webAgent{base: scheme + "://127.0.0.1:" + port, port: port, http: client, out: &testenv.LockedBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(testenv.DriftlessBinary(t), append(args, "--listen", listen, "--data", t.TempDir())...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-a.done
			t.Errorf("driftless did not stop within 20s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("driftless output:\n%s", a.out)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := client.Get(a.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		select {
		case <-a.done:
			t.Fatalf("driftless exited before serving:\n%s", a.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("driftless did not serve /healthz within 30s:\n%s", a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webGet fetches url with the optional bearer token and returns status and
// body.
func webGet(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func withoutEnv(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// TestWebExposedListenNeedsToken: on 0.0.0.0 without a token the agent
// refuses to start and says how to set one; with --insecure-no-token it
// starts, warns in its log and on every page, and still shows a network
// client no app state.
func TestWebExposedListenNeedsToken(t *testing.T) {
	t.Parallel()
	app, source := webRepo(t)
	listen := "0.0.0.0:" + freeWildcardPort(t)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, code := testenv.RunEnv(t, ctx, append(os.Environ(), "DRIFTLESS_API_TOKEN="), t.TempDir(), append(source, "--listen", listen, "--data", t.TempDir())...)
	if code == 0 {
		t.Fatalf("driftless run --listen %s without a token exited 0:\n%s", listen, out)
	}
	for _, want := range []string{"refusing to listen on " + listen, "--api-token-file", "DRIFTLESS_API_TOKEN", "apiTokenFile", "--insecure-no-token"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal does not mention %q:\n%s", want, out)
		}
	}

	a := startWebAgent(t, withoutEnv("DRIFTLESS_API_TOKEN"), "http", &http.Client{Timeout: 10 * time.Second}, listen,
		append(source, "--insecure-no-token")...)
	// The warning follows the "listening" line the start waits for: give
	// the agent a moment to write it.
	warned := func() bool {
		logs := a.out.String()
		return strings.Contains(logs, "INSECURE") && strings.Contains(logs, "without an API token")
	}
	for deadline := time.Now().Add(10 * time.Second); !warned() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !warned() {
		t.Errorf("no warning in the log:\n%s", a.out.String())
	}
	if code, page := webGet(t, a.http, a.base+"/", ""); code != http.StatusOK || !strings.Contains(page, "Insecure") || !strings.Contains(page, app) {
		t.Errorf("dashboard from loopback: status %d, warning shown %v, app shown %v", code, strings.Contains(page, "Insecure"), strings.Contains(page, app))
	}

	// The same port from this machine's network address.
	ip := nonLoopbackIP(t)
	if ip == "" {
		t.Log("no non-loopback address on this machine: network client checks skipped")
		return
	}
	netBase := "http://" + net.JoinHostPort(ip, a.port)
	t.Logf("network client checks against %s", netBase)
	for _, path := range []string{"/api/v1/apps", "/"} {
		if code, body := webGet(t, a.http, netBase+path, ""); code != http.StatusForbidden || strings.Contains(body, app) {
			t.Errorf("network read of %s: status %d %.200s", path, code, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, netBase+"/api/v1/apps/"+app+"/sync", nil)
	if resp, err := a.http.Do(req); err != nil {
		t.Errorf("network write: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden {
		t.Errorf("network write without a token: status %d, want 403", resp.StatusCode)
	}
	code, body := webGet(t, a.http, netBase+"/readyz", "")
	if code != http.StatusServiceUnavailable || body != "not-ready" {
		t.Errorf("/readyz from the network: %d %q, want 503 not-ready", code, body)
	}
}

func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestWebLoopbackNotTrusted: with --trust-loopback=false a loopback
// client needs the token to write, and /readyz shows it no app names or
// messages; the token shows them.
func TestWebLoopbackNotTrusted(t *testing.T) {
	t.Parallel()
	app, source := webRepo(t)
	env := append(os.Environ(), "DRIFTLESS_API_TOKEN="+webToken)
	a := testenv.StartAgentEnv(t, env, t.TempDir(), append(source, "--trust-loopback=false")...)
	client := &http.Client{Timeout: 10 * time.Second}

	// Wait for the failed fetch, so /readyz has something to hide.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := webGet(t, client, a.URL+"/readyz", webToken)
		if code == http.StatusServiceUnavailable && strings.Contains(body, app) && strings.Contains(body, "absent") {
			t.Logf("/readyz with the token: %.300s", body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the token never gave the reason: %d %q", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	code, body := webGet(t, client, a.URL+"/readyz", "")
	if code != http.StatusServiceUnavailable || body != "not-ready" {
		t.Errorf("/readyz without the token: %d %q, want 503 not-ready", code, body)
	}

	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, a.URL+"/api/v1/apps/"+app+"/sync", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(""); code != http.StatusUnauthorized {
		t.Errorf("loopback write without the token: %d, want 401", code)
	}
	if code := post(webToken); code != http.StatusAccepted {
		t.Errorf("loopback write with the token: %d, want 202", code)
	}
	if code, _ := webGet(t, client, a.URL+"/api/v1/apps", ""); code != http.StatusUnauthorized {
		t.Errorf("loopback read without the token: %d, want 401", code)
	}
}

// TestWebTrickledWebhookIsCutOff: a webhook whose body arrives one byte a
// second is answered 408 (or its connection closed) within the 10 s body
// deadline, not held open.
func TestWebTrickledWebhookIsCutOff(t *testing.T) {
	t.Parallel()
	_, source := webRepo(t)
	env := append(os.Environ(), "DRIFTLESS_WEBHOOK_SECRET=e2e-websec-hook")
	a := testenv.StartAgentEnv(t, env, t.TempDir(), source...)
	u, _ := url.Parse(a.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // a guard, not the measurement
	start := time.Now()
	head := "POST /hooks/generic HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nX-Signature: sha256=00\r\nContent-Length: 4096\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if _, err := conn.Write([]byte{'{'}); err != nil {
				return
			}
			n++
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	line, err := bufio.NewReader(conn).ReadString('\n')
	elapsed := time.Since(start)
	answer := strings.TrimSpace(line)
	if err != nil {
		answer = "connection closed (" + err.Error() + ")"
	}
	t.Logf("trickled webhook: %q after %s", answer, elapsed.Round(10*time.Millisecond))
	if err == nil && !strings.HasPrefix(answer, "HTTP/1.1 408") {
		t.Errorf("trickled webhook answered %q, want 408", answer)
	}
	if elapsed > 15*time.Second {
		t.Errorf("trickled webhook held for %s, want cut off within the 10s body deadline", elapsed)
	}
	if elapsed < 9*time.Second {
		t.Errorf("trickled webhook cut off after %s, before its 10s deadline", elapsed)
	}
}

// TestWebTLS: with --tls-cert/--tls-key (a certificate made here) the
// agent serves HTTPS, the API answers over it, and the login cookie is
// Secure, HttpOnly and SameSite=Strict.
func TestWebTLS(t *testing.T) {
	t.Parallel()
	app, source := webRepo(t)
	certFile, keyFile, pool := selfSignedCert(t)
	client := &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	env := append(withoutEnv("DRIFTLESS_API_TOKEN"), "DRIFTLESS_API_TOKEN="+webToken)
	a := startWebAgent(t, env, "https", client, testenv.FreeAddr(t), append(source, "--tls-cert", certFile, "--tls-key", keyFile)...)
	if !strings.Contains(a.out.String(), "https://") {
		t.Errorf("the log does not give the https URL:\n%s", a.out)
	}
	if code, body := webGet(t, client, a.base+"/api/v1/apps/"+app, webToken); code != http.StatusOK || !strings.Contains(body, app) {
		t.Errorf("API over HTTPS: %d %.200s", code, body)
	}

	_, page := webGet(t, client, a.base+"/login", "")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page has no CSRF field:\n%s", page)
	}
	req, _ := http.NewRequest(http.MethodPost, a.base+"/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {webToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login over HTTPS: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	t.Logf("session cookie: %s", strings.Replace(resp.Header.Get("Set-Cookie"), c.Value, "…", 1))
	if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie Secure %v HttpOnly %v SameSite %v, want all set", c.Secure, c.HttpOnly, c.SameSite)
	}
	// Plain HTTP on the same port serves nothing.
	if resp, err := http.Get("http://127.0.0.1:" + a.port + "/api/v1/apps"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the API answers plain HTTP on the TLS port")
		}
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "driftless e2e " + strconv.FormatInt(serial.Int64(), 16)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
