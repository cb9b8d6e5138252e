package web

import (
	"encoding/xml"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
)

// svgNode is a parsed SVG element, for assertions on structure.
type svgNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []svgNode  `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns the nodes below n (n included) that match.
func (n svgNode) all(match func(svgNode) bool) []svgNode {
	var out []svgNode
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, c.all(match)...)
	}
	return out
}

func (n svgNode) child(local string) (svgNode, bool) {
	for _, c := range n.Children {
		if c.XMLName.Local == local {
			return c, true
		}
	}
	return svgNode{}, false
}

func hasClass(n svgNode, class string) bool {
	return slices.Contains(strings.Fields(n.attr("class")), class)
}

func parseSVG(t *testing.T, svg string) svgNode {
	t.Helper()
	var n svgNode
	if err := xml.Unmarshal([]byte(svg), &n); err != nil {
		t.Fatalf("timeline is not well-formed SVG: %v\n%s", err, svg)
	}
	if n.XMLName.Local != "svg" {
		t.Fatalf("root is <%s>, want <svg>", n.XMLName.Local)
	}
	return n
}

type pt struct{ x, y float64 }

func polyPoints(t *testing.T, n svgNode) []pt {
	t.Helper()
	var out []pt
	for f := range strings.FieldsSeq(n.attr("points")) {
		xs, ys, _ := strings.Cut(f, ",")
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad point %q", f)
		}
		out = append(out, pt{x, y})
	}
	return out
}

var tlNow = time.Date(2026, 5, 4, 12, 0, 30, 0, time.UTC)

func minutesAgo(m int) time.Time {
	return tlNow.Truncate(time.Minute).Add(-time.Duration(m) * time.Minute)
}

func timelineEntries() []status.HistoryEntry {
	r := func(revert bool) *gitsource.Revision {
		return &gitsource.Revision{SHA: "1234567890123456789012345678901234567890", Subject: "s", Revert: revert}
	}
	return []status.HistoryEntry{
		{ID: 11, Time: minutesAgo(2), Kind: status.KindSync, Result: "succeeded", Revision: r(false), Summary: "synced 1234567 “scale down”"},
		{ID: 10, Time: minutesAgo(5), Kind: status.KindRefused, Result: "refused", Summary: "refused abc <script>: 1 manifest error(s)", Errors: []string{"web.yaml:12:13: spec.replicas: must be >= 0"}},
		{ID: 9, Time: minutesAgo(8), Kind: status.KindRepair, Result: "succeeded", Summary: "shop-web-2 was removed outside Git; recreated"},
		{ID: 8, Time: minutesAgo(12), Kind: status.KindSync, Result: "failed", Revision: r(false), Summary: "failed to sync"},
		{ID: 7, Time: minutesAgo(15), Kind: status.KindSync, Result: "succeeded", Revision: r(true), Summary: "synced revert"},
		{ID: 6, Time: minutesAgo(16), Kind: status.KindRollback, Summary: "pinned to 1234567"},
		{ID: 5, Time: minutesAgo(17), Kind: status.KindSource, Result: "failed", Summary: "source failed"},
		{ID: 4, Time: minutesAgo(18), Kind: status.KindSource, Result: "succeeded", Summary: "source recovered"},  // no mark
		{ID: 3, Time: minutesAgo(19), Kind: status.KindAction, Summary: "suspended"},                              // no mark
		{ID: 2, Time: minutesAgo(20), Kind: status.KindSync, Result: "stopped for something newer", Summary: "x"}, // no mark
		{ID: 1, Time: minutesAgo(90), Kind: status.KindSync, Result: "succeeded", Summary: "before the range"},    // outside 1h
	}
}

func timelineSeries() []status.ServiceSeries {
	var web []status.SeriesPoint
	// 3/3 from 40 minutes ago, a dip to 2 at 8 minutes ago, then scaled
	// down to 1/1 two minutes ago; a gap (agent down) from 30 to 25
	// minutes ago.
	for m := 40; m >= 0; m-- {
		if m < 30 && m > 25 {
			continue
		}
		p := status.SeriesPoint{Time: minutesAgo(m), Ready: 3, Desired: 3, MinReady: 3}
		switch {
		case m == 8:
			p.MinReady = 2 // a replica removed and recreated within the minute
		case m <= 2:
			p.Ready, p.Desired, p.MinReady = 1, 1, 1
		}
		web = append(web, p)
	}
	return []status.ServiceSeries{
		{Service: "db", Points: []status.SeriesPoint{{Time: minutesAgo(40), Ready: 1, Desired: 1, MinReady: 1}, {Time: minutesAgo(0), Ready: 1, Desired: 1, MinReady: 1}}},
		{Service: "web", Points: web},
	}
}

func TestTimelineMarks(t *testing.T) {
	svg := parseSVG(t, string(timelineSVG(timelineInput{App: "shop", Series: timelineSeries(), Entries: timelineEntries(), Span: time.Hour, Now: tlNow})))
	marks := svg.all(func(n svgNode) bool { return n.XMLName.Local == "a" && hasClass(n, "mark") })
	var got []string
	for _, m := range marks {
		got = append(got, m.attr("data-id")+":"+m.attr("data-kind"))
		if want := "/history/" + m.attr("data-id"); m.attr("href") != want {
			t.Errorf("mark %s links to %q, want %q", m.attr("data-id"), m.attr("href"), want)
		}
		title, ok := m.child("title")
		if !ok || title.Text == "" {
			t.Errorf("mark %s has no <title>", m.attr("data-id"))
		}
	}
	want := []string{"5:failed", "6:revert", "7:revert", "8:failed", "9:repair", "10:refused", "11:applied"}
	if !slices.Equal(got, want) {
		t.Fatalf("marks (oldest first) = %v, want %v", got, want)
	}
	// The summary is the hover text, escaped as text.
	if title, _ := marks[5].child("title"); !strings.Contains(title.Text, "refused abc <script>: 1 manifest error(s)\nweb.yaml:12:13: spec.replicas: must be >= 0") {
		t.Fatalf("refused mark title = %q", title.Text)
	}
	requireDistinctShapes(t, marks)
	requireOrderedInPlot(t, marks)
	// The legend names every kind, and the SVG says what it shows.
	legend := svg.all(func(n svgNode) bool { return hasClass(n, "legend-item") })
	if len(legend) != len(markKinds) {
		t.Fatalf("legend has %d items, want %d", len(legend), len(markKinds))
	}
	title, _ := svg.child("title")
	if !strings.Contains(title.Text, "shop, last 1h") || !strings.Contains(title.Text, "1 refused") || !strings.Contains(title.Text, "2 failed") {
		t.Fatalf("SVG title = %q", title.Text)
	}
}

func laneOf(t *testing.T, svg svgNode, service string) svgNode {
	t.Helper()
	lanes := svg.all(func(n svgNode) bool { return hasClass(n, "lane") && n.attr("data-service") == service })
	if len(lanes) != 1 {
		t.Fatalf("%d lanes for %s", len(lanes), service)
	}
	return lanes[0]
}

func lines(lane svgNode, class string) []svgNode {
	return lane.all(func(n svgNode) bool { return n.XMLName.Local == "polyline" && hasClass(n, class) })
}

func TestTimelineReplicaLine(t *testing.T) {
	in := timelineInput{App: "shop", Series: timelineSeries(), Entries: timelineEntries(), Span: time.Hour, Now: tlNow}
	svg := parseSVG(t, string(timelineSVG(in)))
	lanes := svg.all(func(n svgNode) bool { return hasClass(n, "lane") })
	if len(lanes) != 2 || lanes[0].attr("data-service") != "db" || lanes[1].attr("data-service") != "web" {
		t.Fatalf("lanes = %d, want db then web", len(lanes))
	}
	web := laneOf(t, svg, "web")
	peak, _ := strconv.Atoi(web.attr("data-peak"))
	top, _ := strconv.ParseFloat(web.attr("data-top"), 64)
	bottom, _ := strconv.ParseFloat(web.attr("data-bottom"), 64)
	if peak != 3 {
		t.Fatalf("web peak = %d, want 3", peak)
	}
	count := func(y float64) int { return int(math.Round((bottom - y) / (bottom - top) * float64(peak))) }
	c := newTimelineCanvas(in)
	xAt := func(m int) float64 { return math.Round(c.x(minutesAgo(m))*10) / 10 }

	ready := lines(web, "ready")
	// The gap (the agent was down 29 to 26 minutes ago) splits the line.
	if len(ready) != 2 {
		t.Fatalf("web has %d ready polylines, want 2 (split by the gap)", len(ready))
	}
	first := polyPoints(t, ready[0])
	if first[0].x != xAt(40) || count(first[0].y) != 3 || first[len(first)-1].x != xAt(29) {
		t.Fatalf("first stretch = %v, want from 40 min ago at 3 to the end of the minute 30 min ago", first)
	}
	// The second stretch: 3 until 8 minutes ago, a spike down to 2 (the
	// dip within that minute), 3 again, then 1 from 2 minutes ago until
	// now.
	var got []string
	for _, p := range polyPoints(t, ready[1]) {
		got = append(got, fmt.Sprintf("%v:%d", p.x, count(p.y)))
	}
	end := math.Round(c.x(tlNow)*10) / 10
	want := []string{
		fmt.Sprintf("%v:3", xAt(25)), fmt.Sprintf("%v:3", xAt(8)),
		fmt.Sprintf("%v:2", xAt(8)), fmt.Sprintf("%v:3", xAt(8)),
		fmt.Sprintf("%v:3", xAt(2)), fmt.Sprintf("%v:1", xAt(2)),
		fmt.Sprintf("%v:1", end),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ready line = %v, want %v", got, want)
	}
	desired := polyPoints(t, lines(web, "desired")[1])
	if last := desired[len(desired)-1]; last.x != end || count(last.y) != 1 {
		t.Fatalf("desired ends at %v (count %d), want now at 1", last, count(last.y))
	}
	if title, _ := web.child("title"); !strings.HasPrefix(title.Text, "web: 1/1 ready now") {
		t.Fatalf("web lane title = %q", title.Text)
	}
}

func TestTimelineCompactSumsServices(t *testing.T) {
	in := timelineInput{App: "shop", Series: timelineSeries(), Entries: timelineEntries(), Span: time.Hour, Now: tlNow, Compact: true}
	svg := parseSVG(t, string(timelineSVG(in)))
	lanes := svg.all(func(n svgNode) bool { return hasClass(n, "lane") })
	if len(lanes) != 1 {
		t.Fatalf("compact timeline has %d lanes, want 1", len(lanes))
	}
	if n := len(svg.all(func(n svgNode) bool { return hasClass(n, "legend") })); n != 0 {
		t.Fatal("compact timeline draws its own legend")
	}
	if n := len(svg.all(func(n svgNode) bool { return hasClass(n, "mark") })); n != 7 {
		t.Fatalf("compact timeline has %d marks, want 7", n)
	}
	if title, _ := lanes[0].child("title"); !strings.HasPrefix(title.Text, "all services: 2/2 ready now; at most 4") {
		t.Fatalf("compact lane title = %q, want web 1/1 + db 1/1", title.Text)
	}
}

func TestTimelineEmpty(t *testing.T) {
	svg := parseSVG(t, string(timelineSVG(timelineInput{App: "new", Span: 6 * time.Hour, Now: tlNow})))
	if n := len(svg.all(func(n svgNode) bool { return hasClass(n, "mark") || n.XMLName.Local == "polyline" })); n != 0 {
		t.Fatalf("an app without history or series drew %d marks or lines", n)
	}
	if title, _ := svg.child("title"); !strings.Contains(title.Text, "no events") {
		t.Fatalf("title = %q", title.Text)
	}
}

func TestParseRange(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 6 * time.Hour, "1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour} {
		if _, got, err := parseRange(in); err != nil || got != want {
			t.Errorf("parseRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"2h", "1d", "-1h", "24H"} {
		if _, _, err := parseRange(bad); err == nil || !strings.Contains(err.Error(), "1h, 6h or 24h") {
			t.Errorf("parseRange(%q) error = %v", bad, err)
		}
	}
}

func TestTimelineEndpointsAndPages(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.Now = func() time.Time { return fixedTime.Add(40 * time.Minute) } })
	e.agent.series = map[string][]status.ServiceSeries{"shop": {{Service: "web", Points: []status.SeriesPoint{{Time: fixedTime, Ready: 3, Desired: 3}}}}}

	w := e.do(http.MethodGet, "/apps/shop/timeline?range=1h", "")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "image/svg+xml") {
		t.Fatalf("timeline: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	svg := parseSVG(t, w.Body.String())
	// shop's entries are the odd IDs of the fake history, one a minute
	// after fixedTime: 1..29 odd, of kinds sync, repair, refused.
	marks := svg.all(func(n svgNode) bool { return hasClass(n, "mark") })
	if len(marks) != 15 {
		t.Fatalf("%d marks, want shop's 15 entries", len(marks))
	}
	if len(svg.all(func(n svgNode) bool { return hasClass(n, "lane") })) != 1 {
		t.Fatal("no lane for web")
	}
	if w := e.do(http.MethodGet, "/apps/shop/timeline?range=2h", ""); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "1h, 6h or 24h") {
		t.Fatalf("bad range: %d %s", w.Code, w.Body)
	}
	if w := e.do(http.MethodGet, "/apps/nope/timeline", ""); w.Code != http.StatusNotFound {
		t.Fatalf("unknown app: %d", w.Code)
	}
	w = e.do(http.MethodGet, "/apps/shop?range=24h", "")
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `data-timeline="/apps/shop/timeline?range=24h"`) || !strings.Contains(body, `class="timeline-svg"`) ||
		!strings.Contains(body, `href="/apps/shop?range=1h"`) || !strings.Contains(body, `aria-current="true" class="cur">24h`) {
		t.Fatalf("app page: %d, timeline or range links missing", w.Code)
	}
	w = e.do(http.MethodGet, "/?range=1h", "")
	body = w.Body.String()
	if w.Code != http.StatusOK || strings.Count(body, `class="timeline-svg compact"`) != len(e.agent.apps) || !strings.Contains(body, `class="timeline-legend"`) {
		t.Fatalf("overview: %d, want one compact timeline per app and a legend", w.Code)
	}
	if w := e.do(http.MethodGet, "/?range=7d", ""); w.Code != http.StatusBadRequest {
		t.Fatalf("overview with a bad range: %d", w.Code)
	}
}

// requireDistinctShapes: each kind of mark has its own shape and colour.
func requireDistinctShapes(t *testing.T, marks []svgNode) {
	t.Helper()
	shapes := map[string]string{}
	for _, m := range marks {
		for _, c := range m.Children {
			if c.XMLName.Local != "title" {
				shapes[m.attr("data-kind")] = c.XMLName.Local + " " + c.attr("fill") + c.attr("stroke")
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range shapes {
		if seen[s] {
			t.Fatalf("two kinds share the shape %q: %v", s, shapes)
		}
		seen[s] = true
	}
}

// requireOrderedInPlot: later marks are further right, all inside the plot.
func requireOrderedInPlot(t *testing.T, marks []svgNode) {
	t.Helper()
	prev := -1.0
	for _, m := range marks {
		x, _ := strconv.ParseFloat(m.attr("data-x"), 64)
		if x < tlGutter || x > tlWidth-tlRightPad || x < prev {
			t.Fatalf("mark %s at x=%v (previous %v): out of order or outside the plot", m.attr("data-id"), x, prev)
		}
		prev = x
	}
}

// Marks seconds apart would share a pixel: they are moved apart, in order,
// and stay inside the plot even at its right end.
func TestTimelineMarksDoNotHideEachOther(t *testing.T) {
	var entries []status.HistoryEntry
	for i := range 6 {
		entries = append(entries, status.HistoryEntry{ID: uint64(i + 1), Time: tlNow.Add(time.Duration(i-6) * time.Second), Kind: status.KindRepair, Summary: "x"})
	}
	for _, compact := range []bool{false, true} {
		svg := parseSVG(t, string(timelineSVG(timelineInput{App: "shop", Entries: entries, Span: time.Hour, Now: tlNow, Compact: compact})))
		marks := svg.all(func(n svgNode) bool { return hasClass(n, "mark") })
		if len(marks) != 6 {
			t.Fatalf("%d marks, want 6", len(marks))
		}
		prev := math.Inf(-1)
		for _, m := range marks {
			x, _ := strconv.ParseFloat(m.attr("data-x"), 64)
			if x-prev < 2*5 || x > tlWidth-tlRightPad {
				t.Fatalf("compact=%v: mark %s at %v, previous at %v: overlapping or outside the plot", compact, m.attr("data-id"), x, prev)
			}
			prev = x
		}
	}
	if got := dodge([]float64{10, 10, 10}, 5, 0, 100); !slices.Equal(got, []float64{10, 15, 20}) {
		t.Errorf("dodge = %v", got)
	}
	if got := dodge([]float64{99, 100, 100}, 5, 0, 100); !slices.Equal(got, []float64{90, 95, 100}) {
		t.Errorf("dodge at the end = %v", got)
	}
}

// A minute that saw more and fewer ready replicas than at its end (a
// deploy from 0 and a scale-down to 1 within it) draws a spike to both.
func TestTimelineMinuteSpike(t *testing.T) {
	in := timelineInput{App: "shop", Span: time.Hour, Now: tlNow, Series: []status.ServiceSeries{{Service: "web", Points: []status.SeriesPoint{
		{Time: minutesAgo(5), Ready: 1, Desired: 1, MinReady: 0, MaxReady: 3},
	}}}}
	svg := parseSVG(t, string(timelineSVG(in)))
	web := laneOf(t, svg, "web")
	if web.attr("data-peak") != "3" {
		t.Fatalf("peak = %s, want 3 (the highest ready count in the minute)", web.attr("data-peak"))
	}
	peak := 3.0
	top, _ := strconv.ParseFloat(web.attr("data-top"), 64)
	bottom, _ := strconv.ParseFloat(web.attr("data-bottom"), 64)
	var got []int
	for _, p := range polyPoints(t, lines(web, "ready")[0]) {
		got = append(got, int(math.Round((bottom-p.y)/(bottom-top)*peak)))
	}
	if want := []int{3, 0, 1, 1}; !slices.Equal(got, want) {
		t.Fatalf("ready line counts = %v, want %v", got, want)
	}
}

// Whatever an app, a service or a history entry is called or says, the
// timeline is well-formed XML with one link per mark.
func FuzzTimelineSVG(f *testing.F) {
	f.Add("shop", "web", "synced 1234567 “x”", "web.yaml:1:2: bad <tag> & \"q\"")
	f.Add("a", "", "\x00\x01\ufffe", "\xff\xfe")
	f.Fuzz(func(t *testing.T, app, service, summary, errText string) {
		in := timelineInput{App: app, Span: time.Hour, Now: tlNow,
			Series: []status.ServiceSeries{{Service: service, Points: []status.SeriesPoint{{Time: minutesAgo(3), Ready: 1, Desired: 2, MinReady: 0, MaxReady: 2}}}},
			Entries: []status.HistoryEntry{
				{ID: 1, Time: minutesAgo(2), Kind: status.KindRefused, Summary: summary, Errors: []string{errText}},
				{ID: 2, Time: minutesAgo(1), Kind: status.KindSync, Result: "succeeded", Summary: summary},
			}}
		for _, compact := range []bool{false, true} {
			in.Compact = compact
			var n svgNode
			if err := xml.Unmarshal([]byte(timelineSVG(in)), &n); err != nil {
				t.Fatalf("not well-formed (compact=%v): %v", compact, err)
			}
			if marks := n.all(func(n svgNode) bool { return hasClass(n, "mark") }); len(marks) != 2 {
				t.Fatalf("%d marks, want 2", len(marks))
			}
		}
	})
}

// TestTimelineWatchWindows: each release's watch window is a band from its
// start to how it ended (passed, quarantined) or to now while open, and a
// quarantine is a mark of its own.
func TestTimelineWatchWindows(t *testing.T) {
	rev := &gitsource.Revision{SHA: "1234567890123456789012345678901234567890", Subject: "s"}
	entries := []status.HistoryEntry{
		{ID: 3, Time: minutesAgo(10), Kind: status.KindRollback, Result: "quarantined", Revision: rev, Duration: 2 * time.Minute,
			Summary: "regression in 1234567: shop-web-2 crash-looped 40s after the release; quarantined it, rolling back to 89abcde"},
		{ID: 2, Time: minutesAgo(20), Kind: status.KindRelease, Result: "passed", Revision: rev, Duration: 5 * time.Minute, Summary: "release 89abcde passed its 5m watch window"},
		{ID: 1, Time: minutesAgo(30), Kind: status.KindSync, Result: "succeeded", Revision: rev, Summary: "synced"},
	}
	in := timelineInput{App: "shop", Series: timelineSeries(), Entries: entries, Span: time.Hour, Now: tlNow,
		Watching: &status.Watching{Revision: rev.SHA, Since: tlNow.Add(-time.Minute), Until: tlNow.Add(2 * time.Minute)}}
	svg := parseSVG(t, string(timelineSVG(in)))
	c := newTimelineCanvas(in)
	bands := svg.all(func(n svgNode) bool { return hasClass(n, "watch") })
	if len(bands) != 3 {
		t.Fatalf("%d watch bands, want 3 (passed, quarantined, open)", len(bands))
	}
	want := map[string][2]time.Time{
		"passed":      {minutesAgo(25), minutesAgo(20)},
		"quarantined": {minutesAgo(12), minutesAgo(10)},
		"open":        {tlNow.Add(-time.Minute), tlNow},
	}
	for _, b := range bands {
		w, ok := want[b.attr("data-outcome")]
		if !ok {
			t.Fatalf("band with outcome %q", b.attr("data-outcome"))
		}
		x, _ := strconv.ParseFloat(b.attr("x"), 64)
		width, _ := strconv.ParseFloat(b.attr("width"), 64)
		if math.Abs(x-c.x(w[0])) > 0.1 || math.Abs(x+width-c.x(w[1])) > 0.1 {
			t.Errorf("%s band spans %.1f..%.1f, want %.1f..%.1f", b.attr("data-outcome"), x, x+width, c.x(w[0]), c.x(w[1]))
		}
	}
	if title, _ := bands[2].child("title"); !strings.Contains(title.Text, "watching 1234567 (2m0s left)") {
		t.Errorf("open band's title %q", title.Text)
	}
	quarantined := svg.all(func(n svgNode) bool { return hasClass(n, "m-quarantined") })
	if len(quarantined) != 1 || quarantined[0].attr("data-id") != "3" {
		t.Fatalf("quarantine marks %d, want one for entry 3", len(quarantined))
	}
	if passed := svg.all(func(n svgNode) bool { return hasClass(n, "mark") && n.attr("data-id") == "2" }); len(passed) != 0 {
		t.Error("a passed window is a band, not a mark")
	}
}

// TestTimelineJobRuns: job runs are small dots on a row of their own; the
// row is there only when the range has runs.
func TestTimelineJobRuns(t *testing.T) {
	entries := append(timelineEntries(),
		status.HistoryEntry{ID: 20, Time: minutesAgo(3), Kind: status.KindJob, Result: "succeeded", Summary: "job backup succeeded"},
		status.HistoryEntry{ID: 21, Time: minutesAgo(1), Kind: status.KindJob, Result: "failed", Summary: "job backup failed: exit 1"})
	svg := parseSVG(t, string(timelineSVG(timelineInput{App: "shop", Series: timelineSeries(), Entries: entries, Span: time.Hour, Now: tlNow})))
	runs := svg.all(func(n svgNode) bool { return hasClass(n, "job-run") })
	if len(runs) != 2 || runs[0].attr("data-result") != "succeeded" || runs[1].attr("data-result") != "failed" {
		t.Fatalf("job runs %d, want a succeeded and a failed one", len(runs))
	}
	plain := parseSVG(t, string(timelineSVG(timelineInput{App: "shop", Series: timelineSeries(), Entries: timelineEntries(), Span: time.Hour, Now: tlNow})))
	if len(plain.all(func(n svgNode) bool { return hasClass(n, "jobs") })) != 0 {
		t.Fatal("a jobs row without job runs")
	}
	if h1, h2 := svg.attr("viewBox"), plain.attr("viewBox"); h1 == h2 {
		t.Fatalf("viewBox %s with job runs and without: the row takes no room", h1)
	}
}
