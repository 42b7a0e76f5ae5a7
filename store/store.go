package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a transition found the record in a status it does not
	// start from (someone else moved it first).
	ErrConflict = errors.New("conflict")
	// ErrLocked: another process holds the database; see LockedError.
	ErrLocked = errors.New("state database locked")
)

// LockedError is returned by Open when the file lock could not be taken
// within Options.Timeout. It matches ErrLocked.
type LockedError struct{ Path string }

func (e *LockedError) Error() string {
	return fmt.Sprintf("the state database %s is in use; is `mailagent watch` running?", e.Path)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Options configures Open. The zero value is usable.
type Options struct {
	// Timeout is how long Open waits for the file lock; 0 means 1s. Open
	// never waits forever.
	Timeout time.Duration
	// ReadOnly opens with a shared lock; write methods then fail.
	ReadOnly bool
	// Retention is how long finished queue items and outbox records are
	// kept (see Prune); 0 means DefaultRetention, a negative value keeps
	// them forever.
	Retention time.Duration
	// SnapshotRetention is how long the step snapshots of a trace are
	// kept; 0 means DefaultSnapshotRetention, a negative value keeps them
	// forever.
	SnapshotRetention time.Duration
	// NoSync skips the fsync of each commit (bbolt's NoSync and
	// NoGrowSync): commits reach the page cache only, and Sync or Close
	// flushes them. It is for a writer whose work can simply be run again
	// (triage), never for watch: a process crash loses nothing, but a
	// power cut or kernel crash before the final Sync can lose the commits
	// since the last Sync and can leave the file damaged (Open's precheck
	// or doctor's Check then reports a *CorruptError; see Repair).
	NoSync bool

	// copied: the file was just written by OpenSnapshot from a store this
	// process opened (and so checked): the page-tree walk and its stamp
	// are skipped.
	copied bool
}

// Store is the state database. It is safe for concurrent use.
type Store struct {
	db    *bolt.DB
	path  string
	now   func() time.Time
	group groupCommit
	opts  Options
	info  Info
	// indexed: the queue and outbox status indexes exist (schema >= 2).
	// A read-only open of an older file falls back to full scans.
	indexed bool
}

var (
	bMessages    = []byte("messages")
	bIdxMsgID    = []byte("idx_message_id") // lower(msgid) \0 account \0 msgkey
	bIdxThread   = []byte("idx_thread")     // thread \0 msgkey
	bIdxState    = []byte("idx_state")      // state \0 msgkey
	bTraces      = []byte("traces")
	bIdxTraceMID = []byte("idx_trace_message_id") // lower(msgid) \0 account \0 traceid
	bCheckpoints = []byte("checkpoints")          // account \0 mailbox
	bUsage       = []byte("usage")                // day
	bThreadIn    = []byte("thread_inputs")        // be64(created) msgkey → compact threading headers
	bStateCount  = []byte("state_counts")         // state → be64 count of messages in it
	bQueue       = []byte("queue")
	bOutbox      = []byte("outbox")
	bContacts    = []byte("contacts") // nested: account → lower(email)
	bAutoSend    = []byte("autosend") // day \0 account \0 contact, and day \0 (global)
	bMeta        = []byte("meta")
	bIdxQueue    = []byte("idx_queue")  // status \0 be64(due) \0 id → id
	bIdxOutbox   = []byte("idx_outbox") // status \0 be64(due) \0 id → id
	bOutboxRaw   = []byte("outbox_raw") // id → raw message
	bMemory      = []byte("memory")     // id → MemoryRecord
	bExamples    = []byte("examples")   // id → Example
)

// appendFill is the fill percent of the buckets whose new keys come in
// order (trace ids begin with the time): bbolt splits a page at half
// full by default, which for keys that are only ever appended leaves
// every page of the bucket half empty.
const appendFill = 0.9

var allBuckets = [][]byte{bMessages, bIdxMsgID, bIdxThread, bIdxState, bTraces, bIdxTraceMID,
	bCheckpoints, bUsage, bQueue, bOutbox, bContacts, bAutoSend, bMeta, bThreadIn, bStateCount,
	bIdxQueue, bIdxOutbox, bOutboxRaw, bFollowups, bIdxFollowup, bUnsubscribes, bMemory, bExamples, bJobs, bIdxJob}

// Open opens or creates the database at path with mode 0600, tightening
// the mode of an existing file that is looser. When another process holds
// the lock for longer than opts.Timeout, the error is a *LockedError.
//
// An empty file (0 bytes) that another process holds the lock on is a
// database being created: Open waits for it as for any lock. An existing
// file that stays empty, or that bbolt cannot read, is never taken for a
// first start: the error is a *CorruptError
// (errors.Is(err, ErrCorrupt)) that names Repair's command. Open never
// panics on a damaged file.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	existed := false
	fi, err := os.Stat(path)
	if err == nil && fi.Size() == 0 {
		// Another process may be creating it this moment (bbolt creates
		// the file, locks it, then writes its first pages).
		if fi, err = settleEmpty(path, opts.Timeout); err != nil {
			return nil, err
		}
	}
	if err == nil {
		existed = true
		stamp := path + VerifiedSuffix
		if opts.copied {
			stamp = ""
		}
		if err := precheck(path, opts.Timeout, true, stamp, !opts.copied); errors.Is(err, ErrLocked) {
			return nil, &LockedError{Path: path}
		} else if err != nil {
			return nil, &CorruptError{Path: path, Err: err}
		}
		if fi.Mode().Perm()&0o077 != 0 && !opts.ReadOnly {
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, fmt.Errorf("open state database %s: tighten mode: %w", path, err)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	} else if opts.ReadOnly {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	var db *bolt.DB
	var file *os.File
	err = guard(path, func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly,
			NoSync: opts.NoSync && !opts.ReadOnly, NoGrowSync: opts.NoSync && !opts.ReadOnly,
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				file = f
				return f, err
			}})
		return err
	})
	if err != nil && db == nil && file != nil {
		// bbolt panicked (or failed) after taking the lock: release it, or
		// this process could not repair the file it just refused.
		_ = file.Close()
	}
	if err != nil {
		var pe *PanicError
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, &LockedError{Path: path}
		case errors.Is(err, ErrCorrupt):
			return nil, err
		case errors.As(err, &pe):
			return nil, &CorruptError{Path: path, Err: err}
		case existed && !errors.Is(err, fs.ErrPermission):
			// ErrInvalid, ErrVersionMismatch, ErrChecksum, "file size too
			// small", a failed mmap of a truncated file: all damage.
			return nil, &CorruptError{Path: path, Err: err}
		}
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	s := &Store{db: db, path: path, now: time.Now, opts: opts}
	if err := s.init(!existed); err != nil {
		_ = db.Close()
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return s, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close releases the file and its lock. A store opened with NoSync is
// synced first; a failed sync is returned (and the file still closed).
func (s *Store) Close() error {
	var syncErr error
	if s.opts.NoSync && !s.opts.ReadOnly {
		syncErr = s.Sync()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close state database: %w", err)
	}
	return syncErr
}

// Durable reports whether each commit is fsynced before it returns (the
// store was opened writable without NoSync).
func (s *Store) Durable() bool { return !s.opts.ReadOnly && !s.db.NoSync }

// Sync flushes every commit to stable storage (fdatasync). Only a store
// opened with NoSync needs it; on others it is a cheap no-op in effect.
func (s *Store) Sync() error {
	if s.opts.ReadOnly {
		return nil
	}
	if err := guard(s.path, s.db.Sync); err != nil {
		return fmt.Errorf("sync state database %s: %w", s.path, err)
	}
	return nil
}

var idClock struct {
	sync.Mutex
	last int64
}

// NewID returns a new record id: 13 hex digits of a millisecond clock that
// never repeats or goes back within the process (so that key order is
// creation order), then 16 random hex digits so that processes never
// collide.
func NewID() string {
	idClock.Lock()
	ms := time.Now().UnixMilli()
	if ms <= idClock.last {
		ms = idClock.last + 1
	}
	idClock.last = ms
	idClock.Unlock()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%013x%s", ms, hex.EncodeToString(b[:]))
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	if b == nil {
		return ErrNotFound
	}
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, data)
}

func join(parts ...[]byte) []byte {
	return bytes.Join(parts, []byte{0})
}

func be32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

// checkName refuses names that would break the \0-separated keys.
func checkName(what, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if strings.ContainsRune(v, 0) {
		return fmt.Errorf("%s %q contains a NUL byte", what, v)
	}
	return nil
}

// batchSize is how many records a scan reads per read transaction. Scans
// call their callback outside any transaction (bbolt deadlocks when a
// goroutine holding a read transaction starts a write), so callbacks may
// use the store.
const batchSize = 256

// scan walks the keys of bucket name that start with prefix, in key order,
// batchSize keys per read transaction. load turns one key/value into an
// item (ok=false skips it); it runs inside the transaction. fn runs outside
// it; its error stops the scan and is returned.
func scan[T any](s *Store, name, prefix []byte, load func(tx *bolt.Tx, k, v []byte) (T, bool, error), fn func(T) error) error {
	var after []byte
	for {
		var items []T
		var last []byte
		done := true
		err := s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.Seek(prefix)
			} else {
				k, v = c.Seek(after)
				if bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			n := 0
			for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				if n == batchSize {
					done = false
					break
				}
				n++
				last = append(last[:0], k...)
				item, ok, err := load(tx, k, v)
				if err != nil {
					return err
				}
				if ok {
					items = append(items, item)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := each(items, fn); err != nil {
			return err
		}
		if done {
			return nil
		}
		after = append([]byte(nil), last...)
	}
}

// settleEmpty is Open's answer to an empty file at path: a database in
// the making, or damage. The process creating one holds bbolt's lock
// from just after creating the file until (and after) its first pages
// are written, so: while someone holds the lock past timeout, it is a
// *LockedError; a file that has pages once the lock is free is taken. A
// file still empty and unlocked is looked at again every 50 ms until
// timeout has passed: a creator may not have taken its lock yet (bbolt
// creates the file, then locks it, and a loaded machine can keep it from
// the next step for tens of milliseconds). Still empty then, it is a
// *CorruptError (a creator that died first, or an empty file put
// there). It returns the file's new Stat when it has pages.
func settleEmpty(path string, timeout time.Duration) (fs.FileInfo, error) {
	empty := &CorruptError{Path: path, Err: errors.New("the file is empty (0 bytes), which a database never is once created")}
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open state database %s: %w", path, err)
		}
		err = lockShared(f, max(time.Until(deadline), 0))
		fi, serr := f.Stat()
		_ = f.Close() // releases the shared lock
		switch {
		case errors.Is(err, ErrLocked):
			return nil, &LockedError{Path: path}
		case serr != nil:
			return nil, fmt.Errorf("open state database %s: %w", path, serr)
		case fi.Size() > 0:
			return fi, nil
		}
		if !time.Now().Before(deadline) {
			return nil, empty
		}
		time.Sleep(min(50*time.Millisecond, time.Until(deadline)))
	}
}
