// Package previews is pure: which previews a source of previews keeps for
// the remote's branches (each with a stable block of host ports, none past
// maxPreviews, none whose branch has not moved for preview.ttl), and their
// app configurations.
package previews

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/config"
)

// Preview is one preview as the loop keeps it: its branch's head, since when the head is
// there (for preview.ttl), and its block of host ports (-1: none).
type Preview struct {
	SHA   string    `json:"sha"`
	Since time.Time `json:"since"`
	Slot  int       `json:"slot"`
	// Expired: removed after preview.ttl; a new commit brings it back.
	Expired bool `json:"expired,omitempty"`
}

// Next is the set of previews for the remote's branches: pure.
// A branch keeps its port slot; a moved head restarts its ttl; beyond
// maxPreviews or the port range's slots, the newest branches wait (named
// in dropped).
func Next(sc config.SourceConfig, prev map[string]Preview, branches []gitsource.Branch, now time.Time) (map[string]Preview, []Dropped) {
	next := map[string]Preview{}
	var fresh []gitsource.Branch
	var dropped []Dropped
	used := map[int]bool{}
	live := 0
	for _, b := range branches {
		if !sc.Branches.Matches(b.Name) {
			continue
		}
		p, had := prev[b.Name]
		if !had {
			fresh = append(fresh, b)
			continue
		}
		if p.SHA != b.SHA {
			p.SHA, p.Since = b.SHA, now
			if p.Expired {
				// A new commit revives an expired preview.
				fresh = append(fresh, b)
				continue
			}
		}
		if p.Expired || sc.Preview.TTL > 0 && now.Sub(p.Since) > sc.Preview.TTL {
			if !p.Expired {
				dropped = append(dropped, Dropped{b.Name, "no commit for " + sc.Preview.TTL.String()})
			}
			next[b.Name] = Preview{SHA: p.SHA, Since: p.Since, Slot: -1, Expired: true}
			continue
		}
		next[b.Name] = p
		live++
		used[p.Slot] = true
	}
	slots := sc.PortSlots()
	for _, b := range fresh {
		if live >= sc.MaxPreviews {
			dropped = append(dropped, Dropped{b.Name, "maxPreviews reached"})
			continue
		}
		slot := -1
		if slots > 0 {
			for i := range slots {
				if !used[i] {
					slot = i
					break
				}
			}
			if slot < 0 {
				dropped = append(dropped, Dropped{b.Name, "no free host ports in preview.ports.range"})
				continue
			}
			used[slot] = true
		}
		next[b.Name] = Preview{SHA: b.SHA, Since: now, Slot: slot}
		live++
	}
	return next, dropped
}

// Dropped is a matching branch that gets no preview, and why.
type Dropped struct {
	Branch, Reason string
}

func (d Dropped) String() string { return d.Branch + " (" + d.Reason + ")" }

// Apps are the apps of the previews.
func Apps(sc config.SourceConfig, previews map[string]Preview) ([]config.AppConfig, error) {
	var out []config.AppConfig
	var errs []error
	for branch, p := range previews {
		if p.Expired {
			continue
		}
		cfg, err := sc.PreviewFor(branch, p.Slot)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, cfg)
	}
	slices.SortFunc(out, func(x, y config.AppConfig) int { return strings.Compare(x.Name, y.Name) })
	return out, errors.Join(errs...)
}
