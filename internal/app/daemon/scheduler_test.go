//go:build unix

package daemon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// schedChildEnv names the database a re-executed test binary runs a
// scheduler over (TestSchedulerChild).
const schedChildEnv = "MAILAGENT_SCHED_CHILD_DB"

// TestSchedulerChild is the process TestSchedulerKill9ExactlyOnce kills:
// a scheduler whose "fire" handler is idempotent by job ID the way the
// watcher's are (it creates the job's effect file exclusively; a second
// run finds it and does nothing), logging every invocation.
func TestSchedulerChild(t *testing.T) {
	t.Parallel()
	db := os.Getenv(schedChildEnv)
	if db == "" {
		t.Skip("only run by TestSchedulerKill9ExactlyOnce")
	}
	dir := filepath.Dir(db)
	st, err := store.Open(db, store.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(dir, "invocations"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{Store: st, Batch: 10}
	s.Handle("fire", func(ctx context.Context, j *store.Job) (time.Time, error) {
		if _, err := fmt.Fprintln(log, j.ID); err != nil {
			return time.Time{}, err
		}
		time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
		f, err := os.OpenFile(filepath.Join(dir, "effects", j.ID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return time.Time{}, nil // acted before a kill: nothing to do again
		}
		if err != nil {
			return time.Time{}, err
		}
		return time.Time{}, f.Close()
	})
	// "alldone" tells the test that no job is left pending or running
	// (every JobDone committed), so it need not guess how long the last
	// commits take on a loaded machine.
	go func() {
		for {
			time.Sleep(10 * time.Millisecond)
			if _, ok, err := st.NextJobDue(); err == nil && !ok {
				_ = os.WriteFile(filepath.Join(dir, "alldone"), nil, 0o600)
				return
			}
		}
	}()
	_ = s.Run(context.Background()) // runs until killed
}

// TestSchedulerKill9ExactlyOnce: 1,000 jobs fall due over about two
// seconds while the scheduler's process is killed with SIGKILL twenty
// times, each a random 0–40 ms after it started working, and started
// again. Every job must take effect
// exactly once and end done with one recorded run; the test also shows
// that kills did land between a handler's start and JobDone (resumed
// invocations), or it proves nothing.
func TestSchedulerKill9ExactlyOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kill -9 loop")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	if err := os.Mkdir(filepath.Join(dir, "effects"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The fixture needs no fsync per job: Close syncs it before any child
	// opens the file (the children open it as watch does).
	st, err := store.Open(db, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 1000
	t0 := time.Now().Add(300 * time.Millisecond)
	putJobs(t, st, jobs, func(i int) *store.Job {
		return &store.Job{ID: fmt.Sprintf("fire:%04d", i), Kind: "fire", Due: t0.Add(time.Duration(i) * 2 * time.Millisecond)}
	})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSchedulerChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), schedChildEnv+"="+db)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	rng := rand.New(rand.NewPCG(9, 17))
	invSize := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, "invocations"))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	for range 20 {
		before := invSize()
		cmd := start()
		// Kill while it works: once it has entered a handler (however
		// slowly the process started: -race, a loaded machine), after a
		// random 0–40 ms more.
		for deadline := time.Now().Add(15 * time.Second); invSize() == before && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait() // killed: the error is the signal
	}
	// A last run to the end: until the child finds no job pending or
	// running (a fixed 200 ms for the last JobDone commits once left 47
	// jobs unrecorded on a loaded machine, and the test failed).
	cmd := start()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if _, err := os.Stat(filepath.Join(dir, "alldone")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	st, err = store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if _, err := st.RecoverJobs(time.Now()); err != nil { // what the next start would do
		t.Fatal(err)
	}
	effects, _ := os.ReadDir(filepath.Join(dir, "effects"))
	raw, err := os.ReadFile(filepath.Join(dir, "invocations"))
	if err != nil {
		t.Fatal(err)
	}
	inv := map[string]int{}
	for _, id := range strings.Fields(string(raw)) {
		inv[id]++
	}
	done, running, resumed := 0, 0, 0
	err = st.ListJobs(func(j *store.Job) error {
		switch {
		case j.State == store.JobDone && j.Runs == 1:
			done++
		case j.State == store.JobPending && strings.Contains(j.LastError, "resumed"):
			running++ // killed after its effect, before JobDone: resumed next start
		default:
			t.Errorf("%s: %s, runs %d", j.ID, j.State, j.Runs)
		}
		if inv[j.ID] > 1 {
			resumed++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != jobs {
		t.Fatalf("%d effects, want %d (each job exactly once)", len(effects), jobs)
	}
	if done+running != jobs || running > 1 {
		t.Fatalf("done %d, left to resume %d, want %d done (at most the final kill's one to resume)", done, running, jobs)
	}
	if resumed == 0 {
		t.Fatal("no kill landed between a handler and JobDone: the loop proved nothing; kill later")
	}
	t.Logf("%d jobs, 20 kills: %d effects (each once), %d handler runs resumed after a kill", jobs, len(effects), resumed)
}

// idleChildEnv tells a re-executed test binary to run TestSchedulerIdleChild.
const idleChildEnv = "MAILAGENT_SCHED_IDLE_CHILD"

// TestSchedulerIdleWith10000Jobs: with 10,000 jobs due days from now, an
// idle scheduler sleeps until the first of them: one wake-up at start and
// none in the idle window, and under 1% of a core measured by getrusage.
//
// The measurement (TestSchedulerIdleChild) runs in a process of its own:
// getrusage counts the whole process, so in this one it had to run alone,
// its three idle seconds holding up every other test; a child process is
// alone by construction, and this test waits for it in parallel with the
// others. The idle window stays three seconds of real time: CPU is spent
// in real time, so a fake clock (testing/synctest) cannot measure it.
func TestSchedulerIdleWith10000Jobs(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSchedulerIdleChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), idleChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSchedulerIdleChild") {
		t.Fatalf("the idle scheduler's process: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "idle with 10,000 future jobs") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// TestSchedulerIdleChild is TestSchedulerIdleWith10000Jobs' measurement,
// run only in the process that test starts.
func TestSchedulerIdleChild(t *testing.T) {
	if os.Getenv(idleChildEnv) == "" {
		t.Skip("only run by TestSchedulerIdleWith10000Jobs")
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	now := time.Now()
	putJobs(t, st, 10000, func(i int) *store.Job {
		return &store.Job{ID: fmt.Sprintf("send:ob_%05d", i), Kind: "send", Due: now.Add(24*time.Hour + time.Duration(i)*time.Minute)}
	})
	s := &Scheduler{Store: st}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// The start-up pass (RecoverJobs reads every job once), then the
	// garbage of writing 10,000 jobs collected and its memory returned to
	// the system (FreeOSMemory: left to the background scavenger, that
	// return ran in the idle window and was most of its CPU, 0.45-1.02%
	// of a core under -race against 0.06-0.14% after it): what follows is
	// idle.
	for deadline := time.Now().Add(30 * time.Second); s.Wakeups.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	debug.FreeOSMemory()
	time.Sleep(200 * time.Millisecond)
	w0 := s.Wakeups.Load()
	cpu0, wall0 := cpuTime(t), time.Now()
	time.Sleep(3 * time.Second)
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	woke := s.Wakeups.Load() - w0
	cancel()
	if err := <-done; err != nil {
		t.Errorf("scheduler: %v", err)
	}
	share := float64(cpu) / float64(wall) * 100
	t.Logf("idle with 10,000 future jobs: %d wake-ups and %.3f%% of a core over %s", woke, share, wall.Round(time.Millisecond))
	if woke != 0 {
		t.Errorf("%d wake-ups while idle, want 0", woke)
	}
	if share >= 1 {
		t.Errorf("idle CPU %.3f%% of a core, want under 1%%", share)
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// putJobs stores job(0) … job(n-1) with PutJob from several goroutines at
// once: the store's group commit then writes many jobs per transaction
// (one commit per job made the fixture most of a test's time under
// -race). Each job is stored exactly as a PutJob of its own would store it.
func putJobs(t *testing.T, st *store.Store, n int, job func(i int) *store.Job) {
	t.Helper()
	const writers = 64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				if err := st.PutJob(job(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
