package deploy

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/boundcheck"
	"github.com/driftless-dev/driftless/deploy/internal/engineapi"
	"github.com/driftless-dev/driftless/drift"
)

// silentEngine accepts inspects and stops and answers none until the
// request's context ends; it records how long each was given.
type silentEngine struct {
	dockerAPI
	given chan time.Duration
}

func (s *silentEngine) wait(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok {
		s.given <- time.Until(d)
	} else {
		s.given <- 0
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *silentEngine) ContainerInspect(ctx context.Context, _ string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{}, s.wait(ctx)
}

func (s *silentEngine) ContainerStop(ctx context.Context, _ string, _ client.ContainerStopOptions) (client.ContainerStopResult, error) {
	return client.ContainerStopResult{}, s.wait(ctx)
}

func (s *silentEngine) DaemonHost() string { return "unix:///run/frozen.sock" }

func TestUnansweredRequestFailsAsEngineNotAnswering(t *testing.T) {
	api := engineapi.Bound(&silentEngine{given: make(chan time.Duration, 1)}, 50*time.Millisecond)
	_, err := api.ContainerInspect(context.Background(), "c1", client.ContainerInspectOptions{})
	if !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Fatalf("err = %v, want it to say the engine is unreachable", err)
	}
	if want := "no answer to GET /containers/{id}/json within 50ms"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "unix:///run/frozen.sock") {
		t.Errorf("err = %q, want the engine's address and %q", err, want)
	}
	// The apply reports it as the engine's fault: the loop retries soon.
	if f := classify(err); f.Cause != drift.FailureEngine {
		t.Errorf("classified as %s (%s), want %s", f.Cause, f.Summary, drift.FailureEngine)
	}
}

func TestCallersOwnCancelIsNotTheEnginesFault(t *testing.T) {
	api := engineapi.Bound(&silentEngine{given: make(chan time.Duration, 1)}, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := api.ContainerInspect(ctx, "c1", client.ContainerInspectOptions{})
	if errors.Is(err, drift.ErrEngineUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's own deadline, not the engine's fault", err)
	}
	if f := classify(err); f.Cause != drift.FailureStopped {
		t.Errorf("classified as %s, want %s", f.Cause, drift.FailureStopped)
	}
}

func TestStopIsGivenItsGracePeriodOnTop(t *testing.T) {
	eng := &silentEngine{given: make(chan time.Duration, 1)}
	api := engineapi.Bound(eng, 30*time.Millisecond)
	grace := 1
	start := time.Now()
	_, err := api.ContainerStop(context.Background(), "c1", client.ContainerStopOptions{Timeout: &grace})
	if took := time.Since(start); took < time.Second || !errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("a stop with a 1s grace period ended after %s with %v; want the engine's fault after 1s + 30ms", took, err)
	}
	if g := <-eng.given; g < time.Second {
		t.Errorf("the stop was given %s, want its grace period and more", g)
	}

	// Without a grace period the container's own applies, unknown here:
	// the stop waits for as long as the caller does.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := api.ContainerStop(ctx, "c1", client.ContainerStopOptions{}); errors.Is(err, drift.ErrEngineUnreachable) {
		t.Errorf("a stop without a grace period failed as the engine's fault: %v", err)
	}
	if g := <-eng.given; g > 100*time.Millisecond {
		t.Errorf("a stop without a grace period was given %s, want only the caller's deadline", g)
	}
}

// TestEveryRequestThatAnswersAtOnceIsBounded keeps engineapi.Bounded in
// step with the API: a method added to the interface is either bounded in
// engineapi.go or named here as a stream (or the ping, which has its own).
func TestEveryRequestThatAnswersAtOnceIsBounded(t *testing.T) {
	boundcheck.Check(t, "internal/engineapi/engineapi.go", "Bounded", reflect.TypeFor[dockerAPI](), map[string]bool{
		"Ping": true, "DaemonHost": true, "Close": true, // the ping has Options.PingTimeout
		"Events": true, "ContainerLogs": true, "ImagePull": true, "ImageImport": true, "ExecAttach": true, // streams (a hook has hookrun.Timeout)
		"DistributionInspect": true, // the engine asks the registry: its own timeouts
	})
}
