package llm

// Preset is what mailagent knows about one kind of OpenAI-compatible server:
// where it listens by default, how its models are named and which
// structured-output mode it supports. `mailagent init` offers them and
// writes their values into [llm]; nothing reads a preset at run time.
type Preset struct {
	Name    string // key, e.g. "ollama"
	Title   string // for menus, e.g. "Ollama"
	BaseURL string // default API root, ending in /v1
	// ExampleModel is a model name as the server expects it.
	ExampleModel string
	// ModelNaming tells where the model name comes from.
	ModelNaming string
	// StructuredOutput is the best mode the server supports.
	StructuredOutput StructuredOutput
	// NeedsKey is true when the server requires an API key.
	NeedsKey bool
	// KeyEnv is the conventional variable holding the key, when NeedsKey.
	KeyEnv string
	Notes  string
}

// Presets are the servers mailagent documents, in menu order. All four
// local servers accept response_format json_schema (each turns the schema
// into a decoding grammar); json_object and prompt remain for older
// versions and other gateways.
var Presets = []Preset{
	{
		Name: "ollama", Title: "Ollama", BaseURL: "http://localhost:11434/v1",
		ExampleModel: "qwen2.5:7b", ModelNaming: "the NAME:TAG shown by `ollama list` (pull it first: `ollama pull qwen2.5:7b`)",
		StructuredOutput: OutputJSONSchema,
		Notes:            "json_schema needs Ollama 0.5 or later; use json_object on older versions",
	},
	{
		Name: "llamacpp", Title: "llama.cpp server", BaseURL: "http://localhost:8080/v1",
		ExampleModel: "qwen2.5-7b-instruct", ModelNaming: "the --alias given to llama-server (else the GGUF file name it lists at /v1/models); one model per server",
		StructuredOutput: OutputJSONSchema,
		Notes:            "json_schema is turned into a GBNF grammar; start llama-server with --jinja for chat templates",
	},
	{
		Name: "vllm", Title: "vLLM", BaseURL: "http://localhost:8000/v1",
		ExampleModel: "Qwen/Qwen2.5-7B-Instruct", ModelNaming: "the Hugging Face id given to `vllm serve` (or its --served-model-name)",
		StructuredOutput: OutputJSONSchema,
		Notes:            "json_schema uses guided decoding; a server started with --api-key needs llm.api_key_env",
	},
	{
		Name: "lmstudio", Title: "LM Studio", BaseURL: "http://localhost:1234/v1",
		ExampleModel: "qwen2.5-7b-instruct", ModelNaming: "the model identifier LM Studio shows for the loaded model (`lms ls`)",
		StructuredOutput: OutputJSONSchema,
		Notes:            "start the local server in the Developer tab (or `lms server start`); LM Studio has no json_object mode",
	},
	{
		Name: "openai", Title: "OpenAI (cloud)", BaseURL: "https://api.openai.com/v1",
		ExampleModel: "gpt-4o-mini", ModelNaming: "an OpenAI model id",
		StructuredOutput: OutputJSONSchema, NeedsKey: true, KeyEnv: "OPENAI_API_KEY",
		Notes: "mail leaves the machine, as with Gemini",
	},
}

// PresetByName returns the named preset.
func PresetByName(name string) (Preset, bool) {
	for _, p := range Presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}
