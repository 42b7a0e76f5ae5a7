package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

type fakeDigest struct {
	calls atomic.Int64
	err   error
	spec  string
}

func (f *fakeDigest) RunDue(context.Context) (bool, error) {
	f.calls.Add(1)
	return f.err == nil, f.err
}

type cronDigest struct{ *fakeDigest }

func (c cronDigest) CronSpec() string { return c.spec }

// TestDigestJobAtStart: the watcher's digest job asks whether a digest is
// due as soon as the scheduler starts, then waits for the cron spec's next
// time; a failing digest is retried with back-off, neither stopping the
// scheduler nor panicking.
func TestDigestJobAtStart(t *testing.T) {
	t.Parallel()
	for _, fail := range []error{nil, errors.New("smtp down")} {
		st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeDigest{err: fail, spec: "0 8 * * *"}
		d := &Daemon{Store: st, Digest: cronDigest{f}}
		s, err := d.startJobs()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for s.Fired.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler (fail=%v): %v", fail, err)
		}
		if f.calls.Load() != 1 {
			t.Errorf("fail=%v: %d calls, want 1 at start", fail, f.calls.Load())
		}
		j, err := st.GetJob(JobDigest)
		if err != nil {
			t.Fatal(err)
		}
		sch, _ := ParseCron("0 8 * * *")
		switch {
		case j.State != store.JobPending:
			t.Errorf("fail=%v: digest job %s, want pending", fail, j.State)
		case fail == nil && (!j.Due.Equal(sch.Next(j.LastRun.Local()).UTC()) || j.Due.Local().Hour() != 8 || j.Runs != 1):
			t.Errorf("after a digest: due %v (runs %d), want the next 08:00 local", j.Due, j.Runs)
		case fail != nil && (j.Attempts != 1 || j.LastError == "" || j.Due.Sub(j.UpdatedAt) != store.RetryBackoff(1)):
			t.Errorf("after a failure: %+v, want attempt 1 retried after %s", j, store.RetryBackoff(1))
		}
		_ = st.Close()
	}
	(&Daemon{}).runDigest(context.Background()) // no digest configured: nothing to do
}
