package agent

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// DefaultSummaryEvery is how many exchanges with a contact pass before its
// rolling summary is written again.
const DefaultSummaryEvery = 10

// MaxContactSummaryChars bounds a contact summary.
const MaxContactSummaryChars = 800

// Summarizer writes the rolling summary of one contact's memory.
type Summarizer interface {
	Summarize(ctx context.Context, owner prompts.Owner, c *store.Contact) (string, llm.CallInfo, error)
}

// LLMSummarizer summarizes with a language model. It only ever sees the
// one contact it is given.
type LLMSummarizer struct {
	Model   llm.Model
	Prompts *prompts.Set
}

type summaryWire struct {
	Summary *string `json:"summary"`
}

// Summarize renders the summary prompt and validates the answer.
func (s *LLMSummarizer) Summarize(ctx context.Context, owner prompts.Owner, c *store.Contact) (string, llm.CallInfo, error) {
	d := prompts.SummaryData{Owner: owner, Contact: formatAddress(contactAddress(c)), Previous: c.Summary, Boundary: prompts.NewBoundary()}
	for _, h := range c.History {
		d.History = append(d.History, fmt.Sprintf("%s %s %q: %s", h.Date.Format("2006-01-02"), h.Direction, h.Subject, h.Summary))
	}
	system, user, err := s.Prompts.Summarize(d)
	if err != nil {
		return "", llm.CallInfo{}, fmt.Errorf("render summary prompt: %w", err)
	}
	schema := &llm.Schema{Type: "object", Required: []string{"summary"},
		Properties: map[string]*llm.Schema{"summary": {Type: "string", MaxLength: ptr[int64](MaxContactSummaryChars)}}}
	w, info, err := llm.GenerateJSON(ctx, s.Model, llm.Request{System: system, Prompt: user, Schema: schema}, func(w *summaryWire) error {
		switch {
		case w.Summary == nil:
			return &ValidationError{Problems: []string{"summary: required"}}
		case strings.TrimSpace(*w.Summary) == "":
			return &ValidationError{Problems: []string{"summary: empty"}}
		case utf8.RuneCountInString(*w.Summary) > MaxContactSummaryChars:
			return &ValidationError{Problems: []string{fmt.Sprintf("summary: at most %d characters", MaxContactSummaryChars)}}
		}
		return nil
	})
	if err != nil {
		return "", info, fmt.Errorf("summarize %s: %w", c.Email, err)
	}
	return strings.TrimSpace(*w.Summary), info, nil
}

// refreshSummary rewrites a contact's rolling summary when enough has
// happened since the last one, or when the history is full (the oldest
// entries are about to be dropped). A failure is logged: memory is a
// convenience, never a reason to hold a message back.
func (p *Pipeline) refreshSummary(ctx context.Context, account, email string) {
	a := p.Actor
	if a == nil || a.Summarizer == nil || email == "" {
		return
	}
	c, err := a.Store.GetContact(account, email)
	if err != nil {
		return
	}
	every := a.SummaryEvery
	if every <= 0 {
		every = DefaultSummaryEvery
	}
	if c.SinceSummary < every && len(c.History) < store.HistoryCap {
		return
	}
	acct := p.Accounts[account]
	summary, _, err := a.Summarizer.Summarize(ctx, prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)}, c)
	if err != nil {
		p.logger().Warn("contact summary", "account", account, "err", err)
		return
	}
	now := p.now()
	_, err = a.Store.UpdateContact(account, email, func(c *store.Contact) error {
		c.Summary, c.SummaryAt, c.SinceSummary = summary, now, 0
		return nil
	})
	if err != nil {
		p.logger().Warn("contact summary", "account", account, "err", err)
	}
}

func contactAddress(c *store.Contact) mail.Address {
	return mail.Address{Name: c.Name, Email: c.Email}
}
