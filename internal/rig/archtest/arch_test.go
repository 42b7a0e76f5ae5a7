// Package archtest enforces the layering in docs/ARCHITECTURE.md: a test,
// so that `go test ./...` fails when an import crosses a layer. (A linter
// such as depguard would do the same; this needs no extra tool in CI.)
//
// The tiers, bottom up:
//
//   - leaf libraries (leafLibraries): internal/mail, compose, llm, smtpsend,
//     config, netpolicy, termsafe, autoconfig, initcfg, humantime,
//     unsubscribe, calendar, memimap. They import no
//     application-tier package; internal/netpolicy imports nothing from the
//     project at all.
//   - application tier (applicationTier): agent (with agent/outbox, the
//     send protocol, which imports only store and internal/mail, never
//     agent) and store; above agent,
//     internal/app (daemon: the watch runtime; api: the service behind the
//     socket and its transport; replay: scoring against the owner's own
//     replies; digest: the owner's periodic report; mcpserver: `mailagent
//     mcp` over api.Service); internal/demo (the demo's offline model,
//     over agent); tui; and on top the command tier: cmd (only main's
//     wiring), internal/cmd (root and one package per command group),
//     internal/cmdutil (the Factory, errors and exit codes, table, JSON).
//     The command tier only wires: it reaches the program through
//     internal/app, never past it (commandTierOnly).
//   - test rigs (testRigs): internal/rig (e2e harness, benchmarks, this
//     test) and internal/app/api/apitest; only tests and other rigs import
//     them.
//   - nothing imports cmd; agent, imapsync and store never import tui.
//   - a provider's SDK has one home (sdkHomes): google.golang.org/genai
//     is imported by internal/llm/gemini alone, openai-go by
//     internal/llm/openai alone, so internal/llm stays SDK-free; and
//     those packages are imported only by the model builder of the
//     composition root (internal/cmdutil/provider, itself imported only
//     by internal/cmd/root), their fakes and the doctor (importedOnlyBy).
//     A test binary links genai, grpc and protobuf (2 to 3 CPU-s of
//     linking each under -race) only when it builds a real client.
//
// Only non-test files count: a test may wire layers together to check them.
package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

const module = "github.com/mailagent/mailagent/"

// applicationTier are the packages that run the program: no leaf library
// may import them.
var applicationTier = []string{"agent", "store", "internal/app", "internal/demo", "tui", "cmd", "internal/cmd", "internal/cmdutil"}

// leafLibraries may import only other leaf libraries (and what their rule
// below allows), never the application tier.
var leafLibraries = []string{
	"internal/mail", "internal/compose", "internal/llm", "internal/smtpsend",
	"internal/config", "internal/netpolicy", "internal/termsafe", "internal/autoconfig",
	"internal/initcfg", "internal/unsubscribe", "internal/humantime",
	"internal/calendar", "internal/memimap", "internal/html2text", "internal/retry",
	"internal/iostreams", "internal/prompter", "internal/notify", "agent/guard",
}

// commandTierOnly is all that cmd and internal/cmd may import from the
// project (issue 27, "commands only wire"): the command tier itself, the
// application tier's front (internal/app: api.Service, view, digest…), the
// configuration, store for the record types api.Service returns, and the
// leaf libraries a command needs to print and ask (termsafe, humantime,
// initcfg, autoconfig, and internal/mail for the one Message-ID form). Not agent, imapsync, smtpsend or the llm clients:
// what a command needs of them goes through internal/app or the
// Factory (internal/cmdutil builds the model and opens the store).
var commandTierOnly = []string{
	"cmd", "internal/cmd", "internal/cmdutil", "internal/iostreams", "internal/prompter",
	"internal/app", "internal/config", "store",
	"internal/termsafe", "internal/humantime", "internal/initcfg", "internal/autoconfig",
	"internal/mail",
}

// tuiFronts are the command groups that may import tui (the presentation
// library above internal/app, importing only termsafe and humantime):
// review, since drawing the screen is what the command is, and queue,
// whose snooze takes the TUI's words through tui.ParseSnooze (one
// grammar; it leaves this list when that parser moves to a leaf such as
// humantime). Any other import of theirs obeys commandTierOnly.
var tuiFronts = []string{"internal/cmd/review", "internal/cmd/queue"}

// cmdMain is all that package main (cmd/mailagent) may import: it runs
// root.Main over the process's streams, and every command lives in
// internal/cmd (issue 27; its tests may import more).
var cmdMain = []string{"internal/cmd/root", "internal/iostreams"}

// cmdGenDocs is what the man page generator may import: the same tree,
// and the writer of the pages, which the product does not link
// (TestProductLinksNoDocGenerator).
var cmdGenDocs = []string{"internal/cmd/man", "internal/cmd/root", "internal/iostreams"}

// testRigs are packages that only tests (and other rigs) import, checked
// below: they wire the real tiers together (the e2e harness, the benchmark
// tool, the API conformance suite runs a real watcher), so the layer rules
// do not apply to them.
var testRigs = []string{"internal/rig", "internal/app/api/apitest"}

// rules: package (relative path prefix) → project packages it must not import.
var rules = []struct {
	pkg       string
	forbidden []string
	only      []string // when set, the only project imports allowed
}{
	{pkg: "agent", forbidden: []string{"cmd", "tui", "imapsync", "internal/app", "internal/smtpsend", "internal/config"}},
	// The outbox is the send protocol alone: it never imports the agent
	// that uses it (the agent's side effects come in as hooks); the one
	// address rule of outgoing mail is netpolicy's.
	{pkg: "agent/outbox", only: []string{"store", "internal/mail", "internal/netpolicy"}},
	// The output guard is a pure leaf: text in, problems out; the one
	// address key is its only project import (never store, the model,
	// IMAP or the agent that calls it).
	{pkg: "agent/guard", only: []string{"internal/mail"}},
	// Reply tracking reaches the pipeline only through the hooks and
	// interfaces it declares: never the agent package itself.
	{pkg: "agent/followup", only: []string{"store", "internal/mail", "agent/outbox"}},
	// Invitations reach the pipeline only through invite.Host and the
	// stores and calendar sides they declare: never the agent package.
	{pkg: "agent/invite", only: []string{"store", "internal/mail", "internal/calendar", "internal/compose", "agent/outbox"}},
	// The owner's channel reaches the pipeline only through owner.Host:
	// never the agent package, never a mail server or the outbox.
	{pkg: "agent/owner", only: []string{"store", "internal/mail", "internal/llm", "prompts"}},
	{pkg: "imapsync", only: []string{"internal/netpolicy", "internal/retry"}},
	{pkg: "store", only: []string{"internal/mail", "internal/retry"}},
	{pkg: "tui", only: []string{"tui", "internal/termsafe", "internal/humantime"}},
	{pkg: "prompts", only: []string{}},
	{pkg: "internal/initcfg", only: []string{}},
	{pkg: "internal/mail", only: []string{"internal/html2text"}},
	{pkg: "internal/html2text", only: []string{}},
	{pkg: "internal/llm", only: []string{"internal/llm", "internal/retry"}},
	// The one retry backoff schedule: a library of its own.
	{pkg: "internal/retry", only: []string{}},
	{pkg: "internal/config", only: []string{"internal/netpolicy", "internal/humantime"}},
	{pkg: "internal/compose", only: []string{"internal/mail"}},
	{pkg: "internal/smtpsend", only: []string{"internal/smtpsend", "internal/netpolicy"}},
	{pkg: "internal/netpolicy", only: []string{}},
	{pkg: "internal/unsubscribe", only: []string{"internal/netpolicy"}},
	{pkg: "internal/termsafe", only: []string{}},
	{pkg: "internal/autoconfig", only: []string{}},
	{pkg: "internal/humantime", only: []string{}},
	{pkg: "internal/calendar", only: []string{"internal/mail"}}, // mail.AddrKey, the one address key
	// The demo's in-memory IMAP server: a library of its own.
	{pkg: "internal/memimap", only: []string{}},
	// The demo's offline model drives the real agent; it never reaches
	// the watch runtime, a mail server or the terminal UI.
	{pkg: "internal/demo", forbidden: []string{"cmd", "tui", "imapsync", "internal/app", "internal/smtpsend"}},
	{pkg: "internal/app/api", forbidden: []string{"cmd", "tui", "imapsync", "internal/app/daemon"}},
	{pkg: "internal/app/daemon", forbidden: []string{"cmd", "tui", "internal/app/api"}},
	// triage's Sent learning: the agent's rule over an IMAP read, nothing else.
	{pkg: "internal/app/sentlearn", forbidden: []string{"cmd", "tui", "internal/app/api", "internal/app/daemon", "internal/app/replay", "internal/app/digest", "internal/smtpsend", "internal/llm"}},
	{pkg: "internal/app/replay", forbidden: []string{"cmd", "tui", "internal/app/api", "internal/app/daemon", "internal/app/digest", "internal/smtpsend"}},
	// The MCP server reads through api.Service only: no mail server, no
	// watch runtime, no sending.
	{pkg: "internal/app/mcpserver", forbidden: []string{"cmd", "tui", "imapsync", "internal/app/daemon", "internal/app/replay", "internal/smtpsend", "internal/llm"}},
	{pkg: "internal/app/digest", forbidden: []string{"cmd", "tui", "imapsync", "internal/app/api", "internal/app/daemon", "internal/app/replay", "internal/smtpsend"}},
	// Issue 27: what left package main. An application-tier error with its
	// exit code is a value of its own; the hold machinery and local
	// actions schedule the waiting, never wire or dial; the review TUI's
	// backend reaches the program through api.Service (and unsubscribe);
	// unsubscribe mail goes through the outbox (api.OwnMailer), never
	// SMTP; the wiring sits below the service it is served by.
	{pkg: "internal/app/apperr", only: []string{}},
	{pkg: "internal/app/actions", forbidden: []string{"cmd", "tui", "imapsync", "internal/smtpsend", "internal/llm", "internal/app/wire"}},
	{pkg: "internal/app/review", forbidden: []string{"cmd", "imapsync", "internal/smtpsend", "internal/llm", "internal/app/daemon", "internal/app/wire"}},
	{pkg: "internal/app/unsubscribe", forbidden: []string{"cmd", "tui", "internal/smtpsend", "internal/llm", "internal/app/wire"}},
	{pkg: "internal/app/wire", forbidden: []string{"cmd", "tui", "internal/app/api"}},
	// init's way out (probes, keyring, authserv): the logins of wire and
	// the checks of doctor, never the watch runtime, the agent or a TUI.
	{pkg: "internal/app/setup", forbidden: []string{"cmd", "tui", "agent", "internal/app/api", "internal/app/daemon", "internal/app/actions"}},
	// The account status both the watcher and the API speak: a type, no
	// dependencies.
	{pkg: "internal/app/status", only: []string{}},
	// The command tier only wires (commandTierOnly); cmdutil, which
	// builds the model and opens the store for the commands, may reach
	// the clients but never a command or the TUI.
	// The terminal and the questions: libraries of their own.
	{pkg: "internal/iostreams", only: []string{}},
	{pkg: "internal/prompter", only: []string{}},
	{pkg: "internal/cmd", only: commandTierOnly},
	{pkg: "cmd/mailagent", only: cmdMain},
	{pkg: "cmd/gen-docs", only: cmdGenDocs},
	{pkg: "internal/cmdutil", forbidden: []string{"cmd", "internal/cmd", "tui", "internal/app/daemon", "internal/smtpsend"}},
}

// sdkHome is the one package that may import a provider's SDK.
type sdkHome struct {
	sdk  string // import path prefix of the SDK
	home string // the package (relative to the module) that imports it
}

// sdkHomes: each SDK's one importer among the non-test files. Everything
// else reaches a provider through internal/llm's Model.
var sdkHomes = []sdkHome{
	{sdk: "google.golang.org/genai", home: "internal/llm/gemini"},
	{sdk: "github.com/openai/openai-go", home: "internal/llm/openai"},
}

// importedOnlyBy: packages that only the listed ones (and tests, and the
// test rigs) may import, so that the SDKs stay out of every other
// package's build: the provider packages are built by the composition
// root's model builder and by their fakes' helpers (NewGemini,
// NewOpenAI); the doctor lists an OpenAI-compatible server's models; the
// model builder is the composition root's alone (root.NewFactory).
var importedOnlyBy = []struct {
	pkg string
	by  []string
}{
	{pkg: "internal/llm/gemini", by: []string{"internal/cmdutil/provider", "internal/llm/geminitest"}},
	{pkg: "internal/llm/openai", by: []string{"internal/cmdutil/provider", "internal/llm/openaitest", "internal/app/doctor"}},
	{pkg: "internal/cmdutil/provider", by: []string{"internal/cmd/root"}},
}

// sdkViolations returns what is wrong with package rel (relative to the
// module) importing imp, a path outside the module, under homes, and
// whether a rule applied.
func sdkViolations(rel, imp string, homes []sdkHome) (problems []string, applied bool) {
	for _, h := range homes {
		if !under(imp, h.sdk) {
			continue
		}
		applied = true
		if rel != h.home {
			problems = append(problems, fmt.Sprintf("%s imports %s: only %s imports that SDK", rel, imp, h.home))
		}
	}
	return problems, applied
}

// under reports whether pkg is p or a package below it.
func under(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

func underAny(pkg string, ps []string) bool {
	for _, p := range ps {
		if under(pkg, p) {
			return true
		}
	}
	return false
}

// violations returns what is wrong with package rel importing target (both
// relative to the module), and how many rules applied.
func violations(rel, target string) (problems []string, applied int) {
	if under(target, "cmd") {
		problems = append(problems, fmt.Sprintf("%s imports %s: nothing imports cmd", rel, target))
	}
	if underAny(target, []string{"internal/cmd", "internal/cmdutil"}) && !underAny(rel, []string{"cmd", "internal/cmd", "internal/cmdutil"}) {
		problems = append(problems, fmt.Sprintf("%s imports %s: only the command tier imports it", rel, target))
	}
	if underAny(rel, []string{"agent", "imapsync", "store"}) && under(target, "tui") {
		problems = append(problems, fmt.Sprintf("%s imports %s: agent, imapsync and store never import tui", rel, target))
	}
	if underAny(rel, leafLibraries) {
		applied++
		if underAny(target, applicationTier) {
			problems = append(problems, fmt.Sprintf("%s imports %s: a leaf library imports no application-tier package %v", rel, target, applicationTier))
		}
	}
	for _, r := range importedOnlyBy {
		if under(target, r.pkg) && !under(rel, r.pkg) {
			applied++
			if !slices.Contains(r.by, rel) {
				problems = append(problems, fmt.Sprintf("%s imports %s: only %v import it", rel, target, r.by))
			}
		}
	}
	for _, r := range rules {
		if !under(rel, r.pkg) {
			continue
		}
		applied++
		for _, f := range r.forbidden {
			if under(target, f) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its layer forbids", rel, target))
			}
		}
		if r.only != nil && !underAny(target, r.only) && !(r.pkg == "internal/cmd" && under(target, "tui") && underAny(rel, tuiFronts)) {
			problems = append(problems, fmt.Sprintf("%s imports %s; it may only import %v from the project", rel, target, r.only))
		}
	}
	return problems, applied
}

func TestLayering(t *testing.T) {
	t.Parallel()
	problems, checked, err := layering(e2e.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range problems {
		t.Error(msg)
	}
	if checked == 0 {
		t.Fatal("no project import was checked: the rules match nothing")
	}
}

// layering walks the non-test Go files under top and returns every
// import that breaks a rule, and how many rule applications it checked.
func layering(top string) (problems []string, checked int, _ error) {
	return layeringWith(top, sdkHomes)
}

// layeringWith is layering with homes as the SDK rule.
func layeringWith(top string, homes []sdkHome) (problems []string, checked int, _ error) {
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(top, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		_, f, err := parseTreeFile(top, path)
		if err != nil {
			// Only the imports matter here: a file whose body does not
			// parse is read as far as them.
			if f, err = parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly); err != nil {
				return err
			}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				found, applied := sdkViolations(rel, p, homes)
				if applied {
					checked++
				}
				problems = append(problems, found...)
				continue
			}
			target := strings.TrimPrefix(p, module)
			if underAny(rel, testRigs) {
				continue // a rig wires the real tiers together, for tests only
			}
			if underAny(target, testRigs) {
				problems = append(problems, fmt.Sprintf("%s imports the test rig %s: only tests may", rel, target))
			}
			found, applied := violations(rel, target)
			checked += applied
			problems = append(problems, found...)
		}
		return nil
	})
	return problems, checked, err
}

// TestRulesNameRealPackages: a rule about a package that was renamed or
// moved would pass forever, checking nothing.
func TestRulesNameRealPackages(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	var names []string
	for _, r := range rules {
		names = append(names, r.pkg)
	}
	names = append(names, leafLibraries...)
	names = append(names, applicationTier...)
	for _, h := range sdkHomes {
		names = append(names, h.home)
	}
	for _, r := range importedOnlyBy {
		names = append(names, r.pkg)
		names = append(names, r.by...)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(top, filepath.FromSlash(n))); err != nil {
			t.Errorf("rule names %s, which does not exist: %v", n, err)
		}
	}
}

// TestEveryInternalPackageHasATier: a new package under internal/ must be
// placed in a tier (leaf library, application tier or test rig), or the
// layering would not check it at all.
func TestEveryInternalPackageHasATier(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	tiers := append(append(append([]string{}, leafLibraries...), applicationTier...), testRigs...)
	seen := 0
	err := filepath.WalkDir(filepath.Join(top, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		product := false
		for _, f := range files {
			product = product || !strings.HasSuffix(f, "_test.go")
		}
		if !product {
			return nil
		}
		rel, _ := filepath.Rel(top, path)
		rel = filepath.ToSlash(rel)
		seen++
		if !underAny(rel, tiers) {
			t.Errorf("%s is in no tier: add it to leafLibraries, applicationTier or testRigs (and docs/ARCHITECTURE.md)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Fatalf("walked %d packages under internal/: the walk is broken", seen)
	}
}

// TestRulesCatch feeds imports that must be refused (and some that must
// not) to the same check TestLayering runs.
func TestRulesCatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to string
		bad      bool
	}{
		{"internal/mail", "agent", true},
		{"internal/compose", "store", true},
		{"internal/llm", "internal/app/daemon", true},
		{"internal/smtpsend", "internal/app/api", true},
		{"internal/config", "tui", true},
		{"internal/termsafe", "cmd/mailagent", true},
		{"internal/autoconfig", "agent", true},
		{"internal/netpolicy", "internal/mail", true},
		{"internal/netpolicy", "internal/termsafe", true},
		{"internal/app/api", "cmd/mailagent", true},
		{"agent", "tui", true},
		{"imapsync", "tui/styles", true},
		{"store", "tui", true},
		{"imapsync", "internal/mail", true},
		{"tui", "agent", true},
		{"tui", "internal/termsafe", false},
		{"tui", "internal/humantime", false},
		{"tui", "internal/mail", true},
		{"internal/humantime", "internal/termsafe", true},
		{"agent/outbox", "agent", true},
		{"agent/outbox", "internal/llm", true},
		{"agent/outbox", "imapsync", true},
		{"agent/outbox", "store", false},
		{"agent", "agent/outbox", false},
		{"agent/guard", "store", true},
		{"agent/guard", "agent", true},
		{"agent/guard", "internal/llm", true},
		{"agent/guard", "internal/mail", false},
		{"agent", "agent/guard", false},
		{"agent/followup", "agent", true},
		{"agent/followup", "internal/llm", true},
		{"agent/followup", "imapsync", true},
		{"agent/followup", "store", false},
		{"agent", "agent/followup", false},
		{"agent/invite", "agent", true},
		{"agent/invite", "internal/llm", true},
		{"agent/invite", "agent/followup", true},
		{"agent/invite", "internal/calendar", false},
		{"agent", "agent/invite", false},
		{"agent/owner", "agent", true},
		{"agent/owner", "agent/outbox", true},
		{"agent/owner", "internal/smtpsend", true},
		{"agent/owner", "prompts", false},
		{"agent", "agent/owner", false},
		{"internal/app/status", "store", true},
		{"internal/app/api", "internal/app/status", false},
		{"internal/app/daemon", "internal/app/status", false},
		// Issue 27's application-tier packages.
		{"internal/app/apperr", "store", true},
		{"internal/app/actions", "internal/app/daemon", false},
		{"internal/app/actions", "internal/smtpsend", true},
		{"internal/app/review", "tui", false},
		{"internal/app/review", "internal/app/unsubscribe", false},
		{"internal/app/review", "imapsync", true},
		{"internal/app/review", "internal/app/daemon", true},
		{"internal/app/unsubscribe", "internal/unsubscribe", false},
		{"internal/app/unsubscribe", "internal/smtpsend", true},
		{"internal/app/wire", "internal/app/daemon", false},
		{"internal/app/wire", "internal/app/api", true},
		{"internal/app/wire", "cmd/mailagent", true},

		{"internal/compose", "internal/mail", false},
		{"imapsync", "internal/netpolicy", false},
		{"internal/smtpsend", "internal/netpolicy", false},
		{"internal/config", "internal/netpolicy", false},
		{"agent", "store", false},
		{"internal/app/daemon", "imapsync", false},
		{"internal/app/mcpserver", "internal/app/daemon", true},
		{"internal/app/mcpserver", "internal/smtpsend", true},
		{"internal/app/mcpserver", "internal/app/api", false},
		{"cmd/mailagent", "internal/app/daemon", true},

		// Commands only wire (issue 27).
		{"internal/cmd/status", "internal/app/api", false},
		{"internal/cmd/status", "internal/app/view", false},
		{"internal/cmd/status", "internal/cmdutil", false},
		{"internal/cmd/status", "internal/iostreams", false},
		{"internal/cmd/status", "store", false},
		{"internal/cmd/root", "internal/cmd/status", false},
		{"internal/cmd/status", "imapsync", true},
		{"internal/cmd/status", "agent", true},
		{"internal/cmd/status", "agent/outbox", true},
		{"internal/cmd/status", "internal/smtpsend", true},
		{"internal/cmd/status", "internal/llm", true},
		{"internal/cmd/status", "internal/calendar", true},
		{"internal/cmd/status", "tui", true},
		{"internal/cmd/review", "tui", false},
		{"internal/cmd/queue", "tui", false},
		{"internal/cmd/review", "tui/sub", false},
		{"internal/cmd/review", "agent", true},
		{"internal/cmd/reviewx", "tui", true},
		{"internal/cmd/root", "tui", true},
		{"cmd/mailagent", "internal/cmd/root", false},
		{"cmd/mailagent", "internal/rig/e2e", true},
		{"internal/app/api", "internal/cmdutil", true},
		{"internal/app/view", "internal/cmd/status", true},
		{"agent", "internal/cmd/root", true},
		{"tui", "internal/cmdutil", true},
		{"internal/cmdutil", "internal/cmd/root", true},
		{"internal/cmdutil", "tui", true},
		{"internal/cmdutil", "internal/llm", false},
		{"internal/iostreams", "internal/termsafe", true},
		{"internal/prompter", "internal/config", true},

		// The providers and their builder (importedOnlyBy).
		{"internal/cmd/root", "internal/cmdutil/provider", false},
		{"internal/cmd/triage", "internal/cmdutil/provider", true},
		{"internal/cmdutil", "internal/cmdutil/provider", true},
		{"cmd/gen-docs", "internal/cmdutil/provider", true},
		{"internal/cmdutil/provider", "internal/llm/gemini", false},
		{"internal/cmdutil/provider", "internal/llm/openai", false},
		{"internal/llm/geminitest", "internal/llm/gemini", false},
		{"internal/llm/openaitest", "internal/llm/openai", false},
		{"internal/app/doctor", "internal/llm/openai", false},
		{"internal/app/doctor", "internal/llm/gemini", true},
		{"internal/cmdutil", "internal/llm/gemini", true},
		{"internal/app/wire", "internal/llm/openai", true},
		{"agent", "internal/llm/gemini", true},
		{"internal/llm", "internal/llm/gemini", true},
		{"internal/llm/openaitest", "internal/llm/gemini", true},
	}
	for _, tt := range tests {
		problems, _ := violations(tt.from, tt.to)
		if got := len(problems) > 0; got != tt.bad {
			t.Errorf("%s importing %s: got refused=%v (%v), want %v", tt.from, tt.to, got, problems, tt.bad)
		}
	}
}

// syntheticCommands writes a tree with a fake command group that imports
// each of forbidden (packages past the application tier) and
// internal/app/api, and a fine one that imports internal/app/api and
// internal/cmdutil, and returns its root.
func syntheticCommands(t *testing.T, forbidden []string) string {
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
	var fake strings.Builder
	fake.WriteString("package fake\n\nimport (\n")
	for _, pkg := range forbidden {
		fake.WriteString("\t_ \"github.com/mailagent/mailagent/" + pkg + "\"\n")
	}
	fake.WriteString("\t_ \"github.com/mailagent/mailagent/internal/app/api\"\n)\n")
	write("internal/cmd/fake", fake.String())
	write("internal/cmd/fine", `package fine

import (
	_ "github.com/mailagent/mailagent/internal/app/api"
	_ "github.com/mailagent/mailagent/internal/cmdutil"
)
`)
	return top
}

// commandTierRefused reports whether problems refuse internal/cmd/fake's
// import of pkg by the command-tier rule (its "; it may only import"
// message).
func commandTierRefused(problems []string, pkg string) bool {
	bad := "internal/cmd/fake imports " + pkg
	return slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, bad+";") })
}

// syntheticForbidden are the attacks of the command-tier tests: the
// packages past the application tier the fake command imports.
var syntheticForbidden = []string{"agent", "imapsync"}

// TestCommandTierRuleCatchesASyntheticCommand: the walk TestLayering runs
// refuses a command group that reaches past the application tier (a
// synthetic internal/cmd/fake importing imapsync and agent) and accepts
// one that goes through internal/app. This is itself the positive
// control of TestLayering's command-tier rule (a detector: the rule fires
// on a command that breaks it, each import counted); its own control,
// TestCommandTierRuleRemovedLetsTheSyntheticCommandThrough, shows that it
// is that rule, and no other, that refuses them.
func TestCommandTierRuleCatchesASyntheticCommand(t *testing.T) {
	t.Parallel()
	problems, checked, err := layering(syntheticCommands(t, syntheticForbidden))
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("the synthetic tree was not checked")
	}
	tried, through := 0, 0
	for _, pkg := range syntheticForbidden {
		tried++
		if !commandTierRefused(problems, pkg) {
			through++
			t.Errorf("not refused: internal/cmd/fake imports %s (problems: %v)", pkg, problems)
		}
	}
	t.Logf("command-tier violations: %d tried, %d through", tried, through)
	if through != 0 || tried != len(syntheticForbidden) {
		t.Fatalf("violations tried %d of %d, through %d", tried, len(syntheticForbidden), through)
	}
	if len(problems) != tried {
		t.Errorf("got %d problems, want the %d of fake and none of fine: %v", len(problems), tried, problems)
	}
}

// TestCommandTierRuleRemovedLetsTheSyntheticCommandThrough is the
// positive control of TestCommandTierRuleCatchesASyntheticCommand: with
// the command-tier rule (internal/cmd: only commandTierOnly) taken out of
// rules, the same synthetic tree gives no problem at all: every forbidden
// import gets through, so it is that rule that refuses them. Not
// parallel: rules is global.
func TestCommandTierRuleRemovedLetsTheSyntheticCommandThrough(t *testing.T) {
	saved := rules
	defer func() { rules = saved }()
	without := saved[:0:0]
	for _, r := range saved {
		if r.pkg != "internal/cmd" {
			without = append(without, r)
		}
	}
	if len(without) != len(saved)-1 {
		t.Fatalf("took %d rules out, want the one internal/cmd rule", len(saved)-len(without))
	}
	rules = without
	problems, _, err := layering(syntheticCommands(t, syntheticForbidden))
	if err != nil {
		t.Fatal(err)
	}
	tried, landed := 0, 0
	for _, pkg := range syntheticForbidden {
		tried++
		if !commandTierRefused(problems, pkg) {
			landed++
		} else {
			t.Errorf("internal/cmd/fake imports %s: refused without the command-tier rule", pkg)
		}
	}
	t.Logf("without the command-tier rule: %d of %d violations got through (problems: %v)", landed, tried, problems)
	if tried != len(syntheticForbidden) || landed != tried {
		t.Errorf("positive control: got %d of %d through, want all %d", landed, tried, len(syntheticForbidden))
	}
	if len(problems) != 0 {
		t.Errorf("got problems %v without the command-tier rule, want none (no other rule covers the fake command)", problems)
	}
}
