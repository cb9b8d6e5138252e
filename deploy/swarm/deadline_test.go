package swarm

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/boundcheck"
	"github.com/driftless-dev/driftless/drift"
)

// silentManager accepts service lists and pings and answers none until
// the request's context ends.
type silentManager struct{ api }

func (silentManager) ServiceList(ctx context.Context, _ client.ServiceListOptions) (client.ServiceListResult, error) {
	<-ctx.Done()
	return client.ServiceListResult{}, ctx.Err()
}

func (silentManager) Ping(ctx context.Context, _ client.PingOptions) (client.PingResult, error) {
	<-ctx.Done()
	return client.PingResult{}, ctx.Err()
}

func (silentManager) DaemonHost() string { return "tcp://manager:2376" }

func TestUnansweredManagerFailsAsEngineNotAnswering(t *testing.T) {
	e := newEngine(silentManager{}, Options{RequestTimeout: 50 * time.Millisecond})
	_, err := e.api.ServiceList(context.Background(), client.ServiceListOptions{})
	if !errors.Is(err, drift.ErrEngineUnreachable) || !strings.Contains(err.Error(), "tcp://manager:2376: no answer to GET /services within 50ms") {
		t.Errorf("a service list the manager never answers: %v, want the engine not answering, named", err)
	}
	// A ping that goes unanswered says so once, not "unreachable" twice.
	err = e.Ping(context.Background())
	if !errors.Is(err, drift.ErrEngineUnreachable) || strings.Count(err.Error(), drift.ErrEngineUnreachable.Error()) != 1 {
		t.Errorf("ping: %v", err)
	}
}

// TestEveryManagerRequestIsBounded keeps boundedAPI in step with api: a
// method added to the interface is bounded in deadline.go or named here.
func TestEveryManagerRequestIsBounded(t *testing.T) {
	boundcheck.Check(t, "deadline.go", "boundedAPI", reflect.TypeFor[api](), map[string]bool{"DaemonHost": true, "Close": true, "Events": true})
}
