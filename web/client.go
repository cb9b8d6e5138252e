package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

// Client talks to a running agent's JSON API; the CLI uses it.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:8080
	Token   string // API token for write actions; optional for loopback
	HTTP    *http.Client
}

// APIError is an error answer from the agent, carrying its message.
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.StatusCode)
}

// HistoryPage is one page of history, newest first. Pass Next as before to
// get the following (older) page; 0 means there is none.
type HistoryPage struct {
	Entries []status.HistoryEntry `json:"entries"`
	Next    uint64                `json:"next,omitempty"`
}

// Apps lists every configured app's status.
func (c *Client) Apps(ctx context.Context) ([]status.AppStatus, error) {
	var out []status.AppStatus
	return out, c.do(ctx, http.MethodGet, "/api/v1/apps", nil, &out)
}

// Sources lists the agent's sources: entries and the apps each declares.
func (c *Client) Sources(ctx context.Context) ([]status.SourceSet, error) {
	var out []status.SourceSet
	return out, c.do(ctx, http.MethodGet, "/api/v1/sources", nil, &out)
}

// App returns one app's status.
func (c *Client) App(ctx context.Context, name string) (status.AppStatus, error) {
	var out status.AppStatus
	return out, c.do(ctx, http.MethodGet, "/api/v1/apps/"+url.PathEscape(name), nil, &out)
}

// Plan returns the app's current drift as data.
func (c *Client) Plan(ctx context.Context, app string) (drift.Plan, error) {
	var out drift.Plan
	return out, c.do(ctx, http.MethodGet, "/api/v1/apps/"+url.PathEscape(app)+"/plan", nil, &out)
}

// PlanText returns the app's current drift rendered like the CLI's plan.
func (c *Client) PlanText(ctx context.Context, app string) (string, error) {
	var out string
	return out, c.do(ctx, http.MethodGet, "/api/v1/apps/"+url.PathEscape(app)+"/plan?format=text", nil, &out)
}

// History returns one page of history; app "" means all apps, kinds empty
// means all kinds, before 0 means from the newest, limit 0 means the
// server's default.
func (c *Client) History(ctx context.Context, app string, kinds []string, before uint64, limit int) (HistoryPage, error) {
	path := "/api/v1/history"
	if app != "" {
		path = "/api/v1/apps/" + url.PathEscape(app) + "/history"
	}
	q := url.Values{}
	if len(kinds) > 0 {
		q.Set("kind", strings.Join(kinds, ","))
	}
	if before > 0 {
		q.Set("before", strconv.FormatUint(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out HistoryPage
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// Entry returns one history entry.
func (c *Client) Entry(ctx context.Context, id uint64) (status.HistoryEntry, error) {
	var out status.HistoryEntry
	return out, c.do(ctx, http.MethodGet, "/api/v1/history/"+strconv.FormatUint(id, 10), nil, &out)
}

// Sync queues a pass for the app.
func (c *Client) Sync(ctx context.Context, app string) error { return c.action(ctx, app, "sync", nil) }

// Suspend stops the agent changing the app's containers.
func (c *Client) Suspend(ctx context.Context, app string) error {
	return c.action(ctx, app, "suspend", nil)
}

// Resume lifts a suspension.
func (c *Client) Resume(ctx context.Context, app string) error {
	return c.action(ctx, app, "resume", nil)
}

// SetSelfHeal turns drift repair on or off.
func (c *Client) SetSelfHeal(ctx context.Context, app string, on bool) error {
	return c.action(ctx, app, "selfheal", map[string]bool{"enabled": on})
}

// Pin rolls the app back to revision and keeps it there.
func (c *Client) Pin(ctx context.Context, app, revision string) error {
	return c.action(ctx, app, "pin", map[string]string{"revision": revision})
}

// Unpin makes the app follow its branch again.
func (c *Client) Unpin(ctx context.Context, app string) error {
	return c.action(ctx, app, "unpin", nil)
}

// Unquarantine retries the app's quarantined head on purpose.
func (c *Client) Unquarantine(ctx context.Context, app string) error {
	return c.action(ctx, app, "unquarantine", nil)
}

func (c *Client) action(ctx context.Context, app, name string, body any) error {
	return c.do(ctx, http.MethodPost, "/api/v1/apps/"+url.PathEscape(app)+"/"+name, body, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("building request to the agent: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the agent at %s: %w (is the agent running there?)", c.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the agent's answer: %w", err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
			if e.Error == "" {
				e.Error = resp.Status
			}
		}
		return &APIError{StatusCode: resp.StatusCode, Message: e.Error}
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *string:
		*o = string(data)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the agent's answer to %s %s: %w", method, path, err)
	}
	return nil
}
