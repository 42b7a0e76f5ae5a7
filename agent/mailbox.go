package agent

import (
	"context"
	"strings"

	"github.com/mailagent/mailagent/store"
)

// MailboxActor shows the agent's decisions in the mailbox. An
// Actor.Mailer that implements it is used after each decision of watch
// (never by triage): an "archive" decision is archived as the account's
// policy says (moved, a keyword, or nothing), and labels become IMAP
// keywords where the policy and the server allow them.
type MailboxActor interface {
	// Archive carries out an archive decision; done says what happened
	// ("" when the policy leaves the mailbox alone).
	Archive(ctx context.Context, account string, original store.MessageKey, messageID string) (done string, err error)
	// Label sets keywords on original (those the server keeps).
	Label(ctx context.Context, account string, original store.MessageKey, messageID string, keywords []string) error
	// Labels are the keywords for rec's decision (nil: none wanted).
	Labels(account string, rec *store.MessageRecord) []string
}

// reflectInMailbox runs the mailbox side of rec's decision. A failure is
// recorded on the trace and logged; the decision itself stands (the
// mailbox is a view of it, and the next archive decision retries).
func (p *Pipeline) reflectInMailbox(ctx context.Context, rec *store.MessageRecord, tr *tracer) {
	mb, ok := p.Actor.Mailer.(MailboxActor)
	if !ok || rec.Route == RouteSelf {
		return
	}
	var did, kw []string
	var err error
	if rec.Decision == DecisionArchive {
		var done string
		if done, err = mb.Archive(ctx, rec.Account, rec.MessageKey, rec.MessageID); done != "" {
			did = append(did, done)
		}
	}
	if kw = mb.Labels(rec.Account, rec); err == nil && len(kw) > 0 && rec.Decision != DecisionArchive {
		if err = mb.Label(ctx, rec.Account, rec.MessageKey, rec.MessageID, kw); err == nil {
			did = append(did, "keywords "+strings.Join(kw, " "))
		}
	}
	if len(did) == 0 && err == nil {
		return
	}
	var snap *store.StepSnapshot
	if tr.on() {
		snap = tr.snap(mailboxSnapshot(rec, kw, did, err))
	}
	tr.step("mailbox")(store.Step{Detail: strings.Join(did, "; "), Snapshot: snap}, err)
	if err != nil {
		p.logger().Warn("mailbox action", "message", rec.MessageID, "decision", rec.Decision, "err", err)
	}
}
