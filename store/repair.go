package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// RepairReport says what Repair did.
type RepairReport struct {
	// Path is the repaired database; DamagedPath is where the damaged file
	// was moved (<name>.damaged-<UTC timestamp>).
	Path        string `json:"path"`
	DamagedPath string `json:"damaged_path"`
	// Opened is false when bbolt could not open the damaged file at all
	// (both meta pages bad, too short, empty): nothing was salvaged.
	Opened bool `json:"opened"`
	// Copied counts the records salvaged, per bucket.
	Copied map[string]int `json:"copied"`
	// Lost counts what could not be read: keys whose value was not a valid
	// record, plus one per stretch of a bucket that could not be walked.
	Lost map[string]int `json:"lost"`
	// Problems describe each failure, for the log.
	Problems []string `json:"problems,omitempty"`
}

// TotalCopied and TotalLost sum the per-bucket counts.
func (r RepairReport) TotalCopied() int { return sum(r.Copied) }

// TotalLost sums Lost.
func (r RepairReport) TotalLost() int { return sum(r.Lost) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// primary buckets hold data; every other bucket is an index rebuilt from
// them.
var primaryBuckets = [][]byte{bMessages, bTraces, bCheckpoints, bUsage, bQueue, bOutbox, bOutboxRaw, bContacts, bAutoSend,
	bFollowups, bUnsubscribes, bMemory, bExamples, bJobs}

// jsonBuckets hold one JSON document per key; a value that is not valid
// JSON is damage, not a record.
var jsonBuckets = map[string]bool{"messages": true, "traces": true, "checkpoints": true, "usage": true, "queue": true, "outbox": true, "contacts": true,
	"followups": true, "unsubscribes": true, "memory": true, "examples": true, "jobs": true}

// repairLockWait is how long Repair waits for the database's lock: as
// long as Open waits by default, for a holder that is letting go.
const repairLockWait = time.Second

// Repair salvages the damaged database at path: it copies every record it
// can read (walking each bucket with panics recovered, forwards and then
// backwards from the end so that one bad page loses only its own stretch)
// into a new file, rebuilds the indexes from the records, moves the damaged
// file aside as <name>.damaged-<timestamp>, and puts the new file in its
// place. The damaged file is only ever read (through a copy) and is kept.
// It refuses to run while another process holds the database
// (ErrLocked), after waiting up to repairLockWait for it.
func Repair(path string) (RepairReport, error) {
	rep := RepairReport{Path: path, Copied: map[string]int{}, Lost: map[string]int{}}
	orig, err := os.Open(path)
	if err != nil {
		return rep, fmt.Errorf("repair %s: %w", path, err)
	}
	defer func() { _ = orig.Close() }()
	if err := lockExclusive(orig, repairLockWait); err != nil {
		if errors.Is(err, ErrLocked) {
			return rep, &LockedError{Path: path}
		}
		return rep, fmt.Errorf("repair %s: lock: %w", path, err)
	}
	dir := filepath.Dir(path)
	stamp := time.Now().UTC().Format("20060102T150405Z")

	// Work on a copy: bbolt maps the file it opens, and a damaged file may
	// hold a lock we cannot see.
	src := filepath.Join(dir, "."+filepath.Base(path)+".repair-src")
	if err := copyFile(orig, src); err != nil {
		return rep, fmt.Errorf("repair %s: copy: %w", path, err)
	}
	defer func() { _ = os.Remove(src) }()

	dst := filepath.Join(dir, "."+filepath.Base(path)+".repair-new")
	_ = os.Remove(dst)
	out, err := Open(dst, Options{})
	if err != nil {
		return rep, fmt.Errorf("repair %s: new file: %w", path, err)
	}
	salvageErr := salvage(src, out, &rep)
	if salvageErr == nil {
		salvageErr = out.updateTx(rebuildIndexes)
	}
	if err := out.Close(); err != nil && salvageErr == nil {
		salvageErr = err
	}
	if salvageErr != nil {
		_ = os.Remove(dst)
		return rep, fmt.Errorf("repair %s: %w", path, salvageErr)
	}
	rep.DamagedPath = path + ".damaged-" + stamp
	if err := os.Rename(path, rep.DamagedPath); err != nil {
		_ = os.Remove(dst)
		return rep, fmt.Errorf("repair %s: move the damaged file aside: %w", path, err)
	}
	if err := os.Rename(dst, path); err != nil {
		return rep, fmt.Errorf("repair %s: put the new file in place (the damaged one is %s, the salvaged one %s): %w", path, rep.DamagedPath, dst, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return rep, nil
}

func copyFile(from *os.File, to string) error {
	if _, err := from.Seek(0, io.SeekStart); err != nil {
		return err
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, from); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// salvage copies what it can read from the bbolt file src into out. It
// does not trust bbolt's cursors (one bad page would end a walk): it reads
// the file's pages itself, from the root of the newest meta page that
// validates (else either meta page whose root looks like a tree), checking
// every page before using it, so a damaged page loses only what it holds
// (a leaf: its records; a branch: the subtree under it).
func salvage(src string, out *Store, rep *RepairReport) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	w := &walker{data: data, rep: rep, seen: map[uint64]bool{}}
	root, ok := w.pickRoot()
	if !ok && w.ps == 0 {
		// Both meta pages unreadable: the data pages may be intact.
		// They name themselves (a page starts with its own id), which
		// gives the page size the metas no longer say.
		if ps := guessPageSize(data); ps != 0 {
			w.ps = ps
			rep.Problems = append(rep.Problems, fmt.Sprintf("both meta pages are unreadable; the page size (%d) was found from the data pages", ps))
		}
	}
	if !ok && w.ps != 0 {
		if root, ok = w.staleRoot(); ok {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the current root is unreadable; salvaged from an older copy of the root (page %d): some records may be older versions", root))
		}
	}
	if !ok {
		if w.ps == 0 {
			rep.Problems = append(rep.Problems, "no meta page: nothing salvaged")
			return nil
		}
		rep.Problems = append(rep.Problems, "no usable root: records salvaged from the leaf pages that recognisably hold them")
		rep.Opened = true
		return w.orphans(out)
	}
	rep.Opened = true
	top := map[string]bucketRef{}
	w.walk(root, 0, "/", func(k, v []byte, isBucket bool) {
		if isBucket {
			top[string(k)] = bucketRef{v: bytes.Clone(v)}
		}
	})
	for _, name := range append(primaryBuckets, bMeta) {
		ref, ok := top[string(name)]
		if !ok {
			continue
		}
		var pairs []pair
		w.walkValue(ref.v, string(name), func(k, v []byte, isBucket bool) {
			if !isBucket {
				pairs = append(pairs, pair{k: bytes.Clone(k), v: bytes.Clone(v)})
				return
			}
			sub := bytes.Clone(k)
			w.walkValue(v, string(name)+"/"+string(k), func(k2, v2 []byte, isBucket bool) {
				if !isBucket {
					pairs = append(pairs, pair{sub: sub, k: bytes.Clone(k2), v: bytes.Clone(v2)})
				}
			})
		})
		if bytes.Equal(name, bMeta) {
			for _, p := range pairs {
				if p.sub == nil && bytes.Equal(p.k, metaCreatedAt) {
					created := p.v
					if err := out.updateTx(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(metaCreatedAt, created) }); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err := writePairs(out, name, pairs, rep); err != nil {
			return err
		}
	}
	return nil
}

type bucketRef struct{ v []byte }

// pair is one salvaged key/value; sub names the nested bucket it sits in
// (contacts/<account>), nil for a top-level bucket.
type pair struct{ sub, k, v []byte }

// The bbolt file format (go.etcd.io/bbolt/internal/common): every page
// starts with id u64, flags u16, count u16, overflow u32. A branch element
// is pos u32, ksize u32, pgid u64; a leaf element is flags u32, pos u32,
// ksize u32, vsize u32 (pos counts from the element). A bucket's value is
// root pgid u64, sequence u64, then, when root is 0, an inline leaf page.
const (
	pageHeader     = 16
	branchElemSize = 16
	leafElemSize   = 16
	flagBranch     = 0x01
	flagLeaf       = 0x02
	leafIsBucket   = 0x01
	boltMagic      = 0xED0CDAED
	maxDepth       = 64
)

type walker struct {
	data []byte
	ps   int
	rep  *RepairReport
	seen map[uint64]bool
}

func le16(b []byte) int    { return int(binary.LittleEndian.Uint16(b)) }
func le32(b []byte) int    { return int(binary.LittleEndian.Uint32(b)) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// pickRoot chooses the root page of the newest valid meta page, else of
// any meta page whose root page looks like a tree page.
func (w *walker) pickRoot() (uint64, bool) {
	type meta struct {
		root, txid uint64
		valid      bool
	}
	var metas []meta
	readMeta := func(off int) (meta, int, bool) {
		if off < 0 || off+pageHeader+64 > len(w.data) {
			return meta{}, 0, false
		}
		m := w.data[off+pageHeader:]
		if uint32(le32(m)) != boltMagic {
			return meta{}, 0, false
		}
		h := fnv.New64a()
		h.Write(m[:56])
		return meta{root: le64(m[16:]), txid: le64(m[48:]), valid: h.Sum64() == le64(m[56:])}, le32(m[8:]), true
	}
	sizes := []int{4096, 8192, 16384, 32768, 65536}
	if _, ps, ok := readMeta(0); ok && ps >= 1024 && ps <= 1<<16 && ps&(ps-1) == 0 {
		sizes = append([]int{ps}, sizes...)
	}
	for _, ps := range sizes {
		m0, _, ok0 := readMeta(0)
		m1, _, ok1 := readMeta(ps)
		if !ok0 && !ok1 {
			continue
		}
		w.ps = ps
		if ok0 {
			metas = append(metas, m0)
		}
		if ok1 {
			metas = append(metas, m1)
		}
		break
	}
	if w.ps == 0 {
		return 0, false
	}
	slices.SortFunc(metas, func(a, b meta) int {
		if a.valid != b.valid {
			if a.valid {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.txid, a.txid)
	})
	for _, m := range metas {
		if !m.valid {
			w.rep.Problems = append(w.rep.Problems, "meta page checksum mismatch")
		}
		if _, ok := w.page(m.root); ok {
			return m.root, true
		}
	}
	return 0, false
}

// page returns the bytes of page id (with its overflow pages) after
// checking that it is a branch or leaf page that says it is id.
func (w *walker) page(id uint64) ([]byte, bool) {
	if id < 2 || id > uint64(len(w.data)/w.ps) {
		return nil, false
	}
	start := int(id) * w.ps
	if start+w.ps > len(w.data) {
		return nil, false
	}
	p := w.data[start:]
	if le64(p) != id {
		return nil, false
	}
	flags := le16(p[8:])
	if flags != flagBranch && flags != flagLeaf {
		return nil, false
	}
	end := start + (1+le32(p[12:]))*w.ps
	if end > len(w.data) || end < start {
		return nil, false
	}
	return w.data[start:end], true
}

// walk visits the elements of the tree page id: fn gets every leaf pair,
// isBucket set for a nested bucket (its value is the bucket header).
func (w *walker) walk(id uint64, depth int, where string, fn func(k, v []byte, isBucket bool)) {
	p, ok := w.page(id)
	if !ok || depth > maxDepth || w.seen[id] {
		w.lose(where, fmt.Sprintf("page %d is unreadable", id))
		return
	}
	w.seen[id] = true
	w.elements(p, depth, where, fn)
}

// elements reads the elements of page bytes p (a real or an inline page).
func (w *walker) elements(p []byte, depth int, where string, fn func(k, v []byte, isBucket bool)) {
	flags, count := le16(p[8:]), le16(p[10:])
	if pageHeader+count*leafElemSize > len(p) {
		w.lose(where, "a page's element count is out of range")
		return
	}
	for i := range count {
		e := pageHeader + i*leafElemSize
		if flags == flagBranch {
			pos, ksize := le32(p[e:]), le32(p[e+4:])
			if e+pos+ksize > len(p) {
				w.lose(where, "a branch element is out of range")
				continue
			}
			w.walk(le64(p[e+8:]), depth+1, where, fn)
			continue
		}
		lf, pos, ksize, vsize := le32(p[e:]), le32(p[e+4:]), le32(p[e+8:]), le32(p[e+12:])
		if pos < 0 || ksize < 0 || vsize < 0 || e+pos+ksize+vsize > len(p) {
			w.lose(where, "a leaf element is out of range")
			continue
		}
		k := p[e+pos : e+pos+ksize]
		v := p[e+pos+ksize : e+pos+ksize+vsize]
		fn(k, v, lf&leafIsBucket != 0)
	}
}

// walkValue walks the bucket whose header is v.
func (w *walker) walkValue(v []byte, where string, fn func(k, v []byte, isBucket bool)) {
	if len(v) < 16 {
		w.lose(where, "a bucket header is short")
		return
	}
	if root := le64(v); root != 0 {
		w.walk(root, 0, where, fn)
		return
	}
	inline := v[16:]
	if len(inline) < pageHeader || le16(inline[8:]) != flagLeaf {
		w.lose(where, "an inline bucket is unreadable")
		return
	}
	w.elements(inline, 0, where, fn)
}

func (w *walker) lose(where, why string) {
	name := strings.TrimPrefix(where, "/")
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	if name == "" {
		name = "(root)"
	}
	w.rep.Lost[name]++
	w.rep.Problems = append(w.rep.Problems, fmt.Sprintf("%s: %s", where, why))
}

// writePairs writes salvaged pairs of bucket name into out, 1000 per
// transaction, skipping values that are not valid records.
func writePairs(out *Store, name []byte, pairs []pair, rep *RepairReport) error {
	for len(pairs) > 0 {
		n := min(len(pairs), 1000)
		batch := pairs[:n]
		pairs = pairs[n:]
		err := out.updateTx(func(tx *bolt.Tx) error {
			for _, p := range batch {
				if jsonBuckets[string(name)] && !json.Valid(p.v) {
					rep.Lost[string(name)]++
					rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %q is not a valid record", name, p.k))
					continue
				}
				b := tx.Bucket(name)
				if p.sub != nil {
					var err error
					if b, err = b.CreateBucketIfNotExists(p.sub); err != nil {
						return err
					}
				}
				if err := b.Put(p.k, p.v); err != nil {
					return err
				}
				rep.Copied[string(name)]++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rebuildIndexes empties every index and fills it again from the records:
// message-id, thread, state (and the state counters), the threading
// inputs, the message creation index, the trace index, and the queue and
// outbox status indexes (an outbox record with its raw message inline has
// it moved apart).
func rebuildIndexes(tx *bolt.Tx) error {
	for _, name := range [][]byte{bIdxMsgID, bIdxThread, bIdxState, bStateCount, bThreadIn, bIdxTraceMID, bIdxQueue, bIdxOutbox, bIdxFollowup, bIdxJob, bIdxQueueCreated, bIdxMsgCreated} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	var undecodable [][]byte
	err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
		var r MessageRecord
		if json.Unmarshal(v, &r) != nil || !bytes.Equal(msgKey(r.MessageKey), k) {
			undecodable = append(undecodable, bytes.Clone(k))
			return nil
		}
		if err := addMessageIndexes(tx, k, &r); err != nil {
			return err
		}
		if err := addStateCount(tx, r.State, 1); err != nil {
			return err
		}
		return putThreadInputTx(tx, k, &r)
	})
	if err != nil {
		return err
	}
	for _, k := range undecodable {
		if err := tx.Bucket(bMessages).Delete(k); err != nil {
			return err
		}
	}
	err = tx.Bucket(bTraces).ForEach(func(k, v []byte) error {
		var t Trace
		if json.Unmarshal(v, &t) != nil || t.MessageID == "" {
			return nil
		}
		return tx.Bucket(bIdxTraceMID).Put(traceIndexKey(&t), bytes.Clone(k))
	})
	if err != nil {
		return err
	}
	var items []*QueueItem
	err = tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
		var q QueueItem
		if json.Unmarshal(v, &q) == nil {
			q.ID = string(k)
			items = append(items, &q)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, q := range items {
		if err := putQueueTx(tx, q, nil); err != nil {
			return err
		}
	}
	var recs []*OutboxRecord
	err = tx.Bucket(bOutbox).ForEach(func(k, v []byte) error {
		r, err := decodeOutbox(tx, k, v, true)
		if err == nil {
			r.ID = string(k)
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := putOutboxTx(tx, r, nil); err != nil {
			return err
		}
	}
	if err := rebuildFollowupIndex(tx); err != nil {
		return err
	}
	return rebuildJobIndex(tx)
}

// guessPageSize returns the page size under which the most pages of data
// carry their own id and a branch or leaf flag (bbolt writes both), or 0
// when no size finds any.
func guessPageSize(data []byte) int {
	best, bestHits := 0, 0
	for _, ps := range []int{4096, 8192, 16384, 32768, 65536, 1024, 2048} {
		hits := 0
		for id := 2; (id+1)*ps <= len(data); id++ {
			p := data[id*ps:]
			if le64(p) == uint64(id) {
				if f := le16(p[8:]); f == flagBranch || f == flagLeaf {
					hits++
				}
			}
		}
		if hits > bestHits {
			best, bestHits = ps, hits
		}
	}
	return best
}

// staleRoot looks, from the end of the file back, for a leaf page that
// holds the store's top-level buckets: an older copy of the root, left by
// bbolt's copy-on-write, to salvage from when the current one is gone.
func (w *walker) staleRoot() (uint64, bool) {
	for id := len(w.data)/w.ps - 1; id >= 2; id-- {
		p, ok := w.page(uint64(id))
		if !ok || le16(p[8:]) != flagLeaf {
			continue
		}
		count := le16(p[10:])
		if pageHeader+count*leafElemSize > len(p) {
			continue
		}
		known := 0
		for i := range count {
			e := pageHeader + i*leafElemSize
			lf, pos, ksize := le32(p[e:]), le32(p[e+4:]), le32(p[e+8:])
			if lf&leafIsBucket == 0 || e+pos+ksize > len(p) {
				continue
			}
			switch string(p[e+pos : e+pos+ksize]) {
			case "messages", "meta", "queue", "outbox":
				known++
			}
		}
		if known >= 3 {
			return uint64(id), true
		}
	}
	return 0, false
}

// orphans salvages records from leaf pages found anywhere in the file when
// no tree can be followed (the root is past the end of a file cut short).
// Records say what they are (a message record's key is its MessageKey, a
// trace's its TraceID, …), so each leaf element is kept only when its
// value decodes to a record whose own fields give back its key. Old
// copies of a record survive in freed pages: the newest (UpdatedAt) wins.
func (w *walker) orphans(out *Store) error {
	type rec struct {
		v       []byte
		updated time.Time
	}
	found := map[string]map[string]rec{}
	keep := func(bucket string, k, v []byte, updated time.Time) {
		m := found[bucket]
		if m == nil {
			m = map[string]rec{}
			found[bucket] = m
		}
		if old, ok := m[string(k)]; !ok || updated.After(old.updated) {
			m[string(k)] = rec{bytes.Clone(v), updated}
		}
	}
	for id := 2; id < len(w.data)/w.ps; id++ {
		p, ok := w.page(uint64(id))
		if !ok || le16(p[8:]) != flagLeaf {
			continue
		}
		w.elements(p, 0, "(orphans)", func(k, v []byte, isBucket bool) {
			if isBucket || len(v) == 0 || v[0] != '{' {
				return
			}
			var m MessageRecord
			if json.Unmarshal(v, &m) == nil && m.Account != "" && bytes.Equal(msgKey(m.MessageKey), k) {
				keep(string(bMessages), k, v, m.UpdatedAt)
				return
			}
			var t Trace
			if json.Unmarshal(v, &t) == nil && t.TraceID != "" && t.TraceID == string(k) {
				keep(string(bTraces), k, v, t.Started)
				return
			}
			var q QueueItem
			if json.Unmarshal(v, &q) == nil && q.ID == string(k) && q.Kind != "" {
				keep(string(bQueue), k, v, q.UpdatedAt)
				return
			}
			var o OutboxRecord
			if json.Unmarshal(v, &o) == nil && o.ID == string(k) && o.Status != "" {
				keep(string(bOutbox), k, v, o.UpdatedAt)
			}
		})
	}
	for _, name := range [][]byte{bMessages, bTraces, bQueue, bOutbox} {
		var pairs []pair
		for k, r := range found[string(name)] {
			pairs = append(pairs, pair{k: []byte(k), v: r.v})
		}
		slices.SortFunc(pairs, func(a, b pair) int { return bytes.Compare(a.k, b.k) })
		if err := writePairs(out, name, pairs, w.rep); err != nil {
			return err
		}
	}
	return nil
}
