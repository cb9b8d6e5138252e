package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftless-dev/driftless/sync/config"
)

type captured struct {
	method, path, contentType, title string
	body                             []byte
}

// TestShoutrrrServicesOnLoopback sends one event through services whose
// shoutrrr URL takes a host, to a loopback server, and checks what arrives
// against each service's documented publish format.
func TestShoutrrrServicesOnLoopback(t *testing.T) {
	got := make(chan captured, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- captured{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Title"), b}
		io.WriteString(w, `{"id":"1"}`)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	n, err := New(Options{Config: config.Config{Notifications: []config.Notification{
		// ntfy: POST /TOPIC, the message as the body, the title in a header.
		{Name: "ntfy", URL: "ntfy://" + host + "/driftless-alerts?scheme=http"},
		// Mattermost's incoming webhook, Slack's format: POST /hooks/ID {"text": ...}.
		{Name: "mattermost", URL: "mattermost://" + host + "/hooktoken123?disabletls=yes"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ntfy", "mattermost"} {
		if err := n.Test(context.Background(), name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := <-got
		switch name {
		case "ntfy":
			if c.method != http.MethodPost || c.path != "/driftless-alerts" || c.title != "driftless: test notification" ||
				!strings.HasPrefix(string(c.body), "This is a test notification from driftless to ntfy.") {
				t.Errorf("ntfy got %+v", c)
			}
		case "mattermost":
			var body struct{ Text string }
			if err := json.Unmarshal(c.body, &body); err != nil || c.method != http.MethodPost || c.path != "/hooks/hooktoken123" ||
				c.contentType != "application/json" || body.Text != "This is a test notification from driftless to mattermost." {
				t.Errorf("mattermost got %+v (%s), %v", c, c.body, err)
			}
		}
	}
}
