package loop

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/sync/status"
)

const blogCompose = `services:
  web:
    image: demo:v1
    volumes: [media:/media]
volumes:
  media: {}
`

// shopUsing mounts the external volume name as "media".
func shopUsing(name string) map[string]string {
	return map[string]string{"compose.yaml": `services:
  web:
    image: demo:v1
    volumes: [media:/media]
  api:
    image: demo:v1
volumes:
  media:
    external: true
    name: ` + name + "\n"}
}

// TestRevisionUsingAnotherAppsVolumeIsRefused: app shop declares app
// blog's volume as external. The revision is refused before anything of
// it is created, the loop waits for a new commit, and the status names
// the volume, its owner, the file:line and the setting. Listed under
// shared:, it deploys.
func TestRevisionUsingAnotherAppsVolumeIsRefused(t *testing.T) {
	h := newHarness(t, appConfig("blog"), appConfig("shop"))
	h.sources["blog"].commit("blog", map[string]string{"compose.yaml": blogCompose})
	if _, err := h.pass("blog", "startup"); err != nil {
		t.Fatal(err)
	}
	h.sources["shop"].commit("mount blog's media", shopUsing("blog-media"))
	st, err := h.pass("shop", "startup")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error (wait for a new commit)", err)
	}
	if got := h.engine.running("shop"); len(got) != 0 {
		t.Fatalf("running %v, want nothing of the refused revision", got)
	}
	for _, want := range []string{"compose.yaml:8:3: external volume blog-media belongs to app blog", "`shared: {volumes: [blog-media]}` in driftless.yaml"} {
		if st.Refused == nil || !strings.Contains(st.Refused.Reason, want) || !strings.Contains(st.Message, want) {
			t.Errorf("refused %+v, message %q: want both to say %q", st.Refused, st.Message, want)
		}
	}
	if es := h.history("shop", status.KindRefused); len(es) != 1 {
		t.Errorf("refused history %q, want one entry", summaries(es))
	}

	h.apps[1].Shared.Volumes = []string{"blog-media"}
	h.restart()
	if st, err = h.pass("shop", "startup"); err != nil || st.Refused != nil {
		t.Fatalf("shared: err %v, refused %+v", err, st.Refused)
	}
	if got := h.engine.running("shop"); !slices.Contains(got, "shop-web-1@"+st.Applied.SHA[:7]) {
		t.Fatalf("running %v, want shop's web with blog's volume", got)
	}
}
