package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/sync/status"
)

// The app's page and the API list its state directories with their host
// paths: where its data is, to back it up.
func TestStateDirsShown(t *testing.T) {
	env := newTestEnv(t, nil)
	env.agent.apps[0].StateDirs = []status.StateDir{{
		StateDir: manifest.StateDir{Path: "volumes/db/data", Mounts: []manifest.StateMount{
			{Service: "db", MountPath: "/var/lib/postgresql/data"}, {Service: "backup", MountPath: "/src", ReadOnly: true},
		}},
		HostPath: "/var/lib/driftless/state/shop/volumes/db/data",
	}}
	body := env.page("/apps/shop")
	assertContains(t, "app page", body, "State directories", "<code>./volumes/db/data</code>",
		"<code>/var/lib/driftless/state/shop/volumes/db/data</code>",
		"<b>db</b> at <code>/var/lib/postgresql/data</code>", "<b>backup</b> at <code>/src</code> <span class=\"meta\">(read-only)</span>")
	if blog := env.page("/apps/blog"); strings.Contains(blog, "State directories") {
		t.Error("an app without state directories shows the section")
	}

	w := env.do(http.MethodGet, "/api/v1/apps/shop", "")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/apps/shop: %d %s", w.Code, w.Body)
	}
	var st struct {
		StateDirs []map[string]any `json:"stateDirs"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.StateDirs) != 1 || st.StateDirs[0]["path"] != "volumes/db/data" || st.StateDirs[0]["hostPath"] != "/var/lib/driftless/state/shop/volumes/db/data" {
		t.Errorf("API stateDirs = %v", st.StateDirs)
	}
}
