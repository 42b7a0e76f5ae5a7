package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func pendingDraft(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.PutQueueItem(&QueueItem{ID: id, Kind: KindDraft, Status: QueuePending, Draft: "hello"}); err != nil {
		t.Fatal(err)
	}
}

func approvalRecord(qid, body string) *OutboxRecord {
	return &OutboxRecord{ID: "ob_" + qid, QueueID: qid, Status: OutboxPending, Body: body,
		MessageID: "<" + body + "@x>", Raw: []byte("raw " + body), To: []string{"a@example.com"}}
}

var open3 = []string{QueuePending, QueueSnoozed, QueueFailed}

// state returns the item's status and whether its outbox record exists.
func approvalState(t *testing.T, s *Store, qid string) (string, *OutboxRecord) {
	t.Helper()
	q, err := s.GetQueueItem(qid)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := s.GetOutbox("ob_" + qid)
	if errors.Is(err, ErrNotFound) {
		return q.Status, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return q.Status, ob
}

func TestApproveQueueItem(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	pendingDraft(t, s, "q1")
	q, ob, err := s.ApproveQueueItem("q1", open3, func(q *QueueItem) error { q.Final = "edited"; return nil }, approvalRecord("q1", "edited"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Status != QueueApproved || q.Final != "edited" || ob.Status != OutboxPending || ob.CreatedAt.IsZero() {
		t.Fatalf("got item %+v, record %+v", q, ob)
	}
	st, stored := approvalState(t, s, "q1")
	if st != QueueApproved || stored == nil || string(stored.Raw) != "raw edited" {
		t.Fatalf("stored: %s, %+v", st, stored)
	}
	// A second approval is refused and changes nothing.
	if _, _, err := s.ApproveQueueItem("q1", open3, nil, approvalRecord("q1", "other")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second approval: got %v, want ErrConflict", err)
	}
	if _, stored := approvalState(t, s, "q1"); string(stored.Raw) != "raw edited" {
		t.Fatalf("second approval changed the record: %q", stored.Raw)
	}
}

// TestApproveQueueItemAllOrNothing: whatever fails inside the approval,
// the item is not approved and no record exists: never the stranded
// in-between state.
func TestApproveQueueItemAllOrNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		setup  func(t *testing.T, s *Store)
		mutate func(*QueueItem) error
		ob     func() *OutboxRecord
	}{
		{name: "mutate refuses", mutate: func(*QueueItem) error { return errors.New("not a draft") },
			ob: func() *OutboxRecord { return approvalRecord("q", "x") }},
		{name: "bbolt refuses the outbox write (key too large)", ob: func() *OutboxRecord {
			r := approvalRecord("q", "x")
			r.ID = strings.Repeat("k", 40000) // bbolt.MaxKeySize is 32768
			return r
		}},
		{name: "an approval of the same record is already sending", setup: func(t *testing.T, s *Store) {
			r := approvalRecord("q", "x")
			r.Status = OutboxSending
			if err := s.PutOutbox(r); err != nil {
				t.Fatal(err)
			}
		}, ob: func() *OutboxRecord { return approvalRecord("q", "y") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := openTest(t)
			pendingDraft(t, s, "q")
			if c.setup != nil {
				c.setup(t, s)
			}
			before, _ := s.GetOutbox("ob_q")
			ob := c.ob()
			if _, _, err := s.ApproveQueueItem("q", open3, c.mutate, ob); err == nil {
				t.Fatal("approval succeeded")
			}
			st, rec := approvalState(t, s, "q")
			if st != QueuePending {
				t.Fatalf("item is %s after a failed approval, want pending", st)
			}
			if before == nil && rec != nil {
				t.Fatalf("outbox record written by a failed approval: %+v", rec)
			}
			if before != nil && (rec.Status != before.Status || string(rec.Raw) != string(before.Raw)) {
				t.Fatalf("existing record changed: %+v", rec)
			}
			if got, err := s.GetOutbox(ob.ID); err == nil && before == nil {
				t.Fatalf("record %s exists: %+v", ob.ID[:10], got)
			}
			if n, err := s.StrandedApprovals(func(id string) string { return "ob_" + id }); err != nil || len(n) != 0 {
				t.Fatalf("stranded approvals: %v, %v", n, err)
			}
		})
	}
}

// TestApproveQueueItemRetryAfterFailure: a failed send approved again
// reuses the record; the same text keeps the Message-ID (so the Sent
// check still recognises an earlier attempt), a new text replaces it.
func TestApproveQueueItemRetryAfterFailure(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	pendingDraft(t, s, "q")
	if _, _, err := s.ApproveQueueItem("q", open3, nil, approvalRecord("q", "one")); err != nil {
		t.Fatal(err)
	}
	fail := func() {
		if _, err := s.TransitionOutbox("ob_q", []string{OutboxPending}, OutboxFailed, func(r *OutboxRecord) error { r.Attempts = 3; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TransitionQueueItem("q", []string{QueueApproved}, QueueFailed, nil); err != nil {
			t.Fatal(err)
		}
	}
	fail()
	again := approvalRecord("q", "one")
	again.MessageID, again.Raw = "<new@x>", []byte("new raw")
	_, ob, err := s.ApproveQueueItem("q", open3, nil, again)
	if err != nil {
		t.Fatal(err)
	}
	if ob.MessageID != "<one@x>" || string(ob.Raw) != "raw one" || ob.Attempts != 3 || ob.Status != OutboxPending {
		t.Fatalf("same text: %+v", ob)
	}
	fail()
	_, ob, err = s.ApproveQueueItem("q", open3, nil, approvalRecord("q", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if ob.MessageID != "<two@x>" || string(ob.Raw) != "raw two" {
		t.Fatalf("new text: %+v", ob)
	}
}

// TestStrandedApprovals: the state the old two-step Approve could leave
// (approved, no outbox record) is found, and nothing else is.
func TestStrandedApprovals(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	for _, id := range []string{"a", "b", "c"} {
		pendingDraft(t, s, id)
	}
	// a: the old Approve, killed between its two writes.
	if _, err := s.TransitionQueueItem("a", open3, QueueApproved, nil); err != nil {
		t.Fatal(err)
	}
	// b: approved properly.
	if _, _, err := s.ApproveQueueItem("b", open3, nil, approvalRecord("b", "b")); err != nil {
		t.Fatal(err)
	}
	got, err := s.StrandedApprovals(func(id string) string { return "ob_" + id })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("stranded: %v", got)
	}
}

// TestApproveKilledMidway kills (SIGKILL) a process that approves items
// in a loop, at several moments, and checks the file afterwards: every
// item is either pending without a record or approved with one. The same
// check run against the old two-step approval (TransitionQueueItem, then
// PutOutbox) finds the stranded state, so it can fail.
func TestApproveKilledMidway(t *testing.T) {
	t.Parallel()
	if path := os.Getenv("STORE_APPROVE_CHILD"); path != "" {
		approveChild(path, os.Getenv("STORE_APPROVE_MODE"))
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for round, delay := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 45 * time.Millisecond, 90 * time.Millisecond} {
		approved, bad := killApprover(t, "one", delay)
		if bad != "" {
			t.Fatalf("round %d: %s", round, bad)
		}
		t.Logf("ApproveQueueItem killed after %v: %d approved, no in-between state", delay, approved)
	}
	// Control: the old way is caught (each round has about even odds).
	for round := range 12 {
		if _, bad := killApprover(t, "two", time.Duration(5+round*7)*time.Millisecond); bad != "" {
			t.Logf("two-step approval killed in round %d: %s (the check sees it)", round, bad)
			return
		}
	}
	t.Fatal("the kill check never saw the two-step approval's in-between state: it cannot tell the difference")
}

// killApprover runs a child that approves items (mode "one": in one
// transaction; "two": in two), kills it delay after it opened the file,
// and returns how many were approved and the first inconsistency.
func killApprover(t *testing.T, mode string, delay time.Duration) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kill.db")
	seed, err := approveSeed()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestApproveKilledMidway$")
	cmd.Env = append(os.Environ(), "STORE_APPROVE_CHILD="+path, "STORE_APPROVE_MODE="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer func() { _ = s.Close() }()
	// Every item's status and its outbox record, read in one transaction
	// (the item's id and status only: decoding all 3,000 items in full
	// each round was most of this test's time).
	approved, bad := 0, ""
	err = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
			var q struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal(v, &q); err != nil {
				return fmt.Errorf("queue item %s: %w", k, err)
			}
			_, obErr := getOutboxTx(tx, "ob_"+q.ID, true)
			switch {
			case q.Status == QueueApproved && obErr != nil:
				bad = fmt.Sprintf("%s approved without its outbox record", q.ID)
			case q.Status == QueuePending && obErr == nil:
				bad = fmt.Sprintf("%s pending with an outbox record", q.ID)
			case q.Status == QueueApproved:
				approved++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return approved, bad
}

// approveSeed is the file every round of killApprover starts from, built
// once: 3,000 pending drafts the child approves in order.
var approveSeed = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "approve-seed")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "kill.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	err = s.updateTx(func(txn *bolt.Tx) error {
		for i := range 3000 {
			if err := putQueueTx(txn, &QueueItem{ID: fmt.Sprintf("q%05d", i), Kind: KindDraft, Status: QueuePending}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

func approveChild(path, mode string) {
	s, err := Open(path, Options{Timeout: 5 * time.Second})
	if err != nil {
		os.Exit(3)
	}
	fmt.Println("ready")
	for i := range 3000 {
		id := "q" + fmt.Sprintf("%05d", i)
		ob := approvalRecord(id, strconv.Itoa(i))
		if mode == "two" {
			if _, err := s.TransitionQueueItem(id, open3, QueueApproved, nil); err != nil {
				os.Exit(4)
			}
			if err := s.PutOutbox(ob); err != nil {
				os.Exit(4)
			}
			continue
		}
		if _, _, err := s.ApproveQueueItem(id, open3, nil, ob); err != nil {
			os.Exit(4)
		}
	}
	os.Exit(0)
}
