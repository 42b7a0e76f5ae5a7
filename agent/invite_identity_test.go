package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/calendar/caldavtest"
	"github.com/mailagent/mailagent/store"
)

// A calendar UID is text the sender chose: an invitation from another
// correspondent with the UID of a meeting the owner accepted is another
// event. These tests are the adversarial class "calendar" of issue 25.

const mallory = "Mallory <mallory@evil.example>"

// uidAttack is one way a correspondent other than the organizer of the
// owner's accepted series (Bob, UID uid) tries to reach it; conflict says
// whether the owner's answer to the attacker's invitation must show the
// UID conflict (item uid_conflict and a notice).
type uidAttack struct {
	name     string
	run      func(t *testing.T, p *Pipeline, uid string) (answered string)
	conflict bool
}

// strangerAnswered processes an authenticated invitation from from with
// the organizer and the UID given, and the owner answers it.
func strangerAnswered(from, organizer, answer, extra string, rids ...string) func(t *testing.T, p *Pipeline, uid string) string {
	return func(t *testing.T, p *Pipeline, uid string) string {
		t.Helper()
		ics := inviteICS("REQUEST", uid, 0, organizer, "Lunch", extra)
		if len(rids) > 0 {
			ics = seriesICS("REQUEST", uid, 1, organizer, "Lunch", "DTSTART:20261209T120000Z\r\nDTEND:20261209T130000Z\r\n", rids...)
		}
		rec := process(t, p, inviteMsg(from, "Lunch", "REQUEST", ics, true))
		id := QueueID(rec.MessageKey)
		if _, err := p.RSVP(context.Background(), id, answer); err != nil {
			if strings.Contains(err.Error(), "the organizer is not verified") {
				return "" // stopped before any answer: the organizer is not the authenticated sender
			}
			t.Fatalf("rsvp %s: %v", answer, err)
		}
		return id
	}
}

func uidAttacks() []uidAttack {
	cancelAfter := func(extra string, rids ...string) func(t *testing.T, p *Pipeline, uid string) string {
		return func(t *testing.T, p *Pipeline, uid string) string {
			id := strangerAnswered(mallory, "mallory@evil.example", "decline", "")(t, p, uid)
			ics := inviteICS("CANCEL", uid, 1, "mallory@evil.example", "Lunch", extra)
			if len(rids) > 0 {
				ics = seriesICS("CANCEL", uid, 1, "mallory@evil.example", "Lunch", extra, rids...)
			}
			process(t, p, inviteMsg(mallory, "Cancelled: Lunch", "CANCEL", ics, true))
			return id
		}
	}
	return []uidAttack{
		{"stranger's invitation with the UID, owner declines", strangerAnswered(mallory, "mallory@evil.example", "decline", ""), true},
		{"stranger's invitation with the UID, owner accepts", strangerAnswered(mallory, "mallory@evil.example", "accept", ""), true},
		{"stranger's invitation with the UID, owner tentative", strangerAnswered(mallory, "mallory@evil.example", "tentative", ""), true},
		{"colleague on the organizer's domain naming the organizer", strangerAnswered("Carol <carol@example.org>", "bob@example.org", "decline", ""), true},
		{"stranger's moved occurrence of the series, owner accepts",
			strangerAnswered(mallory, "mallory@evil.example", "accept", "", "RECURRENCE-ID:20261208T100000Z"), true},
		// Her CANCEL of her own invitation cancels that one (its status
		// says so, not uid_conflict); the owner's series stays.
		{"stranger's CANCEL of the UID after the owner declined", cancelAfter("STATUS:CANCELLED\r\n"), false},
		{"stranger's CANCEL of two occurrences", cancelAfter("STATUS:CANCELLED\r\n", "RECURRENCE-ID:20261208T100000Z", "RECURRENCE-ID:20261215T100000Z"), true},
		{"stranger's update with a higher SEQUENCE", func(t *testing.T, p *Pipeline, uid string) string {
			process(t, p, inviteMsg(mallory, "Updated: Weekly sync", "REQUEST",
				seriesICS("REQUEST", uid, 9, "mallory@evil.example", "Weekly sync", ""), true))
			return ""
		}, false},
		{"same-domain sender's occurrence CANCEL naming the organizer", func(t *testing.T, p *Pipeline, uid string) string {
			process(t, p, inviteMsg("Carol <carol@example.org>", "Cancelled", "CANCEL",
				seriesICS("CANCEL", uid, 1, "bob@example.org", "Weekly sync", "STATUS:CANCELLED\r\n", "RECURRENCE-ID:20261208T100000Z"), true))
			return ""
		}, false},
	}
}

// attackSeries is a review pipeline on the caldavtest server with Bob's
// weekly series accepted (UID uid): the owner's real meeting.
func attackSeries(t *testing.T, uid string) (*Pipeline, *store.Store, *caldavtest.Server, *store.QueueItem, caldavtest.Object) {
	t.Helper()
	p, st, _, srv, _ := invitePipeline(t)
	q := acceptedSeries(t, p, st, uid)
	o, ok := srv.Get(q.Invitation.CalendarPath)
	if !ok {
		t.Fatalf("the series is not on the calendar")
	}
	return p, st, srv, q, o
}

// landed says how the attack changed the owner's meeting: its event on
// the calendar (version or data), a read of it after it was written, or
// its item; "" when it did not.
func landed(t *testing.T, st *store.Store, srv *caldavtest.Server, q *store.QueueItem, before caldavtest.Object, reads int) string {
	t.Helper()
	o, ok := srv.Get(q.Invitation.CalendarPath)
	cur := item(t, st, q.ID)
	switch {
	case !ok:
		return "the owner's event was deleted"
	case o.ETag != before.ETag || o.Data != before.Data:
		return "the owner's event was overwritten"
	case slices.Contains(srv.Reads()[reads:], q.Invitation.CalendarPath):
		return "the owner's event was read for the attacker's message"
	case cur.Invitation.CalendarETag != q.Invitation.CalendarETag || cur.Invitation.Status != "" || cur.Status != q.Status:
		return "the owner's item changed: " + cur.Status + " " + cur.Invitation.Status + " " + cur.Invitation.StatusNote
	}
	return ""
}

// TestCalendarUIDAttacks is the adversarial class "calendar": every way
// another correspondent reuses the UID of the owner's accepted series
// (answered invitations, CANCELs, occurrence changes, updates) is tried
// on its own pipeline; the owner's event must be neither read for it,
// overwritten nor removed, and an answer the owner gave to such an
// invitation is shown as a UID conflict (the item's status, a notice).
func TestCalendarUIDAttacks(t *testing.T) {
	t.Parallel()
	const uid = "weekly-owner-1@example.org"
	tried, through := 0, 0
	for _, a := range uidAttacks() {
		tried++
		p, st, srv, q, before := attackSeries(t, uid)
		reads := len(srv.Reads())
		answered := a.run(t, p, uid)
		if how := landed(t, st, srv, q, before, reads); how != "" {
			through++
			t.Errorf("%s got through: %s", a.name, how)
		}
		if !a.conflict || answered == "" {
			continue
		}
		got := item(t, st, answered)
		if got.Invitation.Status != store.InvitationUIDConflict || !strings.Contains(got.Invitation.StatusNote, q.ID) {
			t.Errorf("%s: the answered item %s says %q %q, want a uid_conflict naming %s", a.name, answered,
				got.Invitation.Status, got.Invitation.StatusNote, q.ID)
		}
		if n, err := st.GetQueueItem(answered + "_calendar"); err != nil || n.Kind != store.KindNotify ||
			!strings.Contains(strings.Join(n.Reasons, " "), "another organizer's invitation with the same UID") {
			t.Errorf("%s: no conflict notice for the owner: %+v %v", a.name, n, err)
		}
		if got.Invitation.CalendarETag != "" {
			t.Errorf("%s: the attacker's item holds an event (%s)", a.name, got.Invitation.CalendarETag)
		}
	}
	t.Logf("calendar UID attacks: %d tried, %d got through", tried, through)
	if tried != len(uidAttacks()) || through != 0 {
		t.Fatalf("%d of %d calendar attacks got through", through, tried)
	}
}

// TestCalendarUIDAttackLandsWithoutIdentity is the positive control of
// TestCalendarUIDAttacks: with the identity layer switched off, the
// stranger's invitation with the owner's UID, declined, overwrites the
// owner's meeting (the defect the red team found), and the stranger's
// CANCEL then deletes it. Not parallel: it switches a global.
func TestCalendarUIDAttackLandsWithoutIdentity(t *testing.T) {
	const uid = "weekly-owner-1@example.org"
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	attacks := uidAttacks()
	p, st, srv, q, before := attackSeries(t, uid)
	attacks[0].run(t, p, uid)
	if how := landed(t, st, srv, q, before, len(srv.Reads())); how != "the owner's event was overwritten" {
		t.Fatalf("with identity off, the declined stranger's invitation: %q, want the owner's event overwritten", how)
	}
	p, st, srv, q, before = attackSeries(t, uid)
	attacks[5].run(t, p, uid)
	if how := landed(t, st, srv, q, before, len(srv.Reads())); how != "the owner's event was deleted" {
		t.Fatalf("with identity off, the stranger's CANCEL: %q, want the owner's event deleted", how)
	}
}

// busyRecorder is sourceCalendar recording the UID each Busy call leaves
// out.
type busyRecorder struct {
	sourceCalendar
	excepts *[]string
}

func (c busyRecorder) Busy(_ context.Context, _ string, _ calendar.Interval, exceptUID string) ([]calendar.Interval, error) {
	*c.excepts = append(*c.excepts, exceptUID)
	return nil, nil
}

// TestCalendarUIDConflictShownOnArrival: Mallory's invitation with the
// UID of Bob's series the owner accepted is a UID conflict as soon as it
// arrives (before the owner answers: queue show, the review detail and
// --json print Invitation.Status), and Bob's event is not left out of its
// conflicts as if it were the invitation's own copy. Bob's own update of
// his series is neither.
func TestCalendarUIDConflictShownOnArrival(t *testing.T) {
	t.Parallel()
	const uid = "weekly-owner-2@example.org"
	p, st, _, _, _ := attackSeries(t, uid)
	var excepts []string
	p.Calendar = busyRecorder{sourceCalendar: p.Calendar.(sourceCalendar), excepts: &excepts}
	rec := process(t, p, inviteMsg(mallory, "Lunch", "REQUEST", inviteICS("REQUEST", uid, 0, "mallory@evil.example", "Lunch", ""), true))
	q := item(t, st, QueueID(rec.MessageKey))
	if q.Invitation.Status != store.InvitationUIDConflict || !strings.Contains(q.Invitation.StatusNote, "another organizer's invitation") {
		t.Errorf("Mallory's invitation on arrival: %q %q, want a uid_conflict", q.Invitation.Status, q.Invitation.StatusNote)
	}
	if len(excepts) != 1 || excepts[0] != "" {
		t.Errorf("Busy left out %q, want nothing left out (Bob's event is busy time for Mallory's invitation)", excepts)
	}
	excepts = excepts[:0]
	rec = process(t, p, inviteMsg(bob, "Updated: Weekly sync", "REQUEST", seriesICS("REQUEST", uid, 2, "bob@example.org", "Weekly sync", ""), true))
	if got := item(t, st, QueueID(rec.MessageKey)).Invitation.Status; got != "" {
		t.Errorf("Bob's own update: status %q, want none", got)
	}
	if len(excepts) != 1 || excepts[0] != uid {
		t.Errorf("Bob's update: Busy left out %q, want his own copy %q", excepts, uid)
	}
}
