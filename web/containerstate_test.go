package web

import (
	"strings"
	"testing"
	"time"
)

// The app page words each container's state as of the moment it is
// rendered, from the observed timestamps: not the observation's "Up 2
// seconds" five minutes later.
func TestAppPageStateIsAsOfRender(t *testing.T) {
	clock := newFakeClock()
	env := newTestEnv(t, func(o *Options) { o.Now = clock.Now })
	env.agent.mu.Lock()
	ctrs := env.agent.apps[0].Services[0].Containers
	ctrs[0].Status, ctrs[0].StartedAt = "Up 2 seconds", clock.Now().Add(-5*time.Minute)
	ctrs[1].Status, ctrs[1].ExitCode, ctrs[1].FinishedAt = "Exited (1) 2 seconds ago", 1, clock.Now().Add(-3*time.Minute)
	env.agent.mu.Unlock()

	page := env.page("/apps/shop")
	assertContains(t, "app page", page, ">Up 5 minutes<", ">Exited (1) 3 minutes ago<", `title="started 2026-12-01 08:55:00 UTC"`)
	if strings.Contains(page, "2 seconds") {
		t.Error("the app page repeats the observation's relative words")
	}
	clock.Advance(time.Hour)
	assertContains(t, "app page an hour later", env.page("/apps/shop"), ">Up About an hour<", ">Exited (1) About an hour ago<")
}
