package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/sync/status"
)

// The app's page and the API list its jobs and how each last ran; the
// history filter knows the kind job.
func TestJobsShown(t *testing.T) {
	env := newTestEnv(t, nil)
	now := time.Now()
	env.agent.apps[0].Jobs = []status.JobStatus{
		{Name: "migrate", Type: "pre-sync", LastRun: &status.JobRun{Job: "migrate", Type: "pre-sync", Started: now.Add(-time.Minute), Duration: 1200 * time.Millisecond, ExitCode: 3, Container: "shop-job-migrate-1", LastLines: []string{"error: column <exists>"}}},
		{Name: "backup", Type: "scheduled", Schedule: "0 3 * * *", NextRun: now.Add(time.Hour)},
	}
	body := env.page("/apps/shop")
	assertContains(t, "app page", body, "Jobs", "<b>migrate</b>", "exit 3 after 1.2s", "error: column &lt;exists&gt;",
		`href="/apps/shop/logs/shop-job-migrate-1"`, "<code>0 3 * * *</code>")
	if blog := env.page("/apps/blog"); strings.Contains(blog, "one container run to completion") {
		t.Error("an app without jobs shows the section")
	}
	w := env.do(http.MethodGet, "/api/v1/apps/shop", "")
	var st struct {
		Jobs []status.JobStatus `json:"jobs"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.Jobs) != 2 || st.Jobs[0].LastRun.ExitCode != 3 {
		t.Fatalf("API jobs %+v %v", st.Jobs, err)
	}
	if w := env.do(http.MethodGet, "/api/v1/apps/shop/history?kind=job", ""); w.Code != http.StatusOK {
		t.Fatalf("?kind=job: %d %s", w.Code, w.Body)
	}
}
