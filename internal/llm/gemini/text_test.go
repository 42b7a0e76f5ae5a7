package gemini_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// textSeeds are prompts and system texts at the edges of JSON's string
// encoding: HTML characters (escaped by the SDK's encoder), invalid UTF-8
// alone and in runs (each byte becomes U+FFFD), U+FFFD itself, the line
// separators JSON escapes, control bytes, quotes and backslashes, and the
// empty text (the SDK leaves an empty part's text out).
var textSeeds = []string{
	"",
	"What time is the meeting? <b>&</b>",
	"caf\xe9 \xe9t\xe9 \xff\xfe\xfd end",
	"\xe2\x82",
	"\xef\xbf\xbd is U+FFFD, \\ufffd is its escape",
	"line\u2028sep\u2029para",
	"\x00\x01\x1f\x7f\t\r\n\"\\/",
	"emoji 😀 and 中文 and \U0010FFFF",
	strings.Repeat("<p>long &amp; line</p>\r\n", 500),
}

// recorder is a fake Gemini server that keeps every request body it got,
// in arrival order.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	srv    *geminitest.Server
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply {
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, bytes.Clone(r.Raw))
		rec.mu.Unlock()
		return geminitest.JSONReply(map[string]any{"label": "ham"}, llm.Usage{})
	})
	return rec
}

func (rec *recorder) last() []byte {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.bodies[len(rec.bodies)-1]
}

// sdkClient is genai's own client on the recorder's server: the reference
// the model's requests are held to.
func (rec *recorder) sdkClient(t testing.TB) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey: geminitest.TestAPIKey, Backend: genai.BackendGeminiAPI,
		HTTPClient: rec.srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: rec.srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sdkBody is the body genai itself makes of req (the prompt and the system
// instruction handed to it as Contents, as Generate did before), with
// schema as the genai form of req.Schema.
func (rec *recorder) sdkBody(t testing.TB, c *genai.Client, req llm.Request, schema *genai.Schema) []byte {
	t.Helper()
	cfg := &genai.GenerateContentConfig{Temperature: req.Temperature, MaxOutputTokens: req.MaxOutputTokens, AutomaticContinuation: new(false)}
	if req.System != "" {
		cfg.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	if schema != nil {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseSchema = schema
	}
	contents := []*genai.Content{genai.NewContentFromText(req.Prompt, genai.RoleUser)}
	if _, err := c.Models.GenerateContent(t.Context(), geminitest.DefaultModel, contents, cfg); err != nil {
		t.Fatal(err)
	}
	return rec.last()
}

func (rec *recorder) modelBody(t testing.TB, m *gemini.Model, req llm.Request) []byte {
	t.Helper()
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return rec.last()
}

// The prompt and the system instruction reach the server as the same bytes
// genai makes of them when it is handed them as Contents (Generate gives
// them to the body as typed values, skipping the SDK's JSON round trips):
// on the edge cases above, with and without a system text, a temperature
// and a schema (cached after the first call), and on corpus messages taken
// whole as prompts (HTML, 8-bit charsets, invalid UTF-8).
func TestGeminiTextSameRequest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	sdk := rec.sdkClient(t)
	m := rec.srv.NewGemini(t, gemini.Config{})
	temp := float32(0.2)
	schema := &llm.Schema{Type: "object", Properties: map[string]*llm.Schema{
		"label": {Type: "string", Enum: []string{"ham", "spam"}, Description: "the <label> & why"},
	}, Required: []string{"label"}}
	genaiSchema := &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
		"label": {Type: genai.TypeString, Enum: []string{"ham", "spam"}, Description: "the <label> & why"},
	}, Required: []string{"label"}}
	check := func(name string, req llm.Request, gs *genai.Schema) {
		t.Helper()
		want := rec.sdkBody(t, sdk, req, gs)
		got := rec.modelBody(t, m, req)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: request body\n%q\nwant genai's\n%q", name, got, want)
		}
	}
	for i, p := range textSeeds {
		for _, sys := range []string{"", "Classify.", textSeeds[(i+2)%len(textSeeds)]} {
			check("seed", llm.Request{System: sys, Prompt: p}, nil)
			check("seed+temperature", llm.Request{System: sys, Prompt: p, Temperature: &temp, MaxOutputTokens: 300}, nil)
			check("seed+schema", llm.Request{System: sys, Prompt: p, Schema: schema}, genaiSchema)
		}
	}
	files := corpusSample(t)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f), llm.Request{System: "Classify the message.", Prompt: string(raw), Schema: schema}, genaiSchema)
	}
	t.Logf("%d seeds and %d corpus messages compared", len(textSeeds)*9, len(files))
}

// FuzzGeminiTextSameRequest holds any prompt and system text to genai's
// own request bytes.
func FuzzGeminiTextSameRequest(f *testing.F) {
	for i, s := range textSeeds {
		f.Add(s, textSeeds[(i+1)%len(textSeeds)])
	}
	f.Fuzz(func(t *testing.T, prompt, system string) {
		rec := newRecorder(t)
		m := rec.srv.NewGemini(t, gemini.Config{})
		req := llm.Request{System: system, Prompt: prompt}
		want := rec.sdkBody(t, rec.sdkClient(t), req, nil)
		if got := rec.modelBody(t, m, req); !bytes.Equal(got, want) {
			t.Errorf("request body\n%q\nwant genai's\n%q", got, want)
		}
	})
}

// corpusSample returns every message of the corpus's mime-edge folder and
// every 40th of the SpamAssassin folders (about 150), or skips when the
// corpus is not there (../shared/corpora from the repository root, or
// $MAILAGENT_CORPORA).
func corpusSample(t *testing.T) []string {
	t.Helper()
	root := os.Getenv("MAILAGENT_CORPORA")
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			if filepath.Dir(dir) == dir {
				t.Skip("repo root (go.mod) not found; corpus comparison skipped")
			}
			dir = filepath.Dir(dir)
		}
		root = filepath.Join(dir, "..", "shared", "corpora")
	}
	var files []string
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch d.Name() {
		case "LICENSE", "MIT-LICENSE", "SOURCES.md":
			return nil
		}
		if strings.Contains(p, "mime-edge") {
			files = append(files, p)
		} else if n++; n%40 == 0 {
			files = append(files, p)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Skipf("mail corpus not found at %s; corpus comparison skipped (%v)", root, err)
	}
	sort.Strings(files)
	return files
}
