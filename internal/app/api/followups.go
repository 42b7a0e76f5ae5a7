package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// FollowupFilter selects reply-tracking threads; zero fields match
// everything.
type FollowupFilter struct {
	Account string `json:"account,omitempty"`
	// States lists the states wanted (store.FollowupNeedsReply, …); empty
	// means the open ones (needs_reply and awaiting_reply).
	States []string `json:"states,omitempty"`
	// Correspondent matches one of a thread's correspondents
	// (case-insensitive substring: an address or a domain).
	Correspondent string `json:"correspondent,omitempty"`
	// Since and Until bound the time of the thread's last message.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// ClosedSince keeps threads closed at or after it ("recently
	// replied").
	ClosedSince time.Time `json:"closed_since,omitzero"`
}

func (f FollowupFilter) store() store.FollowupFilter {
	st := f.States
	if len(st) == 0 {
		st = []string{store.FollowupNeedsReply, store.FollowupAwaitingReply}
	}
	return store.FollowupFilter{Account: f.Account, States: st, Correspondent: f.Correspondent,
		Since: f.Since, Until: f.Until, ClosedSince: f.ClosedSince}
}

// Followup actions for FollowupAction.
const (
	FollowupActDone   = "done"   // mark the thread done
	FollowupActSnooze = "snooze" // hide it and delay its timer until Until
	FollowupActNudge  = "nudge"  // queue a follow-up draft now (awaiting_reply only)
)

// FollowupActionResult is what a followup action did.
type FollowupActionResult struct {
	Followup store.Followup `json:"followup"`
	// QueueID is the follow-up draft queued by a nudge ("" otherwise).
	QueueID string `json:"queue_id,omitempty"`
}

type followupActReq struct {
	Action string    `json:"action"`
	Until  time.Time `json:"until,omitzero"`
}

type repliesReq struct {
	Account   string `json:"account"`
	MessageID string `json:"message_id"`
}

// Followups implements Service: the matching threads, earliest deadline
// first.
func (l *Local) Followups(ctx context.Context, f FollowupFilter) ([]store.Followup, error) {
	out := []store.Followup{}
	err := l.DB.ListFollowups(f.store(), func(fu *store.Followup) error {
		out = append(out, *fu)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list followups: %w", err)
	}
	slices.SortStableFunc(out, func(a, b store.Followup) int {
		if c := a.Deadline.Compare(b.Deadline); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// followups is the reply tracker Local acts with: the watcher's when it
// gave one, else one over the store (these actions change only the
// database).
func (l *Local) followups() *followup.Tracker {
	if l.Tracker != nil {
		return l.Tracker
	}
	return &followup.Tracker{Store: l.DB, Now: l.Now, Policy: followup.Policy{Enabled: true}}
}

// FollowupAction implements Service.
func (l *Local) FollowupAction(ctx context.Context, id, action string, until time.Time) (*FollowupActionResult, error) {
	if err := emptyID("followup", id); err != nil {
		return nil, err
	}
	t := l.followups()
	res := &FollowupActionResult{}
	var err error
	switch action {
	case FollowupActDone:
		err = t.MarkDone(ctx, id)
	case FollowupActSnooze:
		if !until.After(l.now()) {
			return nil, fmt.Errorf("snooze %s: %w: the time to wake it is not in the future", id, ErrBadRequest)
		}
		err = t.Snooze(ctx, id, until)
	case FollowupActNudge:
		var q *store.QueueItem
		if q, err = t.Nudge(ctx, id); err == nil {
			res.QueueID = q.ID
		}
	default:
		return nil, fmt.Errorf("followup %s: %w: unknown action %q (done, snooze or nudge)", id, ErrBadRequest, action)
	}
	if err != nil {
		return nil, err
	}
	fu, err := l.DB.GetFollowup(id)
	if err != nil {
		return nil, err
	}
	res.Followup = *fu
	return res, nil
}

// Replies implements Service: the stored messages of account whose
// In-Reply-To or References name messageID, oldest first.
func (l *Local) Replies(ctx context.Context, account, messageID string) ([]store.MessageRecord, error) {
	key := mail.IDKey(messageID)
	if key == "" {
		return nil, fmt.Errorf("replies: %w: empty Message-ID", ErrBadRequest)
	}
	recs, err := l.DB.FindByMessageID(account, messageID)
	if err != nil {
		return nil, fmt.Errorf("replies: %w", err)
	}
	out := []store.MessageRecord{}
	seen := map[store.MessageKey]bool{}
	for _, r := range recs {
		if r.ThreadID == "" {
			continue
		}
		thread, err := l.DB.ThreadMessages(r.ThreadID, 0)
		if err != nil {
			return nil, fmt.Errorf("replies: %w", err)
		}
		for _, m := range thread {
			if seen[m.MessageKey] || (account != "" && m.Account != account) {
				continue
			}
			if slices.ContainsFunc(slices.Concat(m.InReplyTo, m.References), func(id string) bool { return mail.IDKey(id) == key }) {
				seen[m.MessageKey] = true
				out = append(out, *m)
			}
		}
	}
	if len(recs) == 0 {
		// Not a stored message (the owner's own, from Sent): look through
		// the account's recent mail for answers to it.
		err := l.DB.ListMessages(store.MessageFilter{Account: account, Since: l.now().Add(-repliesWindow)}, func(m *store.MessageRecord) error {
			if slices.ContainsFunc(slices.Concat(m.InReplyTo, m.References), func(id string) bool { return mail.IDKey(id) == key }) {
				out = append(out, *m)
			}
			return ctx.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("replies: %w", err)
		}
	}
	slices.SortStableFunc(out, func(a, b store.MessageRecord) int { return a.Date.Compare(b.Date) })
	return out, ctx.Err()
}

// repliesWindow bounds the scan for replies to a message that is not
// stored itself.
const repliesWindow = 180 * 24 * time.Hour

// Followups implements Service.
func (c *Client) Followups(ctx context.Context, f FollowupFilter) ([]store.Followup, error) {
	out := []store.Followup{}
	if err := c.call(ctx, http.MethodPost, "/v1/followups", nil, f, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// FollowupAction implements Service.
func (c *Client) FollowupAction(ctx context.Context, id, action string, until time.Time) (*FollowupActionResult, error) {
	if err := emptyID("followup", id); err != nil {
		return nil, err
	}
	var res FollowupActionResult
	if err := c.call(ctx, http.MethodPost, "/v1/followups/"+url.PathEscape(id), nil, followupActReq{Action: action, Until: until}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Replies implements Service.
func (c *Client) Replies(ctx context.Context, account, messageID string) ([]store.MessageRecord, error) {
	out := []store.MessageRecord{}
	if err := c.call(ctx, http.MethodPost, "/v1/replies", nil, repliesReq{Account: account, MessageID: messageID}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (h *handler) followupsList(w http.ResponseWriter, r *http.Request) {
	var f FollowupFilter
	if err := decode(w, r, &f); err != nil {
		h.fail(w, err)
		return
	}
	out, err := h.svc.Followups(r.Context(), f)
	h.reply(w, out, err)
}

func (h *handler) followupAction(w http.ResponseWriter, r *http.Request) {
	var req followupActReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	res, err := h.svc.FollowupAction(ctx, r.PathValue("id"), req.Action, req.Until)
	h.reply(w, res, err)
}

func (h *handler) replies(w http.ResponseWriter, r *http.Request) {
	var req repliesReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	out, err := h.svc.Replies(r.Context(), req.Account, req.MessageID)
	h.reply(w, out, err)
}
