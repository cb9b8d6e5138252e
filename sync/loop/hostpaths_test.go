package loop

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/manifest/policy"
	"github.com/driftless-dev/driftless/sync/config"
)

// linkHost is a host whose one symlink a test moves between passes.
type linkHost struct {
	mu     sync.Mutex
	link   string
	target string // "" : link is a plain directory
}

func (l *linkHost) set(target string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.target = target
}

func (l *linkHost) resolve(p string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.target != "" && (p == l.link || strings.HasPrefix(p, l.link+"/")) {
		return l.target + strings.TrimPrefix(p, l.link), nil
	}
	return p, nil
}

// A symlink swapped on the host after its revision was accepted: the next
// pass refuses the revision where the path now leads, creates nothing from
// it (not even a repair), and takes it up again once the host is fixed.
// A new commit with the same path is refused the same way.
func TestHostPathsAreJudgedAtEveryPass(t *testing.T) {
	cfg := appConfig("shop")
	cfg.Policy = policy.Policy{HostPaths: []string{"/srv/shop"}}
	host := &linkHost{link: "/srv/shop/data"}
	h := &harness{t: t, dir: t.TempDir(), engine: &fakeEngine{}, sources: map[string]*fakeSource{"shop": newFakeSource()},
		clock: &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, apps: []config.AppConfig{cfg},
		host: policy.Host{Resolve: host.resolve}}
	h.open()
	src := h.sources["shop"]
	web := func(image string) map[string]string {
		return map[string]string{"web.yaml": service("web", image, 2) + "  binds: [{hostPath: /srv/shop/data, mountPath: /data}]\n"}
	}
	good := src.commit("web v1", web("demo:v1"))
	if st, err := h.pass("shop", "startup"); err != nil || st.Applied == nil || st.Applied.SHA != good {
		t.Fatalf("first pass: %v, applied %s", err, st.Applied.Short())
	}

	host.set("/run/docker.sock")
	h.engine.rm("shop-web-2")
	st, err := h.pass("shop", "docker-event")
	var stalled *stalledError
	if !errors.As(err, &stalled) {
		t.Fatalf("pass error = %v, want a stalled error", err)
	}
	want := "web.yaml:8:11: spec.binds[0]: mounting /srv/shop/data (which leads to /run/docker.sock on the host) gives the container the Docker socket, which is root on the host; allow it for this app with `allow: [docker-socket]` in driftless.yaml (or `--allow docker-socket`)"
	if st.Refused == nil || st.Refused.Revision.SHA != good || !slices.Equal(st.Refused.Errors, []string{want}) {
		t.Fatalf("refusal = %+v, want %s refused with\n%s", st.Refused, good[:7], want)
	}
	if !strings.Contains(st.Message, "host path(s) lead where this app may not mount") {
		t.Errorf("message %q does not say why", st.Message)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7]}) {
		t.Fatalf("running %v: the removed replica was recreated with a bind that leads to the socket", got)
	}

	next := src.commit("web v2", web("demo:v2"))
	st, _ = h.pass("shop", "poll")
	if st.Refused == nil || st.Refused.Revision.SHA != next || !slices.Equal(st.Refused.Errors, []string{want}) {
		t.Fatalf("refusal of the new commit = %+v", st.Refused)
	}
	if got := h.engine.running("shop"); !slices.Equal(got, []string{"shop-web-1@" + good[:7]}) {
		t.Fatalf("running %v after the new commit, want nothing created", got)
	}

	host.set("")
	st, err = h.pass("shop", "poll")
	if err != nil || st.Refused != nil || st.Applied == nil || st.Applied.SHA != next {
		t.Fatalf("after the host was fixed: %v, refused %+v, applied %s", err, st.Refused, st.Applied.Short())
	}
	if got := h.engine.running("shop"); len(got) != 2 {
		t.Fatalf("running %v, want 2 replicas of %s", got, next[:7])
	}
}
