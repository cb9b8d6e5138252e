package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var bucketJobs = []byte("jobs")

// Jobs is what an app's jobs need to survive a restart: the pre-sync runs
// that succeeded (a migration is never run twice for one revision) and the
// post-sync runs made, and
// each scheduled job's last run (to catch up a run missed while the agent
// was down).
type Jobs struct {
	// Done holds "<type>:<revision SHA>/<job hash>" of each pre-sync job
	// that succeeded and each post-sync job that ran, the newest last; the
	// oldest are dropped past MaxJobsDone.
	Done []string `json:"done,omitempty"`
	// LastRun is each scheduled job's last run start, by job name.
	LastRun map[string]time.Time `json:"lastRun,omitempty"`
}

// MaxJobsDone bounds Jobs.PreSyncDone per app.
const MaxJobsDone = 200

// LoadJobs reads an app's job state; zero when none was kept.
func (s *Store) LoadJobs(app string) (Jobs, error) {
	var j Jobs
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(app)); v != nil {
			return json.Unmarshal(v, &j)
		}
		return nil
	})
	if err != nil {
		return Jobs{}, fmt.Errorf("read job state of app %s: %w", app, err)
	}
	return j, nil
}

// UpdateJobs changes an app's job state in one transaction.
func (s *Store) UpdateJobs(app string, change func(*Jobs)) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		var j Jobs
		if v := b.Get([]byte(app)); v != nil {
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
		}
		change(&j)
		if n := len(j.Done); n > MaxJobsDone {
			j.Done = j.Done[n-MaxJobsDone:]
		}
		data, err := json.Marshal(j)
		if err != nil {
			return err
		}
		return b.Put([]byte(app), data)
	})
	if err != nil {
		return fmt.Errorf("write job state of app %s: %w", app, err)
	}
	return nil
}
