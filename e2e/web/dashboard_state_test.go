package web

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/testenv"
)

// TestDashboardStateIsAsOfNow: the app page's State column says how long
// a replica has been up as of the moment the page is served, matching the
// container's real start time (docker inspect), not the "Up 2 seconds"
// Docker said when the agent last listed it; the API carries the start
// time itself.
func TestDashboardStateIsAsOfNow(t *testing.T) {
	t.Parallel()
	image := testenv.WorkloadImage(t, "v1")
	r := testenv.StartRig(t, func(string) string { return testenv.ServiceManifest(image, 1, nil) })
	sha := r.Repo.Head()
	st := r.WaitConverged("the first deployment", sha, 1, image)
	ctr := st.Services[0].Containers[0]

	started, err := time.Parse(time.RFC3339Nano, testenv.Docker(t, "inspect", "-f", "{{.State.StartedAt}}", ctr.Name))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s started at %s; the agent observed %q, startedAt %s", ctr.Name, started, ctr.Status, ctr.StartedAt)
	if !ctr.StartedAt.Equal(started) {
		t.Errorf("API startedAt %s, docker inspect says %s", ctr.StartedAt, started)
	}

	// Let the container be up long enough that a list-time string would
	// be plainly wrong, yet under a minute, where Docker's words count
	// seconds.
	time.Sleep(time.Until(started.Add(20 * time.Second)))
	page := pageText(t, r.Agent.URL+"/apps/"+r.App)
	up := time.Since(started)
	m := regexp.MustCompile(`(?s)<code>` + regexp.QuoteMeta(ctr.Name) + `</code>.*?data-label="State">.*?<span class="meta"[^>]*>([^<]*)</span>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no State cell for %s on the app page:\n%s", ctr.Name, page)
	}
	t.Logf("State column %s after the start: %q", up.Round(time.Second), m[1])
	n := regexp.MustCompile(`^Up (\d+) seconds$`).FindStringSubmatch(m[1])
	if n == nil {
		t.Fatalf("State column %q, want Up N seconds", m[1])
	}
	secs, _ := strconv.Atoi(n[1])
	if d := time.Duration(secs)*time.Second - up; d < -3*time.Second || d > 3*time.Second {
		t.Errorf("State column says up %ds, the container has been up %s", secs, up.Round(time.Second))
	}
}

// pageText fetches a page from loopback.
func pageText(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, resp.StatusCode, body)
	}
	return string(body)
}
