package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/sync/status"
	bolt "go.etcd.io/bbolt"
)

// SeriesRetention is how long the replica series is kept: the dashboard's
// longest range (24 h) plus an hour, so that range is always full.
const SeriesRetention = 25 * time.Hour

// seriesStep is the resolution of the replica series.
const seriesStep = time.Minute

// maxSeriesPerApp bounds how many services of one app are recorded (the
// default services limit is 200); services past it are not drawn.
const maxSeriesPerApp = 256

var bucketSeries = []byte("series")

// seriesKey identifies one service's series.
type seriesKey struct{ app, service string }

// Series is the in-memory copy of the replica series, written to
// bbolt by Flush. Points are appended at most once a minute per service;
// a change within the minute updates that minute's point.
type Series struct {
	mu     sync.Mutex
	points map[seriesKey][]status.SeriesPoint
	// current is the latest observation, carried into each new minute.
	current map[seriesKey]status.SeriesPoint
	dirty   map[seriesKey]map[int64]bool // minutes not yet written
}

func NewSeries() *Series {
	return &Series{points: map[seriesKey][]status.SeriesPoint{}, current: map[seriesKey]status.SeriesPoint{}, dirty: map[seriesKey]map[int64]bool{}}
}

// ServiceCount is what a pass saw of one service.
type ServiceCount struct {
	Service        string
	Ready, Desired int
}

// CountsOf is the ready/desired count of every service in a status.
func CountsOf(s status.AppStatus) []ServiceCount {
	out := make([]ServiceCount, 0, len(s.Services))
	for _, svc := range s.Services {
		out = append(out, ServiceCount{svc.Name, svc.Ready, svc.Desired})
	}
	return out
}

// HealthCounts is the ready/desired count of each service assessed.
func HealthCounts(h drift.AppHealth) []ServiceCount {
	out := make([]ServiceCount, 0, len(h.Services))
	for _, s := range h.Services {
		out = append(out, ServiceCount{Service: s.Service, Ready: s.Ready, Desired: s.Desired})
	}
	return out
}

// Observe records counts seen at now.
func (r *Series) Observe(app string, now time.Time, counts []ServiceCount) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range counts {
		k := seriesKey{app, c.Service}
		if _, known := r.points[k]; !known && r.appSeries(app) >= maxSeriesPerApp {
			continue
		}
		r.current[k] = status.SeriesPoint{Ready: c.Ready, Desired: c.Desired}
		r.add(k, now, c.Ready, c.Desired)
	}
}

// Tick carries every service's latest observation into the minute of now,
// for apps still configured, so a steady service has a point every minute
// and a gap means the agent was not running.
func (r *Series) Tick(now time.Time, apps []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, cur := range r.current {
		if slices.Contains(apps, k.app) {
			r.add(k, now, cur.Ready, cur.Desired)
		}
	}
}

// Forget stops carrying services an app no longer declares.
func (r *Series) Forget(app string, keep []ServiceCount) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.current {
		if k.app == app && !slices.ContainsFunc(keep, func(c ServiceCount) bool { return c.Service == k.service }) {
			delete(r.current, k)
		}
	}
}

func (r *Series) appSeries(app string) int {
	n := 0
	for k := range r.points {
		if k.app == app {
			n++
		}
	}
	return n
}

// add merges one observation into the minute of now. Callers hold r.mu.
func (r *Series) add(k seriesKey, now time.Time, ready, desired int) {
	m := now.UTC().Truncate(seriesStep)
	pts := r.points[k]
	if n := len(pts); n > 0 && !pts[n-1].Time.Before(m) {
		last := &pts[n-1]
		if !last.Time.Equal(m) {
			return // the clock went back: keep the series ordered
		}
		if ready == last.Ready && desired == last.Desired {
			return
		}
		last.Ready, last.Desired = ready, desired
		last.MinReady, last.MaxReady = min(last.MinReady, ready), max(last.MaxReady, ready)
	} else {
		pts = append(pts, status.SeriesPoint{Time: m, Ready: ready, Desired: desired, MinReady: ready, MaxReady: ready})
	}
	cutoff := m.Add(-SeriesRetention)
	i := sort.Search(len(pts), func(i int) bool { return !pts[i].Time.Before(cutoff) })
	r.points[k] = slices.Clip(pts[i:])
	if r.dirty[k] == nil {
		r.dirty[k] = map[int64]bool{}
	}
	r.dirty[k][m.Unix()] = true
}

// Since returns app's series from since on, services sorted by name.
func (r *Series) Since(app string, since time.Time) []status.ServiceSeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []status.ServiceSeries
	for k, pts := range r.points {
		if k.app != app {
			continue
		}
		// From the point in force at since (a step chart): the last one
		// at or before it.
		i := sort.Search(len(pts), func(i int) bool { return pts[i].Time.After(since) })
		i = max(i-1, 0)
		if i < len(pts) {
			out = append(out, status.ServiceSeries{Service: k.service, Points: slices.Clone(pts[i:])})
		}
	}
	slices.SortFunc(out, func(a, b status.ServiceSeries) int { return strings.Compare(a.Service, b.Service) })
	return out
}

// seriesDBKey is app NUL service NUL minute (big-endian Unix seconds), so
// one series is one contiguous, time-ordered range of keys.
func seriesDBKey(k seriesKey, unix int64) []byte {
	b := make([]byte, 0, len(k.app)+len(k.service)+10)
	b = append(b, k.app...)
	b = append(b, 0)
	b = append(b, k.service...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, uint64(unix))
}

func parseSeriesDBKey(key []byte) (seriesKey, int64, bool) {
	if len(key) < 10 {
		return seriesKey{}, 0, false
	}
	name, ts := key[:len(key)-8], key[len(key)-8:]
	app, service, ok := bytes.Cut(name[:len(name)-1], []byte{0})
	if !ok || name[len(name)-1] != 0 {
		return seriesKey{}, 0, false
	}
	return seriesKey{string(app), string(service)}, int64(binary.BigEndian.Uint64(ts)), true
}

// A point is stored as four uvarints: ready, desired, lowest and highest
// ready.
func encodePoint(p status.SeriesPoint) []byte {
	var b []byte
	for _, v := range []int{p.Ready, p.Desired, p.MinReady, p.MaxReady} {
		b = binary.AppendUvarint(b, uint64(max(v, 0)))
	}
	return b
}

func decodePoint(v []byte) (status.SeriesPoint, bool) {
	var vals [4]int
	for i := range vals {
		x, n := binary.Uvarint(v)
		if n <= 0 || x > 1<<20 {
			return status.SeriesPoint{}, false
		}
		vals[i], v = int(x), v[n:]
	}
	return status.SeriesPoint{Ready: vals[0], Desired: vals[1], MinReady: min(vals[2], vals[0]), MaxReady: max(vals[3], vals[0])}, len(v) == 0
}

// Load reads the stored series, dropping points older than the
// retention; an undecodable point is skipped (the series is a picture,
// not a record).
func (r *Series) Load(st *Store, now time.Time) error {
	cutoff := now.Add(-SeriesRetention).Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSeries)
		if b == nil {
			return nil
		}
		return b.ForEach(func(key, v []byte) error {
			k, unix, ok := parseSeriesDBKey(key)
			p, vok := decodePoint(v)
			if !ok || !vok || unix < cutoff {
				return nil
			}
			if _, known := r.points[k]; !known && r.appSeries(k.app) >= maxSeriesPerApp {
				return nil
			}
			p.Time = time.Unix(unix, 0).UTC()
			r.points[k] = append(r.points[k], p)
			return nil
		})
	})
}

// Prune deletes every stored point older than the retention, and any key
// that is not a point, including series of apps no longer configured. It
// walks the whole bucket, so it runs at startup only.
func (r *Series) Prune(st *Store, now time.Time) error {
	cutoff := now.Add(-SeriesRetention).Unix()
	err := st.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSeries)
		if err != nil {
			return err
		}
		c := b.Cursor()
		for key, v := c.First(); key != nil; {
			_, unix, ok := parseSeriesDBKey(key)
			_, vok := decodePoint(v)
			if ok && vok && unix >= cutoff {
				key, v = c.Next()
				continue
			}
			gone := bytes.Clone(key)
			if err := c.Delete(); err != nil {
				return err
			}
			key, v = c.Seek(gone)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("prune replica series: %w", err)
	}
	return nil
}

// Flush writes the minutes changed since the last flush and deletes
// stored points older than the retention, in one transaction.
func (r *Series) Flush(st *Store, now time.Time) error {
	r.mu.Lock()
	type write struct {
		key []byte
		val []byte
	}
	var writes []write
	for k, minutes := range r.dirty {
		for _, p := range r.points[k] {
			if minutes[p.Time.Unix()] {
				writes = append(writes, write{seriesDBKey(k, p.Time.Unix()), encodePoint(p)})
			}
		}
	}
	dirty := r.dirty
	r.dirty = map[seriesKey]map[int64]bool{}
	r.mu.Unlock()
	cutoff := now.Add(-SeriesRetention).Unix()
	err := st.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSeries)
		if err != nil {
			return err
		}
		for _, w := range writes {
			if err := b.Put(w.key, w.val); err != nil {
				return err
			}
		}
		// Each written series is a key range in time order: its expired
		// points are at its start.
		for k := range dirty {
			start, end := seriesDBKey(k, 0), seriesDBKey(k, cutoff)
			c := b.Cursor()
			for key, _ := c.Seek(start); key != nil && bytes.Compare(key, end) < 0; key, _ = c.Seek(start) {
				if err := c.Delete(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		// Keep the minutes for the next flush.
		r.mu.Lock()
		for k, minutes := range dirty {
			if r.dirty[k] == nil {
				r.dirty[k] = map[int64]bool{}
			}
			for m := range minutes {
				r.dirty[k][m] = true
			}
		}
		r.mu.Unlock()
		return fmt.Errorf("write replica series: %w", err)
	}
	return nil
}
