package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer is a minimal in-process SSH server that only runs
// git-upload-pack / git-receive-pack on repositories under its base
// directory, authenticating one client key.
type SSHServer struct {
	Server
	Addr    string // 127.0.0.1:port
	HostKey ssh.PublicKey
}

// KnownHostsFile writes a known_hosts file trusting this server and
// returns its path.
func (s *SSHServer) KnownHostsFile(t testing.TB) string {
	t.Helper()
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey)
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteSSHKey generates an ed25519 key, writes it in OpenSSH format
// (encrypted when passphrase is set) and returns the file and public key.
func WriteSSHKey(t testing.TB, passphrase string) (keyFile string, pub ssh.PublicKey) {
	t.Helper()
	pubKey, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err = ssh.NewPublicKey(pubKey)
	if err != nil {
		t.Fatal(err)
	}
	return keyFile, pub
}

// RunSSH serves baseDir over ssh://git@<Addr>/<name>.git, accepting only
// clientKey.
func RunSSH(t testing.TB, baseDir string, clientKey ssh.PublicKey) *SSHServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(signer)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[conn] = true
			mu.Unlock()
			wg.Go(func() {
				serveSSHConn(conn, cfg, baseDir)
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
			})
		}
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			l.Close()
			mu.Lock()
			for c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	addr := l.Addr().String()
	return &SSHServer{
		Server:  Server{URL: "ssh://git@" + addr, stop: stop},
		Addr:    addr,
		HostKey: signer.PublicKey(),
	}
}

func serveSSHConn(conn net.Conn, cfg *ssh.ServerConfig, baseDir string) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSSHSession(ch, chReqs, baseDir)
	}
}

func serveSSHSession(ch ssh.Channel, reqs <-chan *ssh.Request, baseDir string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(req.Type == "env", nil)
			continue
		}
		if len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			return
		}
		command := string(req.Payload[4:])
		name, arg, _ := strings.Cut(command, " ")
		if name != "git-upload-pack" && name != "git-receive-pack" {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		repo := filepath.Join(baseDir, filepath.Clean("/"+strings.Trim(arg, "'\"")))
		cmd := exec.Command("git", strings.TrimPrefix(name, "git-"), repo)
		cmd.Env = gitEnv()
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		// Not cmd.Stdin = ch: Wait would then block until the client
		// closes its side, which it does only after the exit status.
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(stdin, ch); stdin.Close() }()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
		}
		_ = ch.CloseWrite()
		payload := binary.BigEndian.AppendUint32(nil, status)
		_, _ = ch.SendRequest("exit-status", false, payload)
		return
	}
}
