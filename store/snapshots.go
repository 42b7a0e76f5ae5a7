package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// StepSnapshot is what went into one trace step and what came out of it:
// the prompt variables and the model's raw answer, a gate's inputs and
// verdicts, a tool call and its result. Both are text the caller has
// already redacted; the store only caps them (CapSnapshot). They hold mail
// and model text, which is hostile: sanitise before showing.
type StepSnapshot struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	// InputJSON and OutputJSON mark a side the agent rendered as compact
	// JSON: LoadSnapshots indents it for people (and clears the mark).
	InputJSON  bool `json:"-"`
	OutputJSON bool `json:"-"`
}

// SnapshotCap is the most bytes one side (input or output) of a step
// snapshot keeps; the rest is cut at a rune boundary and marked.
const SnapshotCap = 8 << 10

// DefaultSnapshotRetention is how long step snapshots are kept when
// Options.SnapshotRetention is 0.
const DefaultSnapshotRetention = 14 * 24 * time.Hour

// Snapshots live apart from traces, compressed, so that listing and
// reading traces stays as fast as without them.
var (
	bSnapshots    = []byte("trace_snapshots")     // trace id → deflate(JSON snapshotRecord)
	bIdxSnapshots = []byte("idx_trace_snapshots") // be64(trace started) \0 trace id → nil
)

func init() { allBuckets = append(allBuckets, bSnapshots, bIdxSnapshots) }

// snapshotRecord is the stored form: one entry per trace step, by index
// (nil where the step has none).
type snapshotRecord struct {
	Started time.Time       `json:"started"`
	Steps   []*StepSnapshot `json:"steps"`
}

// CapSnapshot returns s cut to at most SnapshotCap bytes (at a rune
// boundary, invalid UTF-8 replaced) with a marker saying how much was
// dropped.
func CapSnapshot(s string) string {
	if !utf8.ValidString(s) { // checked first: the copy is rarely needed
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= SnapshotCap {
		return s
	}
	marker := func(n int) string { return "\n…[truncated " + strconv.Itoa(n) + " bytes]" }
	cut := SnapshotCap - len(marker(len(s)))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker(len(s)-cut)
}

func snapshotIndexKey(started time.Time, traceID string) []byte {
	return append(append(beU64(timeKey(started)), 0), traceID...)
}

// putSnapshotsTx stores the snapshots the steps of t carry, merged with
// those stored before: steps are only ever appended to a trace, so a step
// written without its snapshot (a trace read back and extended) keeps the
// one it had.
func putSnapshotsTx(tx *bolt.Tx, t *Trace) error {
	has := false
	for _, st := range t.Steps {
		if st.Snapshot != nil {
			has = true
			break
		}
	}
	b, idx := tx.Bucket(bSnapshots), tx.Bucket(bIdxSnapshots)
	if !has || b == nil || idx == nil {
		return nil
	}
	b.FillPercent, idx.FillPercent = appendFill, appendFill
	rec, err := getSnapshotsTx(tx, t.TraceID)
	switch {
	case errors.Is(err, ErrNotFound) && t.snapZ != nil:
		if err := b.Put([]byte(t.TraceID), t.snapZ); err != nil {
			return err
		}
		return idx.Put(snapshotIndexKey(t.Started, t.TraceID), nil)
	case errors.Is(err, ErrNotFound):
		rec = &snapshotRecord{Started: t.Started}
	case err != nil:
		return err
	}
	if !rec.Started.Equal(t.Started) {
		if err := idx.Delete(snapshotIndexKey(rec.Started, t.TraceID)); err != nil {
			return err
		}
		rec.Started = t.Started
	}
	z, err := encodeSnapshots(overlaySnapshots(rec, t))
	if err != nil {
		return fmt.Errorf("encode snapshots %s: %w", t.TraceID, err)
	}
	if err := b.Put([]byte(t.TraceID), z); err != nil {
		return err
	}
	return idx.Put(snapshotIndexKey(t.Started, t.TraceID), nil)
}

// overlaySnapshots puts the snapshots t's steps carry, each capped, over
// rec's (a step without one keeps what rec has) and returns rec.
func overlaySnapshots(rec *snapshotRecord, t *Trace) *snapshotRecord {
	for len(rec.Steps) < len(t.Steps) {
		rec.Steps = append(rec.Steps, nil)
	}
	for i, st := range t.Steps {
		if st.Snapshot != nil {
			rec.Steps[i] = &StepSnapshot{Input: CapSnapshot(st.Snapshot.Input), Output: CapSnapshot(st.Snapshot.Output),
				InputJSON: st.Snapshot.InputJSON, OutputJSON: st.Snapshot.OutputJSON}
		}
	}
	return rec
}

// presnap encodes t's snapshots ahead of the transaction that stores them
// (t.snapZ), so that a writer's goroutine pays for the compression, not
// the one write transaction every writer waits for. A trace whose
// snapshots are already stored is merged in the transaction instead.
func presnap(t *Trace) error {
	for _, st := range t.Steps {
		if st.Snapshot != nil {
			z, err := encodeSnapshots(overlaySnapshots(&snapshotRecord{Started: t.Started}, t))
			if err != nil {
				return fmt.Errorf("encode snapshots %s: %w", t.TraceID, err)
			}
			t.snapZ = z
			return nil
		}
	}
	return nil
}

func getSnapshotsTx(tx *bolt.Tx, traceID string) (*snapshotRecord, error) {
	b := tx.Bucket(bSnapshots)
	if b == nil {
		return nil, ErrNotFound
	}
	v := b.Get([]byte(traceID))
	if v == nil {
		return nil, ErrNotFound
	}
	rec, err := decodeSnapshots(v)
	if err != nil {
		return nil, fmt.Errorf("snapshots %s: %w", traceID, err)
	}
	return rec, nil
}

// LoadSnapshots fills the Snapshot of each step of t from the store
// (steps with none, or whose snapshot was pruned, keep nil). A trace with
// no snapshots at all is not an error.
func (s *Store) LoadSnapshots(t *Trace) error {
	if t == nil {
		return nil
	}
	var rec *snapshotRecord
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		rec, err = getSnapshotsTx(tx, t.TraceID)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load snapshots: %w", err)
	}
	for i := range t.Steps {
		if i < len(rec.Steps) && rec.Steps[i] != nil {
			t.Steps[i].Snapshot = forPeople(rec.Steps[i])
		}
	}
	return nil
}

// forPeople returns s with its JSON sides indented by two spaces, as the
// agent rendered them before they were stored compact. A side that is no
// longer valid JSON (cut at the cap, or a redaction inside a value) is
// shown as stored.
func forPeople(s *StepSnapshot) *StepSnapshot {
	indent := func(text string, isJSON bool) string {
		if !isJSON {
			return text
		}
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(text), "", "  "); err != nil {
			return text
		}
		return b.String()
	}
	return &StepSnapshot{Input: indent(s.Input, s.InputJSON), Output: indent(s.Output, s.OutputJSON)}
}

// SnapshotBytes returns how many bytes the stored snapshots take (values
// only, compressed) and how many traces have them.
func (s *Store) SnapshotBytes() (size int64, traces int, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSnapshots)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			size += int64(len(k) + len(v))
			traces++
			return nil
		})
	})
	return size, traces, err
}

// pruneSnapshots deletes the snapshots of traces started before cutoff,
// oldest first, in transactions of at most pruneBatch deletes. The traces
// themselves are kept.
func (s *Store) pruneSnapshots(cutoff time.Time) (int, error) {
	total := 0
	end := beU64(timeKey(cutoff))
	for {
		n := 0
		err := s.updateTx(func(tx *bolt.Tx) error {
			b, idx := tx.Bucket(bSnapshots), tx.Bucket(bIdxSnapshots)
			if b == nil || idx == nil {
				return nil
			}
			c := idx.Cursor()
			var keys [][]byte
			for k, _ := c.First(); k != nil && len(keys) < pruneBatch; k, _ = c.Next() {
				if len(k) < 9 || bytes.Compare(k[:8], end) >= 0 {
					break
				}
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := b.Delete(k[9:]); err != nil {
					return err
				}
				if err := idx.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}
