package stackdump

import (
	"regexp"
	"strings"
	"testing"
)

const dump = "SIGQUIT: quit\nPC=0x1 m=0 sigcode=0\n\n" +
	"goroutine 1 [select, 5 minutes]:\nmain.loop()\n\n" +
	"goroutine 7 [sync.Mutex.Lock, 3 minutes]:\nlibnetwork.(*network).Delete()\n\n" +
	"goroutine 9 [semacquire, 1 minute, locked to thread]:\nlibnetwork.(*controller).watchLoop()\n\n" +
	"goroutine 11 [sync.Mutex.Lock]:\nshort.wait()\n"

func TestWaitingKeepsGoroutinesOfMinutesInTheGivenStates(t *testing.T) {
	locks := regexp.MustCompile(`^(semacquire|sync\.\w*Mutex\.\w*Lock)$`)
	check := func(got string, keep, drop []string) {
		t.Helper()
		for _, id := range keep {
			if !strings.Contains(got, "goroutine "+id+" ") {
				t.Errorf("lost goroutine %s:\n%s", id, got)
			}
		}
		for _, id := range drop {
			if strings.Contains(got, "goroutine "+id+" ") {
				t.Errorf("kept goroutine %s:\n%s", id, got)
			}
		}
	}
	check(Waiting(dump, locks), []string{"7", "9"}, []string{"1", "11"})
	check(Waiting(dump, nil), []string{"1", "7", "9"}, []string{"11"})
	if got := Waiting(dump, nil); strings.Contains(got, "SIGQUIT") {
		t.Errorf("kept the dump's preamble:\n%s", got)
	}
}
