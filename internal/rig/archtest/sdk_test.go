package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestSDKRuleCatches feeds imports of the providers' SDKs that must be
// refused (and the ones that must not) to the check TestLayering runs.
func TestSDKRuleCatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, imp string
		bad       bool
	}{
		{"internal/llm/gemini", "google.golang.org/genai", false},
		{"internal/llm/openai", "github.com/openai/openai-go/v2", false},
		{"internal/llm/openai", "github.com/openai/openai-go/v2/option", false},
		{"internal/llm", "google.golang.org/genai", true},
		{"internal/llm", "github.com/openai/openai-go/v2/shared", true},
		{"internal/llm/openai", "google.golang.org/genai", true},
		{"internal/llm/gemini", "github.com/openai/openai-go/v2", true},
		{"internal/llm/gemini/sub", "google.golang.org/genai", true},
		{"internal/llm/geminitest", "google.golang.org/genai", true},
		{"internal/cmdutil", "google.golang.org/genai", true},
		{"internal/cmdutil/provider", "github.com/openai/openai-go/v2", true},
		{"internal/app/doctor", "github.com/openai/openai-go/v2", true},
		{"agent", "google.golang.org/genai", true},
		{"internal/llm", "google.golang.org/genaix", false},
		{"internal/llm", "net/http", false},
	}
	for _, tt := range tests {
		problems, applied := sdkViolations(tt.from, tt.imp, sdkHomes)
		if got := len(problems) > 0; got != tt.bad {
			t.Errorf("%s importing %s: got refused=%v (%v), want %v", tt.from, tt.imp, got, problems, tt.bad)
		}
		if tt.bad && !applied {
			t.Errorf("%s importing %s: refused but no rule applied", tt.from, tt.imp)
		}
	}
}

// syntheticSDKTree writes a tree where the core (internal/llm) and a
// command's helper (internal/cmdutil) import the SDKs, and each provider
// package imports its own, and returns its root.
func syntheticSDKTree(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		dir := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("internal/llm", "package llm\n\nimport (\n\t_ \"google.golang.org/genai\"\n\t_ \"github.com/openai/openai-go/v2\"\n)\n")
	write("internal/cmdutil", "package cmdutil\n\nimport _ \"google.golang.org/genai\"\n")
	write("internal/llm/gemini", "package gemini\n\nimport _ \"google.golang.org/genai\"\n")
	write("internal/llm/openai", "package openai\n\nimport _ \"github.com/openai/openai-go/v2/option\"\n")
	return top
}

// syntheticSDKViolations are the SDK imports of syntheticSDKTree that
// break the rule, as "package imports path".
var syntheticSDKViolations = []string{
	"internal/llm imports google.golang.org/genai",
	"internal/llm imports github.com/openai/openai-go/v2",
	"internal/cmdutil imports google.golang.org/genai",
}

// sdkRefused reports whether problems refuse the import v ("pkg imports
// path") by the SDK rule.
func sdkRefused(problems []string, v string) bool {
	return slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, v+": only ") })
}

// TestSDKRuleCatchesASyntheticTree: the walk TestLayering runs refuses
// the core and a command helper importing an SDK, each import counted,
// and lets each provider package import its own. Its positive control is
// the same walk without the SDK rule (no homes): every one of those
// imports gets through, so it is that rule that refuses them.
func TestSDKRuleCatchesASyntheticTree(t *testing.T) {
	t.Parallel()
	top := syntheticSDKTree(t)
	problems, checked, err := layering(top)
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("the synthetic tree was not checked")
	}
	through := 0
	for _, v := range syntheticSDKViolations {
		if !sdkRefused(problems, v) {
			through++
			t.Errorf("not refused: %s (problems: %v)", v, problems)
		}
	}
	t.Logf("SDK violations: %d tried, %d through", len(syntheticSDKViolations), through)
	if len(problems) != len(syntheticSDKViolations) {
		t.Errorf("got %d problems, want the %d of the core and cmdutil and none of the providers: %v", len(problems), len(syntheticSDKViolations), problems)
	}

	// Positive control: without the SDK rule all of them get through.
	problems, _, err = layeringWith(top, nil)
	if err != nil {
		t.Fatal(err)
	}
	landed := 0
	for _, v := range syntheticSDKViolations {
		if sdkRefused(problems, v) {
			t.Errorf("%s: refused without the SDK rule", v)
		} else {
			landed++
		}
	}
	t.Logf("without the SDK rule: %d of %d violations got through (problems: %v)", landed, len(syntheticSDKViolations), problems)
	if landed != len(syntheticSDKViolations) || len(problems) != 0 {
		t.Errorf("positive control: %d of %d through, problems %v; want all through and no problem", landed, len(syntheticSDKViolations), problems)
	}
}

// TestSDKHomesImportTheirSDK: each home does import its SDK, so the rule
// is about a real import (a renamed SDK path would leave it checking
// nothing).
func TestSDKHomesImportTheirSDK(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	for _, h := range sdkHomes {
		files, _ := filepath.Glob(filepath.Join(top, filepath.FromSlash(h.home), "*.go"))
		found := false
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				found = found || under(p, h.sdk)
			}
		}
		if !found {
			t.Errorf("%s imports no package of %s: the rule checks nothing", h.home, h.sdk)
		}
	}
}
