package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestFollowupTimerIndex(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	put := func(id string, state string, due time.Time) {
		t.Helper()
		if _, err := s.UpdateFollowup(id, func(old *Followup) (*Followup, error) {
			f := &Followup{Account: "a", ThreadID: id, State: state, Due: due, Correspondents: []string{"x@example.org"}}
			if old != nil {
				f.CreatedAt = old.CreatedAt
			}
			return f, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("fu_1", FollowupNeedsReply, t0.Add(time.Hour))
	put("fu_2", FollowupAwaitingReply, t0.Add(2*time.Hour))
	put("fu_3", FollowupDone, t0) // closed: no timer
	due := func(at time.Time) []string {
		t.Helper()
		var ids []string
		if err := s.DueFollowups(at, func(f *Followup) error { ids = append(ids, f.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := due(t0.Add(90 * time.Minute)); len(got) != 1 || got[0] != "fu_1" {
		t.Fatalf("due at +90m: %v, want [fu_1]", got)
	}
	// Moving a timer moves its index entry (never two entries).
	put("fu_1", FollowupNeedsReply, t0.Add(3*time.Hour))
	if got := due(t0.Add(150 * time.Minute)); len(got) != 1 || got[0] != "fu_2" {
		t.Fatalf("after moving fu_1: %v, want [fu_2]", got)
	}
	if next, ok, err := s.NextFollowupDue(); err != nil || !ok || !next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("next due: %v %v %v", next, ok, err)
	}
	// Closing removes the timer; the record stays with ClosedAt.
	put("fu_2", FollowupGaveUp, t0.Add(2*time.Hour))
	if got := due(t0.Add(24 * time.Hour)); len(got) != 1 || got[0] != "fu_1" {
		t.Fatalf("after closing fu_2: %v", got)
	}
	f, err := s.GetFollowup("fu_2")
	if err != nil || !f.Due.IsZero() || f.ClosedAt.IsZero() {
		t.Fatalf("closed followup: %+v %v", f, err)
	}
	// fn returning nil writes nothing; an error aborts.
	if _, err := s.UpdateFollowup("fu_1", func(*Followup) (*Followup, error) { return nil, errors.New("no") }); err == nil {
		t.Fatal("the error of fn was dropped")
	}
	var filtered []string
	if err := s.ListFollowups(FollowupFilter{States: []string{FollowupNeedsReply}, Correspondent: "EXAMPLE.org"}, func(f *Followup) error {
		filtered = append(filtered, f.ID)
		return nil
	}); err != nil || len(filtered) != 1 {
		t.Fatalf("filter: %v %v", filtered, err)
	}
}

// Repair keeps followups and rebuilds their timer index.
func TestFollowupSurvivesRepair(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	if _, err := s.UpdateFollowup("fu_r", func(*Followup) (*Followup, error) {
		return &Followup{Account: "a", ThreadID: "t", State: FollowupAwaitingReply, Due: due}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	n := 0
	if err := s.DueFollowups(due, func(*Followup) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("after repair: %d due (%v), want 1", n, err)
	}
}

func TestPruneClosedFollowups(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	for id, state := range map[string]string{"fu_open": FollowupNeedsReply, "fu_done": FollowupDone} {
		if _, err := s.UpdateFollowup(id, func(*Followup) (*Followup, error) {
			return &Followup{Account: "a", State: state, Due: clk.Now().Add(time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Prune(PruneOptions{Now: clk.Now().Add(24 * time.Hour), Retention: time.Hour})
	if err != nil || rep.FollowupsDeleted != 1 {
		t.Fatalf("prune: %+v %v; want 1 followup deleted", rep, err)
	}
	if _, err := s.GetFollowup("fu_done"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the closed followup is still there: %v", err)
	}
	if _, err := s.GetFollowup("fu_open"); err != nil {
		t.Fatalf("the open followup was pruned: %v", err)
	}
}
