package web

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
)

// The timeline: an app's history as marks on a time axis, over its
// services' ready/desired replica counts as step lines. It is drawn here,
// server-side, as inline SVG by a pure function of the series, the marks,
// the range and the clock, so it needs no script to show and is tested by
// its structure.

// timelineRanges are the ranges offered, by their query value.
var timelineRanges = []struct {
	Name string
	Span time.Duration
	Tick time.Duration // between axis labels
}{
	{"1h", time.Hour, 10 * time.Minute},
	{"6h", 6 * time.Hour, time.Hour},
	{"24h", 24 * time.Hour, 3 * time.Hour},
}

const defaultTimelineRange = "6h"

// parseRange reads ?range=; "" is the default.
func parseRange(v string) (string, time.Duration, error) {
	if v == "" {
		v = defaultTimelineRange
	}
	for _, r := range timelineRanges {
		if r.Name == v {
			return r.Name, r.Span, nil
		}
	}
	return "", 0, fmt.Errorf("range must be 1h, 6h or 24h, not %q", v)
}

func tickFor(span time.Duration) time.Duration {
	for _, r := range timelineRanges {
		if r.Span == span {
			return r.Tick
		}
	}
	return max(span/6, time.Minute)
}

// Mark kinds, each with its own shape and colour.
const (
	markApplied = "applied" // a revision applied
	markRevert  = "revert"  // a revert commit applied, or a roll back (pin, unpin)
	markRefused = "refused" // a revision refused
	markRepair  = "repair"  // drift repaired
	markFailed  = "failed"  // a sync or the source failed
	// markQuarantined: a release regressed in its watch window.
	markQuarantined = "quarantined"
)

// markKinds in legend order.
var markKinds = []string{markApplied, markRevert, markRefused, markRepair, markFailed, markQuarantined}

var markLabels = map[string]string{
	markApplied:     "revision applied",
	markRevert:      "revert / roll back",
	markRefused:     "refused",
	markQuarantined: "quarantined",
	markRepair:      "drift repaired",
	markFailed:      "failed",
}

// timelineKinds are the history kinds that can become marks.
var timelineKinds = []status.HistoryKind{status.KindSync, status.KindRollback, status.KindRefused, status.KindForcePush, status.KindRepair, status.KindSource, status.KindRelease, status.KindJob}

// markKind is the mark an entry makes; false for entries the timeline
// leaves out (a followed force-push is shown by the sync after it, a
// source that recovered by the marks that follow, a job run that
// succeeded by nothing: only a failed one is news).
func markKind(e status.HistoryEntry) (string, bool) {
	switch e.Kind {
	case status.KindSync:
		switch {
		case e.Result == "failed" || e.Result == "partial":
			return markFailed, true
		case e.Result == "stopped for something newer":
			return "", false
		case e.Revision != nil && e.Revision.Revert:
			return markRevert, true
		}
		return markApplied, true
	case status.KindRollback:
		if e.Result == "quarantined" {
			return markQuarantined, true
		}
		return markRevert, true
	case status.KindRefused:
		return markRefused, true
	case status.KindForcePush:
		return markRefused, e.Result == "refused"
	case status.KindRepair:
		return markRepair, true
	case status.KindSource, status.KindJob:
		return markFailed, e.Result == "failed"
	}
	return "", false
}

// timelineInput is everything a timeline is drawn from.
type timelineInput struct {
	App     string
	Series  []status.ServiceSeries
	Entries []status.HistoryEntry // any order; those outside the range are left out
	Span    time.Duration
	Now     time.Time
	// Compact draws one lane, the app's services summed, without labels
	// or legend: one row of the overview.
	Compact bool
	// Watching is the release whose watch window is open now, if any.
	Watching *status.Watching
}

// Geometry, in SVG user units (the SVG scales to its box's width).
const (
	tlWidth       = 960
	tlGutter      = 120 // service labels, left of the plot
	tlRightPad    = 12
	tlMarkLane    = 30
	tlServiceLane = 44
	tlAxis        = 20
	tlLegend      = 22
	tlCompactMark = 20
	tlCompactLine = 30
	tlCompactAxis = 14
	tlJobRow      = 16 // the row of job runs, when there are any
	// tlGap: two points further apart than this have a gap between them
	// (the agent was not running); the series has one point a minute.
	tlGap = 2*time.Minute + 30*time.Second
)

// timelineSVG draws the timeline.
func timelineSVG(in timelineInput) template.HTML {
	t := newTimelineCanvas(in)
	var b strings.Builder
	lanes := t.lanes()
	height := t.top + len(lanes)*t.laneH + t.axisH
	if !in.Compact {
		height += tlLegend
	}
	counts := map[string]int{}
	marks := t.marks()
	for _, m := range marks {
		counts[m.kind]++
	}
	var summary []string
	for _, k := range markKinds {
		if counts[k] > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", counts[k], markLabels[k]))
		}
	}
	if len(summary) == 0 {
		summary = []string{"no events"}
	}
	id := "tl-" + strconv.Itoa(len(in.App)) + "-" + sanitizeID(in.App)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline-svg%s" viewBox="0 0 %d %d" width="100%%" preserveAspectRatio="xMinYMin meet" role="img" aria-labelledby="%s" data-app="%s" data-range="%s" data-start="%d" data-end="%d">`,
		map[bool]string{true: " compact"}[in.Compact], tlWidth, height, id, esc(in.App), esc(spanName(in.Span)), t.start.Unix(), t.end.Unix())
	fmt.Fprintf(&b, `<title id="%s">%s, last %s: %s</title>`, id, esc(in.App), esc(spanName(in.Span)), esc(strings.Join(summary, ", ")))
	t.drawAxis(&b, height-t.axisH-t.legendH())
	t.drawWindows(&b, height-t.axisH-t.legendH())
	for i, l := range lanes {
		t.drawLane(&b, l, t.top+i*t.laneH)
	}
	t.drawJobRuns(&b)
	t.drawMarks(&b, marks, height-t.axisH-t.legendH())
	if !in.Compact {
		drawLegend(&b, t.x0, height-tlLegend+4)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// timelineLegend is the legend alone, shown once above the overview's
// compact timelines.
func timelineLegend() template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline-legend" viewBox="0 0 %d %d" width="100%%" preserveAspectRatio="xMinYMin meet" role="img" aria-label="legend">`, tlWidth, tlLegend)
	drawLegend(&b, 0, 4)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func spanName(d time.Duration) string {
	for _, r := range timelineRanges {
		if r.Span == d {
			return r.Name
		}
	}
	return d.String()
}

func sanitizeID(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// esc escapes text for the SVG, which is also served alone as XML: runes
// XML does not allow (control characters, invalid UTF-8) become U+FFFD.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r != 0xFFFE && r != 0xFFFF && r != utf8.RuneError) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return template.HTMLEscapeString(s)
}

// timelineCanvas maps time and counts to coordinates.
type timelineCanvas struct {
	in         timelineInput
	start, end time.Time
	x0, x1     float64
	top, laneH int
	axisH      int
	markY      float64
	// jobY is the row of job runs, 0 when the range has none.
	jobY float64
}

func newTimelineCanvas(in timelineInput) *timelineCanvas {
	t := &timelineCanvas{in: in, end: in.Now.UTC(), x0: tlGutter, x1: tlWidth - tlRightPad,
		top: tlMarkLane, laneH: tlServiceLane, axisH: tlAxis}
	if in.Span <= 0 {
		t.in.Span = time.Hour
	}
	t.start = t.end.Add(-t.in.Span)
	if in.Compact {
		t.x0, t.top, t.laneH, t.axisH = 0, tlCompactMark, tlCompactLine, tlCompactAxis
	}
	t.markY = float64(t.top) / 2
	if !in.Compact && slices.ContainsFunc(in.Entries, func(e status.HistoryEntry) bool {
		return e.Kind == status.KindJob && !e.Time.Before(t.start) && !e.Time.After(t.end)
	}) {
		t.jobY = float64(t.top) + tlJobRow/2
		t.top += tlJobRow
	}
	return t
}

func (t *timelineCanvas) legendH() int {
	if t.in.Compact {
		return 0
	}
	return tlLegend
}

// x is the horizontal position of a time, clamped to the plot.
func (t *timelineCanvas) x(at time.Time) float64 {
	f := float64(at.Sub(t.start)) / float64(t.end.Sub(t.start))
	f = min(max(f, 0), 1)
	return t.x0 + f*(t.x1-t.x0)
}

// lane is one step chart: a service, or the app's services summed.
type lane struct {
	name   string
	points []status.SeriesPoint
}

func (t *timelineCanvas) lanes() []lane {
	if !t.in.Compact {
		out := make([]lane, 0, len(t.in.Series))
		for _, s := range t.in.Series {
			out = append(out, lane{s.Service, s.Points})
		}
		return out
	}
	return []lane{{"all services", sumSeries(t.in.Series)}}
}

// sumSeries adds the services' counts minute by minute; a service counts
// from its first point on, with the value in force at each minute.
func sumSeries(series []status.ServiceSeries) []status.SeriesPoint {
	if len(series) == 0 {
		return nil
	}
	var times []time.Time
	seen := map[int64]bool{}
	for _, s := range series {
		for _, p := range s.Points {
			if !seen[p.Time.Unix()] {
				seen[p.Time.Unix()] = true
				times = append(times, p.Time)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	out := make([]status.SeriesPoint, 0, len(times))
	idx := make([]int, len(series))
	for _, at := range times {
		sum := status.SeriesPoint{Time: at}
		for i, s := range series {
			for idx[i]+1 < len(s.Points) && !s.Points[idx[i]+1].Time.After(at) {
				idx[i]++
			}
			if len(s.Points) > 0 && !s.Points[idx[i]].Time.After(at) && at.Sub(s.Points[idx[i]].Time) <= tlGap {
				sum.Ready += s.Points[idx[i]].Ready
				sum.Desired += s.Points[idx[i]].Desired
				if s.Points[idx[i]].Time.Equal(at) {
					sum.MinReady += s.Points[idx[i]].MinReady
					sum.MaxReady += s.Points[idx[i]].MaxReady
				} else {
					// Its minute is over: only the value holds.
					sum.MinReady += s.Points[idx[i]].Ready
					sum.MaxReady += s.Points[idx[i]].Ready
				}
			}
		}
		out = append(out, sum)
	}
	return out
}

// steps turns points into step-chart polylines, one per stretch without a
// gap. value picks ready or desired; span, if set, the lowest and highest
// values within a point's minute, drawn as a spike from the step.
func (t *timelineCanvas) steps(points []status.SeriesPoint, value func(status.SeriesPoint) int, span func(status.SeriesPoint) (int, int), y func(int) float64) [][][2]float64 {
	var lines [][][2]float64
	var cur [][2]float64
	for i, p := range points {
		if p.Time.After(t.end) {
			break
		}
		// Where this value stops holding: at the next point, at now for
		// the latest one, else (before a gap) at the end of its minute.
		until, connected := p.Time.Add(time.Minute), false
		switch {
		case i+1 < len(points) && points[i+1].Time.Sub(p.Time) <= tlGap:
			until, connected = points[i+1].Time, true
		case i+1 == len(points) && t.end.Sub(p.Time) <= tlGap:
			until = t.end
		}
		if until.After(t.start) {
			x, xu, vy := t.x(p.Time), t.x(until), y(value(p))
			var spike [][2]float64
			if span != nil {
				lo, hi := span(p)
				if hi > value(p) {
					spike = append(spike, [2]float64{x, y(hi)})
				}
				if lo < value(p) {
					spike = append(spike, [2]float64{x, y(lo)})
				}
			}
			n := len(cur)
			switch {
			case len(spike) > 0:
				cur = append(append(cur, spike...), [2]float64{x, vy}, [2]float64{xu, vy})
			case n > 0 && cur[n-1][1] == vy:
				cur[n-1][0] = xu // the same value goes on
			default:
				cur = append(cur, [2]float64{x, vy}, [2]float64{xu, vy})
			}
		}
		if !connected && len(cur) > 0 {
			lines = append(lines, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	return lines
}

func polyline(b *strings.Builder, class, stroke, dash string, pts [][2]float64) {
	fmt.Fprintf(b, `<polyline class="%s" fill="none" stroke="%s" stroke-width="2"%s points="`, class, stroke, dash)
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%.1f,%.1f", p[0], p[1])
	}
	b.WriteString(`"/>`)
}

func (t *timelineCanvas) drawLane(b *strings.Builder, l lane, top int) {
	peak := 1
	var last *status.SeriesPoint
	for i, p := range l.points {
		peak = max(peak, p.Ready, p.Desired, p.MaxReady)
		if !p.Time.After(t.end) {
			last = &l.points[i]
		}
	}
	bottom := float64(top + t.laneH - 4)
	height := float64(t.laneH - 12)
	y := func(v int) float64 { return bottom - float64(v)/float64(peak)*height }
	now := "no data"
	if last != nil && t.end.Sub(last.Time) <= tlGap {
		now = fmt.Sprintf("%d/%d ready", last.Ready, last.Desired)
	}
	fmt.Fprintf(b, `<g class="lane" data-service="%s" data-peak="%d" data-top="%.1f" data-bottom="%.1f">`, esc(l.name), peak, y(peak), bottom)
	fmt.Fprintf(b, `<title>%s: %s now; at most %d in this range</title>`, esc(l.name), now, peak)
	fmt.Fprintf(b, `<line class="baseline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d8dee4"/>`, t.x0, bottom, t.x1, bottom)
	if !t.in.Compact {
		fmt.Fprintf(b, `<text class="lane-label" x="4" y="%.1f" font-size="12" fill="#1c2128">%s</text>`, bottom-height/2, esc(truncate(l.name, 16)))
		fmt.Fprintf(b, `<text class="lane-now" x="4" y="%.1f" font-size="11" fill="#636c76">%s</text>`, bottom-height/2+14, esc(now))
		fmt.Fprintf(b, `<text class="lane-peak" x="%.1f" y="%.1f" font-size="10" fill="#636c76" text-anchor="end">%d</text>`, t.x0-4, y(peak)+4, peak)
	}
	for _, pts := range t.steps(l.points, func(p status.SeriesPoint) int { return p.Desired }, nil, y) {
		polyline(b, "desired", "#8c959f", ` stroke-dasharray="5 4"`, pts)
	}
	for _, pts := range t.steps(l.points, func(p status.SeriesPoint) int { return p.Ready }, func(p status.SeriesPoint) (int, int) { return p.MinReady, p.MaxReady }, y) {
		polyline(b, "ready", "#1a7f37", "", pts)
	}
	b.WriteString(`</g>`)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (t *timelineCanvas) drawAxis(b *strings.Builder, y int) {
	fmt.Fprintf(b, `<g class="axis">`)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#8c959f"/>`, t.x0, y, t.x1, y)
	tick := tickFor(t.in.Span)
	fs := 11
	if t.in.Compact {
		fs = 9
	}
	for at := t.start.Truncate(tick).Add(tick); at.Before(t.end); at = at.Add(tick) {
		x := t.x(at)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="0" x2="%.1f" y2="%d" stroke="#eaeef2"/>`, x, x, y)
		if x < t.x0+16 || x > t.x1-28 {
			continue // a label there would be cut off, or cover "now"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="%d" fill="#636c76" text-anchor="middle">%s</text>`, x, y+fs+2, fs, at.Format("15:04"))
	}
	if !t.in.Compact {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11" fill="#636c76" text-anchor="end">now</text>`, t.x1, y+13)
		fmt.Fprintf(b, `<text x="4" y="%d" font-size="11" fill="#636c76">UTC</text>`, y+13)
	}
	b.WriteString(`</g>`)
}

// mark is one history entry on the axis.
type mark struct {
	kind  string
	entry status.HistoryEntry
}

// maxTimelineMarks bounds the marks drawn; the newest are kept.
const maxTimelineMarks = 1000

func (t *timelineCanvas) marks() []mark {
	var out []mark
	for _, e := range t.in.Entries {
		k, ok := markKind(e)
		if !ok || e.Time.Before(t.start) || e.Time.After(t.end) {
			continue
		}
		out = append(out, mark{k, e})
	}
	// Oldest first, so newer marks are drawn on top.
	slices.SortFunc(out, func(a, b mark) int { return cmp.Compare(a.entry.ID, b.entry.ID) })
	if len(out) > maxTimelineMarks {
		out = out[len(out)-maxTimelineMarks:]
	}
	return out
}

func (t *timelineCanvas) drawMarks(b *strings.Builder, marks []mark, axisY int) {
	r := 6.0
	if t.in.Compact {
		r = 5
	}
	xs := make([]float64, len(marks))
	for i, m := range marks {
		xs[i] = t.x(m.entry.Time)
	}
	shown := dodge(xs, 2*r+3, t.x0+r, t.x1-r)
	for i, m := range marks {
		at, x := xs[i], shown[i]
		// A faint guide down through the lanes from where it happened, so
		// a mark lines up with what the replicas did.
		fmt.Fprintf(b, `<line class="guide g-%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%d" stroke="%s" stroke-opacity=".35"/>`, m.kind, x, t.markY+r, at, axisY, markColor(m.kind))
		title := markTitle(m.entry)
		fmt.Fprintf(b, `<a class="mark m-%s" href="/history/%d" data-kind="%s" data-id="%d" data-x="%.1f"><title>%s</title>`, m.kind, m.entry.ID, m.kind, m.entry.ID, x, esc(title))
		markShape(b, m.kind, x, t.markY, r)
		b.WriteString(`</a>`)
	}
}

// markTitle is a mark's hover text: when, what, and the first errors
// (a refusal's file:line).
func markTitle(e status.HistoryEntry) string {
	title := e.Time.UTC().Format("15:04:05") + " " + string(e.Kind) + ": " + e.Summary
	for i, err := range e.Errors {
		if i == 3 {
			title += fmt.Sprintf("\n(%d more)", len(e.Errors)-i)
			break
		}
		title += "\n" + err
	}
	return title
}

// dodge moves marks apart so that none hides another (events seconds
// apart share a pixel at any range): each at least gap after the one
// before, then, where that pushed them past hi, back to the left. The
// order is kept; the guide line still starts at the true time.
func dodge(xs []float64, gap, lo, hi float64) []float64 {
	out := slices.Clone(xs)
	for i := range out {
		out[i] = max(out[i], lo)
		if i > 0 {
			out[i] = max(out[i], out[i-1]+gap)
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		limit := hi
		if i+1 < len(out) {
			limit = out[i+1] - gap
		}
		out[i] = max(min(out[i], limit), lo)
	}
	return out
}

func markColor(kind string) string {
	switch kind {
	case markApplied:
		return "#1a7f37"
	case markRevert:
		return "#8250df"
	case markRefused:
		return "#bc4c00"
	case markRepair:
		return "#9a6700"
	case markQuarantined:
		return "#a40e26"
	}
	return "#c62828"
}

// markShape draws a kind's shape centred on x,y: applied ●, revert ◆,
// refused ■, repair ▲, failed ✕, quarantined ⊘.
func markShape(b *strings.Builder, kind string, x, y, r float64) {
	c := markColor(kind)
	switch kind {
	case markApplied:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="#fff"/>`, x, y, r, c)
	case markRevert:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="#fff"/>`, x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, c)
	case markRefused:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#fff"/>`, x-r+1, y-r+1, 2*r-2, 2*r-2, c)
	case markRepair:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="#fff"/>`, x, y-r-1, x+r+1, y+r, x-r-1, y+r, c)
	case markQuarantined:
		// ⊘: a ring with a bar, "not applied again".
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="#fff" stroke="%s" stroke-width="2.5"/><path d="M%.1f,%.1f L%.1f,%.1f" stroke="%s" stroke-width="2.5"/>`,
			x, y, r-0.5, c, x-r*0.6, y+r*0.6, x+r*0.6, y-r*0.6, c)
	default:
		fmt.Fprintf(b, `<path d="M%.1f,%.1f L%.1f,%.1f M%.1f,%.1f L%.1f,%.1f" stroke="%s" stroke-width="3" stroke-linecap="round"/>`, x-r+1, y-r+1, x+r-1, y+r-1, x-r+1, y+r-1, x+r-1, y-r+1, c)
		// A transparent disc makes the cross as easy to hit as the others.
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="transparent"/>`, x, y, r)
	}
}

func drawLegend(b *strings.Builder, x0 float64, y int) {
	x := x0 + 8
	cy := float64(y) + 7
	b.WriteString(`<g class="legend">`)
	for _, k := range markKinds {
		fmt.Fprintf(b, `<g class="legend-item" data-kind="%s">`, k)
		markShape(b, k, x, cy, 5)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="#636c76">%s</text></g>`, x+9, cy+4, markLabels[k])
		x += 22 + float64(len(markLabels[k]))*6
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1a7f37" stroke-width="2"/><text x="%.1f" y="%.1f" font-size="11" fill="#636c76">ready</text>`, x, cy, x+18, cy, x+22, cy+4)
	x += 62
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8c959f" stroke-width="2" stroke-dasharray="5 4"/><text x="%.1f" y="%.1f" font-size="11" fill="#636c76">desired replicas</text>`, x, cy, x+18, cy, x+22, cy+4)
	b.WriteString(`</g>`)
}

// maxTimelinePages bounds the history read for one timeline (500 entries
// a page).
const maxTimelinePages = 4

// timelineFor draws app's timeline over the span ending now.
func (s *Server) timelineFor(app string, span time.Duration, compact bool) template.HTML {
	now := s.opts.Now()
	start := now.Add(-span)
	q := status.HistoryQuery{App: app, Kinds: timelineKinds, Limit: 500}
	var entries []status.HistoryEntry
	for range maxTimelinePages {
		page, err := s.opts.Agent.History(q)
		if err != nil {
			s.log.Warn("history unavailable for the timeline", "app", app, "err", err)
			break
		}
		entries = append(entries, page...)
		if len(page) < q.Limit || page[len(page)-1].Time.Before(start) {
			break
		}
		q.Before = page[len(page)-1].ID
	}
	in := timelineInput{App: app, Series: s.opts.Agent.Series(app, start), Entries: entries, Span: span, Now: now, Compact: compact}
	if st, ok := s.opts.Agent.App(app); ok && st.Release != nil {
		in.Watching = st.Release.Watching
	}
	return timelineSVG(in)
}

// rangeLink is one choice of the range selector.
type rangeLink struct {
	Name    string
	URL     string
	Current bool
}

// rangeLinks offers every range on the page at base.
func rangeLinks(base, current string) []rangeLink {
	var out []rangeLink
	for _, r := range timelineRanges {
		out = append(out, rangeLink{Name: r.Name, URL: base + "?range=" + r.Name, Current: r.Name == current})
	}
	return out
}

// timelinePart serves GET /apps/:app/timeline?range=6h[&compact=1]: the
// SVG alone, which pages fetch again when the app changes.
func (s *Server) timelinePart(c *gin.Context) {
	st, ok := s.appOr404(c)
	if !ok {
		return
	}
	_, span, err := parseRange(c.Query("range"))
	if err != nil {
		jsonError(c, http.StatusBadRequest, err.Error())
		return
	}
	compact := c.Query("compact") == "1"
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "image/svg+xml; charset=utf-8", []byte(s.timelineFor(st.Name, span, compact)))
}

// watchBand is a release's watch window on the axis: closed by the entry
// that says how it ended, or open now.
type watchBand struct {
	start, end time.Time
	outcome    string // "passed", "quarantined" or "open"
	title      string
}

// windows are the watch windows in range: each release that passed its
// window or was quarantined in it (the entry's Duration is the window up
// to then), and the one open now.
func (t *timelineCanvas) windows() []watchBand {
	var out []watchBand
	for _, e := range t.in.Entries {
		outcome := ""
		switch {
		case e.Kind == status.KindRelease && e.Result == "passed":
			outcome = "passed"
		case e.Kind == status.KindRollback && e.Result == "quarantined":
			outcome = "quarantined"
		default:
			continue
		}
		start := e.Time.Add(-e.Duration)
		if e.Time.Before(t.start) || start.After(t.end) {
			continue
		}
		out = append(out, watchBand{start: start, end: e.Time, outcome: outcome, title: "watch window: " + e.Summary})
	}
	if w := t.in.Watching; w != nil && w.Since.Before(t.end) {
		left := max(w.Until.Sub(t.end), 0).Round(time.Second)
		out = append(out, watchBand{start: w.Since, end: t.end, outcome: "open",
			title: fmt.Sprintf("watching %s (%s left)", drift.ShortRevision(w.Revision), left)})
	}
	return out
}

// drawWindows shades each watch window across the lanes, under the marks:
// green when the release passed, red when it regressed, blue while open.
func (t *timelineCanvas) drawWindows(b *strings.Builder, axisY int) {
	colors := map[string]string{"passed": "#1a7f37", "quarantined": "#a40e26", "open": "#0969da"}
	for _, w := range t.windows() {
		x0, x1 := t.x(w.start), t.x(w.end)
		fmt.Fprintf(b, `<rect class="watch w-%s" data-outcome="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity=".10"><title>%s</title></rect>`,
			w.outcome, w.outcome, x0, t.markY+7, max(x1-x0, 1), float64(axisY)-t.markY-7, colors[w.outcome], esc(w.title))
	}
}

// drawJobRuns draws every job run in range as a small dot on a row of its
// own under the marks: green when it succeeded, red when it failed (a
// failed run is also a failed mark above).
func (t *timelineCanvas) drawJobRuns(b *strings.Builder) {
	if t.jobY == 0 {
		return
	}
	fmt.Fprintf(b, `<g class="jobs"><text class="lane-label" x="4" y="%.1f" font-size="11" fill="#636c76">jobs</text>`, t.jobY+4)
	for _, e := range t.in.Entries {
		if e.Kind != status.KindJob || e.Time.Before(t.start) || e.Time.After(t.end) {
			continue
		}
		color := "#1a7f37"
		if e.Result == "failed" {
			color = "#c62828"
		}
		fmt.Fprintf(b, `<a class="job-run" href="/history/%d" data-id="%d" data-result="%s"><title>%s</title><circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/></a>`,
			e.ID, e.ID, esc(e.Result), esc(markTitle(e)), t.x(e.Time), t.jobY, color)
	}
	b.WriteString(`</g>`)
}
