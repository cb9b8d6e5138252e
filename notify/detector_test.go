package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/loop"
	"github.com/driftless-dev/driftless/sync/status"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func rev(sha, subject string) *gitsource.Revision {
	return &gitsource.Revision{SHA: sha, Subject: subject, Author: "Ada"}
}

func appStatus(h drift.Health, applied *gitsource.Revision) status.AppStatus {
	return status.AppStatus{Name: "web", Health: h, Applied: applied, Message: "web: exited with code 1"}
}

// step is one report and the event kinds it must produce.
type step struct {
	at   time.Duration
	r    loop.Report
	want string // kinds, space-separated
}

func kinds(es []Event) string {
	var s []string
	for _, e := range es {
		s = append(s, string(e.Kind))
	}
	return strings.Join(s, " ")
}

func TestDetectorAnnouncesTransitionsOnce(t *testing.T) {
	good, bad := rev("1111111aaaa", "good"), rev("2222222bbbb", "crash")
	srcDown := appStatus(drift.HealthHealthy, good)
	srcDown.Source = status.SourceStatus{Error: "connection refused", ErrorSince: t0}
	engineDown := appStatus(status.HealthUnknown, good)
	engineDown.Errors = []status.Condition{{Kind: "engine", Message: "cannot reach the Docker engine"}}
	tests := map[string][]step{
		"a good commit is one synced message": {
			{r: loop.Report{App: "web", Applying: good, Next: appStatus(drift.HealthProgressing, nil)}},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good), Entries: []status.HistoryEntry{{ID: 7, Kind: status.KindSync, Result: "succeeded", Revision: good}}}, want: "synced"},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}},
		},
		"a crashing rollout is one failure while it backs off, one recovery": {
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{Kind: status.KindSync, Result: "failed", Revision: bad}}}, want: "rollout-failed"},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good)}},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{Kind: status.KindSync, Result: "failed", Revision: bad}}}},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, want: "recovered"},
		},
		"a different failing revision is announced again": {
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{Kind: status.KindSync, Result: "failed", Revision: bad}}}, want: "rollout-failed"},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good), Entries: []status.HistoryEntry{{Kind: status.KindSync, Result: "failed", Revision: rev("3333333", "worse")}}}, want: "rollout-failed"},
		},
		"degraded without a rollout is announced once": {
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good)}, want: "rollout-failed"},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthDegraded, good)}},
			{r: loop.Report{App: "web", Applying: bad, Next: appStatus(drift.HealthHealthy, good)}},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, want: "recovered"},
		},
		"refused, flapping, pinned and unpinned come from history": {
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good), Entries: []status.HistoryEntry{
				{Kind: status.KindRefused, Revision: bad, Errors: []string{"apps/web/web.yaml:3:5: replicas: must be a number"}},
				{Kind: status.KindFlapping, Summary: "web-1 env flapping"},
				{Kind: status.KindRollback, Summary: "pinned to 1111111 “good”"},
				{Kind: status.KindRollback, Summary: "unpinned from 1111111; following main again"},
			}}, want: "refused flapping pinned unpinned"},
		},
		"a failed job run is announced, a successful one is not": {
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good), Entries: []status.HistoryEntry{
				{Kind: status.KindJob, Result: "succeeded", Summary: "scheduled job backup succeeded in 2s"},
				{Kind: status.KindJob, Result: "failed", Summary: "scheduled job backup failed: exit 1 after 2s", Errors: []string{"last lines: disk full"}},
			}}, want: "job-failed"},
		},
		"a source is announced only after the threshold, and its return": {
			{at: time.Minute, r: loop.Report{App: "web", Next: srcDown}},
			{at: 5 * time.Minute, r: loop.Report{App: "web", Next: srcDown}, want: "source-unreachable"},
			{at: 6 * time.Minute, r: loop.Report{App: "web", Next: srcDown}},
			{at: 7 * time.Minute, r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, want: "recovered"},
		},
		"an unreachable engine is announced once": {
			{r: loop.Report{App: "web", Next: engineDown}, want: "engine-unreachable"},
			{r: loop.Report{App: "web", Next: engineDown}},
			{r: loop.Report{App: "web", Next: appStatus(drift.HealthHealthy, good)}, want: "recovered"},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDetector(5*time.Minute, time.Minute)
			for i, s := range steps {
				if got := kinds(d.events(s.r, t0.Add(s.at))); got != s.want {
					t.Errorf("step %d: events %q, want %q", i, got, s.want)
				}
			}
		})
	}
}

func TestDetectorBatchesRepairsPerAppPerWindow(t *testing.T) {
	d := newDetector(5*time.Minute, time.Minute)
	repair := func(app string, id uint64) loop.Report {
		return loop.Report{App: app, Next: status.AppStatus{Name: app, Health: drift.HealthHealthy},
			Entries: []status.HistoryEntry{{ID: id, App: app, Kind: status.KindRepair, Summary: "web-1 was stopped outside Git; started"}}}
	}
	for i := range 10 {
		if es := d.events(repair("web", uint64(10+i)), t0.Add(time.Duration(i)*5*time.Second)); len(es) != 0 {
			t.Fatalf("repair %d announced at once (%s); repairs wait for their batch", i, kinds(es))
		}
	}
	d.events(repair("api", 30), t0.Add(30*time.Second))
	if next, ok := d.nextDue(); !ok || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next batch due %v %v, want %v", next, ok, t0.Add(time.Minute))
	}
	if es := d.due(t0.Add(59 * time.Second)); len(es) != 0 {
		t.Fatalf("batch flushed before its window ended: %s", kinds(es))
	}
	es := d.due(t0.Add(time.Minute))
	if len(es) != 1 || es[0].App != "web" || es[0].Count != 10 || es[0].EntryID != 10 || es[0].What != "10 changes made outside Git were repaired" {
		t.Fatalf("web's batch = %+v, want one event counting 10 repairs linked to the first entry", es)
	}
	if es := d.due(t0.Add(time.Minute)); len(es) != 0 {
		t.Fatalf("a batch was sent twice: %+v", es)
	}
	es = d.due(t0.Add(90 * time.Second))
	if len(es) != 1 || es[0].App != "api" || es[0].Count != 1 || es[0].What != "1 change made outside Git was repaired" {
		t.Fatalf("api's batch = %+v", es)
	}
	if _, ok := d.nextDue(); ok {
		t.Fatal("no batch is open, yet one is due")
	}
}

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds([]string{"synced", "degraded", "rollout-failed"})
	if err != nil || len(got) != 2 || got[0] != KindSynced || got[1] != KindRolloutFailed {
		t.Fatalf("ParseKinds = %v, %v; want synced, rollout-failed (degraded is its alias)", got, err)
	}
	if all, _ := ParseKinds(nil); len(all) != len(Kinds) {
		t.Fatalf("no filter gives %d kinds, want all %d", len(all), len(Kinds))
	}
	_, err = ParseKinds([]string{"sync"})
	if err == nil || !strings.Contains(err.Error(), `event "sync" is not known: use synced, rollout-failed`) {
		t.Fatalf("unknown kind error = %v", err)
	}
}

func TestMessageSaysAppRevisionWhatAndLink(t *testing.T) {
	e := Event{Kind: KindRefused, App: "web", Revision: rev("2222222bbbb", "bump replicas"), What: "refused 2222222 “bump replicas”: invalid manifest",
		Errors: []string{"apps/web/web.yaml:3:5: replicas: must be a number"}, EntryID: 42}
	if got, want := title(e), "driftless: web refused 2222222"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	want := "web: refused 2222222 “bump replicas”: invalid manifest\n" +
		"Revision: 2222222 “bump replicas” by Ada\n" +
		"  apps/web/web.yaml:3:5: replicas: must be a number\n" +
		"Details: https://driftless.example.com/history/42"
	if got := body(e, "https://driftless.example.com"); got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
	if got := body(Event{App: "web", What: "Healthy again"}, ""); got != "web: Healthy again" {
		t.Errorf("without an external URL there is no link: %q", got)
	}
	if got := body(Event{App: "shop-preview-login", What: "synced", PreviewURL: "https://preview-login.example.com"}, ""); got != "shop-preview-login: synced\nPreview: https://preview-login.example.com" {
		t.Errorf("a preview's message gives its URL: %q", got)
	}
}

// TestDetectorGivesPreviewURL: every event of a preview carries its URL.
func TestDetectorGivesPreviewURL(t *testing.T) {
	d := newDetector(5*time.Minute, time.Minute)
	r := loop.Report{App: "shop-preview-login", Next: status.AppStatus{Name: "shop-preview-login", Health: drift.HealthHealthy,
		Preview: &status.Preview{Branch: "preview/login", URL: "https://preview-login.example.com"}},
		Entries: []status.HistoryEntry{{ID: 7, App: "shop-preview-login", Kind: status.KindSync, Result: "succeeded", Summary: "synced"}}}
	es := d.events(r, t0)
	if len(es) == 0 || es[0].PreviewURL != "https://preview-login.example.com" {
		t.Fatalf("events %+v: want the preview URL", es)
	}
}
