package registry

import (
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// CertsRoot is where the engine looks for a registry's CA:
// CertsRoot/HOST:PORT/ca.crt.
const CertsRoot = "/etc/docker/certs.d"

// tlsFiles are a test CA and the registry's certificate signed by it.
type tlsFiles struct {
	ca, cert, key string // PEM file paths
	pool          *x509.CertPool
}

// makeTLS writes a CA and a server certificate for ip into dir.
func makeTLS(t testing.TB, dir, ip string) *tlsFiles {
	t.Helper()
	ca := testenv.NewCA(t, dir, "driftless e2e registry CA", "ca.crt")
	cert, key := ca.Leaf(t, ip, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP(ip)}, "registry.crt", "registry.key")
	return &tlsFiles{ca: ca.File, cert: cert, key: key, pool: ca.Pool}
}

// InstallCA puts the registry's CA where the engine reads it,
// CertsRoot/HOST:PORT/ca.crt, and removes that directory when the test
// ends. The test is skipped when the directory cannot be written (not
// root).
func (r *Registry) InstallCA(t testing.TB) {
	t.Helper()
	data, err := os.ReadFile(r.tls.ca)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(CertsRoot, r.Host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot install the test registry's CA for the engine: %v", err)
	}
	if r.CertsDir == "" {
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	r.CertsDir = dir
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// RemoveCA takes the CA away again: the engine no longer trusts the
// registry (when Verified).
func (r *Registry) RemoveCA(t testing.TB) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.CertsDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
}

// secureIP is a local address the engine does not count as an insecure
// registry range, so that it checks the certificate: the address of the
// default bridge (docker0) on this host, when the engine has one; else
// loopback, where TLS is served but not verified by the engine.
func secureIP() string {
	out, err := exec.Command("docker", "network", "inspect", "bridge", "--format",
		`{{range .IPAM.Config}}{{.Gateway}} {{end}}{{index .Options "com.docker.network.bridge.name"}}`).Output()
	if err != nil {
		return "127.0.0.1"
	}
	var candidates []string
	for _, f := range strings.Fields(string(out)) {
		if net.ParseIP(f) != nil {
			candidates = append(candidates, f)
			continue
		}
		// The bridge's interface: its own address is the gateway.
		if ifc, err := net.InterfaceByName(f); err == nil {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
					candidates = append(candidates, ipn.IP.String())
				}
			}
		}
	}
	for _, ip := range candidates {
		if p := net.ParseIP(ip); p == nil || p.To4() == nil || p.IsLoopback() {
			continue
		}
		// The engine must reach it as a local address: it does when this
		// process can listen on it (the engine's network namespace).
		if ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0")); err == nil {
			ln.Close()
			return ip
		}
	}
	return "127.0.0.1"
}
