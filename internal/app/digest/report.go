package digest

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Source is what a digest reads. *store.Store implements it.
type Source interface {
	ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error
	ListQueue(status string, fn func(*store.QueueItem) error) error
	ListOutbox(status string, fn func(*store.OutboxRecord) error) error
	UsageRange(from, to string) ([]store.UsageDay, error)
}

var _ Source = (*store.Store)(nil)

// FollowupSource is what a Source also has when reply tracking is there
// (store.Store has it): the report then lists the follow-ups due.
type FollowupSource interface {
	ListFollowups(ff store.FollowupFilter, fn func(*store.Followup) error) error
}

var _ FollowupSource = (*store.Store)(nil)

// Due is one tracked thread whose deadline has passed by the end of the
// period: the owner owes an answer (needs_reply) or waits for one
// (awaiting_reply).
type Due struct {
	ID             string
	Account        string
	State          string
	Correspondents []string
	Subject        string
	Deadline       time.Time
	Nudges         int
}

// Sent is one reply mailagent sent on its own.
type Sent struct {
	Account string
	To      []string
	Subject string
	SentAt  time.Time
}

// Waiting is one queue item still waiting for the owner.
type Waiting struct {
	ID      string
	Kind    string
	Account string
	From    mail.Address
	Subject string
	Since   time.Time
	// New: it was queued within the period.
	New bool
}

// Review is one message that needs the owner's review.
type Review struct {
	Key     store.MessageKey
	From    mail.Address
	Subject string
	Error   string
}

// Report is what the agent did between Since and Until.
type Report struct {
	Since, Until time.Time
	AutoSent     []Sent
	// Scheduled are auto-replies written but not sent yet (the send delay).
	Scheduled []Sent
	Waiting   []Waiting
	// Archived and Ignored count the period's messages so decided, by
	// category: the first intent the model gave, or the route (automated,
	// owner, self) when the model never saw the message.
	Archived    map[string]int
	Ignored     map[string]int
	Processed   int
	NeedsReview []Review
	// FollowupsDue are open threads past their deadline at Until, oldest
	// deadline first (empty when the source has no reply tracking).
	FollowupsDue []Due
	Usage        store.UsageDay // summed over the days the period touches
	Model        string
	Price        llm.Price
	PriceKnown   bool
	USD          float64
}

// Build collects the report of [since, until) from src. model names the
// configured model, for the cost estimate.
func Build(src Source, since, until time.Time, model string) (*Report, error) {
	r := &Report{Since: since, Until: until, Archived: map[string]int{}, Ignored: map[string]int{}, Model: model}
	in := func(t time.Time) bool { return !t.Before(since) && t.Before(until) }
	err := src.ListOutbox("", func(ob *store.OutboxRecord) error {
		if !ob.Auto || ob.Kind != "" { // replies only: not digests, unsubscribes or nudges
			return nil
		}
		s := Sent{Account: ob.Account, To: slices.Clone(ob.To), Subject: ob.Subject, SentAt: ob.SentAt}
		switch ob.Status {
		case store.OutboxSent, store.OutboxAppended:
			if in(ob.SentAt) {
				r.AutoSent = append(r.AutoSent, s)
			}
		case store.OutboxScheduled, store.OutboxPending:
			s.SentAt = ob.SendAt
			r.Scheduled = append(r.Scheduled, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("digest: outbox: %w", err)
	}
	for _, status := range []string{store.QueuePending, store.QueueSnoozed} {
		err := src.ListQueue(status, func(q *store.QueueItem) error {
			r.Waiting = append(r.Waiting, Waiting{ID: q.ID, Kind: q.Kind, Account: q.Account, From: q.From, Subject: q.Subject,
				Since: q.CreatedAt, New: in(q.CreatedAt)})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("digest: queue: %w", err)
		}
	}
	err = src.ListMessages(store.MessageFilter{State: store.StateNeedsReview}, func(m *store.MessageRecord) error {
		r.NeedsReview = append(r.NeedsReview, Review{Key: m.MessageKey, From: m.From, Subject: m.Subject, Error: m.Error})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("digest: messages: %w", err)
	}
	// Mail processed in the period, whatever its Date header says (the
	// sender writes that; a message dated 1990 must not hide from the
	// digest): every record is read, once a day.
	err = src.ListMessages(store.MessageFilter{}, func(m *store.MessageRecord) error {
		if !in(m.UpdatedAt) || !m.State.Terminal() {
			return nil
		}
		r.Processed++
		switch m.Decision {
		case agent.DecisionArchive:
			r.Archived[category(m)]++
		case agent.DecisionIgnore:
			r.Ignored[category(m)]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("digest: messages: %w", err)
	}
	if fs, ok := src.(FollowupSource); ok {
		open := store.FollowupFilter{States: []string{store.FollowupNeedsReply, store.FollowupAwaitingReply}}
		err := fs.ListFollowups(open, func(fu *store.Followup) error {
			if fu.Deadline.IsZero() || fu.Deadline.After(until) || fu.SnoozeUntil.After(until) {
				return nil
			}
			r.FollowupsDue = append(r.FollowupsDue, Due{ID: fu.ID, Account: fu.Account, State: fu.State,
				Correspondents: slices.Clone(fu.Correspondents), Subject: fu.Subject, Deadline: fu.Deadline, Nudges: fu.Nudges})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("digest: followups: %w", err)
		}
	}
	days, err := src.UsageRange(store.Day(since), store.Day(until))
	if err != nil {
		return nil, fmt.Errorf("digest: usage: %w", err)
	}
	for _, d := range days {
		r.Usage.Add(d)
	}
	r.Usage.Day = store.Day(since) + ".." + store.Day(until)
	r.Price, r.PriceKnown = llm.PriceOf(model)
	if r.PriceKnown {
		r.USD = r.Price.Cost(r.Usage.TokensIn, r.Usage.TokensOut)
	}
	slices.SortFunc(r.AutoSent, func(a, b Sent) int { return a.SentAt.Compare(b.SentAt) })
	slices.SortFunc(r.Scheduled, func(a, b Sent) int { return a.SentAt.Compare(b.SentAt) })
	slices.SortFunc(r.Waiting, func(a, b Waiting) int { return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.ID, b.ID)) })
	slices.SortFunc(r.FollowupsDue, func(a, b Due) int { return cmp.Or(a.Deadline.Compare(b.Deadline), cmp.Compare(a.ID, b.ID)) })
	slices.SortFunc(r.NeedsReview, func(a, b Review) int { return cmp.Compare(a.Key.UID, b.Key.UID) })
	return r, nil
}

// category is what an archived or ignored message is filed under.
func category(m *store.MessageRecord) string {
	if m.Route != agent.RouteExternal || m.Classification == nil || len(m.Classification.Intents) == 0 {
		return m.Route
	}
	return m.Classification.Intents[0]
}
