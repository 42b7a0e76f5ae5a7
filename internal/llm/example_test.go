package llm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/internal/llm"
)

func ExampleGenerateJSON() {
	// A fake model whose first answer breaks the schema.
	answers := []string{`{"label":"maybe"}`, `{"label":"yes"}`}
	m := llm.ModelFunc(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		text := answers[0]
		answers = answers[1:]
		return &llm.Response{Text: text, Usage: llm.Usage{TotalTokens: 10}}, nil
	})
	type answer struct {
		Label string `json:"label"`
	}
	validate := func(a *answer) error {
		if a.Label != "yes" && a.Label != "no" {
			return errors.New(`label must be "yes" or "no"`)
		}
		return nil
	}
	req := llm.Request{
		System: "Answer yes or no.",
		Prompt: "Is the sky blue?",
		Schema: &llm.Schema{Type: "object", Properties: map[string]*llm.Schema{
			"label": {Type: "string", Enum: []string{"yes", "no"}},
		}, Required: []string{"label"}},
	}
	a, info, err := llm.GenerateJSON(context.Background(), m, req, validate)
	fmt.Println(a.Label, info.Attempts, info.Repaired, info.Usage.TotalTokens, err)
	// Output: yes 2 true 20 <nil>
}
