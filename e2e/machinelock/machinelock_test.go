package machinelock

import (
	"sync"
	"testing"
	"time"
)

func TestHeavyWaitsForSensitiveTestsWhichShare(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var wg sync.WaitGroup
	held := make(chan struct{}, 2)
	release := make(chan struct{})
	for _, name := range []string{"sensitive-1", "sensitive-2"} {
		wg.Go(func() {
			t.Run(name, func(t *testing.T) {
				Sensitive(t)
				held <- struct{}{}
				<-release
			})
		})
	}
	// Both hold it at once: neither waits for the other.
	for range 2 {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("a sensitive test waited for another")
		}
	}
	heavyRan := make(chan struct{})
	wg.Go(func() {
		t.Run("heavy", func(t *testing.T) {
			Heavy(t)
			close(heavyRan)
		})
	})
	select {
	case <-heavyRan:
		t.Fatal("the heavy test ran beside sensitive ones")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-heavyRan:
	case <-time.After(10 * time.Second):
		t.Fatal("the heavy test did not run once the sensitive ones ended")
	}
	wg.Wait()
}
