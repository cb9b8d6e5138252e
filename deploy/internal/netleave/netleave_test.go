package netleave

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestAffected(t *testing.T) {
	for v, want := range map[string]bool{
		"20.10.24+dfsg1": true, // Debian 12's docker.io
		"20.10.26":       true,
		"20.10.27":       false,
		"20.10.7":        true,
		"20.10":          true,
		"19.03.15":       true,
		"23.0.1":         false,
		"28.2.2":         false,
		"v24.0.7":        false,
		"4.9.3":          false, // Podman
		"":               false,
		"dev":            false,
	} {
		if got := Affected(v); got != want {
			t.Errorf("Affected(%q) = %v, want %v", v, got, want)
		}
	}
}

func guard(version string) *Guard {
	return New(func(context.Context) (string, error) { return version, nil })
}

// Two holders of one network take turns; holders of different networks
// do not wait on each other.
func TestHoldSerialisesPerNetwork(t *testing.T) {
	g := guard("20.10.24")
	ctx := context.Background()
	rel, err := g.Hold(ctx, []string{"app-default", "app-back"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Hold(ctx, []string{"other-default"})
	if err != nil {
		t.Fatal("a holder of another network waited:", err)
	}
	other()

	var second atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err := g.Hold(ctx, []string{"app-back"})
		if err != nil {
			t.Error(err)
			return
		}
		second.Store(true)
		r()
	}()
	time.Sleep(50 * time.Millisecond)
	if second.Load() {
		t.Fatal("a second holder of app-back did not wait for the first")
	}
	rel()
	<-done
	if !second.Load() {
		t.Fatal("the second holder never got app-back")
	}
	if n := len(g.nets); n != 0 {
		t.Errorf("%d networks still tracked after every holder released", n)
	}
}

func TestHoldGivesUpWithItsContext(t *testing.T) {
	g := guard("20.10.24")
	rel, err := g.Hold(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Hold(ctx, []string{"b"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hold with an expired context: %v", err)
	}
	rel()
	// The abandoned wait left nothing held.
	again, err := g.Hold(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	again()
}

func TestUnaffectedEngineIsNotSerialised(t *testing.T) {
	asked := 0
	g := New(func(context.Context) (string, error) { asked++; return "28.2.2", nil })
	ctx := context.Background()
	r1, _ := g.Hold(ctx, []string{"n"})
	r2, err := g.Hold(ctx, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	r1()
	r2()
	if asked != 1 {
		t.Errorf("version asked %d times, want once", asked)
	}
	var nilGuard *Guard
	r, err := nilGuard.Hold(ctx, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	r()
}

// An engine that cannot say its version is treated as affected, and asked
// again next time.
func TestUnknownVersionSerialisesAndAsksAgain(t *testing.T) {
	asked := 0
	g := New(func(context.Context) (string, error) {
		asked++
		if asked == 1 {
			return "", errors.New("engine down")
		}
		return "28.2.2", nil
	})
	if !g.Affected(context.Background()) {
		t.Error("an engine that did not answer counted as unaffected")
	}
	if g.Affected(context.Background()) || asked != 2 {
		t.Errorf("after the engine answered: affected, asked %d times", asked)
	}
}
