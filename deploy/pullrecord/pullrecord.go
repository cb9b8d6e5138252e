// Package pullrecord is the on-disk record of the images driftless pulled
// for each app and of the images each app's desired state names, which
// prune-images reads to offer only what no app needs.
package pullrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/deploy/internal/atomicfile"
)

// Pulled images carry no label of ours, and the same tag may be used by
// other apps or by people, so driftless remembers what it pulled for which
// app in plain files the agent and the CLI both read without the agent's
// database (which the agent holds locked):
//
//	<data>/pulled/<app>/<key>.json   one per (reference, image ID) pulled
//	<data>/pulled/<app>/desired.json the images of the app's last applied desired state
//
// One file per pull means no read-modify-write: the agent and a
// `driftless apply` may both record without a lock.

// Record is one image pulled for an app.
type Record struct {
	App    string    `json:"app"`
	Image  string    `json:"image"` // the reference pulled
	ID     string    `json:"id"`    // the image ID it gave
	Pulled time.Time `json:"pulled"`
	// Anonymous: pulled without credentials, so the image is public and
	// another app may run it unasked (see deploy/pullaccess.go). Records from
	// before this field count as pulled with credentials.
	Anonymous bool `json:"anonymous,omitempty"`
}

// desiredRecord is the images an app's last applied desired state names.
type desiredRecord struct {
	App    string   `json:"app"`
	Images []string `json:"images"`
}

const desiredFile = "desired.json"

// Store reads and writes the records under one directory.
type Store struct {
	dir string
	log *slog.Logger

	// desired is the images each app's desired state named when last
	// recorded, so an unchanged state is not rewritten.
	desiredMu sync.Mutex
	desired   map[string][]string
}

// New is the store of the records under dir; log takes the failures to
// record, which are not returned.
func New(dir string, log *slog.Logger) *Store { return &Store{dir: dir, log: log} }

// Dir is where the records live: pulled/ next to files/ in the data
// directory, so the agent (<data>/files) and the CLI (DefaultFilesDir)
// agree without another option.
func Dir(filesDir string) string { return filepath.Join(filepath.Dir(filesDir), "pulled") }

func recordKey(image, id string) string {
	h := sha256.Sum256([]byte(image + "\x00" + id))
	return hex.EncodeToString(h[:8])
}

// Pull remembers that image (now ID id) was pulled for app. A
// failure is logged, not returned: the pull succeeded, and the worst case
// is an image prune-images will not offer.
func (s *Store) Pull(app, image, id string, anonymous bool) {
	rec := Record{App: app, Image: image, ID: id, Pulled: time.Now().UTC(), Anonymous: anonymous}
	path := filepath.Join(s.dir, app, recordKey(image, id)+".json")
	if err := atomicfile.WriteJSON(path, rec); err != nil {
		s.log.Warn("could not record a pulled image; prune-images will not offer it", "app", app, "image", image, "err", err)
	}
}

// Desired remembers the images app's desired state names, when they
// changed since the last record: prune-images keeps them.
func (s *Store) Desired(app string, images []string) {
	images = slices.Compact(slices.Sorted(slices.Values(images)))
	s.desiredMu.Lock()
	defer s.desiredMu.Unlock()
	if prev, ok := s.desired[app]; ok && slices.Equal(prev, images) {
		return
	}
	path := filepath.Join(s.dir, app, desiredFile)
	if err := atomicfile.WriteJSON(path, desiredRecord{App: app, Images: images}); err != nil {
		s.log.Warn("could not record the app's desired images; prune-images may offer one of them", "app", app, "err", err)
		return
	}
	if s.desired == nil {
		s.desired = map[string][]string{}
	}
	s.desired[app] = images
}

// All are every app's records: what each pulled and what each
// desires. A record that cannot be read is an error: pruning without it
// could remove an image another app needs.
func (s *Store) All() (pulled map[string][]Record, desired map[string][]string, err error) {
	pulled, desired = map[string][]Record{}, map[string][]string{}
	apps, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return pulled, desired, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the record of pulled images: %w", err)
	}
	for _, a := range apps {
		if !a.IsDir() {
			continue
		}
		dir := filepath.Join(s.dir, a.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("read the record of pulled images: %w", err)
		}
		for _, f := range files {
			if f.IsDir() || !strings.HasSuffix(f.Name(), ".json") {
				continue // a temporary file of a write under way
			}
			path := filepath.Join(dir, f.Name())
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, nil, fmt.Errorf("read the record of pulled images: %w", err)
			}
			if f.Name() == desiredFile {
				var d desiredRecord
				if err := json.Unmarshal(data, &d); err != nil {
					return nil, nil, fmt.Errorf("read the record of pulled images: %s: %w (remove the file to drop it)", path, err)
				}
				desired[a.Name()] = d.Images
				continue
			}
			var r Record
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, nil, fmt.Errorf("read the record of pulled images: %s: %w (remove the file to drop it)", path, err)
			}
			r.App = a.Name()
			pulled[a.Name()] = append(pulled[a.Name()], r)
		}
	}
	return pulled, desired, nil
}

// Forget drops a record once its image is gone.
func (s *Store) Forget(r Record) {
	_ = os.Remove(filepath.Join(s.dir, r.App, recordKey(r.Image, r.ID)+".json"))
}
