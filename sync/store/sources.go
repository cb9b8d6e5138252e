package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var bucketSources = []byte("sources")

// LoadSource reads what the loop kept of a sources: entry (its last
// accepted set of apps, as JSON the loop owns); nil when nothing was kept.
func (s *Store) LoadSource(name string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSources); b != nil {
			if v := b.Get([]byte(name)); v != nil {
				out = append([]byte(nil), v...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the apps of source %s: %w", name, err)
	}
	return out, nil
}

// SaveSource replaces what is kept of a sources: entry.
func (s *Store) SaveSource(name string, data []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSources)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), data)
	})
	if err != nil {
		return fmt.Errorf("write the apps of source %s: %w", name, err)
	}
	return nil
}
