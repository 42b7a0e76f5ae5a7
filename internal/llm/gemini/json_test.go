package gemini_test

// GenerateJSON over Gemini: valid, repaired and invalid answers, and the
// provider's empty, blocked and failed answers that are never repaired.
// These tests were internal/llm's (see retry_test.go).

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

type verdict struct {
	Label string   `json:"label"`
	Tags  []string `json:"tags"`
}

func validateVerdict(v *verdict) error {
	if v.Label != "a" && v.Label != "b" {
		return fmt.Errorf("label %q is not one of a, b", v.Label)
	}
	if len(v.Tags) == 0 {
		return errors.New("tags must not be empty")
	}
	return nil
}

func TestGenerateJSON(t *testing.T) {
	t.Parallel()
	u := llm.Usage{PromptTokens: 10, OutputTokens: 3, TotalTokens: 13}
	valid := geminitest.Reply{Text: `{"label":"a","tags":["x"]}`, Usage: u}
	tests := []struct {
		name         string
		replies      []geminitest.Reply
		wantRequests int
		wantErrAs    any   // pointer to a target type for errors.As, or nil
		wantErrIs    error // for errors.Is, or nil
		wantRepaired bool
		wantInRepair []string // substrings of the repair prompt
		wantInvalid  string   // substring of the InvalidOutputError's validation error
	}{
		{name: "valid first time", replies: []geminitest.Reply{valid}, wantRequests: 1},
		{name: "valid with surrounding whitespace", replies: []geminitest.Reply{{Text: "\n  {\"label\":\"b\",\"tags\":[\"y\"]}\n", Usage: u}}, wantRequests: 1},
		{name: "invalid then repaired", replies: []geminitest.Reply{{Text: `{"label":"zzz","tags":["x"]}`, Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{`label "zzz" is not one of a, b`, `{"label":"zzz","tags":["x"]}`}},
		{name: "garbage then repaired", replies: []geminitest.Reply{{Text: "Sure! Here is the JSON you asked for.", Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{"Sure! Here is the JSON", "invalid character"}},
		{name: "code fence is not coerced", replies: []geminitest.Reply{{Text: "```json\n{\"label\":\"a\",\"tags\":[\"x\"]}\n```", Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{"```json"}},
		{name: "unknown field then repaired", replies: []geminitest.Reply{{Text: `{"label":"a","tags":["x"],"send_to":"evil@example.com"}`, Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{`unknown field "send_to"`}},
		{name: "trailing data then repaired", replies: []geminitest.Reply{{Text: `{"label":"a","tags":["x"]} {"label":"b"}`, Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{"trailing data"}},
		{name: "null then repaired", replies: []geminitest.Reply{{Text: `null`, Usage: u}, valid},
			wantRequests: 2, wantRepaired: true, wantInRepair: []string{"null"}},
		{name: "invalid twice", replies: []geminitest.Reply{{Text: `{"label":"zzz","tags":["x"]}`, Usage: u}, {Text: `{"label":"a","tags":[]}`, Usage: u}},
			wantRequests: 2, wantErrAs: new(*llm.InvalidOutputError), wantInvalid: "tags must not be empty"},
		{name: "unknown field twice", replies: []geminitest.Reply{{Text: `{"label":"a","tags":["x"],"extra":1}`, Usage: u}},
			wantRequests: 2, wantErrAs: new(*llm.InvalidOutputError), wantInvalid: `unknown field "extra"`},
		{name: "empty candidates not repaired", replies: []geminitest.Reply{{Body: `{"candidates":[]}`}, valid},
			wantRequests: 1, wantErrIs: llm.ErrEmptyResponse},
		{name: "safety block not repaired", replies: []geminitest.Reply{{Text: "x", FinishReason: "SAFETY"}, valid},
			wantRequests: 1, wantErrIs: llm.ErrBlocked},
		{name: "transport error not repaired", replies: []geminitest.Reply{geminitest.ErrorReply(400, "INVALID_ARGUMENT", "bad"), valid},
			wantRequests: 1, wantErrAs: new(*llm.APIError)},
		{name: "transport error on repair call", replies: []geminitest.Reply{{Text: "nope", Usage: u}, geminitest.ErrorReply(403, "PERMISSION_DENIED", "no")},
			wantRequests: 2, wantErrAs: new(*llm.APIError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, sequence(tt.replies...))
			g := srv.NewGemini(t, gemini.Config{})
			req := llm.Request{System: "sys prompt", Prompt: "user prompt", Schema: testSchema()}
			v, info, err := llm.GenerateJSON(t.Context(), g, req, validateVerdict)

			reqs := srv.Requests()
			if len(reqs) != tt.wantRequests {
				t.Fatalf("requests: got %d, want %d", len(reqs), tt.wantRequests)
			}
			wantErr := tt.wantErrAs != nil || tt.wantErrIs != nil
			switch {
			case !wantErr && err != nil:
				t.Fatalf("GenerateJSON: %v", err)
			case wantErr && err == nil:
				t.Fatalf("got nil error and %+v, want an error", v)
			case tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs):
				t.Errorf("error: got %v, want errors.Is %v", err, tt.wantErrIs)
			case tt.wantErrAs != nil && !errors.As(err, tt.wantErrAs):
				t.Errorf("error: got %v (%T), want errors.As %T", err, err, tt.wantErrAs)
			}
			if tt.wantInvalid != "" {
				var ie *llm.InvalidOutputError
				if errors.As(err, &ie) {
					if !strings.Contains(ie.Err.Error(), tt.wantInvalid) {
						t.Errorf("validation error: got %q, want it to contain %q", ie.Err, tt.wantInvalid)
					}
					if ie.Output != tt.replies[len(tt.replies)-1].Text {
						t.Errorf("output: got %q, want %q", ie.Output, tt.replies[len(tt.replies)-1].Text)
					}
				}
			}
			if !wantErr {
				if v.Label == "" || len(v.Tags) == 0 {
					t.Errorf("value: got %+v, want a validated verdict", v)
				}
				if info.Repaired != tt.wantRepaired {
					t.Errorf("repaired: got %v, want %v", info.Repaired, tt.wantRepaired)
				}
				if got, want := info.Attempts, tt.wantRequests; got != want {
					t.Errorf("attempts: got %d, want %d", got, want)
				}
				if got, want := info.Usage.TotalTokens, int32(13*tt.wantRequests); got != want {
					t.Errorf("total tokens: got %d, want %d", got, want)
				}
				if info.Model != geminitest.DefaultModel {
					t.Errorf("model: got %q, want %q", info.Model, geminitest.DefaultModel)
				}
			}
			for i, r := range reqs {
				if r.SystemText() != "sys prompt" {
					t.Errorf("request %d system: got %q, want %q", i, r.SystemText(), "sys prompt")
				}
				if r.ResponseSchema() == nil {
					t.Errorf("request %d: no responseSchema", i)
				}
			}
			if len(reqs) == 2 {
				repair := reqs[1].UserText()
				if !strings.HasPrefix(repair, "user prompt") {
					t.Errorf("repair prompt does not start with the original prompt: %q", repair)
				}
				if !strings.Contains(repair, "corrected JSON only") {
					t.Errorf("repair prompt does not ask for corrected JSON only: %q", repair)
				}
				for _, want := range tt.wantInRepair {
					if !strings.Contains(repair, want) {
						t.Errorf("repair prompt: got %q, want it to contain %q", repair, want)
					}
				}
			}
		})
	}
}

func TestGenerateJSONRetriesCounted(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, sequence(
		geminitest.ErrorReply(503, "UNAVAILABLE", "busy"),
		geminitest.Reply{Text: `{"label":"x","tags":["t"]}`},
		geminitest.ErrorReply(503, "UNAVAILABLE", "busy"),
		geminitest.Reply{Text: `{"label":"a","tags":["t"]}`},
	))
	m := llm.WithRetry(srv.NewGemini(t, gemini.Config{}), llm.RetryOptions{Sleep: (&sleepRecorder{}).Sleep})
	_, info, err := llm.GenerateJSON(t.Context(), m, llm.Request{Prompt: "p"}, validateVerdict)
	if err != nil {
		t.Fatalf("GenerateJSON: %v", err)
	}
	if info.Retries != 2 || info.Attempts != 2 || !info.Repaired {
		t.Errorf("info: got %+v, want Retries 2, Attempts 2, Repaired", info)
	}
}
