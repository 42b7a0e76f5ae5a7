package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Draft is a reply body written by the model. It carries no recipients:
// those are chosen by code.
type Draft struct {
	Body            string `json:"body"`
	Tone            string `json:"tone"`
	NeedsOwnerInput bool   `json:"needs_owner_input"`
}

// DraftRequest is what a drafter may see: the message, its thread, the
// owner's profile and the memory of this message's own contact only.
type DraftRequest struct {
	Owner       prompts.Owner
	Profile     string
	Contact     *store.Contact // the sender's memory; nil when none
	Thread      []prompts.ThreadMessage
	From        string
	Subject     string
	Date        string
	Body        string
	Intents     []string
	Instruction string // the owner's regenerate instruction
	// Memory is the learned memory selected for this contact within the
	// budget (Pipeline.memoryFor); empty for an unauthenticated sender.
	Memory    prompts.Memory
	FreeSlots string // the owner's free slots (scheduling mail), from code
	// Tools are the external tools' results (tools.go), untrusted and
	// fenced, already cut to the tool step's budget.
	Tools []prompts.ToolResult
}

// Drafter writes reply drafts.
type Drafter interface {
	Draft(ctx context.Context, req DraftRequest) (Draft, llm.CallInfo, error)
}

// DraftSchema is the ResponseSchema of a draft call.
func DraftSchema(maxChars int) *llm.Schema {
	s := &llm.Schema{
		Type: "object",
		Properties: map[string]*llm.Schema{
			"body":              {Type: "string", Description: "the reply body only: no headers, no recipients"},
			"tone":              {Type: "string", Description: "one word for the tone used"},
			"needs_owner_input": {Type: "boolean", Description: "true when the reply needs facts or a decision only the owner has"},
		},
		Required:         []string{"body", "tone", "needs_owner_input"},
		PropertyOrdering: []string{"body", "tone", "needs_owner_input"},
	}
	if maxChars > 0 {
		s.Properties["body"].MaxLength = ptr(int64(maxChars))
	}
	return s
}

type draftWire struct {
	Body            *string `json:"body"`
	Tone            *string `json:"tone"`
	NeedsOwnerInput *bool   `json:"needs_owner_input"`
}

// ToneFor picks the tone the prompt asks for, from the intents.
func ToneFor(intents []string) string {
	switch {
	case slices.Contains(intents, "complaint"):
		return "empathetic: acknowledge the problem first, apologise where fair, say what happens next"
	case slices.Contains(intents, "sensitive_legal_financial"):
		return "careful and formal: commit to nothing, say the owner will follow up"
	case slices.Contains(intents, "fyi_notification"), slices.Contains(intents, "follow_up"):
		return "brief: a short acknowledgement"
	case slices.Contains(intents, "scheduling"):
		return "brief and concrete: confirm or propose times only from the thread"
	default:
		return "friendly and concise, in the owner's style"
	}
}

// LLMDrafter drafts with a language model.
type LLMDrafter struct {
	Model    llm.Model
	Prompts  *prompts.Set
	MaxChars int
}

// Draft renders the draft prompt and validates the answer.
func (d *LLMDrafter) Draft(ctx context.Context, req DraftRequest) (Draft, llm.CallInfo, error) {
	data := prompts.DraftData{
		Owner: req.Owner, Profile: req.Profile, Boundary: prompts.NewBoundary(), Thread: req.Thread,
		From: req.From, Subject: req.Subject, Date: req.Date, Body: req.Body, Intents: req.Intents,
		Tone: ToneFor(req.Intents), Instruction: req.Instruction, Memory: req.Memory, FreeSlots: req.FreeSlots,
		Tools: req.Tools,
	}
	if c := req.Contact; c != nil {
		data.ContactSummary = c.Summary
		data.ContactNotes = c.Notes
		for _, h := range c.History {
			data.ContactHistory = append(data.ContactHistory, fmt.Sprintf("%s %s %q: %s", h.Date.Format("2006-01-02"), h.Direction, h.Subject, h.Summary))
		}
	}
	system, user, err := d.Prompts.Draft(data)
	if err != nil {
		return Draft{}, llm.CallInfo{}, fmt.Errorf("render draft prompt: %w", err)
	}
	maxChars := d.MaxChars
	validate := func(w *draftWire) error {
		var p []string
		switch {
		case w.Body == nil:
			p = append(p, "body: required")
		case strings.TrimSpace(*w.Body) == "":
			p = append(p, "body: empty")
		case maxChars > 0 && utf8.RuneCountInString(*w.Body) > maxChars:
			p = append(p, fmt.Sprintf("body: %d characters, at most %d", utf8.RuneCountInString(*w.Body), maxChars))
		}
		if w.Tone == nil {
			p = append(p, "tone: required")
		}
		if w.NeedsOwnerInput == nil {
			p = append(p, "needs_owner_input: required")
		}
		if len(p) > 0 {
			return &ValidationError{Problems: p}
		}
		return nil
	}
	temp := float32(0.4)
	w, info, err := llm.GenerateJSON(ctx, d.Model, llm.Request{System: system, Prompt: user, Schema: DraftSchema(maxChars), Temperature: &temp}, validate)
	if err != nil {
		return Draft{}, info, fmt.Errorf("draft: %w", err)
	}
	return Draft{Body: strings.TrimSpace(*w.Body), Tone: *w.Tone, NeedsOwnerInput: *w.NeedsOwnerInput}, info, nil
}
