package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout this code writes. 1: the first layout
// (outbox raw messages inline, no queue/outbox indexes, no meta marker);
// 2: queue and outbox status/due indexes, raw messages apart, unsafe
// Message-IDs indexed by hash, and the meta marker.
const SchemaVersion = 2

var (
	metaSchema    = []byte("schema")     // be64 SchemaVersion
	metaCreatedAt = []byte("created_at") // RFC 3339, when this file was first initialised
	metaPrunedAt  = []byte("pruned_at")  // RFC 3339, the last Prune run by PruneIfDue
)

// Info describes the database file.
type Info struct {
	// Schema is the layout version of the file.
	Schema int
	// CreatedAt is when the file was first initialised (zero for a file
	// initialised before the marker existed).
	CreatedAt time.Time
	// Fresh is set when this Open created the file.
	Fresh bool
	// Siblings lists files next to it that look like earlier copies of it
	// (<name>.bak*, <name>.damaged-*). A Fresh database with siblings is
	// not a first start: an earlier database was moved or lost, and mail
	// may already have been answered.
	Siblings []string
}

// Info returns what Open learned about the file.
func (s *Store) Info() Info { return s.info }

func siblings(path string) []string {
	var out []string
	for _, pat := range []string{path + ".bak*", path + ".damaged-*"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	slices.Sort(out)
	return out
}

// init creates the buckets, migrates an older layout, writes the meta
// marker (read-write), and reads it back; every step behind guard.
func (s *Store) init(fresh bool) error {
	s.info.Fresh = fresh
	s.info.Siblings = siblings(s.path)
	if !s.opts.ReadOnly {
		// A file already initialised gets no write transaction: each one
		// commits (a new meta page, an fsync) although nothing changed,
		// and a changed file makes the next read command walk its page
		// tree again (VerifiedSuffix).
		var needed bool
		if err := s.view(func(tx *bolt.Tx) error {
			needed = initNeeded(tx, fresh)
			return nil
		}); err != nil {
			return err
		}
		if !needed {
			return s.readInfo()
		}
		err := s.updateTx(func(tx *bolt.Tx) error {
			for _, b := range allBuckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return fmt.Errorf("create bucket %s: %w", b, err)
				}
			}
			if err := rebuildStateCounts(tx); err != nil {
				return err
			}
			if err := buildQueueCreatedIndex(tx); err != nil {
				return err
			}
			if err := buildMsgCreatedIndex(tx); err != nil {
				return err
			}
			if err := rekeyOnce(tx); err != nil {
				return err
			}
			meta := tx.Bucket(bMeta)
			if meta.Get(metaCreatedAt) == nil && fresh {
				if err := meta.Put(metaCreatedAt, []byte(s.now().UTC().Format(time.RFC3339Nano))); err != nil {
					return err
				}
			}
			if v := schemaOf(meta); v < SchemaVersion {
				if err := migrate(tx, v); err != nil {
					return fmt.Errorf("migrate from schema %d: %w", v, err)
				}
				return meta.Put(metaSchema, binary.BigEndian.AppendUint64(nil, SchemaVersion))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return s.readInfo()
}

// initNeeded reports whether init's write transaction has anything to
// do: a bucket missing, an index or the state counts not yet built, the
// keys not yet rekeyed, the schema old, or a fresh file without its
// creation time. Each condition is the early return of its step.
func initNeeded(tx *bolt.Tx, fresh bool) bool {
	for _, b := range allBuckets {
		if tx.Bucket(b) == nil {
			return true
		}
	}
	meta := tx.Bucket(bMeta)
	if k, _ := tx.Bucket(bStateCount).Cursor().First(); k == nil {
		if k, _ := tx.Bucket(bIdxState).Cursor().First(); k != nil {
			return true // rebuildStateCounts has counts to write
		}
	}
	return meta.Get(metaQueueCreated) == nil || meta.Get(metaMsgCreated) == nil || meta.Get(metaKeysMail) == nil ||
		(fresh && meta.Get(metaCreatedAt) == nil) || schemaOf(meta) < SchemaVersion
}

// readInfo reads the meta marker into s.info and touches every bucket's
// root page.
func (s *Store) readInfo() error {
	return s.view(func(tx *bolt.Tx) error {
		// Touch every bucket's root: a damaged page here is an error now,
		// not a panic in the middle of a command.
		for _, name := range allBuckets {
			if b := tx.Bucket(name); b != nil {
				b.Cursor().First()
			}
		}
		meta := tx.Bucket(bMeta)
		s.info.Schema = 1
		if meta != nil {
			s.info.Schema = schemaOf(meta)
			if t, err := time.Parse(time.RFC3339Nano, string(meta.Get(metaCreatedAt))); err == nil {
				s.info.CreatedAt = t
			}
		}
		s.indexed = s.info.Schema >= 2 && tx.Bucket(bIdxQueue) != nil && tx.Bucket(bIdxOutbox) != nil
		return nil
	})
}

func schemaOf(meta *bolt.Bucket) int {
	if v := meta.Get(metaSchema); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return 1
}

// migrate brings a schema 1 file to schema 2 in the caller's transaction.
func migrate(tx *bolt.Tx, from int) error {
	if from >= 2 {
		return nil
	}
	// Outbox: raw messages apart, index by status and due time.
	ob := tx.Bucket(bOutbox)
	var recs []*OutboxRecord
	if err := ob.ForEach(func(k, v []byte) error {
		var r OutboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode outbox %q: %w", k, err)
		}
		r.ID = string(k)
		recs = append(recs, &r)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range recs {
		if err := putOutboxTx(tx, r, nil); err != nil {
			return err
		}
	}
	var items []*QueueItem
	if err := tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
		var q QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return fmt.Errorf("decode queue item %q: %w", k, err)
		}
		q.ID = string(k)
		items = append(items, &q)
		return nil
	}); err != nil {
		return err
	}
	for _, q := range items {
		if err := putQueueTx(tx, q, nil); err != nil {
			return err
		}
	}
	// Message-ID indexes: a key part that is not safe as is (too long,
	// control characters, invalid UTF-8) is now its hash.
	for _, name := range [][]byte{bIdxMsgID, bIdxTraceMID} {
		if err := rehashIndex(tx.Bucket(name)); err != nil {
			return err
		}
	}
	return nil
}

func rehashIndex(b *bolt.Bucket) error {
	type kv struct{ old, new, v []byte }
	var moves []kv
	err := b.ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return nil
		}
		if part, unsafe := keyPart(string(k[:i])); unsafe {
			nk := append([]byte(part), k[i:]...)
			moves = append(moves, kv{bytes.Clone(k), nk, bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range moves {
		if err := b.Delete(m.old); err != nil {
			return err
		}
		if err := b.Put(m.new, m.v); err != nil {
			return err
		}
	}
	return nil
}
