// Package store keeps what the agent remembers across restarts in one
// bbolt file, DataDir/driftless.db: the history, each app's runtime state
// (toggles, pin, the last applied revision) and the replica series the
// timeline draws.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/driftless-dev/driftless/drift"
	"github.com/driftless-dev/driftless/gitsource"
	"github.com/driftless-dev/driftless/sync/status"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultHistoryRetention is how many history entries are kept in total.
const DefaultHistoryRetention = 10000

var (
	bucketHistory = []byte("history")
	bucketApps    = []byte("apps")
)

// Store persists history and the per-app runtime state (toggles, pin, the
// last applied revision) in DataDir/driftless.db.
type Store struct {
	db        *bolt.DB
	retention int
	// Recovered says where an unreadable database was moved when the
	// store started fresh; "" when it opened normally.
	Recovered string

	mu    sync.Mutex // serialises count bookkeeping with writes
	count int
}

// App is what survives a restart for one app. Pointers are nil
// until set at runtime; then they override the config.
type App struct {
	Suspended *bool               `json:"suspended,omitempty"`
	SelfHeal  *bool               `json:"selfHeal,omitempty"`
	Pinned    *gitsource.Revision `json:"pinned,omitempty"`
	// Applied is the last revision applied successfully and what each
	// service converged to, so a restart can keep enforcing it when the
	// head is refused.
	Applied      *gitsource.Revision             `json:"applied,omitempty"`
	Accepted     *gitsource.Revision             `json:"accepted,omitempty"` // last valid revision being enforced
	AppliedState map[string]drift.AppliedService `json:"appliedState,omitempty"`
	LastRefused  string                          `json:"lastRefused,omitempty"`
	// AppliedFrom is the source (URL and ref) Applied came from: a
	// force-push is only judged against a revision of the same ref.
	AppliedFrom string `json:"appliedFrom,omitempty"`
	// ForcePush is the force-push shown until a later fast-forward.
	ForcePush *status.ForcePush `json:"forcePush,omitempty"`
	// Watch is the release whose watch window is open, so a restarted
	// agent resumes it; LastGood the last revision that passed its
	// window; Quarantined the commits rolled back after a regression.
	Watch       *drift.ReleaseWatch `json:"watch,omitempty"`
	LastGood    string              `json:"lastGood,omitempty"`
	Quarantined []status.Quarantine `json:"quarantined,omitempty"`
	// CanaryPassed is, per service, the spec hash whose canary passed.
	CanaryPassed map[string]string `json:"canaryPassed,omitempty"`
}

func Open(dataDir string, retention int) (*Store, error) {
	if dataDir == "" {
		return nil, errors.New("data directory not set: set dataDir in the config or --data-dir")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dataDir, "driftless.db")
	if retention <= 0 {
		retention = DefaultHistoryRetention
	}
	s, err := openStoreFile(path, retention)
	if err == nil || errors.Is(err, berrors.ErrTimeout) {
		return s, err
	}
	// The database is unreadable (a crash mid-write on a file system
	// that lies about fsync, a disk error, a partial copy). The running
	// containers and Git are the truth; history is not. Keep the file for
	// a person to look at, and start over.
	aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, fmt.Errorf("history store %s is unreadable (%v) and cannot be moved aside: %w", path, err, rerr)
	}
	s, ferr := openStoreFile(path, retention)
	if ferr != nil {
		return nil, ferr
	}
	s.Recovered = fmt.Sprintf("the history database was unreadable (%v); it was moved to %s and history starts over here", err, aside)
	return s, nil
}

// openStoreFile opens and checks one database file.
func openStoreFile(path string, retention int) (s *Store, err error) {
	defer func() {
		// bbolt panics on some damaged pages; that is a corrupt file too.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("history store %s is damaged: %v", path, r)
		}
	}()
	// A read through the memory map past the end of a truncated file is a
	// fault, not a panic, unless asked for: make it one.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if err := preflight(path); err != nil {
		return nil, fmt.Errorf("history store %s is damaged: %w", path, err)
	}
	// The timeout turns a second agent on the same data dir into an error
	// instead of a hang.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open history store %s (is another driftless using this data directory?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open history store %s: %w", path, err)
	}
	if err := checkStore(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("history store %s is damaged: %w", path, err)
	}
	s = &Store{db: db, retention: retention}
	err = db.Update(func(tx *bolt.Tx) error {
		h, err := tx.CreateBucketIfNotExists(bucketHistory)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketApps); err != nil {
			return err
		}
		s.count = h.Stats().KeyN
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise history store %s: %w", path, err)
	}
	return s, nil
}

// checkStore walks the whole database and decodes every record, so damage
// shows now, at start, rather than in the middle of a pass or an API call.
func checkStore(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained to the end: Check's goroutine must finish
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
		if b := tx.Bucket(bucketApps); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				var p App
				if err := json.Unmarshal(v, &p); err != nil {
					return fmt.Errorf("state of app %s: %w", k, err)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		if b := tx.Bucket(bucketHistory); b != nil {
			return b.ForEach(func(k, v []byte) error {
				var e status.HistoryEntry
				if err := json.Unmarshal(v, &e); err != nil {
					return fmt.Errorf("history entry %d: %w", binary.BigEndian.Uint64(k), err)
				}
				return nil
			})
		}
		return nil
	})
}

// boltMagic marks a bbolt meta page.
const boltMagic = 0xED0CDAED

// preflight reads the file's two meta pages and refuses a file shorter
// than the pages they say it has: bbolt maps the file and would read past
// its end (a bus error no recover catches). A missing file is fine: bbolt
// makes a new one.
func preflight(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		// bbolt would start it over without a word; say so instead.
		return errors.New("the file is empty")
	}
	// Meta layout after a 16-byte page header: magic, version, page size,
	// flags (4 bytes each), root bucket (16), freelist (8), high-water
	// page id (8), txid (8).
	meta := func(off int64) (pageSize, pages, txid uint64, ok bool) {
		b := make([]byte, 64)
		if _, err := f.ReadAt(b, off+16); err != nil {
			return 0, 0, 0, false
		}
		if binary.LittleEndian.Uint32(b[0:]) != boltMagic {
			return 0, 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint32(b[8:])), binary.LittleEndian.Uint64(b[40:]), binary.LittleEndian.Uint64(b[48:]), true
	}
	size, pages, txid, ok := meta(0)
	if !ok || size < 512 || size > 1<<20 {
		return errors.New("not a bbolt database (bad first meta page)")
	}
	if _, p1, t1, ok1 := meta(int64(size)); ok1 && t1 > txid {
		pages = p1
	}
	if need := pages * size; uint64(info.Size()) < need {
		return fmt.Errorf("file has %d bytes, its meta page says %d: truncated", info.Size(), need)
	}
	return nil
}

func (s *Store) Close() error { return s.db.Close() }

func idKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// Append stores entries, assigning IDs in order, and trims the oldest
// entries beyond the retention. It returns the stored entries.
func (s *Store) Append(entries ...status.HistoryEntry) ([]status.HistoryEntry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]status.HistoryEntry, len(entries))
	added := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHistory)
		n := s.count
		for i, e := range entries {
			id, err := b.NextSequence()
			if err != nil {
				return err
			}
			e.ID = id
			data, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(idKey(id), data); err != nil {
				return err
			}
			out[i] = e
			n++
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && n > s.retention; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
			n--
		}
		added = n - s.count
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write history: %w", err)
	}
	s.count += added
	return out, nil
}

// Query returns entries newest first.
func (s *Store) Query(q status.HistoryQuery) ([]status.HistoryEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 500 {
		limit = 500
	}
	var out []status.HistoryEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketHistory).Cursor()
		var k, v []byte
		if q.Before > 0 {
			if k, _ = c.Seek(idKey(q.Before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev() // Seek lands on Before itself or the next one up
			}
		} else {
			k, v = c.Last()
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			var e status.HistoryEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if q.Before > 0 && e.ID >= q.Before {
				continue
			}
			if q.App != "" && e.App != q.App {
				continue
			}
			if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, e.Kind) {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return out, nil
}

func (s *Store) Entry(id uint64) (status.HistoryEntry, bool) {
	var e status.HistoryEntry
	found := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketHistory).Get(idKey(id))
		if v == nil {
			return nil
		}
		found = json.Unmarshal(v, &e) == nil
		return nil
	})
	return e, found
}

func (s *Store) LoadApp(name string) (App, error) {
	var p App
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketApps).Get([]byte(name))
		if v == nil {
			return nil
		}
		return json.Unmarshal(v, &p)
	})
	if err != nil {
		return App{}, fmt.Errorf("read state of app %s: %w", name, err)
	}
	return p, nil
}

// UpdateApp changes an app's persisted state in one transaction.
func (s *Store) UpdateApp(name string, change func(*App)) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketApps)
		var p App
		if v := b.Get([]byte(name)); v != nil {
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
		}
		change(&p)
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), data)
	})
	if err != nil {
		return fmt.Errorf("write state of app %s: %w", name, err)
	}
	return nil
}
