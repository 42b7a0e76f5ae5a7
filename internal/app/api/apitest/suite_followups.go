package apitest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func followupStates(fs []store.Followup) string {
	var b []string
	for _, f := range fs {
		b = append(b, fmt.Sprintf("%s %s %v tier=%d nudges=%d", f.State, f.MessageID, f.Correspondents, f.Tier, f.Nudges))
	}
	return strings.Join(b, "; ")
}

// caseFollowups: the first sync left Carol's and Erin's questions waiting
// for the owner (needs_reply); list, filter, mark done, snooze, nudge.
func caseFollowups(r *run) {
	w := r.w
	open, err := r.svc.Followups(r.ctx, api.FollowupFilter{})
	r.check("list", err, nil)
	r.state("open", followupStates(open))
	if len(open) != 2 {
		r.t.Fatalf("open followups: got %s, want Carol's and Erin's", followupStates(open))
	}
	carol, err := r.svc.Followups(r.ctx, api.FollowupFilter{Correspondent: "CAROL@", States: []string{store.FollowupNeedsReply}})
	r.check("list carol", err, nil)
	if len(carol) != 1 || carol[0].Correspondents[0] != Carol {
		r.t.Fatalf("filter by correspondent: got %s", followupStates(carol))
	}
	id := carol[0].ID
	res, err := r.svc.FollowupAction(r.ctx, id, api.FollowupActDone, time.Time{})
	r.check("done", err, nil)
	if err == nil && res.Followup.State != store.FollowupDone {
		r.t.Errorf("done: got %s", res.Followup.State)
	}
	_, err = r.svc.FollowupAction(r.ctx, id, api.FollowupActDone, time.Time{})
	r.check("done twice", err, agent.ErrNotActionable)
	_, err = r.svc.FollowupAction(r.ctx, "fu_nosuch", api.FollowupActDone, time.Time{})
	r.check("unknown", err, store.ErrNotFound)
	_, err = r.svc.FollowupAction(r.ctx, id, "explode", time.Time{})
	r.check("unknown action", err, api.ErrBadRequest)
	recent, err := r.svc.Followups(r.ctx, api.FollowupFilter{States: []string{store.FollowupDone}, ClosedSince: time.Now().Add(-time.Hour)})
	r.check("recently replied", err, nil)
	r.state("recent", followupStates(recent))

	erin, _ := r.svc.Followups(r.ctx, api.FollowupFilter{Correspondent: Erin})
	if len(erin) != 1 {
		r.t.Fatalf("erin: %s", followupStates(erin))
	}
	_, err = r.svc.FollowupAction(r.ctx, erin[0].ID, api.FollowupActSnooze, time.Now().Add(-time.Minute))
	r.check("snooze in the past", err, api.ErrBadRequest)
	until := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	res, err = r.svc.FollowupAction(r.ctx, erin[0].ID, api.FollowupActSnooze, until)
	r.check("snooze", err, nil)
	if err == nil && !res.Followup.Due.Equal(until) {
		r.t.Errorf("snooze: due %v, want %v", res.Followup.Due, until)
	}
	_, err = r.svc.FollowupAction(r.ctx, erin[0].ID, api.FollowupActNudge, time.Time{})
	r.check("nudge a thread that needs the owner's reply", err, agent.ErrNotActionable)

	// The owner asks Dave something from another client (the Sent scan's
	// view of it): awaiting_reply; a nudge queues a follow-up draft.
	ask := &mail.Message{MessageID: "ask-dave@example.com", From: mail.Address{Email: Owner}, To: []mail.Address{{Email: Dave}},
		Subject: "Office", Date: time.Now(), CleanText: "Which day does it reopen?"}
	if err := w.Pipeline.Followups.OwnerSent(r.ctx, Account, followup.SentMail{Message: ask, Asks: true}); err != nil {
		r.t.Fatal(err)
	}
	dave, err := r.svc.Followups(r.ctx, api.FollowupFilter{States: []string{store.FollowupAwaitingReply}})
	r.check("awaiting", err, nil)
	if len(dave) != 1 {
		r.t.Fatalf("awaiting: %s", followupStates(dave))
	}
	res, err = r.svc.FollowupAction(r.ctx, dave[0].ID, api.FollowupActNudge, time.Time{})
	r.check("nudge", err, nil)
	if err == nil {
		if res.Followup.Nudges != 1 || res.Followup.Tier != store.TierNudged {
			r.t.Errorf("after a nudge: nudges %d tier %d, want 1 and nudged", res.Followup.Nudges, res.Followup.Tier)
		}
		q := r.item("nudge item", res.QueueID)
		if q.Kind != store.KindDraft || len(q.To) != 1 || q.To[0].Email != Dave {
			r.t.Errorf("nudge item: %s", ItemState(q))
		}
		// Approved, it goes to Dave as a reply to the owner's question.
		before := len(w.SMTP.Messages())
		_, err = r.svc.Approve(r.ctx, res.QueueID, "")
		r.check("approve the follow-up", err, nil)
		msgs := w.SMTP.Messages()
		if len(msgs) != before+1 {
			r.t.Fatalf("approving the follow-up sent %d messages, want 1", len(msgs)-before)
		}
		sent := mail.Parse(msgs[len(msgs)-1].Data)
		if len(sent.To) != 1 || sent.To[0].Email != Dave || !slices.Contains(sent.InReplyTo, "ask-dave@example.com") ||
			!strings.HasPrefix(sent.Subject, "Re: Office") {
			r.t.Errorf("the follow-up: to %v in-reply-to %v subject %q", sent.To, sent.InReplyTo, sent.Subject)
		}
	}
	replies, err := r.svc.Replies(r.ctx, Account, "carol-1@example.org")
	r.check("replies", err, nil)
	r.state("replies", fmt.Sprint(len(replies)))
	// Dave answers the owner's question (a message that is not stored
	// itself): Replies finds the answer.
	uid := w.Append("INBOX", append([]byte("In-Reply-To: <ask-dave@example.com>\r\n"), Mail(Dave, "Re: Office", "dave-answer@example.org", "Monday.")...))
	w.UIDs["dave-answer"] = store.MessageKey{Account: Account, Mailbox: "INBOX", UID: uid}
	if err := w.Daemon.Run(r.ctx, true); err != nil {
		r.t.Fatal(err)
	}
	replies, err = r.svc.Replies(r.ctx, Account, "<ask-dave@example.com>")
	r.check("replies to the owner's question", err, nil)
	if len(replies) != 1 || replies[0].MessageID != "dave-answer@example.org" {
		r.t.Errorf("replies to the owner's question: %d records, want Dave's answer", len(replies))
	}
	if fu, err := w.Store.GetFollowup(dave[0].ID); err != nil || fu.State != store.FollowupDone {
		r.t.Errorf("Dave's answer did not close the followup: %+v %v", fu, err)
	}
	_, err = r.svc.Replies(r.ctx, Account, "")
	r.check("replies to nothing", err, api.ErrBadRequest)
}
