package loop

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
)

// signed marks sha as signed by a trusted key.
func (s *fakeSource) signed(sha string, by gitsource.Signer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signatures == nil {
		s.signatures = map[string]gitsource.Signer{}
	}
	s.signatures[sha] = by
	return sha
}

// VerifyCommit stands in for gitsource's check (tested there against real
// signatures): commits marked signed verify, others are refused.
func (s *fakeSource) VerifyCommit(ctx context.Context, sha string, v *gitsource.Verifier) (gitsource.Signer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == nil {
		return gitsource.Signer{}, errors.New("VerifyCommit without a verifier")
	}
	if _, ok := s.commits[sha]; !ok {
		return gitsource.Signer{}, gitsource.ErrCommitNotFound
	}
	if by, ok := s.signatures[sha]; ok {
		return by, nil
	}
	return gitsource.Signer{}, &gitsource.UnverifiedError{SHA: sha, Reason: "is not signed; verify is on for this app"}
}

// testVerifier is a real Verifier over a throwaway key: the fake source
// decides what verifies, the config only has to turn verify on.
func testVerifier(t *testing.T) *gitsource.Verifier {
	t.Helper()
	v, err := gitsource.NewVerifier(gitsource.VerifyConfig{SSHAllowedSigners: allowedSignersFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// allowedSignersFile is an allowed_signers file with a throwaway key, to
// turn verify on in a config.
func allowedSignersFile(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(file, []byte("alice@example.com "+string(ssh.MarshalAuthorizedKey(key))), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestUnsignedRevisionIsRefusedAndSignedOnesApply(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Verify = testVerifier(t)
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	alice := gitsource.Signer{Type: gitsource.SignerSSH, Key: "SHA256:alice", Identity: "alice@example.com"}

	good := src.signed(src.commit("web v1", map[string]string{"web.yaml": service("web", "demo:v1", 2)}), alice)
	st, err := h.pass("shop", "startup")
	if err != nil || st.Applied == nil || st.Applied.SHA != good || st.Applied.SignedBy != alice {
		t.Fatalf("signed head: err %v, applied %+v", err, st.Applied)
	}
	if es := h.history("shop", status.KindSync); len(es) != 1 || es[0].Revision.SignedBy != alice {
		t.Fatalf("sync history = %+v, want the signer on the revision", es)
	}

	unsigned := src.commit("web v2, unsigned", map[string]string{"web.yaml": service("web", "demo:v2", 2)})
	st, err = h.pass("shop", "poll")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error (wait for a new commit)", err)
	}
	want := "commit " + unsigned[:7] + " is not signed; verify is on for this app"
	if st.Refused == nil || st.Refused.Revision.SHA != unsigned || !strings.HasPrefix(st.Refused.Reason, want) {
		t.Fatalf("refusal = %+v, want %q", st.Refused, want)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7], "shop-web-2@" + good[:7]}) {
		t.Fatalf("running after refusal = %v, want the signed revision untouched", got)
	}
	if st.Applied.SHA != good || st.Applied.SignedBy != alice || !strings.Contains(st.Message, want) {
		t.Fatalf("applied %+v, message %q", st.Applied, st.Message)
	}
	if es := h.history("shop", status.KindRefused); len(es) != 1 || !strings.Contains(es[0].Summary, "is not signed") {
		t.Fatalf("refused history = %+v", summaries(es))
	}

	// The last signed revision keeps healing.
	h.engine.rm("shop-web-2")
	h.pass("shop", "docker-event")
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7], "shop-web-2@" + good[:7]}) {
		t.Fatalf("running after repair = %v", got)
	}

	// A restart restores the signed revision, not the refused head.
	h.restart()
	st, _ = h.pass("shop", "startup")
	if st.Applied == nil || st.Applied.SHA != good || st.Refused == nil || st.Refused.Revision.SHA != unsigned {
		t.Fatalf("after restart: applied %+v refused %+v", st.Applied, st.Refused)
	}

	next := src.signed(src.commit("web v3", map[string]string{"web.yaml": service("web", "demo:v3", 3)}), alice)
	st, err = h.pass("shop", "poll")
	if err != nil || st.Refused != nil || st.Applied.SHA != next || st.Applied.SignedBy != alice {
		t.Fatalf("next signed commit: err %v refused %+v applied %+v", err, st.Refused, st.Applied)
	}
	if n := len(h.engine.running("shop")); n != 3 {
		t.Fatalf("running %d replicas, want 3", n)
	}
}

// TestPinToUnsignedRevisionIsRefused: rolling back goes through the same
// check; a pin cannot bring back an unsigned commit.
func TestPinToUnsignedRevisionIsRefused(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Verify = testVerifier(t)
	h := newHarness(t, cfg)
	src := h.sources["shop"]
	old := src.commit("unsigned, from before verify was on", map[string]string{"web.yaml": service("web", "demo:v0", 1)})
	good := src.signed(src.commit("web v1", map[string]string{"web.yaml": service("web", "demo:v1", 1)}), gitsource.Signer{Type: "ssh", Key: "SHA256:k"})
	h.pass("shop", "startup")
	if err := h.agent.Pin(context.Background(), "shop", old); err != nil {
		t.Fatalf("pin: %v", err)
	}
	st, _ := h.pass("shop", "api")
	if st.Refused == nil || st.Refused.Revision.SHA != old || !strings.Contains(st.Refused.Reason, "is not signed") {
		t.Fatalf("refused %+v, want the pinned unsigned commit", st.Refused)
	}
	if st.Applied == nil || st.Applied.SHA != good {
		t.Fatalf("applied %+v after pinning an unsigned commit, want %s to keep running", st.Applied, good[:7])
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7]}) {
		t.Fatalf("running = %v", got)
	}
}
