package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/store"
)

// TestFollowupJobResumedAfterCrashActsOnce: the watcher's followups job
// is claimed and its handler queues a follow-up draft, and the process
// dies before the job is marked done. The next start resumes the job
// (store.RecoverJobs) and runs the handler again: there is still exactly
// one draft, the thread counts one nudge, and the job then waits for the
// thread's next timer. A timer added later (a wake) moves the job earlier.
func TestFollowupJobResumedAfterCrashActsOnce(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "db")
	st, err := store.Open(db, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	fu, err := st.UpdateFollowup("fu_crash", func(*store.Followup) (*store.Followup, error) {
		return &store.Followup{Account: "a", ThreadID: "t1", State: store.FollowupAwaitingReply, Tier: store.TierReminded,
			Due: now.Add(-time.Minute), Deadline: now.Add(-time.Hour), LastAt: now.Add(-72 * time.Hour),
			Correspondents: []string{"bob@example.org"}, Subject: "Invoice", MessageID: "<m1@example.com>"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	daemon := func(st *store.Store) *Daemon {
		f := &followup.Tracker{Store: st, Policy: followup.Policy{Enabled: true, MaxNudges: 2}}
		return &Daemon{Store: st, Pipeline: &agent.Pipeline{Store: st, Followups: f}}
	}
	d := daemon(st)
	s, err := d.startJobs()
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimJobs(time.Now(), time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	var job *store.Job
	for _, j := range claimed {
		if j.ID == JobFollowups {
			job = j
		}
	}
	if job == nil {
		t.Fatalf("the followups job was not due at start: %+v", claimed)
	}
	if _, err := s.handler(JobFollowups)(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	// The crash: no JobDone. The next process starts on the same file.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(db, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	d = daemon(st)
	s, err = d.startJobs()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j, err := st.GetJob(JobFollowups)
		if err == nil && j.Runs == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var drafts []string
	if err := st.ListQueue("", func(q *store.QueueItem) error {
		drafts = append(drafts, q.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetFollowup(fu.ID)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := st.GetJob(JobFollowups)
	if len(drafts) != 1 || !strings.HasPrefix(drafts[0], followup.NudgeID(fu.ID, 1)) || got.Nudges != 1 {
		t.Fatalf("after a crash and a resumed run: drafts %v, nudges %d; want one draft, one nudge", drafts, got.Nudges)
	}
	if j == nil || j.Runs != 1 || j.State != store.JobPending || !j.Due.Equal(got.Due.UTC()) {
		t.Fatalf("followups job after the run: %+v, want pending at the thread's next timer %v", j, got.Due)
	}
	// A new timer, sooner than the job's due time, reaches the job on a wake.
	if _, err := st.UpdateFollowup("fu_new", func(*store.Followup) (*store.Followup, error) {
		return &store.Followup{Account: "a", ThreadID: "t2", State: store.FollowupNeedsReply, Due: time.Now().Add(time.Hour),
			Deadline: time.Now().Add(time.Hour), Correspondents: []string{"carol@example.org"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	d.refreshFollowupJob()
	if j, _ := st.GetJob(JobFollowups); j == nil || j.Due.After(time.Now().Add(time.Hour)) {
		t.Errorf("after a sooner timer: job %+v, want due within the hour", j)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
