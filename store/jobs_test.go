package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestJobClaimDoneFailIndex(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	t0 := clk.Now()
	for i, d := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
		if err := s.PutJob(&Job{ID: fmt.Sprintf("j%d", i), Kind: "k", Due: t0.Add(d)}); err != nil {
			t.Fatal(err)
		}
	}
	next, ok, err := s.NextJobDue()
	if err != nil || !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("NextJobDue = %v %v %v, want %v", next, ok, err, t0.Add(time.Hour))
	}
	if got, err := s.ClaimJobs(t0.Add(59*time.Minute), time.Minute, 10); err != nil || len(got) != 0 {
		t.Fatalf("claim before due: %v %v", got, err)
	}
	got, err := s.ClaimJobs(t0.Add(2*time.Hour), time.Minute, 10)
	if err != nil || len(got) != 2 || got[0].ID != "j1" || got[1].ID != "j2" {
		t.Fatalf("claim at +2h: %+v %v, want j1, j2", got, err)
	}
	// A claimed job is not claimed again while its lease holds.
	if again, _ := s.ClaimJobs(t0.Add(2*time.Hour), time.Minute, 10); len(again) != 0 {
		t.Fatalf("claimed twice under a lease: %+v", again)
	}
	if err := s.PutJob(&Job{ID: "j1", Kind: "k", Due: t0}); !errors.Is(err, ErrJobRunning) {
		t.Fatalf("PutJob over a running job: %v, want ErrJobRunning", err)
	}
	if err := s.JobDone("j1", got[0].Claim, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.JobDone("j1", got[0].Claim, time.Time{}); !errors.Is(err, ErrJobLost) {
		t.Fatalf("second JobDone: %v, want ErrJobLost", err)
	}
	clk.t = t0.Add(2 * time.Hour)
	if err := s.JobFailed("j2", got[1].Claim, errors.New("boom"), time.Time{}); err != nil {
		t.Fatal(err)
	}
	j2, _ := s.GetJob("j2")
	if j2.State != JobPending || j2.Attempts != 1 || j2.LastError != "boom" || !j2.Due.Equal(t0.Add(2*time.Hour+RetryBackoff(1))) {
		t.Fatalf("after a failure: %+v", j2)
	}
	// A stale claim cannot finish a job claimed again after its lease.
	c1, _ := s.ClaimJobs(t0.Add(3*time.Hour), time.Minute, 10)
	c2, _ := s.ClaimJobs(t0.Add(3*time.Hour+2*time.Minute), time.Minute, 10)
	if len(c1) != 2 || len(c2) != 2 {
		t.Fatalf("claims after the lease: %d then %d, want 2 and 2", len(c1), len(c2))
	}
	if err := s.JobDone(c1[0].ID, c1[0].Claim, time.Time{}); !errors.Is(err, ErrJobLost) {
		t.Fatalf("JobDone with an expired claim: %v, want ErrJobLost", err)
	}
	// Max attempts: failed, out of the index; a cron job waits for next.
	if err := s.PutJob(&Job{ID: "m", Kind: "k", Due: t0, MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutJob(&Job{ID: "c", Kind: "k", Due: t0, MaxAttempts: 1, Cron: "@every 1h"}); err != nil {
		t.Fatal(err)
	}
	cl, _ := s.ClaimJobs(t0, time.Minute, 10)
	for _, j := range cl {
		next := time.Time{}
		if j.Cron != "" {
			next = t0.Add(24 * time.Hour)
		}
		if err := s.JobFailed(j.ID, j.Claim, errors.New("no"), next); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := s.GetJob("m"); m.State != JobFailed {
		t.Fatalf("m after max attempts: %+v", m)
	}
	if c, _ := s.GetJob("c"); c.State != JobPending || !c.Due.Equal(t0.Add(24*time.Hour)) || c.Attempts != 0 {
		t.Fatalf("cron job after max attempts: %+v", c)
	}
	// The index holds exactly the pending and running jobs.
	var n int
	_ = s.view(func(tx *bolt.Tx) error { n = tx.Bucket(bIdxJob).Stats().KeyN; return nil })
	if n != 3 { // j1 running (c2), j2 running, c pending
		t.Fatalf("index keys = %d, want 3", n)
	}
}

// TestJobsExactlyOnceAcrossCrashes runs 1,000 jobs through claims and
// "crashes" (the store is closed with claims outstanding, at a random
// point between claim, effect and JobDone; then reopened and recovered),
// twenty times. Handlers are idempotent by job ID as the contract asks:
// every job's effect must happen exactly once, and every job end done.
func TestJobsExactlyOnceAcrossCrashes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	// NoSync: each "kill" below is a Close, which flushes; what is tested
	// is the claims across reopenings, not the fsync of 2,000 commits
	// (most of this test's time with it).
	open := func() *Store {
		s, err := Open(path, Options{Timeout: time.Second, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	t0 := time.Now().UTC()
	const jobs = 1000
	// Scheduled in one transaction (PutJob's write, scheduleJobTx): what
	// is tested is what happens to them after.
	err := s.updateTx(func(tx *bolt.Tx) error {
		for i := range jobs {
			if err := scheduleJobTx(tx, &Job{ID: fmt.Sprintf("fire:%04d", i), Kind: "fire", Due: t0.Add(-time.Duration(i) * time.Millisecond)}, s.now().UTC()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]int{}     // the idempotent effect, by job ID
	invocations := map[string]int{} // handler entries (≥ effects)
	rng := rand.New(rand.NewPCG(1, 17))
	for crash := 0; crash < 20; crash++ {
		if n, err := s.RecoverJobs(time.Now()); err != nil {
			t.Fatal(err)
		} else if crash > 0 && n == 0 {
			t.Errorf("crash %d left no running job to resume", crash)
		}
		batch, err := s.ClaimJobs(time.Now(), time.Hour, 40+rng.IntN(40))
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range batch {
			invocations[j.ID]++
			stop := i == len(batch)-1 && crash < 19
			if stop && rng.IntN(2) == 0 {
				break // killed after the claim, before the effect
			}
			if effects[j.ID] == 0 { // idempotent by ID
				effects[j.ID]++
			}
			if stop {
				break // killed after the effect, before JobDone
			}
			if err := s.JobDone(j.ID, j.Claim, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil { // the "kill": claims left running
			t.Fatal(err)
		}
		s = open()
	}
	// Run to the end without crashes.
	if _, err := s.RecoverJobs(time.Now()); err != nil {
		t.Fatal(err)
	}
	for {
		batch, err := s.ClaimJobs(time.Now(), time.Hour, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, j := range batch {
			invocations[j.ID]++
			if effects[j.ID] == 0 {
				effects[j.ID]++
			}
			if err := s.JobDone(j.ID, j.Claim, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() { _ = s.Close() }()
	done, reinvoked := 0, 0
	if err := s.ListJobs(func(j *Job) error {
		if j.State == JobDone && j.Runs == 1 {
			done++
		}
		if invocations[j.ID] > 1 {
			reinvoked++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if done != jobs || len(effects) != jobs {
		t.Fatalf("done=%d effects=%d, want %d each", done, len(effects), jobs)
	}
	for id, n := range effects {
		if n != 1 {
			t.Fatalf("%s took effect %d times", id, n)
		}
	}
	if reinvoked == 0 {
		t.Fatal("no crash left a job to resume: the test did not test recovery")
	}
	t.Logf("1000 jobs, 20 crashes: each done once; %d resumed after a crash", reinvoked)
}
