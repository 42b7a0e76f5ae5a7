package openaitest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, body map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := s.Client().Post(s.URL+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func content(out map[string]any) string {
	c, _ := out["choices"].([]any)
	if len(c) == 0 {
		return ""
	}
	msg, _ := c[0].(map[string]any)["message"].(map[string]any)
	s, _ := msg["content"].(string)
	return s
}

// TestModes: each server mode treats response_format as documented.
func TestModes(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	withSchema := map[string]any{"model": DefaultModel, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "strict": true, "schema": schema}}}
	var seen *Request
	h := func(r *Request) Reply { seen = r; return Reply{Text: `{"a":"b"}`} }

	strict := NewServer(t, ModeStrict, h)
	if code, out := post(t, strict, withSchema); code != 200 || content(out) != `{"a":"b"}` {
		t.Errorf("strict: %d %v", code, out)
	}
	if seen.ResponseSchema() == nil || !seen.Strict || seen.Format != "json_schema" {
		t.Errorf("strict: the handler did not see the schema: %+v", seen)
	}

	jsonOnly := NewServer(t, ModeJSONOnly, h)
	if code, _ := post(t, jsonOnly, withSchema); code != http.StatusBadRequest {
		t.Errorf("json-only: json_schema got %d, want 400", code)
	}

	prose := NewServer(t, ModeProse, h)
	seen = nil
	code, out := post(t, prose, withSchema)
	if code != 200 || !strings.Contains(content(out), "```json\n{\"a\":\"b\"}\n```") || !strings.HasPrefix(content(out), "Sure!") {
		t.Errorf("prose: %d %q", code, content(out))
	}
	if seen.ResponseSchema() != nil {
		t.Error("prose: a server that ignores response_format showed the schema to the model")
	}
	if code, _ := post(t, strict, map[string]any{"model": "unknown", "messages": []any{}}); code != http.StatusNotFound {
		t.Errorf("unknown model: %d, want 404", code)
	}
}

func TestPromptSchema(t *testing.T) {
	t.Parallel()
	if s := PromptSchema("Answer.\nJSON Schema:\n{\"type\": \"object\"}\nthanks"); s["type"] != "object" {
		t.Errorf("got %v", s)
	}
	if PromptSchema("no schema here {\"type\": 1}") != nil {
		t.Error("found a schema without the words JSON Schema")
	}
}
