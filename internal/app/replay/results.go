package replay

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/store"
)

// ErrSettingsChanged is returned by Results.Begin when the file holds
// results made with other settings.
var ErrSettingsChanged = errors.New("the replay results were made with other settings")

var (
	bResults = []byte("results")
	bMeta    = []byte("meta")
	kSetting = []byte("settings")
	kElapsed = []byte("elapsed_ns")
)

// Results is the replay's own bbolt file: one Result per message key, and
// the settings the results were made with. It is never the agent's state
// database. Safe for concurrent use.
type Results struct {
	db *bolt.DB

	mu      sync.Mutex
	pending map[string][]byte // results not committed yet (see Put)
}

// resultBatch is how many results one commit holds.
const resultBatch = 256

// OpenResults opens (creating it and its directory, mode 0600) the results
// file at path. Commits skip the fsync (a replay can be run again); Close
// syncs.
func OpenResults(path string) (*Results, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("replay results: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true, NoGrowSync: true})
	if err != nil {
		return nil, fmt.Errorf("replay results %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bResults, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("replay results %s: %w", path, err)
	}
	return &Results{db: db, pending: map[string][]byte{}}, nil
}

// Close commits what is held, syncs and closes the file.
func (r *Results) Close() error {
	return errors.Join(r.Flush(), r.db.Sync(), r.db.Close())
}

// Flush commits the results Put holds. Reads flush first.
func (r *Results) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushLocked()
}

func (r *Results) flushLocked() error {
	if len(r.pending) == 0 {
		return nil
	}
	err := r.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bResults)
		for k, v := range r.pending {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay results: %w", err)
	}
	clear(r.pending)
	return nil
}

// Begin checks that the stored results were made with settings (an
// opaque fingerprint) and records it on an empty file. With reset, the
// stored results are dropped first. A mismatch without reset returns an
// error wrapping ErrSettingsChanged.
func (r *Results) Begin(settings string, reset bool) error {
	if err := r.Flush(); err != nil {
		return err
	}
	return r.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if reset {
			if err := tx.DeleteBucket(bResults); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bResults); err != nil {
				return err
			}
			if err := meta.Delete(kElapsed); err != nil {
				return err
			}
		} else if old := meta.Get(kSetting); old != nil && string(old) != settings && tx.Bucket(bResults).Stats().KeyN > 0 {
			return fmt.Errorf("%w (%s, now %s)", ErrSettingsChanged, old, settings)
		}
		return meta.Put(kSetting, []byte(settings))
	})
}

func resultKey(k store.MessageKey) []byte {
	b := make([]byte, 0, len(k.Account)+len(k.Mailbox)+10)
	b = append(b, k.Account...)
	b = append(b, 0)
	b = append(b, k.Mailbox...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, k.UIDValidity)
	return binary.BigEndian.AppendUint32(b, k.UID)
}

// Put stores one result. Results are held and committed resultBatch at
// a time (and by Flush, Close and every read): a crash loses at most the
// held ones, which the next run simply replays again.
func (r *Results) Put(res *Result) error {
	v, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[string(resultKey(res.Key))] = v
	if len(r.pending) >= resultBatch {
		return r.flushLocked()
	}
	return nil
}

// Get returns the result of k, or store.ErrNotFound.
func (r *Results) Get(k store.MessageKey) (*Result, error) {
	if err := r.Flush(); err != nil {
		return nil, err
	}
	var res *Result
	err := r.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bResults).Get(resultKey(k))
		if v == nil {
			return store.ErrNotFound
		}
		res = &Result{}
		return json.Unmarshal(v, res)
	})
	return res, err
}

// Done returns the UIDs of account/mailbox under uidvalidity that have a
// result.
func (r *Results) Done(account, mailbox string, uidvalidity uint32) (map[uint32]bool, error) {
	prefix := resultKey(store.MessageKey{Account: account, Mailbox: mailbox, UIDValidity: uidvalidity})
	prefix = prefix[:len(prefix)-4]
	if err := r.Flush(); err != nil {
		return nil, err
	}
	out := map[uint32]bool{}
	err := r.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bResults).Cursor()
		for k, _ := c.Seek(prefix); k != nil && len(k) == len(prefix)+4 && string(k[:len(prefix)]) == string(prefix); k, _ = c.Next() {
			out[binary.BigEndian.Uint32(k[len(prefix):])] = true
		}
		return nil
	})
	return out, err
}

// Len is how many results the file holds.
func (r *Results) Len() (int, error) {
	if err := r.Flush(); err != nil {
		return 0, err
	}
	n := 0
	err := r.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bResults).Stats().KeyN
		return nil
	})
	return n, err
}

// AddElapsed adds d to the replay time recorded across runs and returns
// the total.
func (r *Results) AddElapsed(d time.Duration) (time.Duration, error) {
	var total time.Duration
	err := r.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if v := meta.Get(kElapsed); len(v) == 8 {
			total = time.Duration(binary.BigEndian.Uint64(v))
		}
		total += d
		return meta.Put(kElapsed, binary.BigEndian.AppendUint64(nil, uint64(total)))
	})
	return total, err
}
