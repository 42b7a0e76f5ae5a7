package gemini_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// The response schema the SDK made on the first call is sent again as
// those bytes (Gemini.schemas): every request is byte for byte the
// request of a fresh Gemini, whether the schema is the same value or an
// equal one built again; a different schema is not mistaken for it.
func TestGeminiCachedSchemaSameRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	srv := geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply {
		mu.Lock()
		bodies = append(bodies, bytes.Clone(r.Raw))
		mu.Unlock()
		return geminitest.JSONReply(map[string]any{"label": "ham", "score": 3}, llm.Usage{})
	})
	schema := func(desc string) *llm.Schema {
		return &llm.Schema{Type: "object", Properties: map[string]*llm.Schema{
			"label": {Type: "string", Enum: []string{"ham", "spam"}, Description: desc},
			"score": {Type: "integer"},
		}, Required: []string{"label", "score"}}
	}
	req := func(s *llm.Schema) llm.Request {
		return llm.Request{System: "Classify.", Prompt: "What time is the meeting? <b>&</b>", Schema: s}
	}
	call := func(m llm.Model, s *llm.Schema) []byte {
		t.Helper()
		if _, err := m.Generate(t.Context(), req(s)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return bodies[len(bodies)-1]
	}
	m := srv.NewGemini(t, gemini.Config{})
	first := call(m, schema("the <label> & why"))
	for i, b := range [][]byte{call(m, schema("the <label> & why")), call(m, schema("the <label> & why"))} {
		if !bytes.Equal(b, first) {
			t.Errorf("call %d: request differs from the first:\n%s\nwant\n%s", i+2, b, first)
		}
	}
	if !bytes.Contains(first, []byte(`"responseSchema"`)) || !bytes.Contains(first, []byte(`spam`)) {
		t.Fatalf("the first request carries no response schema: %s", first)
	}
	other := call(m, schema("another description"))
	fresh := call(srv.NewGemini(t, gemini.Config{}), schema("another description"))
	if !bytes.Equal(other, fresh) || bytes.Equal(other, first) {
		t.Errorf("a second schema: request %s, want the fresh model's %s (and not the first schema's)", other, fresh)
	}
	none := call(m, nil)
	if bytes.Contains(none, []byte("responseSchema")) {
		t.Errorf("a request without a schema carries one: %s", none)
	}
}
