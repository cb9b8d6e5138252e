package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

type fakeNotifier struct{ tested []string }

func (f *fakeNotifier) Destinations() []string { return []string{"ops", "broken"} }
func (f *fakeNotifier) Test(_ context.Context, name string) error {
	f.tested = append(f.tested, name)
	if name == "broken" {
		return errors.New(`Post "https://user:hunter2@hooks.example.com/x": connection refused`)
	}
	return nil
}

func TestTestNotificationIsAWriteAction(t *testing.T) {
	n := &fakeNotifier{}
	env := newTestEnv(t, func(o *Options) { o.Notifier = n; o.APIToken = "tok"; o.DistrustLoopback = true })

	if w := env.do(http.MethodPost, "/api/v1/notifications/ops/test", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s, want 401", w.Code, w.Body)
	}
	if len(n.tested) != 0 {
		t.Fatalf("a test notification was sent without the token: %v", n.tested)
	}
	w := env.do(http.MethodPost, "/api/v1/notifications/ops/test", "", bearer("tok"))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "test notification sent to ops") {
		t.Fatalf("with the token: %d %s", w.Code, w.Body)
	}
	w = env.do(http.MethodPost, "/api/v1/notifications/broken/test", "", bearer("tok"))
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "test notification to broken failed") || strings.Contains(w.Body.String(), "hunter2") {
		t.Fatalf("a failing destination: %d %s (want 502, the reason, no credentials)", w.Code, w.Body)
	}
	w = env.do(http.MethodPost, "/api/v1/notifications/nope/test", "", bearer("tok"))
	if w.Code != http.StatusNotFound {
		t.Fatalf("an unknown destination: %d %s", w.Code, w.Body)
	}
	if strings.Join(n.tested, ",") != "ops,broken" {
		t.Fatalf("tested %v", n.tested)
	}
}

func TestOverviewOffersATestButtonPerDestination(t *testing.T) {
	env := newTestEnv(t, func(o *Options) { o.Notifier = &fakeNotifier{} })
	w := env.do(http.MethodGet, "/", "")
	for _, want := range []string{`action="/notifications/ops/test"`, `action="/notifications/broken/test"`, "Test notification"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("overview lacks %s", want)
		}
	}
}
