package openai_test

import (
	"testing"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/llm/openai"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
)

// BenchmarkProviderGenerateJSON is one schema-checked call (the classify
// shape: request, HTTP round trip on loopback, decode, validate) through
// each provider against its fake with a zero-latency model: the whole
// cost of the provider layer, to compare with a model's 100s of ms. It
// sits with the OpenAI client's tests for their verdict schema.
//
//	go test ./internal/llm/openai -run x -bench ProviderGenerateJSON -count 5
func BenchmarkProviderGenerateJSON(b *testing.B) {
	answer := map[string]any{"label": "ham", "score": 3}
	usage := llm.Usage{PromptTokens: 500, OutputTokens: 40, TotalTokens: 540}
	req := llm.Request{System: "Classify the mail.", Prompt: "From: bob\nSubject: hi\n\nWhat time is the meeting?", Schema: oaVerdictSchema}
	models := map[string]llm.Model{
		"gemini": geminitest.NewServer(b, func(*geminitest.Request) geminitest.Reply { return geminitest.JSONReply(answer, usage) }).NewGemini(b, gemini.Config{}),
		"openai": openaitest.NewServer(b, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply { return openaitest.JSONReply(answer, usage) }).NewOpenAI(b, openai.Config{}),
	}
	for _, name := range []string{"gemini", "openai"} {
		m := llm.WithRetry(models[name], llm.RetryOptions{})
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := llm.GenerateJSON(b.Context(), m, req, validOAVerdict); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
