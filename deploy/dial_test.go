package deploy_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/driftless-dev/driftless/deploy"
	"github.com/driftless-dev/driftless/drift"
)

// TestOptionsDialCarriesEveryConnection: with Options.Dial the client
// connects through it only (not to DOCKER_HOST), and an unreachable
// engine is named by Host with the dialer's own error.
func TestOptionsDialCarriesEveryConnection(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://192.0.2.1:2375") // never dialed
	var mu sync.Mutex
	var dials int
	refuse := errors.New("ssh: permission denied: the key was refused")
	eng, err := deploy.New(context.Background(), deploy.Options{
		Host: "ssh://deploy@host.example",
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			return nil, refuse
		},
		FilesDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	err = eng.Ping(context.Background())
	if !errors.Is(err, drift.ErrEngineUnreachable) || !errors.Is(err, refuse) {
		t.Fatalf("ping: %v", err)
	}
	if !strings.Contains(err.Error(), "unreachable at ssh://deploy@host.example:") {
		t.Errorf("ping error does not name the engine: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dials == 0 {
		t.Error("the client did not dial through Options.Dial")
	}
}
