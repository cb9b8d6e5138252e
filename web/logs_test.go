package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/deploy/logstream"
)

// fakeLogs owns shop-web-1 and shop-web-3 (service web); blog-web-1 is
// another app's.
type fakeLogs struct {
	streamed []string
}

func (f *fakeLogs) LogTargets(_ context.Context, app, name string) ([]string, error) {
	own := map[string][]string{"shop": {"shop-web-1", "shop-web-3"}}[app]
	if name == "web" {
		return own, nil
	}
	for _, c := range own {
		if c == name {
			return []string{c}, nil
		}
	}
	return nil, fmt.Errorf("%q: %w", name, logstream.ErrNotOwned)
}

func (f *fakeLogs) StreamLogs(ctx context.Context, app, container string, opts logstream.Options, emit func(logstream.Line) error) error {
	f.streamed = append(f.streamed, fmt.Sprintf("%s/%s tail=%d follow=%v", app, container, opts.Tail, opts.Follow))
	for i := range 2 {
		if err := emit(logstream.Line{Container: container, Stream: "stdout", Text: fmt.Sprintf("line %d <b>", i)}); err != nil {
			return err
		}
	}
	return emit(logstream.Line{Container: container, Stream: "stderr", Text: "token " + logstream.Redacted})
}

func TestLogsAPIAndPage(t *testing.T) {
	logs := &fakeLogs{}
	env := newTestEnv(t, func(o *Options) { o.Logs = logs })

	w := env.do(http.MethodGet, "/api/v1/apps/shop/logs?container=shop-web-1&tail=5", "")
	var got logsJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
		t.Fatalf("logs API: %d %s", w.Code, w.Body)
	}
	if len(got.Lines) != 3 || got.Lines[0].Text != "line 0 <b>" || got.Lines[2].Stream != "stderr" {
		t.Errorf("logs API lines = %+v", got.Lines)
	}
	if logs.streamed[0] != "shop/shop-web-1 tail=5 follow=false" {
		t.Errorf("streamed %v", logs.streamed)
	}

	// Only the app's own containers, one at a time: a foreign container, a
	// container of another app and a service name are refused.
	for target, code := range map[string]int{
		"/api/v1/apps/shop/logs?container=blog-web-1":              http.StatusNotFound,
		"/api/v1/apps/shop/logs?container=postgres":                http.StatusNotFound,
		"/api/v1/apps/shop/logs?container=web":                     http.StatusNotFound,
		"/api/v1/apps/shop/logs":                                   http.StatusBadRequest,
		"/api/v1/apps/shop/logs?container=shop-web-1&tail=0":       http.StatusBadRequest,
		"/api/v1/apps/shop/logs?container=shop-web-1&follow=maybe": http.StatusBadRequest,
		"/api/v1/apps/nope/logs?container=shop-web-1":              http.StatusNotFound,
		"/apps/shop/logs/blog-web-1":                               http.StatusNotFound,
	} {
		if w := env.do(http.MethodGet, target, ""); w.Code != code {
			t.Errorf("GET %s: status %d, want %d: %s", target, w.Code, code, w.Body)
		}
	}
	if len(logs.streamed) != 1 {
		t.Errorf("refused requests reached the engine: %v", logs.streamed)
	}

	page := env.page("/apps/shop/logs/shop-web-1")
	assertContains(t, "logs page", page, `<span class="l-stdout">line 0 &lt;b&gt;</span>`, `<span class="l-stderr">token `+logstream.Redacted+`</span>`,
		`data-follow="/api/v1/apps/shop/logs?container=shop-web-1&amp;follow=1&amp;tail=100"`)
	assertContains(t, "app page", env.page("/apps/shop"), `href="/apps/shop/logs/shop-web-1"`)

	// Following streams server-sent events and ends with "end".
	srv := httptest.NewServer(env.h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/apps/shop/logs?container=shop-web-3&follow=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		body.Write(buf[:n])
		if err != nil || strings.Contains(body.String(), "event: end") {
			break
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("follow content type %q", ct)
	}
	assertContains(t, "follow stream", body.String(),
		"event: line\ndata: {\"container\":\"shop-web-3\",\"stream\":\"stdout\",\"text\":\"line 0 \\u003cb\\u003e\"}\n\n",
		"event: end\ndata: {\"reason\":\"the container stopped\"}")

	// Without a token, a remote client reads nothing.
	locked := newTestEnv(t, func(o *Options) { o.APIToken = "tok"; o.Logs = logs })
	if w := locked.do(http.MethodGet, "/api/v1/apps/shop/logs?container=shop-web-1", "", from("192.0.2.1:1234")); w.Code != http.StatusUnauthorized {
		t.Errorf("logs without a token: status %d", w.Code)
	}
}
