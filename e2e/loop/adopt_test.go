package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestAdoptComposeProjectWithoutDowntime: a stack that `docker-compose up`
// runs today is refused as "managed by compose" by default; with --adopt
// compose, driftless replaces compose's containers one at a time (a
// replica of the service runs at every moment), keeps compose's volume
// and its data, and leaves nothing of compose's containers behind.
func TestAdoptComposeProjectWithoutDowntime(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose is not installed (CI installs it)")
	}
	image := testenv.WorkloadImage(t, "v1")
	app := testenv.UniqueApp(t)
	dir := filepath.Join(t.TempDir(), app)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	compose := fmt.Sprintf(`version: "3.7"
services:
  web:
    image: %s
    scale: 2
    environment:
      WORKLOAD_DATA: /data
    volumes:
      - data:/data
volumes:
  data: {}
`, image)
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// driftless's containers first: they mount compose's volume after
		// the adoption, and down -v keeps a volume in use (a run left
		// tXXXXXXXX_data behind).
		testenv.RemoveApp(t, app)
		testenv.RemoveComposeContainers(t, app)
		cmd := exec.Command("docker-compose", "-p", app, "-f", filepath.Join(dir, "compose.yaml"), "down", "-v", "--remove-orphans")
		cmd.Env = testenv.ComposeCLIEnv(os.Environ())
		_ = cmd.Run()
		_ = exec.Command("docker", "volume", "rm", app+"_data").Run()
	})
	up := exec.Command("docker-compose", "-p", app, "-f", filepath.Join(dir, "compose.yaml"), "up", "-d")
	up.Env = testenv.ComposeCLIEnv(os.Environ())
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	composeNames := dockerPS(t, "label=com.docker.compose.project="+app)
	if len(composeNames) != 2 {
		t.Fatalf("compose runs %v", composeNames)
	}
	ip := containerAddr(t, composeNames[0])
	for range 2 {
		visit(t, ip)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, code := testenv.Run(t, ctx, dir, "apply", "--app", app, "--ready-timeout", "30s")
	if code == 0 || !strings.Contains(out, "managed by docker compose (project "+app+", service web); set adopt: compose") {
		t.Fatalf("apply without --adopt: exit %d\n%s", code, out)
	}
	if got := dockerPS(t, "label=dev.driftless.app="+app); len(got) != 0 {
		t.Fatalf("without --adopt driftless started %v next to compose's replicas", got)
	}

	// Watch the service while it moves: some replica must run throughout.
	stop := make(chan struct{})
	var mu sync.Mutex
	least, samples := 99, 0
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := len(dockerPS(t, "label=com.docker.compose.project="+app, "status=running")) +
				len(dockerPS(t, "label=dev.driftless.app="+app, "status=running"))
			mu.Lock()
			least, samples = min(least, n), samples+1
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	out, code = testenv.Run(t, ctx, dir, "apply", "--app", app, "--adopt", "compose", "--ready-timeout", "30s")
	close(stop)
	<-watched
	if code != 0 {
		t.Fatalf("apply --adopt compose: exit %d\n%s", code, out)
	}
	t.Logf("adoption output:\n%s", out)
	mu.Lock()
	defer mu.Unlock()
	if least < 1 || samples < 5 {
		t.Errorf("during adoption the service had %d running replicas at its lowest (%d samples); want at least 1", least, samples)
	}
	if got := dockerPS(t, "label=com.docker.compose.project="+app); len(got) != 0 {
		t.Errorf("compose containers left after adoption: %v", got)
	}
	ours := dockerPS(t, "label=dev.driftless.app="+app)
	if len(ours) != 2 || ours[0] != app+"-web-1" || ours[1] != app+"-web-2" {
		t.Fatalf("driftless runs %v", ours)
	}
	// compose's volume, and its data, carried over.
	mounts := testenv.Docker(t, "inspect", "-f", `{{range .Mounts}}{{.Name}}{{end}}`, ours[0])
	if mounts != app+"_data" {
		t.Errorf("%s mounts %q, want compose's volume %s_data", ours[0], mounts, app)
	}
	if n := visit(t, containerAddr(t, ours[0])); n != 3 {
		t.Errorf("visits after adoption = %d, want 3: the data must be compose's", n)
	}
	// And it is stable: a second apply has nothing to do.
	if out, code := testenv.Run(t, ctx, dir, "apply", "--app", app, "--adopt", "compose"); code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("second apply: exit %d\n%s", code, out)
	}
}

// dockerPS lists container names matching every filter, sorted.
func dockerPS(t *testing.T, filters ...string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--format", "{{.Names}}"}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	out, err := testenv.DockerTry(args...)
	if err != nil {
		t.Errorf("docker %s: %v", strings.Join(args, " "), err)
		return nil
	}
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

// containerAddr is the container's first IP address and the workload's
// port.
func containerAddr(t *testing.T, name string) string {
	t.Helper()
	ip := testenv.Docker(t, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", name)
	return strings.Fields(ip)[0] + ":8080"
}

// visit GETs the workload's / and returns its visit count.
func visit(t *testing.T, addr string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			var body struct {
				Visits int `json:"visits"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil {
				return body.Visits
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET http://%s/: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
