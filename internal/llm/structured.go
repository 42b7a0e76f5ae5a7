package llm

import "fmt"

// StructuredOutput is how an OpenAI-compatible server is asked for JSON.
type StructuredOutput string

// The structured-output modes. Whatever the mode, the answer goes through
// the same Go decoding and validation (GenerateJSON): a mode only changes
// what the server is asked for, never what is accepted.
const (
	// OutputJSONSchema sends response_format json_schema, strict (optional
	// properties become required and nullable, as strict mode wants): the
	// server constrains decoding to the schema.
	OutputJSONSchema StructuredOutput = "json_schema"
	// OutputJSONObject sends response_format json_object (JSON mode) and
	// puts the schema into the system prompt.
	OutputJSONObject StructuredOutput = "json_object"
	// OutputPrompt sends no response_format; the schema goes into the
	// system prompt, for servers that support neither.
	OutputPrompt StructuredOutput = "prompt"
)

// ParseStructuredOutput checks a configured mode; "" means OutputJSONSchema.
func ParseStructuredOutput(s string) (StructuredOutput, error) {
	switch StructuredOutput(s) {
	case "":
		return OutputJSONSchema, nil
	case OutputJSONSchema, OutputJSONObject, OutputPrompt:
		return StructuredOutput(s), nil
	}
	return "", fmt.Errorf("structured output %q is not one of json_schema, json_object, prompt", s)
}
