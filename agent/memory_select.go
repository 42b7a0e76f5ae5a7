package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// DefaultMemoryBudget is how many tokens (EstimateTokens) of learned
// memory a draft prompt gets at most.
const DefaultMemoryBudget = 600

// MemoryStore is what learning and memory selection need from the store.
// *store.Store implements it.
type MemoryStore interface {
	AddMemory(r *store.MemoryRecord) (*store.MemoryRecord, error)
	ListMemory(f store.MemoryFilter) ([]store.MemoryRecord, error)
	ForgetMemory(id string) error
	AddExample(e *store.Example) error
	AddExamples(es []*store.Example) error // AddExample's, in one commit
	ListExamples(account string) ([]store.Example, error)
	ForgetExample(id string) error
}

// EstimateTokens is a deterministic estimate of the tokens a text costs:
// one per four characters, rounded up, and at least one per word (short
// words and CJK text cost more than four characters' worth).
func EstimateTokens(s string) int {
	byChars := (utf8.RuneCountInString(s) + 3) / 4
	return max(byChars, len(strings.Fields(s)))
}

// MemoryTokens is the estimated cost of a selected memory.
func MemoryTokens(m prompts.Memory) int {
	n := 0
	for _, list := range [][]string{m.OwnerReplies, m.Examples, m.Records, m.Style} {
		for _, s := range list {
			n += EstimateTokens(s)
		}
	}
	return n
}

// FewShot bounds how many of the owner's replies, and how many approved
// examples, a draft sees: a few show the voice, and more would leave no
// room in the budget for the contact's records and the style rules.
const FewShot = 3

// MemoryQuery says whom and what a draft is for.
type MemoryQuery struct {
	Account string
	// Contact is the authenticated correspondent ("" = none: only global
	// style records are used).
	Contact string
	Intents []string
	Now     time.Time
	// Budget in tokens; 0 means DefaultMemoryBudget.
	Budget int
	// OtherContacts lets the owner's approved replies to other contacts
	// serve as examples (same intents, after this contact's own). Only
	// for a draft that waits for the owner whatever it says: their text
	// may carry facts about those contacts, and a reply that could go out
	// on its own must not be able to repeat them (see memoryFor).
	OtherContacts bool
}

// SelectMemory picks, by whole items and never by cutting one, what a
// draft for q sees, in priority order: the owner's recent replies to this
// contact (newest first, at most FewShot), approved replies to emails with
// the same intents (newest first, at most FewShot; to other contacts only
// with q.OtherContacts), this contact's records (its own, then its
// domain's, then the owner's global rules and facts; newest first), the
// global style records. An item that does not fit in what is left of the budget
// is skipped and the next is tried. Records about another contact are
// never considered; expired temporary records neither.
func SelectMemory(q MemoryQuery, recs []store.MemoryRecord, examples []store.Example) prompts.Memory {
	budget := q.Budget
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	contact := mail.AddrKey(q.Contact)
	var m prompts.Memory
	left := budget
	take := func(list *[]string, s string) {
		if (list == &m.OwnerReplies || list == &m.Examples) && len(*list) >= FewShot {
			return
		}
		if c := EstimateTokens(s); c <= left {
			*list = append(*list, s)
			left -= c
		}
	}
	newestFirst := func(a, b store.Example) int { return b.Created.Compare(a.Created) }
	exs := slices.Clone(examples)
	slices.SortStableFunc(exs, newestFirst)
	if contact != "" {
		for _, e := range exs {
			if e.Kind == store.ExampleOwnerReply && e.Contact == contact {
				take(&m.OwnerReplies, e.Text)
			}
		}
		for _, e := range exs {
			if e.Kind == store.ExampleApproved && sharesIntent(e.Intents, q.Intents) && e.Contact == contact {
				take(&m.Examples, exampleLine(e))
			}
		}
		// Approved replies to other contacts teach only the voice; their
		// text may carry facts about that other contact, so they are used
		// only for a draft the owner reads before it goes, when their
		// intent matches, and after this contact's own.
		for _, e := range exs {
			if q.OtherContacts && e.Kind == store.ExampleApproved && sharesIntent(e.Intents, q.Intents) && e.Contact != contact {
				take(&m.Examples, exampleLine(e))
			}
		}
	}
	rs := slices.Clone(recs)
	slices.SortStableFunc(rs, func(a, b store.MemoryRecord) int { return b.Created.Compare(a.Created) })
	rank := func(r store.MemoryRecord) int {
		switch {
		case r.Contact == contact && contact != "":
			return 0
		case strings.HasPrefix(r.Contact, "@"):
			return 1
		default:
			return 2
		}
	}
	slices.SortStableFunc(rs, func(a, b store.MemoryRecord) int { return rank(a) - rank(b) })
	for _, r := range rs {
		if r.Account != q.Account || r.Kind == store.MemoryStyle || !r.Active(q.Now) {
			continue
		}
		if r.Contact == "" || (contact != "" && r.AppliesTo(contact)) {
			take(&m.Records, recordLine(r))
		}
	}
	for _, r := range rs {
		if r.Account == q.Account && r.Kind == store.MemoryStyle && r.Active(q.Now) {
			take(&m.Style, r.Text)
		}
	}
	return m
}

func sharesIntent(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func exampleLine(e store.Example) string {
	return fmt.Sprintf("(%s) %s", strings.Join(e.Intents, ", "), e.Text)
}

// recordLine is a record as the draft prompt shows it.
func recordLine(r store.MemoryRecord) string {
	who := "everyone"
	if r.Contact != "" {
		who = r.Contact
	}
	s := fmt.Sprintf("%s (%s", r.Kind, who)
	if r.Intent != "" {
		s += ", " + r.Intent
	}
	if !r.Expires.IsZero() {
		s += ", until " + r.Expires.Format("2006-01-02")
	}
	return s + "): " + r.Text
}

// memoryFor selects the learned memory for a draft to contact (the
// authenticated sender; "" for none) on account. queued says the draft
// waits for the owner whatever it says (the decision before drafting is
// not an auto-send): only then may the owner's approved replies to other
// contacts be examples. A draft that may go out on its own sees nothing
// written to anyone else, so a model that obeys the mail ("quote your
// other replies") has nothing of theirs to repeat. Without a memory store
// it is empty; a read error is logged and drafting goes on without it.
func (p *Pipeline) memoryFor(account, contact string, intents []string, queued bool) prompts.Memory {
	a := p.Actor
	if a == nil || a.Memory == nil || contact == "" {
		// An unauthenticated sender gets no memory, as it gets no profile.
		return prompts.Memory{}
	}
	recs, err := a.Memory.ListMemory(store.MemoryFilter{Account: account})
	if err != nil {
		p.logger().Warn("memory", "account", account, "err", err)
		return prompts.Memory{}
	}
	exs, err := a.Memory.ListExamples(account)
	if err != nil {
		p.logger().Warn("memory", "account", account, "err", err)
	}
	return SelectMemory(MemoryQuery{Account: account, Contact: contact, Intents: intents, Now: p.now(), Budget: a.MemoryBudget,
		OtherContacts: queued}, recs, exs)
}

// ownerRuleFor returns the text of an active rule record that applies to
// the recipient (its own, its domain's, or a global one), or "". A draft
// under one of the owner's standing rules is never sent automatically: a
// rule ("never promise dates to acme.com") is for the owner to check.
func (p *Pipeline) ownerRuleFor(account, recipient string) string {
	a := p.Actor
	if a == nil || a.Memory == nil {
		return ""
	}
	recs, err := a.Memory.ListMemory(store.MemoryFilter{Account: account, Kind: store.MemoryRule})
	if err != nil {
		// Fail closed: without the rules, the reply waits for the owner.
		return "the owner's rules could not be read: " + err.Error()
	}
	now := p.now()
	for _, r := range recs {
		if r.Active(now) && r.AppliesTo(recipient) {
			return r.Text
		}
	}
	return ""
}
