package bench

import (
	"encoding/json"
	"io"
	"net/http"
)

// FakeOpenAI is an http.Handler speaking the OpenAI chat completions API
// (POST /v1/chat/completions, GET /v1/models) with the behaviour and
// counters of FakeGemini: one fixed IgnoreClassification answer after
// Delay. Its base URL is the server's URL + "/v1". It is safe for
// concurrent use.
type FakeOpenAI struct {
	FakeGemini
}

// OpenAIModel is the one model FakeOpenAI lists.
const OpenAIModel = "bench-local"

func (f *FakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAIModels)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		f.answer(w, r, openAIReply)
	default:
		http.Error(w, `{"error":{"message":"no such endpoint","type":"invalid_request_error"}}`, http.StatusNotFound)
	}
}

var openAIReply = mustJSON(map[string]any{
	"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": OpenAIModel,
	"choices": []any{map[string]any{
		"index": 0, "finish_reason": "stop",
		"message": map[string]any{"role": "assistant", "content": IgnoreClassification},
	}},
	"usage": map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
})

var openAIModels = mustJSON(map[string]any{"object": "list", "data": []any{
	map[string]any{"id": OpenAIModel, "object": "model", "created": 0, "owned_by": "bench"},
}})

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // constant literals; cannot fail
	}
	return b
}
