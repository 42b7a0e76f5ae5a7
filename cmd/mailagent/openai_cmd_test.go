package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
)

// slowClassify is classifyReply answering after 40ms, so the recorded
// latency is measurable.
func slowClassify(req *geminitest.Request) geminitest.Reply {
	r := classifyReply(req)
	r.Delay = 40 * time.Millisecond
	return r
}

// TestTriageEveryProvider runs `triage --json`, `explain --json` and
// `status --json` against Gemini and the OpenAI-compatible fake in each
// server mode: the same mail gives the same decisions, the invalid answer
// is repaired once and then refused, and tokens, model and latency land in
// the trace and in status alike.
func TestTriageEveryProvider(t *testing.T) {
	t.Parallel()
	for _, p := range []string{provGemini, provStrict, provJSONOnly, provProse} {
		t.Run(p, func(t *testing.T) {
			h := newHarnessOn(t, p, slowClassify, "")
			h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
			h.deliver(rawMail("Carol <carol@example.org>", "Overdue invoice", "Your invoice 4411 is overdue."))
			h.deliver(rawMail("Mallory <mallory@example.org>", "GARBAGE please", "x"))

			stdout, stderr, code := h.run("triage", "--json")
			if code != ExitPartial {
				t.Fatalf("exit %d, want %d\n%s", code, ExitPartial, stderr)
			}
			got := decodeLines(t, stdout)
			for subject, want := range map[string]string{"Quick question": "queue", "Overdue invoice": "queue", "GARBAGE please": "needs_review"} {
				if d := sv(got[subject].Decision); d != want {
					t.Errorf("%s: decision %q, want %q", subject, d, want)
				}
			}
			if j := got["GARBAGE please"]; j.State != "needs_review" || !strings.Contains(sv(j.Error), "intents") {
				t.Errorf("garbage: state %s error %q, want needs_review naming the bad field", j.State, sv(j.Error))
			}
			if j := got["Overdue invoice"]; sv(j.Risk) != "high" {
				t.Errorf("invoice: risk %q, want high", sv(j.Risk))
			}
			if n := len(h.modelRequests()); n != 4 {
				t.Errorf("model requests: %d, want 4 (one repair)", n)
			}
			if h.openai != nil {
				wantFormat := map[string]string{provStrict: "json_schema", provJSONOnly: "json_object", provProse: ""}[p]
				for _, r := range h.openai.Srv.Requests() {
					if r.Format != wantFormat || r.Model() != openaitest.DefaultModel {
						t.Errorf("request format %q model %q, want %q %q", r.Format, r.Model(), wantFormat, openaitest.DefaultModel)
					}
					if strings.Contains(r.Header.Get("Authorization"), apiKey) {
						t.Error("the Gemini key was sent to the OpenAI-compatible server")
					}
				}
			}

			out, errOut, code := h.run("explain", got["Quick question"].TraceID, "--json")
			if code != 0 {
				t.Fatalf("explain: exit %d: %s", code, errOut)
			}
			var e ExplainJSON
			if err := json.Unmarshal([]byte(out), &e); err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, s := range e.Trace.Steps {
				if s.Name != "classify" {
					continue
				}
				found = true
				wantModel := "gemini-test"
				if h.openai != nil {
					wantModel = openaitest.DefaultModel
				}
				if s.TokensIn != 500 || s.TokensOut != 40 || sv(s.Model) != wantModel || s.LatencyMS < 40 {
					t.Errorf("classify step: %+v, want 500/40 tokens, model %s, latency ≥ 40ms", s, wantModel)
				}
			}
			if !found {
				t.Error("no classify step in the trace")
			}
			out, _, code = h.run("explain", got["Quick question"].TraceID)
			if code != 0 || !strings.Contains(out, "tokens 500 in / 40 out") {
				t.Errorf("explain text lacks the usage:\n%s", out)
			}

			out, errOut, code = h.run("status", "--json")
			if code != 0 {
				t.Fatalf("status: exit %d: %s", code, errOut)
			}
			var st StatusJSON
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatal(err)
			}
			// 500+500+10+10 in, 40+40+5+5 out, over three classify calls
			// (the repair counts within its call).
			if st.TokensToday.Calls != 3 || st.TokensToday.TokensIn != 1020 || st.TokensToday.TokensOut != 90 {
				t.Errorf("status tokens today: %+v, want 3 calls, 1020 in, 90 out", st.TokensToday)
			}
			// Latency: every model call of the day, each ≥ 40ms here.
			if u := st.TokensToday; u.ModelCalls < 3 || u.LatencyMeanMS == nil || *u.LatencyMeanMS < 40 || u.LatencyP95MS == nil || *u.LatencyP95MS < 250 {
				t.Errorf("status latency today: %+v, want ≥ 3 model calls, mean ≥ 40ms, a p95 bound", u)
			}
			if out, _, _ := h.run("status"); !strings.Contains(out, "model latency today: mean ") {
				t.Errorf("status text lacks the latency:\n%s", out)
			}
		})
	}
}

// TestPerTaskModels: [llm] is Gemini with a small classify model named in
// [llm.classify]; [llm.draft] sends drafts to a local OpenAI-compatible
// server, which never receives the Gemini key.
func TestPerTaskModels(t *testing.T) {
	t.Parallel()
	b := newOABridge(t, openaitest.ModeStrict, compromisedModel)
	b.Srv.Models = []string{"big:70b"}
	extra := fmt.Sprintf("\n[llm.classify]\nmodel = \"small-gemini\"\n\n[llm.draft]\nprovider = \"openai\"\nmodel = \"big:70b\"\nbase_url = %q\n", b.Srv.URL)
	h := newHarness(t, compromisedModel, autoPolicy)
	raw, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// The task tables belong under [llm]: put them before [[accounts]].
	cfg := strings.Replace(string(raw), "[[accounts]]", extra+"\n[[accounts]]", 1)
	if err := os.WriteFile(h.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?",
		"References: <earlier@example.com>", "In-Reply-To: <earlier@example.com>"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: exit %d: %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sent %d, want the one auto-reply", n)
	}
	gem := h.gemini.Requests()
	if len(gem) == 0 {
		t.Fatal("the classify model was never called")
	}
	for _, r := range gem {
		if props, _ := r.ResponseSchema()["properties"].(map[string]any); props["intents"] == nil || r.Model != "small-gemini" {
			t.Errorf("gemini got a non-classify call or model %q", r.Model)
		}
	}
	oa := b.Srv.Requests()
	if len(oa) == 0 {
		t.Fatal("the draft model was never called")
	}
	for _, r := range oa {
		if props, _ := r.ResponseSchema()["properties"].(map[string]any); props["body"] == nil && props["summary"] == nil {
			t.Errorf("the draft server got a classify call: %v", props)
		}
		if r.Model() != "big:70b" || strings.Contains(r.Header.Get("Authorization"), apiKey) {
			t.Errorf("draft request model %q auth %q", r.Model(), r.Header.Get("Authorization"))
		}
	}

	// replay --drafts uses the same two models.
	gemMark, oaMark := len(gem), len(oa)
	if _, stderr, code := h.run("replay", "--drafts", "--json"); code != 0 {
		t.Fatalf("replay --drafts: exit %d: %s", code, stderr)
	}
	gem, oa = h.gemini.Requests()[gemMark:], b.Srv.Requests()[oaMark:]
	if len(gem) == 0 || len(oa) == 0 {
		t.Fatalf("replay: %d classify and %d draft calls, want both", len(gem), len(oa))
	}
	for _, r := range gem {
		if r.Model != "small-gemini" {
			t.Errorf("replay classified with %q, want [llm.classify]'s small-gemini", r.Model)
		}
	}
	for _, r := range oa {
		if props, _ := r.ResponseSchema()["properties"].(map[string]any); props["body"] == nil || r.Model() != "big:70b" {
			t.Errorf("replay's draft call: model %q props %v", r.Model(), props)
		}
	}
}

// TestOpenAIRefusedKey: a 401 is not retried, the message says which key
// to fix, the key itself is never printed, and nothing is lost (the mail
// waits in needs_review).
func TestOpenAIRefusedKey(t *testing.T) {
	const key = "sk-local-refused-5150"
	t.Setenv("MA_TEST_OAI_KEY", key)
	h := newHarnessOn(t, provStrict, func(*geminitest.Request) geminitest.Reply {
		return geminitest.ErrorReply(http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: "+key)
	}, "")
	raw, _ := os.ReadFile(h.cfgPath)
	cfg := strings.Replace(string(raw), "provider = \"openai\"\n", "provider = \"openai\"\napi_key_env = \"MA_TEST_OAI_KEY\"\n", 1)
	if err := os.WriteFile(h.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	stdout, stderr, code := h.run("triage", "--json")
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d\n%s", code, ExitPartial, stderr)
	}
	j := decodeLines(t, stdout)["Quick question"]
	if j.State != "needs_review" || !strings.Contains(sv(j.Error), "401") || !strings.Contains(sv(j.Error), "api_key_env") {
		t.Errorf("state %s error %q, want needs_review naming the 401 and the key setting", j.State, sv(j.Error))
	}
	if n := len(h.openai.Srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a 401 is permanent)", n)
	}
	if r := h.openai.Srv.Requests()[0]; r.Header.Get("Authorization") != "Bearer "+key {
		t.Errorf("Authorization %q, want the configured key", r.Header.Get("Authorization"))
	}
	if strings.Contains(stdout+stderr, key) {
		t.Error("the API key reached the output")
	}
}

// TestDoctorLLM: doctor checks that the server answers, that it lists the
// model and that one schema-checked call round-trips, naming the fix when
// one does not.
func TestDoctorLLM(t *testing.T) {
	t.Parallel()
	checks := func(h *harness) map[string]CheckJSON {
		t.Helper()
		out, _, _ := h.run("doctor", "--json")
		var cs []CheckJSON
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		m := map[string]CheckJSON{}
		for _, c := range cs {
			m[c.Check] = c
		}
		return m
	}
	setLLM := func(h *harness, from, to string) {
		raw, _ := os.ReadFile(h.cfgPath)
		if !strings.Contains(string(raw), from) {
			t.Fatalf("config lacks %q", from)
		}
		if err := os.WriteFile(h.cfgPath, []byte(strings.Replace(string(raw), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("healthy", func(t *testing.T) {
		h := newHarnessOn(t, provStrict, func(*geminitest.Request) geminitest.Reply {
			return geminitest.JSONReply(map[string]any{"ok": true}, llm.Usage{TotalTokens: 12})
		}, "")
		m := checks(h)
		for _, id := range []string{"model.server", "model.listed", "model.round_trip"} {
			if m[id].Status != "pass" {
				t.Errorf("%s: %+v", id, m[id])
			}
		}
		if _, ok := m["model.api_key"]; ok {
			t.Error("a keyless local server got an api key check")
		}
	})
	t.Run("model not listed", func(t *testing.T) {
		h := newHarnessOn(t, provStrict, nil, "")
		setLLM(h, "model = \""+openaitest.DefaultModel+"\"", "model = \"missing:70b\"")
		c := checks(h)["model.listed"]
		if c.Status != "fail" || !strings.Contains(sv(c.Fix), openaitest.DefaultModel) {
			t.Errorf("model.listed: %+v, want a fail naming the listed models", c)
		}
	})
	t.Run("unlisted but served", func(t *testing.T) {
		// llama.cpp's server lists its GGUF and answers any model name.
		h := newHarnessOn(t, provStrict, func(*geminitest.Request) geminitest.Reply {
			return geminitest.JSONReply(map[string]any{"ok": true}, llm.Usage{TotalTokens: 12})
		}, "")
		h.openai.Srv.AnyModel = true
		h.openai.Srv.Models = []string{"/models/qwen2.5-7b-instruct-q4_k_m.gguf"}
		m := checks(h)
		if c := m["model.listed"]; c.Status != "warn" || !strings.Contains(sv(c.Fix), "qwen2.5-7b-instruct-q4_k_m.gguf") {
			t.Errorf("model.listed: %+v, want a warning naming the listed model", c)
		}
		if m["model.round_trip"].Status != "pass" {
			t.Errorf("model.round_trip: %+v", m["model.round_trip"])
		}
	})
	t.Run("json_schema refused", func(t *testing.T) {
		h := newHarnessOn(t, provJSONOnly, nil, "")
		setLLM(h, `structured_output = "json_object"`, `structured_output = "json_schema"`)
		c := checks(h)["model.round_trip"]
		if c.Status != "fail" || !strings.Contains(sv(c.Fix), `structured_output = "json_object"`) {
			t.Errorf("model.round_trip: %+v, want a fail naming json_object", c)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		h := newHarnessOn(t, provStrict, nil, "")
		setLLM(h, h.openai.Srv.URL, "http://127.0.0.1:1/v1")
		c := checks(h)["model.server"]
		if c.Status != "fail" || !strings.Contains(sv(c.Fix), "start the server") {
			t.Errorf("model.server: %+v, want a fail saying to start the server", c)
		}
	})
	t.Run("wrong base url", func(t *testing.T) {
		h := newHarnessOn(t, provStrict, nil, "")
		setLLM(h, h.openai.Srv.URL, strings.TrimSuffix(h.openai.Srv.URL, "/v1"))
		c := checks(h)["model.server"]
		if c.Status != "fail" || !strings.Contains(sv(c.Fix), "/v1") {
			t.Errorf("model.server: %+v, want a fail naming /v1", c)
		}
	})
}
