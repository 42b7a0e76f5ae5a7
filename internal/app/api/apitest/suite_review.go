package apitest

import (
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// caseUnsnooze: a snoozed item comes back at once; anything else is not
// actionable.
func caseUnsnooze(r *run) {
	w := r.w
	r.check("unsnooze a pending item", r.svc.Unsnooze(r.ctx, w.Draft), agent.ErrNotActionable)
	r.check("snooze", r.svc.Snooze(r.ctx, w.Draft, time.Now().Add(48*time.Hour)), nil)
	r.check("unsnooze", r.svc.Unsnooze(r.ctx, w.Draft), nil)
	if it := r.item("after", w.Draft); it.Status != store.QueuePending || !it.SnoozeUntil.IsZero() {
		r.t.Errorf("unsnooze: got %s until %v, want pending with no wake time", it.Status, it.SnoozeUntil)
	}
	r.check("unsnooze twice", r.svc.Unsnooze(r.ctx, w.Draft), agent.ErrNotActionable)
	r.check("unsnooze unknown", r.svc.Unsnooze(r.ctx, "q_nosuch"), store.ErrNotFound)
	r.check("unsnooze empty", r.svc.Unsnooze(r.ctx, ""), api.ErrBadRequest)
}

// detailState is the part of a Detail every run must agree on.
func detailState(d *api.Detail) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "item=%s", ItemState(d.Item))
	if d.Outbox != nil {
		fmt.Fprintf(&b, " outbox=%s/%s/%v raw=%d", d.Outbox.ID, d.Outbox.Status, d.Outbox.To, len(d.Outbox.Raw))
	}
	if d.Trace != nil {
		fmt.Fprintf(&b, " decision=%s gates=%d", d.Trace.Decision, len(d.Trace.Gates))
	}
	if d.Message != nil {
		fmt.Fprintf(&b, " from=%s", d.Message.From.Email)
		if c := d.Message.Classification; c != nil {
			fmt.Fprintf(&b, " intents=%v", c.Intents)
		}
	}
	fmt.Fprintf(&b, " thread=%d", len(d.Thread))
	return b.String()
}

// caseDetail: one assembly for every kind of item, by any id the product
// prints; the auto-send carries its message, classification and gates,
// and a cancelled auto-send back in the queue keeps them.
func caseDetail(r *run) {
	w := r.w
	for _, ref := range []string{w.Draft, w.Notify, w.Scheduled} {
		d, err := api.LoadDetail(r.ctx, r.svc, ref)
		r.check("detail "+ref, err, nil)
		r.state("detail "+ref, detailState(d))
		if d == nil {
			continue
		}
		if d.Message == nil || d.Trace == nil || d.Message.Classification == nil || len(d.Thread) == 0 {
			r.t.Errorf("detail %s: got %s, want message, classification and thread", ref, detailState(d))
		}
		// A reply (queued or sent on its own) passed through the gates.
		if ref != w.Notify && d.Trace != nil && len(d.Trace.Gates) == 0 {
			r.t.Errorf("detail %s: got %s, want its gates", ref, detailState(d))
		}
	}
	d, err := api.LoadDetail(r.ctx, r.svc, w.Scheduled)
	r.check("detail of the auto-send", err, nil)
	if d != nil && (d.Outbox == nil || d.Outbox.ID != w.Scheduled || d.Item != nil || d.Message.From.Email != Bob) {
		r.t.Errorf("auto-send detail: got %s, want its outbox record and Bob's message, no item", detailState(d))
	}
	// The same detail by trace id and by Message-ID.
	if d != nil && d.Trace != nil {
		for _, ref := range []string{d.Trace.TraceID, "bob-1@example.org"} {
			e, err := api.LoadDetail(r.ctx, r.svc, ref)
			r.check("detail by "+ref, err, nil)
			if e != nil && (e.Outbox == nil || e.Outbox.ID != w.Scheduled) {
				r.t.Errorf("detail by %s: got %s, want the auto-send", ref, detailState(e))
			}
		}
	}
	r.check("cancel", r.svc.Cancel(r.ctx, w.Scheduled), nil)
	qid := agent.QueueID(w.UIDs["bob"])
	d, err = api.LoadDetail(r.ctx, r.svc, qid)
	r.check("detail after cancel", err, nil)
	r.state("detail after cancel", detailState(d))
	if d != nil {
		it := d.Item
		if it == nil || it.From.Email != Bob || it.Classification == nil || len(it.Classification.Intents) == 0 || len(it.Gates) == 0 || it.ThreadID == "" {
			r.t.Errorf("cancelled auto-send back in the queue: got %+v, want its sender, intents, gates and thread", it)
		}
	}
	for _, ref := range []string{"q_nosuch", "ob_nosuch", "tr_nosuch"} {
		_, err := api.LoadDetail(r.ctx, r.svc, ref)
		r.check("detail "+ref, err, store.ErrNotFound)
	}
	_, err = api.LoadDetail(r.ctx, r.svc, "")
	r.check("detail empty", err, api.ErrBadRequest)
}

// caseDecided: what the agent did without asking is listed: Dave's
// notice and Bob's auto-reply, not the drafts waiting for approval.
func caseDecided(r *run) {
	recs, err := api.DecidedWithoutAsking(r.ctx, r.svc, time.Now().Add(-24*time.Hour))
	r.check("decided", err, nil)
	var got []string
	for _, m := range recs {
		got = append(got, m.From.Email+":"+m.Decision)
	}
	r.state("decided", strings.Join(got, " "))
	want := map[string]bool{Dave + ":" + agent.DecisionNotify: true, Bob + ":" + agent.DecisionAutoSend: true}
	if len(got) != len(want) {
		r.t.Errorf("decided: got %v, want %v", got, want)
	}
	for _, g := range got {
		if !want[g] {
			r.t.Errorf("decided: %s is not something decided without asking (got %v)", g, got)
		}
	}
	recs, err = api.DecidedWithoutAsking(r.ctx, r.svc, time.Now().Add(time.Hour))
	r.check("decided since later", err, nil)
	if len(recs) != 0 {
		r.t.Errorf("decided since an hour ahead: got %d, want none", len(recs))
	}
}
