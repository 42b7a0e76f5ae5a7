package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

func snapTrace(id string, started time.Time, steps ...Step) *Trace {
	return &Trace{TraceID: id, Message: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 1},
		MessageID: id + "@x", Started: started, Steps: steps}
}

// TestSnapshotsStoredApart: a trace's snapshots are kept out of the trace
// record (GetTrace and TraceForMessageID carry none), compressed, and
// LoadSnapshots puts them back on their steps.
func TestSnapshotsStoredApart(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	in := strings.Repeat("prompt variable ", 200)
	tr := snapTrace("tr_1", clk.Now(),
		Step{Name: "parse", Snapshot: &StepSnapshot{Input: "headers", Output: "summary"}},
		Step{Name: "thread"},
		Step{Name: "classify", Snapshot: &StepSnapshot{Input: in, Output: `{"intents":["x"]}`}})
	if err := s.PutTrace(tr); err != nil {
		t.Fatal(err)
	}
	if tr.Steps[0].Snapshot == nil {
		t.Fatal("PutTrace changed the caller's trace")
	}
	got, err := s.GetTrace("tr_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range got.Steps {
		if st.Snapshot != nil {
			t.Fatalf("GetTrace: step %s carries a snapshot", st.Name)
		}
	}
	if err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bTraces).Get([]byte("tr_1")); bytes.Contains(v, []byte("snapshot")) {
			t.Errorf("the trace record holds snapshots: %s", v)
		}
		if v := tx.Bucket(bSnapshots).Get([]byte("tr_1")); len(v) == 0 || len(v) > len(in)/4 {
			t.Errorf("stored snapshot is %d bytes for %d bytes of repetitive input: not compressed", len(v), len(in))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSnapshots(got); err != nil {
		t.Fatal(err)
	}
	if got.Steps[0].Snapshot == nil || got.Steps[0].Snapshot.Output != "summary" || got.Steps[1].Snapshot != nil ||
		got.Steps[2].Snapshot == nil || got.Steps[2].Snapshot.Input != in {
		t.Fatalf("LoadSnapshots: %+v", got.Steps)
	}
}

// TestSnapshotsMergeOnResume: a trace read back (without snapshots) and
// extended, as a resumed message's is, keeps its earlier steps' snapshots.
func TestSnapshotsMergeOnResume(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	if err := s.PutTrace(snapTrace("tr_r", clk.Now(), Step{Name: "classify", Snapshot: &StepSnapshot{Input: "in1", Output: "out1"}})); err != nil {
		t.Fatal(err)
	}
	tr, err := s.GetTrace("tr_r")
	if err != nil {
		t.Fatal(err)
	}
	tr.Steps = append(tr.Steps, Step{Name: "resume"}, Step{Name: "draft", Snapshot: &StepSnapshot{Input: "in3", Output: "out3"}})
	if err := s.PutTrace(tr); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetTrace("tr_r")
	if err := s.LoadSnapshots(got); err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 3 || got.Steps[0].Snapshot == nil || got.Steps[0].Snapshot.Output != "out1" ||
		got.Steps[1].Snapshot != nil || got.Steps[2].Snapshot == nil || got.Steps[2].Snapshot.Input != "in3" {
		t.Fatalf("after resume: %+v", got.Steps)
	}
}

// TestCapSnapshot: each side is cut to SnapshotCap bytes, at a rune
// boundary, with a marker; invalid UTF-8 is replaced; short text is kept.
func TestCapSnapshot(t *testing.T) {
	t.Parallel()
	if got := CapSnapshot("short"); got != "short" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("é", SnapshotCap) // 2 bytes each
	got := CapSnapshot(long)
	if len(got) > SnapshotCap || !utf8.ValidString(got) || !strings.Contains(got, "…[truncated ") {
		t.Errorf("long: %d bytes, valid %v, tail %q", len(got), utf8.ValidString(got), got[len(got)-30:])
	}
	if got := CapSnapshot("a\xffb"); !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8 kept: %q", got)
	}
	s, clk := openTest(t)
	if err := s.PutTrace(snapTrace("tr_c", clk.Now(), Step{Name: "x", Snapshot: &StepSnapshot{Input: long, Output: long}})); err != nil {
		t.Fatal(err)
	}
	tr, _ := s.GetTrace("tr_c")
	if err := s.LoadSnapshots(tr); err != nil {
		t.Fatal(err)
	}
	if sn := tr.Steps[0].Snapshot; sn == nil || len(sn.Input) > SnapshotCap || len(sn.Output) > SnapshotCap {
		t.Fatalf("stored snapshot not capped")
	}
}

// TestPruneSnapshots: the daily prune drops the snapshots of traces older
// than the snapshot retention, keeps newer ones, and keeps every trace.
func TestPruneSnapshots(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	now := clk.Now()
	for i, age := range []time.Duration{20 * 24 * time.Hour, 15 * 24 * time.Hour, 13 * 24 * time.Hour, time.Hour} {
		id := "tr_" + string(rune('a'+i))
		if err := s.PutTrace(snapTrace(id, now.Add(-age), Step{Name: "classify", Snapshot: &StepSnapshot{Input: id, Output: id}})); err != nil {
			t.Fatal(err)
		}
	}
	rep, ran, err := s.PruneIfDue(now)
	if err != nil || !ran {
		t.Fatalf("PruneIfDue: %v %v", ran, err)
	}
	if rep.SnapshotsDeleted != 2 {
		t.Errorf("SnapshotsDeleted = %d, want 2 (older than 14 days)", rep.SnapshotsDeleted)
	}
	for i, want := range []bool{false, false, true, true} {
		id := "tr_" + string(rune('a'+i))
		tr, err := s.GetTrace(id)
		if err != nil {
			t.Fatalf("%s: trace pruned too: %v", id, err)
		}
		if err := s.LoadSnapshots(tr); err != nil {
			t.Fatal(err)
		}
		if has := tr.Steps[0].Snapshot != nil; has != want {
			t.Errorf("%s: snapshot kept %v, want %v", id, has, want)
		}
	}
	if _, n, _ := s.SnapshotBytes(); n != 2 {
		t.Errorf("%d snapshot records left, want 2", n)
	}
	// A negative retention keeps them.
	rep, err = s.Prune(PruneOptions{Now: now.Add(365 * 24 * time.Hour), SnapshotRetention: -1})
	if err != nil || rep.SnapshotsDeleted != 0 {
		t.Errorf("negative retention: %+v %v", rep, err)
	}
}

// TestLoadSnapshotsDamaged: a damaged snapshot record is a clear error,
// never a panic, and the trace itself still reads.
func TestLoadSnapshotsDamaged(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	if err := s.PutTrace(snapTrace("tr_d", clk.Now(), Step{Name: "x", Snapshot: &StepSnapshot{Input: "i", Output: "o"}})); err != nil {
		t.Fatal(err)
	}
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bSnapshots).Put([]byte("tr_d"), []byte("not deflate")) }); err != nil {
		t.Fatal(err)
	}
	tr, err := s.GetTrace("tr_d")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSnapshots(tr); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "tr_d") {
		t.Fatalf("damaged record: %v", err)
	}
}
