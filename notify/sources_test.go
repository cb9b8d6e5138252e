package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

// generated is the status of an app that source generated.
func generated(app, source string, h drift.Health, applied *gitsource.Revision) status.AppStatus {
	s := appStatus(h, applied)
	s.Name, s.FromSource = app, source
	return s
}

func synced(app, source string, id uint64, r *gitsource.Revision) loop.Report {
	return loop.Report{App: app, Next: generated(app, source, drift.HealthHealthy, r),
		Entries: []status.HistoryEntry{{ID: id, Kind: status.KindSync, Result: "succeeded", Revision: r, Summary: "synced " + r.Short()}}}
}

// TestGeneratedAppsNotifyTheirSourcesDestinations: an app a source
// generated reaches the global destinations and its source's template's,
// never another source's.
func TestGeneratedAppsNotifyTheirSourcesDestinations(t *testing.T) {
	global, shop, blog := newHook(t, 0), newHook(t, 0), newHook(t, 0)
	src := func(name, url string) config.SourceConfig {
		return config.SourceConfig{Name: name, App: config.AppConfig{Name: name, Source: name, Notifications: []config.Notification{{Name: name + "-1", URL: url}}}}
	}
	n, err := New(Options{Config: config.Config{
		Notifications: []config.Notification{{Name: "ops", URL: global.url("/ops")}},
		Sources:       []config.SourceConfig{src("shop", shop.url("/shop")), src("blog", blog.url("/blog"))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(n.Destinations(), " "); got != "blog-1 ops shop-1" {
		t.Errorf("destinations %q, want every source's beside the global one", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, nil)

	n.Observe(synced("shop-preview-login", "shop", 1, rev("1111111aaaa", "login")))
	n.Observe(synced("blog-posts", "blog", 2, rev("2222222bbbb", "posts")))
	n.Observe(synced("shop-cart", "shop", 3, rev("3333333cccc", "cart")))
	// Each destination delivers in order: had blog's message gone to
	// shop's destination, it would come between shop's two.
	for _, want := range []string{"driftless: shop-preview-login synced 1111111", "driftless: shop-cart synced 3333333"} {
		if m := shop.next(t); m["title"] != want {
			t.Errorf("shop's destination got %q, want %q", m["title"], want)
		}
	}
	if m := blog.next(t); m["title"] != "driftless: blog-posts synced 2222222" {
		t.Errorf("blog's destination got %q", m["title"])
	}
	for _, want := range []string{"shop-preview-login", "blog-posts", "shop-cart"} {
		if m := global.next(t); !strings.HasPrefix(m["title"], "driftless: "+want+" ") {
			t.Errorf("the global destination got %q, want %s's", m["title"], want)
		}
	}
	n.Observe(synced("blog-about", "blog", 4, rev("4444444dddd", "about")))
	if m := blog.next(t); m["title"] != "driftless: blog-about synced 4444444" {
		t.Errorf("blog's destination got %q, want its second app's", m["title"])
	}
	select {
	case m := <-shop.got:
		t.Errorf("shop's destination got another source's message %q", m["title"])
	case <-time.After(200 * time.Millisecond):
	}
}

// TestRepairBatchOfAGeneratedAppKeepsItsSource: a drift-repaired batch,
// sent when its window ends rather than from a report, still goes to the
// app's source.
func TestRepairBatchOfAGeneratedAppKeepsItsSource(t *testing.T) {
	d := newDetector(time.Minute, time.Minute)
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	d.events(loop.Report{App: "shop-cart", Next: generated("shop-cart", "shop", drift.HealthHealthy, nil),
		Entries: []status.HistoryEntry{{ID: 7, Kind: status.KindRepair}}}, t0)
	es := d.due(t0.Add(time.Minute))
	if len(es) != 1 || es[0].Kind != KindDriftRepaired || es[0].Source != "shop" {
		t.Fatalf("due %+v, want one drift-repaired event of source shop", es)
	}
}

// TestGeneratedAppsPostCommitStatusesToTheirSourcesRepo: a source's
// template commitStatus posts each generated app's statuses to the
// source's repository, under the app's own context; a preview's target
// URL is its preview URL. An app of a source without commitStatus posts
// nothing.
func TestGeneratedAppsPostCommitStatusesToTheirSourcesRepo(t *testing.T) {
	srv, got := hostServer(t, 201)
	n, err := New(Options{Config: config.Config{ExternalURL: "https://d.example", Sources: []config.SourceConfig{
		{Name: "shop", App: config.AppConfig{Name: "shop", Source: "shop", Repo: "https://git.example.com/acme/shop.git",
			CommitStatus: &config.CommitStatus{Provider: "gitea", BaseURL: srv.URL + "/api/v1", Token: "s3cret"}}},
		{Name: "blog", App: config.AppConfig{Name: "blog", Source: "blog", Repo: "https://git.example.com/acme/blog.git"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.Start(ctx, nil)

	const app, url = "shop-preview-login", "https://preview-login.preview.example.com"
	r := rev("1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "login")
	preview := generated(app, "shop", drift.HealthProgressing, nil)
	preview.Preview = &status.Preview{Branch: "preview/login", URL: url}
	n.Observe(loop.Report{App: "blog-posts", Next: generated("blog-posts", "blog", drift.HealthHealthy, nil), Applying: rev("2222222bbbb", "posts")})
	// A config: source may place an app in another repository: its
	// commits are not in the source's, so no status goes there.
	elsewhere := generated("shop-api", "shop", drift.HealthHealthy, nil)
	elsewhere.Source.URL = "https://git.example.com/acme/api.git"
	n.Observe(loop.Report{App: "shop-api", Next: elsewhere, Applying: rev("3333333cccc", "api")})
	n.Observe(loop.Report{App: app, Next: preview, Applying: r})
	done := preview
	done.Health, done.Applied = drift.HealthHealthy, r
	n.Observe(loop.Report{App: app, Next: done, Entries: []status.HistoryEntry{{ID: 5, Kind: status.KindSync, Result: "succeeded", Revision: r}}})

	for _, state := range []string{"pending", "success"} {
		select {
		case req := <-got:
			if req.Path != "/api/v1/repos/acme/shop/statuses/"+r.SHA || req.Header.Get("Authorization") != "token s3cret" {
				t.Errorf("%s status: %s %s (%s), want the source's repo on gitea", state, req.Method, req.Path, req.Header.Get("Authorization"))
			}
			if req.Body["state"] != state || req.Body["context"] != "driftless/"+app || req.Body["target_url"] != url {
				t.Errorf("status %v, want %s for driftless/%s with the preview URL as target", req.Body, state, app)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s status arrived", state)
		}
	}
	select {
	case req := <-got:
		t.Errorf("unexpected status %s %v (blog has no commitStatus; shop-api is in another repository)", req.Path, req.Body)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestStatusTargetURL: a preview links its commit status to the preview;
// any other app (and a preview without a URL) to its history entry.
func TestStatusTargetURL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		preview *status.Preview
		want    string
	}{
		{"app", nil, "https://d.example/history/3"},
		{"preview without a URL", &status.Preview{Branch: "preview/x"}, "https://d.example/history/3"},
		{"preview", &status.Preview{Branch: "preview/x", URL: "https://x.preview.example.com"}, "https://x.preview.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := rev("1111111aaaa", "good")
			s := generated("web", "shop", drift.HealthHealthy, good)
			s.Preview = tc.preview
			got := newStatusTracker().statuses(loop.Report{App: "web", Next: s, Entries: []status.HistoryEntry{{ID: 3, Kind: status.KindSync, Result: "succeeded", Revision: good}}}, "https://d.example")
			if len(got) != 1 || got[0].State != stateSuccess || got[0].TargetURL != tc.want {
				t.Fatalf("statuses %+v, want success with target %s", got, tc.want)
			}
		})
	}
}

// TestSourceDestinationNamesAreUniqueAndBadHostsNamed: a source's
// destination may not reuse a name, and a commit status its repository
// cannot serve names the source.
func TestSourceDestinationNamesAreUniqueAndBadHostsNamed(t *testing.T) {
	_, err := New(Options{Config: config.Config{
		Notifications: []config.Notification{{Name: "ops", URL: "generic://127.0.0.1/x"}},
		Sources: []config.SourceConfig{{Name: "shop", App: config.AppConfig{Name: "shop", Repo: "/srv/git/shop",
			Notifications: []config.Notification{{Name: "ops", URL: "generic://127.0.0.1/y"}},
			CommitStatus:  &config.CommitStatus{Provider: "github", Token: "t"}}}},
	}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`sources (shop): template.notifications[0]: name "ops" is used by another destination`,
		"sources (shop): template: commitStatus.repo: could not be derived"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
