package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
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

// PullRecord is one image pulled for an app.
type PullRecord struct {
	App    string    `json:"app"`
	Image  string    `json:"image"` // the reference pulled
	ID     string    `json:"id"`    // the image ID it gave
	Pulled time.Time `json:"pulled"`
	// Anonymous: pulled without credentials, so the image is public and
	// another app may run it unasked (see pullaccess.go). Records from
	// before this field count as pulled with credentials.
	Anonymous bool `json:"anonymous,omitempty"`
}

// desiredRecord is the images an app's last applied desired state names.
type desiredRecord struct {
	App    string   `json:"app"`
	Images []string `json:"images"`
}

const desiredFile = "desired.json"

// pulledDir is where the records live: pulled/ next to files/ in the data
// directory, so the agent (<data>/files) and the CLI (DefaultFilesDir)
// agree without another option.
func (e *Engine) pulledDir() string { return filepath.Join(filepath.Dir(e.opts.FilesDir), "pulled") }

func recordKey(image, id string) string {
	h := sha256.Sum256([]byte(image + "\x00" + id))
	return hex.EncodeToString(h[:8])
}

// recordPull remembers that image (now ID id) was pulled for app. A
// failure is logged, not returned: the pull succeeded, and the worst case
// is an image prune-images will not offer.
func (e *Engine) recordPull(app, image, id string, anonymous bool) {
	rec := PullRecord{App: app, Image: image, ID: id, Pulled: time.Now().UTC(), Anonymous: anonymous}
	path := filepath.Join(e.pulledDir(), app, recordKey(image, id)+".json")
	if err := writeJSONAtomic(path, rec); err != nil {
		e.log.Warn("could not record a pulled image; prune-images will not offer it", "app", app, "image", image, "err", err)
	}
}

// recordDesired remembers the images app's desired state names, when they
// changed since the last record: prune-images keeps them.
func (e *Engine) recordDesired(app string, images []string) {
	images = slices.Compact(slices.Sorted(slices.Values(images)))
	e.desiredMu.Lock()
	defer e.desiredMu.Unlock()
	if prev, ok := e.desired[app]; ok && slices.Equal(prev, images) {
		return
	}
	path := filepath.Join(e.pulledDir(), app, desiredFile)
	if err := writeJSONAtomic(path, desiredRecord{App: app, Images: images}); err != nil {
		e.log.Warn("could not record the app's desired images; prune-images may offer one of them", "app", app, "err", err)
		return
	}
	if e.desired == nil {
		e.desired = map[string][]string{}
	}
	e.desired[app] = images
}

// pullRecords are every app's records: what each pulled and what each
// desires. A record that cannot be read is an error: pruning without it
// could remove an image another app needs.
func (e *Engine) pullRecords() (pulled map[string][]PullRecord, desired map[string][]string, err error) {
	pulled, desired = map[string][]PullRecord{}, map[string][]string{}
	apps, err := os.ReadDir(e.pulledDir())
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
		dir := filepath.Join(e.pulledDir(), a.Name())
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
			var r PullRecord
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, nil, fmt.Errorf("read the record of pulled images: %s: %w (remove the file to drop it)", path, err)
			}
			r.App = a.Name()
			pulled[a.Name()] = append(pulled[a.Name()], r)
		}
	}
	return pulled, desired, nil
}

// forgetPull drops a record once its image is gone.
func (e *Engine) forgetPull(r PullRecord) {
	_ = os.Remove(filepath.Join(e.pulledDir(), r.App, recordKey(r.Image, r.ID)+".json"))
}

// writeJSONAtomic writes v to path through a temporary file and a rename,
// so a reader never sees half a record.
func writeJSONAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic writes data to path (0600) through a temporary file and
// a rename.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
