package agent

import (
	"context"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// "Already answered" rests on what survives the loss of local state: the
// mailbox. Before any reply goes out (Deliver, for auto-sends and
// approvals alike) and before a message is drafted at all (draftAndAct),
// the pipeline asks
//
//   - the mailbox (Mailer.Answered): does the Sent folder hold a reply to
//     the original's Message-ID (In-Reply-To or References), from
//     mailagent or from the owner's own client, or does the original
//     carry \Answered?
//   - the outbox: is another reply to the same Message-ID under way, sent,
//     or (for an automatic reply) possibly delivered before a crash? This
//     covers a UIDVALIDITY change, which gives the same mail a new key and
//     so a new outbox id.
//
// A yes means nothing is sent. After every send the original is flagged
// \Answered (Mailer.MarkAnswered), so a lost, truncated or replaced
// state database, or a new laptop, finds the answer on the server.

// Evidence counts only for the message's own correspondent: the reply
// must name the message AND be addressed to its reply party
// (store.AnswersTo), and a \Answered flag found by Message-ID counts only
// on a message authenticated as the same correspondent
// (store.SameCorrespondent, with the sender of the flagged message decided
// by Identify). A stranger who copies a contact's Message-ID into
// References, or reuses or predicts it as their own, never makes the
// contact's mail "already answered".

// answered reports whether original has been answered, with the reason
// (outbox.Outbox.Answered).
func (p *Pipeline) answered(ctx context.Context, original *store.MessageRecord, skip string, auto bool) (bool, string, error) {
	return p.outbox().Answered(ctx, original, skip, auto)
}

// Identify decides who raw (a message or only its header) is from, as the
// pipeline does when it reads it: the sender authenticated by the owner's
// server (AuthenticateSender with o.AuthservID) and the route, on a record
// that also carries key and the parsed headers. It writes nothing and
// never fails; mailagent's own Message-IDs are not consulted (a message
// that is not its own routes as the pipeline would route it).
func Identify(key store.MessageKey, raw []byte, o Owner) *store.MessageRecord {
	m := mail.Parse(raw)
	rec := &store.MessageRecord{MessageKey: key}
	fillRecord(rec, m)
	auth := senderAuthOf(m, o, false)
	rec.SenderAuth = &auth
	route := Route(m, o, false, nil)
	rec.Route, rec.RouteReason = route.Route, route.Reason
	return rec
}

// skipAnswered is the act-time check: a message already answered is not
// drafted. An error is only logged: Deliver asks again before any send
// (and sends nothing when it cannot tell), and a queued draft is checked
// again on approval.
func (p *Pipeline) skipAnswered(ctx context.Context, rec *store.MessageRecord, tr *tracer) (bool, error) {
	if rec.Synthesized {
		return false, nil
	}
	done := tr.step("answered")
	found, reason, err := p.answered(ctx, rec, "", true)
	var snap *store.StepSnapshot
	if tr.on() {
		snap = tr.snap(p.answeredInput(rec), answeredOutput(found, reason, err))
	}
	done(store.Step{Detail: reason, Snapshot: snap}, err)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		p.logger().Warn("could not tell whether the message was answered; checked again before sending", "account", rec.Account, "err", err)
		return false, nil
	}
	if !found {
		return false, nil
	}
	rec.Decision, rec.Reasons = DecisionIgnore, []string{reason}
	return true, nil
}
