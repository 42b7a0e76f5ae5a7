package store

import (
	bolt "go.etcd.io/bbolt"
)

var metaDigestPeriod = []byte("digest_period") // the last digest period sent (see internal/app/digest)

// DigestPeriod returns the last digest period recorded ("" when none).
func (s *Store) DigestPeriod() (string, error) {
	var p string
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bMeta); b != nil {
			p = string(b.Get(metaDigestPeriod))
		}
		return nil
	})
	return p, err
}

// SetDigestPeriod records the digest period p ("" clears it).
func (s *Store) SetDigestPeriod(p string) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta)
		if p == "" {
			return b.Delete(metaDigestPeriod)
		}
		return b.Put(metaDigestPeriod, []byte(p))
	})
}
