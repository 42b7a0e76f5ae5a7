package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Learning from the owner's corrections. Every record written here is the
// owner's doing (an edit before approval, a rejection with a reason, a
// reply they sent themselves); nothing a correspondent writes is learned
// on its own. A failure to learn is logged and never holds back the
// approval, rejection or scan that caused it.

// DefaultDistillEvery is after how many edit records the style rules are
// distilled again.
const DefaultDistillEvery = 3

// MaxStyleRules bounds the style rules one distillation stores.
const MaxStyleRules = 3

// maxStyleRuleChars bounds one style rule.
const maxStyleRuleChars = 160

// distillWindow is how many of the newest edit records a distillation
// reads.
const distillWindow = 12

// Learner holds the model calls of learning: style distillation and the
// owner loop (owner.go).
type Learner struct {
	Model   llm.Model
	Prompts *prompts.Set
	// DistillEvery: distill style after this many edits
	// (DefaultDistillEvery when 0; negative: never).
	DistillEvery int
	// MaxSteps bounds the owner loop (DefaultOwnerSteps when 0).
	MaxSteps int
}

// correspondent is the address an item's reply goes to (the first
// recipient chosen by code), lowercased; "" when it has none.
func correspondent(item *store.QueueItem) string {
	if len(item.To) > 0 {
		return mail.AddrKey(item.To[0].Email)
	}
	return mail.AddrKey(item.From.Email)
}

func firstIntent(item *store.QueueItem) string {
	if item.Classification != nil && len(item.Classification.Intents) > 0 {
		return item.Classification.Intents[0]
	}
	return ""
}

// learnFromApproval runs after the owner approved item: the approved text
// becomes a few-shot example for its intents, and an edit (Final differs
// from the model's Draft) becomes a preference record about the
// correspondent, saying what changed. Every few edits the style rules are
// distilled again. It returns the records written, for "learned: …".
func (p *Pipeline) learnFromApproval(ctx context.Context, item *store.QueueItem) []store.Learned {
	a := p.Actor
	if a == nil || a.Memory == nil || item == nil {
		return nil
	}
	who := correspondent(item)
	var intents []string
	if item.Classification != nil {
		intents = item.Classification.Intents
	}
	if who != "" {
		if err := a.Memory.AddExample(&store.Example{Account: item.Account, Kind: store.ExampleApproved, Contact: who,
			Intents: intents, Subject: item.Subject, Text: itemBody(item), Source: item.ID}); err != nil {
			p.logger().Warn("learn: example", "item", item.ID, "err", err)
		}
	}
	if item.Final == "" {
		return nil
	}
	summary, ok := SummarizeEdit(item.Draft, item.Final)
	if !ok {
		return nil
	}
	rec, err := a.Memory.AddMemory(&store.MemoryRecord{Account: item.Account, Kind: store.MemoryPreference, Contact: who,
		Intent: firstIntent(item), Text: summary, Source: store.SourceEdit + item.ID})
	if err != nil {
		p.logger().Warn("learn: edit", "item", item.ID, "err", err)
		return nil
	}
	out := []store.Learned{{ID: rec.ID, Text: rec.Text}}
	out = append(out, p.maybeDistill(ctx, item.Account)...)
	return out
}

// unlearnApproval forgets what learnFromApproval wrote for the approval
// behind id (a queue item id, or its outbox id) once the approval was
// cancelled in its undo window: the edit's record (source edit:q_…) and
// the approved example. Approving again learns them again. Style records
// distilled meanwhile stay: they summarise several edits. Failures are
// logged; the cancel itself has happened.
func (p *Pipeline) unlearnApproval(id string) {
	a := p.Actor
	if a == nil || a.Memory == nil {
		return
	}
	queueID := id
	if !strings.HasPrefix(id, "q_") {
		ob, err := p.Actor.Store.GetOutbox(id)
		if err != nil || ob.QueueID == "" {
			return
		}
		queueID = ob.QueueID
	}
	item, err := p.Actor.Store.GetQueueItem(queueID)
	if err != nil {
		return
	}
	recs, err := a.Memory.ListMemory(store.MemoryFilter{Account: item.Account, Source: store.SourceEdit + queueID})
	if err != nil {
		p.logger().Warn("unlearn: list", "item", queueID, "err", err)
	}
	for _, r := range recs {
		if err := a.Memory.ForgetMemory(r.ID); err != nil {
			p.logger().Warn("unlearn: record", "item", queueID, "err", err)
		}
	}
	exs, err := a.Memory.ListExamples(item.Account)
	if err != nil {
		p.logger().Warn("unlearn: examples", "item", queueID, "err", err)
	}
	for _, e := range exs {
		if e.Kind == store.ExampleApproved && e.Source == queueID {
			if err := a.Memory.ForgetExample(e.ID); err != nil {
				p.logger().Warn("unlearn: example", "item", queueID, "err", err)
			}
		}
	}
}

// learnFromReject records the owner's reason for rejecting item as a
// preference about its correspondent. An empty reason teaches nothing.
func (p *Pipeline) learnFromReject(item *store.QueueItem) []store.Learned {
	a := p.Actor
	reason := strings.Join(strings.Fields(item.RejectReason), " ")
	if a == nil || a.Memory == nil || reason == "" || item.Kind != store.KindDraft {
		return nil
	}
	text := "rejected a draft"
	if in := firstIntent(item); in != "" {
		text += " (" + in + ")"
	}
	text = clip(text+": "+reason, store.MaxMemoryText)
	rec, err := a.Memory.AddMemory(&store.MemoryRecord{Account: item.Account, Kind: store.MemoryPreference, Contact: correspondent(item),
		Intent: firstIntent(item), Text: text, Source: store.SourceReject + item.ID})
	if err != nil {
		p.logger().Warn("learn: reject", "item", item.ID, "err", err)
		return nil
	}
	return []store.Learned{{ID: rec.ID, Text: rec.Text}}
}

// SummarizeEdit describes, deterministically and in one line, how the
// owner changed a draft: a new sign-off, dropped exclamation marks, how
// many sentences were removed, and the sentences the owner wrote instead
// (quoted: they are the owner's). Nothing of the model's text is quoted.
// ok is false when nothing but whitespace changed.
func SummarizeEdit(draft, final string) (summary string, ok bool) {
	if strings.Join(strings.Fields(draft), " ") == strings.Join(strings.Fields(final), " ") {
		return "", false
	}
	var parts []string
	if so := signOff(final); so != "" && so != signOff(draft) {
		parts = append(parts, fmt.Sprintf("signs off with %q", so))
	}
	if strings.Contains(draft, "!") && !strings.Contains(final, "!") {
		parts = append(parts, "uses no exclamation marks")
	}
	ds, fs := sentences(draft), sentences(final)
	var removed, added []string
	for _, s := range ds {
		if !slices.Contains(fs, s) {
			removed = append(removed, s)
		}
	}
	for _, s := range fs {
		if !slices.Contains(ds, s) && s != signOff(final) {
			added = append(added, s)
		}
	}
	if len(removed) > 0 {
		// Counted, never quoted: the removed text is the model's, which a
		// stranger's mail may have steered, and records are trusted text
		// in later prompts. Only the owner's own words are quoted.
		parts = append(parts, fmt.Sprintf("removed %d sentence(s) of the draft", len(removed)))
	}
	if len(added) > 0 {
		parts = append(parts, "wrote instead "+quoteList(added))
	}
	if len(parts) == 0 {
		parts = append(parts, "reworded the draft")
	}
	return clip("edited the draft: "+strings.Join(parts, "; "), store.MaxMemoryText), true
}

// signOff is the last line of a text when it is short enough to be a
// sign-off ("Best, Ada"), else "".
func signOff(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(lines) < 2 || utf8.RuneCountInString(last) > 40 {
		return ""
	}
	// "Best,\nAda" is one sign-off.
	if prev := strings.TrimSpace(lines[len(lines)-2]); strings.HasSuffix(prev, ",") && utf8.RuneCountInString(prev) <= 25 {
		last = prev + " " + last
	}
	return last
}

// sentences splits text into trimmed sentences and lines.
func sentences(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		start := 0
		for i, r := range line {
			if (r == '.' || r == '!' || r == '?') && (i+1 == len(line) || line[i+1] == ' ') {
				if t := strings.TrimSpace(line[start : i+1]); t != "" {
					out = append(out, t)
				}
				start = i + 1
			}
		}
		if t := strings.TrimSpace(line[start:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func quoteList(xs []string) string {
	const maxEach, maxN = 60, 3
	var q []string
	for i, x := range xs {
		if i == maxN {
			q = append(q, fmt.Sprintf("and %d more", len(xs)-maxN))
			break
		}
		q = append(q, fmt.Sprintf("%q", clip(x, maxEach)))
	}
	return strings.Join(q, ", ")
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// maybeDistill distills the global style rules from the newest edit
// records when DistillEvery edits have accumulated since the last time,
// replacing the previously distilled rules.
func (p *Pipeline) maybeDistill(ctx context.Context, account string) []store.Learned {
	a := p.Actor
	l := a.Learner
	if l == nil || l.Model == nil || l.DistillEvery < 0 {
		return nil
	}
	every := l.DistillEvery
	if every == 0 {
		every = DefaultDistillEvery
	}
	all, err := a.Memory.ListMemory(store.MemoryFilter{Account: account})
	if err != nil {
		p.logger().Warn("learn: distill", "err", err)
		return nil
	}
	var edits []store.MemoryRecord
	var old []store.MemoryRecord
	for _, r := range all {
		switch {
		case strings.HasPrefix(r.Source, store.SourceEdit):
			edits = append(edits, r)
		case strings.HasPrefix(r.Source, store.SourceDistilled):
			old = append(old, r)
		}
	}
	if len(edits) == 0 || len(edits)%every != 0 {
		return nil
	}
	rules, err := l.Distill(ctx, p.ownerOf(account), edits[max(0, len(edits)-distillWindow):])
	if err != nil {
		p.logger().Warn("learn: distill", "account", account, "err", err)
		return nil
	}
	for _, r := range old {
		if err := a.Memory.ForgetMemory(r.ID); err != nil {
			p.logger().Warn("learn: distill", "err", err)
		}
	}
	var out []store.Learned
	for _, rule := range rules {
		rec, err := a.Memory.AddMemory(&store.MemoryRecord{Account: account, Kind: store.MemoryStyle, Text: rule,
			Source: fmt.Sprintf("%s%d edits", store.SourceDistilled, len(edits))})
		if err != nil {
			p.logger().Warn("learn: distill", "err", err)
			continue
		}
		out = append(out, store.Learned{ID: rec.ID, Text: "style: " + rec.Text})
	}
	return out
}

func (p *Pipeline) ownerOf(account string) prompts.Owner {
	acct := p.Accounts[account]
	return prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)}
}

type styleWire struct {
	Rules *[]string `json:"rules"`
}

// StyleSchema is the ResponseSchema of a distillation call.
func StyleSchema() *llm.Schema {
	return &llm.Schema{Type: "object", Required: []string{"rules"}, Properties: map[string]*llm.Schema{
		"rules": {Type: "array", MaxItems: ptr[int64](MaxStyleRules),
			Items: &llm.Schema{Type: "string", MaxLength: ptr[int64](maxStyleRuleChars)}},
	}}
}

// Distill asks the model for the owner's general style rules from their
// edit records, validated: at most MaxStyleRules, each one non-empty line
// of at most 160 characters with no address or link (style is about how
// the owner writes, never about whom or where).
func (l *Learner) Distill(ctx context.Context, owner prompts.Owner, edits []store.MemoryRecord) ([]string, error) {
	d := prompts.StyleData{Owner: owner, Boundary: prompts.NewBoundary(), MaxRules: MaxStyleRules}
	for _, e := range edits {
		d.Edits = append(d.Edits, e.Text)
	}
	system, user, err := l.Prompts.Style(d)
	if err != nil {
		return nil, fmt.Errorf("render style prompt: %w", err)
	}
	w, _, err := llm.GenerateJSON(ctx, l.Model, llm.Request{System: system, Prompt: user, Schema: StyleSchema()}, func(w *styleWire) error {
		if w.Rules == nil {
			return &ValidationError{Problems: []string{"rules: required"}}
		}
		var p []string
		if len(*w.Rules) > MaxStyleRules {
			p = append(p, fmt.Sprintf("rules: %d, at most %d", len(*w.Rules), MaxStyleRules))
		}
		for i, r := range *w.Rules {
			r = strings.TrimSpace(r)
			switch {
			case r == "" || strings.ContainsAny(r, "\r\n"):
				p = append(p, fmt.Sprintf("rules[%d]: one non-empty line", i))
			case utf8.RuneCountInString(r) > maxStyleRuleChars:
				p = append(p, fmt.Sprintf("rules[%d]: at most %d characters", i, maxStyleRuleChars))
			case strings.Contains(r, "@") || strings.Contains(strings.ToLower(r), "http") || strings.Contains(strings.ToLower(r), "www."):
				p = append(p, fmt.Sprintf("rules[%d]: no addresses or links in a style rule", i))
			}
		}
		if len(p) > 0 {
			return &ValidationError{Problems: p}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("distill style: %w", err)
	}
	var out []string
	for _, r := range *w.Rules {
		out = append(out, strings.TrimSpace(r))
	}
	return out, nil
}

// LearnOwnerReplies keeps the replies the owner wrote in their own client
// (read from the Sent folder; the caller leaves out mailagent's own and
// automatic mail) as examples of their voice, one per recipient, for later
// drafts to that recipient. m.CleanText is the text kept.
func (p *Pipeline) LearnOwnerReplies(account string, sent []*mail.Message) {
	a := p.Actor
	if a == nil || a.Memory == nil {
		return
	}
	owner := p.Accounts[account].Owner
	var es []*store.Example
	for _, m := range sent {
		if m == nil || strings.TrimSpace(m.CleanText) == "" || m.HeaderValue(TraceHeader) != "" || IsAutomatic(m) {
			continue
		}
		for _, to := range m.To {
			if to.Email == "" || owner.IsOwner(to.Email) || p.Accounts.IsAgentAddress(account, to.Email) {
				continue
			}
			es = append(es, &store.Example{Account: account, Kind: store.ExampleOwnerReply, Contact: to.Email,
				Subject: m.Subject, Text: m.CleanText, Source: m.MessageID, Created: m.Date})
		}
	}
	// One commit for the batch (a first start reads a year of Sent).
	if len(es) > 0 {
		if err := a.Memory.AddExamples(es); err != nil {
			p.logger().Warn("learn: owner reply", "err", err)
		}
	}
}
