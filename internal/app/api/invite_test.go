package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// TestRSVPOverSocketAndLocal: queue rsvp answers through the watcher's
// socket as in process; the refusals (no invitation, an unverified
// organizer) keep their sentinels over the wire.
func TestRSVPOverSocketAndLocal(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ics := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:sock-1@example.org\r\n" +
		"DTSTAMP:20261120T090000Z\r\nDTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nSUMMARY:Sync\r\n" +
		"ORGANIZER:mailto:" + apitest.Carol + "\r\nATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:" + apitest.Owner + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	put := func(id string, verified bool) {
		t.Helper()
		_, err := w.Store.TransitionQueueItem(id, []string{store.QueuePending}, store.QueuePending, func(q *store.QueueItem) error {
			q.Invitation = &store.Invitation{Method: "REQUEST", UID: "sock-1@example.org", Summary: "Sync", Organizer: apitest.Carol,
				OrganizerVerified: verified, OrganizerNote: "the organizer is not the authenticated sender", ICS: ics}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put(w.Draft, true)
	put(w.Draft2, false)
	c := w.Serve(t)
	var svc api.Service = c
	inv, ok := svc.(api.Inviter)
	if !ok {
		t.Fatal("the socket client is not an api.Inviter")
	}
	ctx := context.Background()
	item, err := inv.RSVP(ctx, w.Draft, "accept")
	if err != nil || item.Invitation == nil || item.Invitation.RSVP != "ACCEPTED" {
		t.Fatalf("rsvp over the socket: %+v, %v", item, err)
	}
	ob, err := w.Store.GetOutbox(agent.ApprovalOutboxID(w.Draft))
	if err != nil || len(ob.To) != 1 || ob.To[0] != apitest.Carol || !strings.Contains(string(ob.Raw), "method=REPLY") {
		t.Fatalf("outbox: %v, %v", ob, err)
	}
	reply, err := calendar.ParseInvitation(ob.Raw)
	if err != nil || reply == nil || reply.Method != "REPLY" || reply.UID != "sock-1@example.org" || len(reply.Attendees) != 1 ||
		reply.Attendees[0].PartStat != "ACCEPTED" {
		t.Fatalf("REPLY: %+v, %v", reply, err)
	}
	if _, err := inv.RSVP(ctx, w.Notify, "accept"); !errors.Is(err, agent.ErrNotActionable) {
		t.Errorf("rsvp without an invitation over the socket: %v, want ErrNotActionable", err)
	}
	if _, err := w.Local.RSVP(ctx, w.Draft2, "decline"); err == nil || !strings.Contains(err.Error(), "not verified") {
		t.Errorf("rsvp to an unverified organizer: %v", err)
	}
	if _, err := c.RSVP(ctx, w.Draft2, "decline"); err == nil || !strings.Contains(err.Error(), "not verified") {
		t.Errorf("rsvp to an unverified organizer over the socket: %v", err)
	}
}
