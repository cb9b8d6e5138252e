package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftless e2e registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := &tlsFiles{ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "registry.crt"), key: filepath.Join(dir, "registry.key"), pool: x509.NewCertPool()}
	write(t, f.ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	write(t, f.cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, f.key, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	f.pool.AddCert(caCert)
	return f
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
