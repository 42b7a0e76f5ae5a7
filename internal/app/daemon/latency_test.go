package daemon

import (
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
)

// TestArrival: INTERNALDATE first, else the topmost Received header's
// date (the owner's server's own), else nothing.
func TestArrival(t *testing.T) {
	t.Parallel()
	internal := time.Date(2026, 11, 28, 12, 0, 5, 0, time.UTC)
	raw := []byte("Received: from mx.example.test by imap.example.test; Sat, 28 Nov 2026 12:00:07 +0000\r\n" +
		"Received: from sender.example by mx.example.test; Sat, 28 Nov 2026 11:59:00 +0000\r\n" +
		"From: a@example.org\r\n\r\nbody\r\n")
	tests := []struct {
		name string
		m    imapsync.RawMessage
		want time.Time
	}{
		{"internaldate", imapsync.RawMessage{InternalDate: internal, Raw: raw}, internal},
		{"top received", imapsync.RawMessage{Raw: raw}, time.Date(2026, 11, 28, 12, 0, 7, 0, time.UTC)},
		{"no date at all", imapsync.RawMessage{Raw: []byte("From: a@example.org\r\n\r\nx")}, time.Time{}},
		{"received without a date", imapsync.RawMessage{Raw: []byte("Received: from x by y\r\n\r\nx")}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Arrival(tt.m); !got.Equal(tt.want) {
				t.Errorf("Arrival: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNoteArrivalCountsOnlyLiveMail: the first sync's catch-up is not
// counted; mail that arrived after the previous sync began is, from its
// arrival to the sync that fetched it.
func TestNoteArrivalCountsOnlyLiveMail(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	d := &Daemon{Now: func() time.Time { return clock }, Accounts: []Account{{Name: "a"}}}
	d.beginSync("a")
	d.noteArrival("a", imapsync.RawMessage{InternalDate: clock.Add(-time.Hour)})
	if s := d.Statuses()[0]; s.LatencySamples != 0 {
		t.Fatalf("catch-up counted: %+v", s)
	}
	clock = clock.Add(2 * time.Minute)
	arrived := clock.Add(-50 * time.Second)
	d.beginSync("a")
	d.noteArrival("a", imapsync.RawMessage{InternalDate: arrived})
	d.noteArrival("a", imapsync.RawMessage{InternalDate: clock.Add(-3 * time.Minute)}) // before the previous sync: not live
	s := d.Statuses()[0]
	if s.LatencySamples != 1 || s.LatencyLast != 50*time.Second || s.LatencyMedian != 50*time.Second {
		t.Errorf("got last %v median %v n %d, want 50s, 50s, 1", s.LatencyLast, s.LatencyMedian, s.LatencySamples)
	}
}
