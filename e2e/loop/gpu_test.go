package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// A GPU request on an engine without a GPU (this machine's): with devices
// allowed, the commit is applied; the engine refuses to start the GPU
// service's replica, and the status says so in the engine's words while
// the other service keeps running untouched.
func TestGPURequestOnEngineWithoutGPU(t *testing.T) {
	t.Parallel()
	v1 := testenv.WorkloadImage(t, "v1")
	web := testenv.PlainService("web", v1, 1)
	r := testenv.StartRigWith(t, func(string) string { return web }, "--interval", "1s", "--allow", "devices")
	first := r.Repo.Head()
	st := r.Wait(60*time.Second, "web deployed", func(st status.AppStatus) bool {
		return st.Applied != nil && st.Applied.SHA == first && st.Health == drift.HealthHealthy
	})
	webID := st.Services[0].Containers[0].ID

	gpu := testenv.PlainService("ml", v1, 1) + "  deviceRequests: [{driver: nvidia, count: all, capabilities: [gpu]}]\n"
	r.Commit("a service that wants a GPU", web+"---\n"+gpu)
	st = r.Wait(90*time.Second, "the GPU service reported", func(st status.AppStatus) bool {
		for _, s := range st.Services {
			if s.Name == "ml" && strings.Contains(s.Message, `could not select device driver "nvidia"`) {
				return true
			}
		}
		return false
	})
	for _, s := range st.Services {
		t.Logf("%s: %d/%d ready: %s", s.Name, s.Ready, s.Desired, s.Message)
		if s.Name == "web" && (s.Ready != 1 || len(s.Containers) != 1 || s.Containers[0].ID != webID) {
			t.Errorf("web must keep its one ready replica %s: %+v", webID, s)
		}
	}
	if st.Health == drift.HealthHealthy {
		t.Errorf("app health %s with a service that cannot start", st.Health)
	}
}
