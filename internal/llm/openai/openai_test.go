package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/openai"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
)

type oaVerdict struct {
	Label string `json:"label"`
	Score int    `json:"score"`
}

var oaVerdictSchema = &llm.Schema{
	Type: "object",
	Properties: map[string]*llm.Schema{
		"label": {Type: "string", Enum: []string{"spam", "ham"}},
		"score": {Type: "integer"},
	},
	Required: []string{"label", "score"},
}

func validOAVerdict(v *oaVerdict) error {
	if v.Label != "spam" && v.Label != "ham" {
		return errors.New("label: not spam or ham")
	}
	return nil
}

// oaVerdictModel answers like a model that read the schema it was shown: it
// fails when it cannot see one.
func oaVerdictModel(req *openaitest.Request) openaitest.Reply {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	if props["label"] == nil {
		return openaitest.Reply{Text: "I am not sure what format you want.", Usage: llm.Usage{PromptTokens: 5, OutputTokens: 5, TotalTokens: 10}}
	}
	return openaitest.JSONReply(map[string]any{"label": "ham", "score": 3}, llm.Usage{PromptTokens: 120, OutputTokens: 9, TotalTokens: 129})
}

func TestOpenAIStructuredOutputModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []openaitest.Mode{openaitest.ModeStrict, openaitest.ModeJSONOnly, openaitest.ModeProse} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := openaitest.NewServer(t, mode, oaVerdictModel)
			m := srv.NewOpenAI(t, openai.Config{})
			v, info, err := llm.GenerateJSON(t.Context(), m, llm.Request{System: "Classify.", Prompt: "hello", Schema: oaVerdictSchema}, validOAVerdict)
			if err != nil {
				t.Fatalf("GenerateJSON: %v", err)
			}
			if v != (oaVerdict{"ham", 3}) || info.Attempts != 1 || info.Repaired {
				t.Fatalf("got %+v info %+v, want ham/3 in one attempt", v, info)
			}
			if info.Usage != (llm.Usage{PromptTokens: 120, OutputTokens: 9, TotalTokens: 129}) || info.Model != openaitest.DefaultModel {
				t.Fatalf("usage/model not recorded: %+v", info)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			inPrompt := openaitest.PromptSchema(r.SystemText()) != nil
			switch mode {
			case openaitest.ModeStrict:
				if r.Format != "json_schema" || !r.Strict || inPrompt {
					t.Fatalf("strict server: format %q strict %v schema in prompt %v", r.Format, r.Strict, inPrompt)
				}
				rf := r.Body["response_format"].(map[string]any)["json_schema"].(map[string]any)["schema"].(map[string]any)
				if rf["additionalProperties"] != false {
					t.Fatalf("strict schema lacks additionalProperties false: %v", rf)
				}
			case openaitest.ModeJSONOnly:
				if r.Format != "json_object" || !inPrompt {
					t.Fatalf("json-only server: format %q, schema in prompt %v", r.Format, inPrompt)
				}
			case openaitest.ModeProse:
				if r.Format != "" || !inPrompt {
					t.Fatalf("prose server: format %q, schema in prompt %v", r.Format, inPrompt)
				}
			}
		})
	}
}

// TestOpenAISameValidationEveryMode: an answer that breaks the Go
// validation is repaired once and then refused, in every mode: no mode
// weakens the gate.
func TestOpenAISameValidationEveryMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []openaitest.Mode{openaitest.ModeStrict, openaitest.ModeJSONOnly, openaitest.ModeProse} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := openaitest.NewServer(t, mode, func(*openaitest.Request) openaitest.Reply {
				return openaitest.JSONReply(map[string]any{"label": "definitely-legit", "score": 1}, llm.Usage{TotalTokens: 7})
			})
			m := srv.NewOpenAI(t, openai.Config{})
			_, info, err := llm.GenerateJSON(t.Context(), m, llm.Request{Prompt: "x", Schema: oaVerdictSchema}, validOAVerdict)
			var inv *llm.InvalidOutputError
			if !errors.As(err, &inv) || info.Attempts != 2 {
				t.Fatalf("err %v attempts %d, want InvalidOutputError after 2", err, info.Attempts)
			}
			if !strings.Contains(srv.Requests()[1].UserText(), "Correction needed") {
				t.Fatal("second call is not the repair prompt")
			}
		})
	}
}

// TestOpenAIProseWithoutJSONFails: a server that answers prose only is
// never turned into a oaVerdict.
func TestOpenAIProseWithoutJSONFails(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: "This mail looks like ham to me, score 3."}
	})
	m := srv.NewOpenAI(t, openai.Config{StructuredOutput: llm.OutputPrompt})
	_, _, err := llm.GenerateJSON(t.Context(), m, llm.Request{Prompt: "x", Schema: oaVerdictSchema}, validOAVerdict)
	var inv *llm.InvalidOutputError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want InvalidOutputError", err)
	}
}

func TestOpenAIRetriesTemporaryErrors(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply {
		switch n.Add(1) {
		case 1:
			r := openaitest.ErrorReply(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down")
			r.Header = http.Header{"Retry-After": {"7"}}
			return r
		case 2:
			return openaitest.ErrorReply(http.StatusServiceUnavailable, "server_error", "loading model")
		}
		return openaitest.JSONReply(map[string]any{"label": "spam", "score": 9}, llm.Usage{TotalTokens: 3})
	})
	var slept []time.Duration
	m := llm.WithRetry(srv.NewOpenAI(t, openai.Config{}), llm.RetryOptions{Sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	v, info, err := llm.GenerateJSON(t.Context(), m, llm.Request{Prompt: "x", Schema: oaVerdictSchema}, validOAVerdict)
	if err != nil || v.Label != "spam" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if info.Retries != 2 || n.Load() != 3 {
		t.Fatalf("retries %d requests %d, want 2 and 3", info.Retries, n.Load())
	}
	if len(slept) != 2 || slept[0] < 7*time.Second {
		t.Fatalf("slept %v, want the server's 7s first", slept)
	}
}

func TestOpenAIUnauthorizedIsPermanent(t *testing.T) {
	const key = "sk-local-secret-4242"
	t.Setenv("OPENAI_API_KEY", "sk-from-environment-must-not-be-used")
	t.Setenv("OPENAI_ORG_ID", "org-from-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	var n atomic.Int32
	var auth atomic.Value
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(r *openaitest.Request) openaitest.Reply {
		n.Add(1)
		auth.Store(r.Header.Get("Authorization") + r.Header.Get("OpenAI-Organization"))
		return openaitest.ErrorReply(http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided: "+key)
	})
	m := llm.WithRetry(srv.NewOpenAI(t, openai.Config{APIKey: key}), llm.RetryOptions{Sleep: func(context.Context, time.Duration) error {
		t.Fatal("a 401 was retried")
		return nil
	}})
	_, err := m.Generate(t.Context(), llm.Request{Prompt: "x"})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || llm.IsTemporary(err) {
		t.Fatalf("err = %v, want permanent 401 APIError", err)
	}
	if n.Load() != 1 {
		t.Fatalf("%d requests, want 1", n.Load())
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "api_key_env") {
		t.Fatalf("error leaks the key or names no fix: %v", err)
	}
	if got := auth.Load(); got != "Bearer "+key {
		t.Fatalf("Authorization = %q, want the configured key (not the environment's)", got)
	}
}

func TestOpenAIDeadlines(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: "{}", Delay: 10 * time.Second}
	})
	t.Run("call timeout", func(t *testing.T) {
		m := srv.NewOpenAI(t, openai.Config{CallTimeout: 100 * time.Millisecond})
		start := time.Now()
		_, err := m.Generate(t.Context(), llm.Request{Prompt: "x"})
		if !errors.Is(err, context.DeadlineExceeded) || !llm.IsTemporary(err) || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %s, want a temporary deadline error at once", err, time.Since(start))
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		m := llm.WithRetry(srv.NewOpenAI(t, openai.Config{}), llm.RetryOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := m.Generate(ctx, llm.Request{Prompt: "x"})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %s, want the caller's deadline honoured", err, time.Since(start))
		}
	})
}

func TestOpenAIRefusalAndEmpty(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(r *openaitest.Request) openaitest.Reply {
		if strings.Contains(r.UserText(), "refuse") {
			return openaitest.Reply{Refusal: "I can't help with that.", Usage: llm.Usage{TotalTokens: 4}}
		}
		return openaitest.Reply{Text: "  ", FinishReason: "length"}
	})
	m := srv.NewOpenAI(t, openai.Config{})
	if _, err := m.Generate(t.Context(), llm.Request{Prompt: "refuse"}); !errors.Is(err, llm.ErrBlocked) {
		t.Fatalf("refusal: err = %v, want ErrBlocked", err)
	}
	if _, err := m.Generate(t.Context(), llm.Request{Prompt: "x"}); !errors.Is(err, llm.ErrEmptyResponse) {
		t.Fatalf("empty: err = %v, want ErrEmptyResponse", err)
	}
}

func TestOpenAIListModelsAndUnknownModel(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, nil)
	srv.Models = []string{"a:1b", openaitest.DefaultModel}
	m := srv.NewOpenAI(t, openai.Config{})
	ids, err := m.ListModels(t.Context())
	if err != nil || len(ids) != 2 || ids[1] != openaitest.DefaultModel {
		t.Fatalf("ListModels = %v, %v", ids, err)
	}
	_, err = srv.NewOpenAI(t, openai.Config{Model: "missing:70b"}).Generate(t.Context(), llm.Request{Prompt: "x"})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(err.Error(), "missing:70b") {
		t.Fatalf("err = %v, want 404 naming the model", err)
	}
}

// TestOpenAIOptionalPropertiesStrict: a schema with optional properties is
// still sent strict, in the form strict mode accepts (every property
// required, the optional ones nullable, null in an optional enum), and an
// answer with null there decodes like one without the field.
func TestOpenAIOptionalPropertiesStrict(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: `{"label":"ham","note":null,"tone":null,"window":null}`}
	})
	s := &llm.Schema{Type: "object", Required: []string{"label"}, Properties: map[string]*llm.Schema{
		"label":  {Type: "string"},
		"note":   {Type: "string"},
		"tone":   {Type: "string", Enum: []string{"warm", "formal"}},
		"window": {Type: "object", Required: []string{"start"}, Properties: map[string]*llm.Schema{"start": {Type: "string"}, "end": {Type: "string"}}},
	}}
	type answer struct {
		Label, Note, Tone string
		Window            *struct{ Start, End string }
	}
	got, _, err := llm.GenerateJSON[answer](t.Context(), srv.NewOpenAI(t, openai.Config{}), llm.Request{Prompt: "x", Schema: s}, nil)
	if err != nil || got.Label != "ham" || got.Note != "" || got.Tone != "" || got.Window != nil {
		t.Fatalf("answer with nulls: %+v %v", got, err)
	}
	r := srv.Requests()[0]
	if r.Format != "json_schema" || !r.Strict {
		t.Fatalf("format %q strict %v, want json_schema strict", r.Format, r.Strict)
	}
	js := r.ResponseSchema()
	b, _ := json.Marshal(js)
	var shape struct {
		Required   []string
		Properties map[string]struct {
			Type     any
			Enum     []any
			Required []string
		}
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if strings.Join(shape.Required, ",") != "label,note,tone,window" {
		t.Errorf("required %v, want every property", shape.Required)
	}
	if typ := fmt.Sprint(shape.Properties["label"].Type); typ != "string" {
		t.Errorf("a required property became %v", typ)
	}
	for _, name := range []string{"note", "tone", "window"} {
		if typ := fmt.Sprint(shape.Properties[name].Type); !strings.HasSuffix(typ, " null]") {
			t.Errorf("optional %s has type %v, want nullable", name, typ)
		}
	}
	if e := shape.Properties["tone"].Enum; len(e) != 3 || e[2] != nil {
		t.Errorf("optional enum %v, want null added", e)
	}
	if req := shape.Properties["window"].Required; strings.Join(req, ",") != "end,start" {
		t.Errorf("nested object required %v, want every property", req)
	}
}

// TestNewRejectsBadConfig: an unknown structured-output mode and an
// empty model name are refused when the client is built.
func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	if _, err := openai.New(openai.Config{Model: "m", StructuredOutput: "xml"}); err == nil {
		t.Error("New accepted an unknown mode")
	}
	if _, err := openai.New(openai.Config{}); err == nil {
		t.Error("New accepted an empty model")
	}
}

// TestOpenAITruncatedAnswer: finish_reason "length" is reported with the
// neutral name Gemini uses, MAX_TOKENS.
func TestOpenAITruncatedAnswer(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: `{"label":"h`, FinishReason: "length"}
	})
	resp, err := srv.NewOpenAI(t, openai.Config{}).Generate(t.Context(), llm.Request{Prompt: "x"})
	if err != nil || resp.FinishReason != "MAX_TOKENS" {
		t.Fatalf("got %+v, %v; want FinishReason MAX_TOKENS", resp, err)
	}
}
