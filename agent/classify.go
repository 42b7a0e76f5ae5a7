package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Intents the classifier may return, in schema order.
var Intents = []string{
	"scheduling", "information_request", "action_request", "introduction_networking",
	"sales_vendor", "fyi_notification", "sensitive_legal_financial", "complaint",
	"follow_up", "spam", "unknown_ambiguous",
}

// Risks, Actions: the other enums of the classification schema.
var (
	Risks   = []string{"low", "medium", "high"}
	Actions = []string{"reply", "forward", "ignore"}
)

// Limits of the classification schema.
const (
	MaxSummaryChars  = 200
	MaxCommentsChars = 500
)

func ptr[T any](v T) *T { return &v }

// ClassificationSchema is the ResponseSchema sent with every classify call.
func ClassificationSchema() *llm.Schema {
	return &llm.Schema{
		Type: "object",
		Properties: map[string]*llm.Schema{
			"intents": {Type: "array", MinItems: ptr[int64](1), MaxItems: ptr(int64(len(Intents))),
				Items: &llm.Schema{Type: "string", Enum: Intents}},
			"risk":              {Type: "string", Enum: Risks},
			"action":            {Type: "string", Enum: Actions},
			"requires_approval": {Type: "boolean"},
			"confidence":        {Type: "number", Minimum: ptr(0.0), Maximum: ptr(1.0)},
			"summary":           {Type: "string", MaxLength: ptr[int64](MaxSummaryChars), Description: "one line, at most 200 characters"},
			"comments":          {Type: "string", MaxLength: ptr[int64](MaxCommentsChars), Description: "why, 1 to 500 characters"},
			"reply_by":          {Type: "string", Description: "YYYY-MM-DD the sender asks an answer by, or empty"},
			"requested_window": {Type: "object", Description: "scheduling mail only: the days the sender asks to meet in",
				Properties: map[string]*llm.Schema{
					"start": {Type: "string", Description: "YYYY-MM-DD, first day"},
					"end":   {Type: "string", Description: "YYYY-MM-DD, last day"},
				},
				PropertyOrdering: []string{"start", "end"}},
		},
		Required:         []string{"intents", "risk", "action", "requires_approval", "confidence", "summary", "comments"},
		PropertyOrdering: []string{"intents", "risk", "action", "requires_approval", "confidence", "summary", "comments", "reply_by", "requested_window"},
	}
}

// classificationWire is the JSON the model returns. Pointers tell a missing
// field from a zero value, so that "required" is really checked.
type classificationWire struct {
	Intents          []string `json:"intents"`
	Risk             *string  `json:"risk"`
	Action           *string  `json:"action"`
	RequiresApproval *bool    `json:"requires_approval"`
	Confidence       *float64 `json:"confidence"`
	Summary          *string  `json:"summary"`
	Comments         *string  `json:"comments"`
	// ReplyBy is optional; code checks it before use (followup.ValidDeadline).
	ReplyBy *string `json:"reply_by"`
	// RequestedWindow is optional and read leniently: anything but an
	// object of two short strings is dropped, never a validation failure;
	// code checks it before use (ValidWindow).
	RequestedWindow json.RawMessage `json:"requested_window"`
}

// ValidationError lists every way a model answer broke the schema.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	return "invalid classification: " + strings.Join(e.Problems, "; ")
}

func validateClassification(w *classificationWire) error {
	var p []string
	if w.Intents == nil {
		p = append(p, "intents: required")
	} else if len(w.Intents) == 0 {
		p = append(p, "intents: need at least 1")
	}
	seen := map[string]bool{}
	for i, in := range w.Intents {
		if !slices.Contains(Intents, in) {
			p = append(p, fmt.Sprintf("intents[%d]: %q is not one of %s", i, in, strings.Join(Intents, ", ")))
		}
		if seen[in] {
			p = append(p, fmt.Sprintf("intents[%d]: %q repeated", i, in))
		}
		seen[in] = true
	}
	enum := func(name string, v *string, allowed []string) {
		switch {
		case v == nil:
			p = append(p, name+": required")
		case !slices.Contains(allowed, *v):
			p = append(p, fmt.Sprintf("%s: %q is not one of %s", name, *v, strings.Join(allowed, ", ")))
		}
	}
	enum("risk", w.Risk, Risks)
	enum("action", w.Action, Actions)
	if w.RequiresApproval == nil {
		p = append(p, "requires_approval: required")
	}
	switch {
	case w.Confidence == nil:
		p = append(p, "confidence: required")
	case math.IsNaN(*w.Confidence) || *w.Confidence < 0 || *w.Confidence > 1:
		p = append(p, fmt.Sprintf("confidence: %v is outside 0–1", *w.Confidence))
	}
	switch {
	case w.Summary == nil:
		p = append(p, "summary: required")
	case utf8.RuneCountInString(*w.Summary) > MaxSummaryChars:
		p = append(p, fmt.Sprintf("summary: %d characters, at most %d", utf8.RuneCountInString(*w.Summary), MaxSummaryChars))
	}
	switch {
	case w.Comments == nil:
		p = append(p, "comments: required")
	case strings.TrimSpace(*w.Comments) == "":
		p = append(p, "comments: need 1 to 500 characters, got none")
	case utf8.RuneCountInString(*w.Comments) > MaxCommentsChars:
		p = append(p, fmt.Sprintf("comments: %d characters, at most %d", utf8.RuneCountInString(*w.Comments), MaxCommentsChars))
	}
	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

func (w *classificationWire) classification() store.Classification {
	return store.Classification{
		Intents: w.Intents, Risk: *w.Risk, Action: *w.Action,
		RequiresApproval: *w.RequiresApproval, Confidence: *w.Confidence,
		Summary: *w.Summary, Comments: *w.Comments, ReplyBy: replyBy(w.ReplyBy),
		RequestedWindow: requestedWindow(w.RequestedWindow),
	}
}

// requestedWindow keeps a requested_window that is an object with short
// start and end strings, as the model wrote them (checked when used);
// null, any other shape or longer text is dropped.
func requestedWindow(raw json.RawMessage) *store.DateWindow {
	var v struct {
		Start *string `json:"start"`
		End   *string `json:"end"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v.Start == nil || v.End == nil ||
		len(*v.Start) > 32 || len(*v.End) > 32 {
		return nil
	}
	return &store.DateWindow{Start: strings.TrimSpace(*v.Start), End: strings.TrimSpace(*v.End)}
}

// replyBy keeps a short reply_by as the model wrote it (checked later,
// when it is used); anything longer than a date could be is dropped.
func replyBy(s *string) string {
	if s == nil || len(*s) > 32 {
		return ""
	}
	return strings.TrimSpace(*s)
}

// ClassifyRequest is what a classifier may see of one message. It is built
// by the pipeline, which is what enforces the memory-isolation and
// no-raw-HTML rules: the classifier gets nothing else.
type ClassifyRequest struct {
	Owner       prompts.Owner
	Thread      []prompts.ThreadMessage // earlier messages of the same thread, trimmed
	From        string
	To          string
	Subject     string
	Date        string
	Body        string // clean text, capped
	Attachments []string
	Route       string
}

// Classifier returns a validated classification for one message.
type Classifier interface {
	Classify(ctx context.Context, req ClassifyRequest) (store.Classification, llm.CallInfo, error)
}

// LLMClassifier classifies with a language model through a schema-checked
// call with one repair attempt.
type LLMClassifier struct {
	Model   llm.Model
	Prompts *prompts.Set
}

// ErrModelOutput marks a classification that failed validation twice.
var ErrModelOutput = errors.New("model output failed validation")

// Classify renders the prompt with a fresh boundary and asks the model.
func (c *LLMClassifier) Classify(ctx context.Context, req ClassifyRequest) (store.Classification, llm.CallInfo, error) {
	system, user, err := c.Prompts.Classify(prompts.ClassifyData{
		Owner: req.Owner, Boundary: prompts.NewBoundary(), Thread: req.Thread,
		From: req.From, To: req.To, Subject: req.Subject, Date: req.Date,
		Body: req.Body, Attachments: req.Attachments, Route: req.Route,
	})
	if err != nil {
		return store.Classification{}, llm.CallInfo{}, fmt.Errorf("render classify prompt: %w", err)
	}
	temp := float32(0)
	w, info, err := llm.GenerateJSON(ctx, c.Model, llm.Request{
		System: system, Prompt: user, Schema: ClassificationSchema(), Temperature: &temp,
	}, validateClassification)
	if err != nil {
		var inv *llm.InvalidOutputError
		if errors.As(err, &inv) {
			return store.Classification{}, info, fmt.Errorf("%w: %w", ErrModelOutput, err)
		}
		return store.Classification{}, info, fmt.Errorf("classify: %w", err)
	}
	return w.classification(), info, nil
}
