package openai

import "testing"

func TestUnfence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":1}`:                               `{"a":1}`,
		"Here:\n```json\n{\"a\":1}\n```\nok":    "{\"a\":1}\n",
		"```\n[1]\n```":                         "[1]\n",
		"```python\nprint(1)\n```":              "```python\nprint(1)\n```",
		"a ```json\n{}\n``` b ```json\n{}\n```": "a ```json\n{}\n``` b ```json\n{}\n```",
		"no json here":                          "no json here",
	} {
		if got := unfence(in); got != want {
			t.Errorf("unfence(%q) = %q, want %q", in, got, want)
		}
	}
}
