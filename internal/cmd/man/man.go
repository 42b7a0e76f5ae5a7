// Package man writes mailagent's man pages from its command tree. Only the
// generator, cmd/gen-docs, links it into a program: cobra/doc's Markdown
// renderer would add its initialisers to every start of mailagent, shell
// completions included (BENCHMARKS.md §9). Its tests are in
// internal/cmd/root (man_test.go), whose test binary holds every
// command's tests.
package man

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/initcfg"
)

// exitMeanings are the exit codes as mailagent(1) states them; README's
// table says the same at more length (TestManPagesHaveTheMissingSections
// checks both list every code).
var exitMeanings = []struct {
	code    int
	meaning string
}{
	{cmdutil.ExitOK, "success"},
	{cmdutil.ExitFailure, "an unexpected failure (the message says what), or a y/N confirmation answered no"},
	{cmdutil.ExitUsage, "bad flags, arguments or configuration"},
	{cmdutil.ExitUnreachable, "a server (IMAP, SMTP, model) could not be reached or refused the login"},
	{cmdutil.ExitLocked, "the state database is held by another process"},
	{cmdutil.ExitPartial, "finished, but some messages need review, some checks failed, some records could not be salvaged, or a Drafts copy could not be updated"},
	{cmdutil.ExitCorrupt, "the state database is damaged: run mailagent doctor --repair"},
	{cmdutil.ExitNotSent, "an approval sent nothing: the message was answered already, or the item was sent, rejected or resolved before"},
	{cmdutil.ExitInterrupted, "interrupted before finishing"},
}

// manEnvironment lists the variables mailagent itself reads.
var manEnvironment = [][2]string{
	{"MAILAGENT_CONFIG", "the configuration file when --config is not given"},
	{"XDG_CONFIG_HOME", "where the configuration is looked for last ($XDG_CONFIG_HOME/mailagent/config.toml)"},
	{"XDG_STATE_HOME", "the default state directory ($XDG_STATE_HOME/mailagent)"},
	{"GEMINI_API_KEY", "the model key when llm.api_key_env is not set (Gemini)"},
	{"VISUAL, EDITOR", "the editor of queue edit (else vi)"},
	{"NO_COLOR", "no colour in the review"},
	{"*_env", "any variable a password_env or api_key_env key of the configuration names"},
}

// manFiles lists the files mailagent reads and writes.
var manFiles = [][2]string{
	{"$XDG_CONFIG_HOME/mailagent/config.toml", "the configuration, mode 0600 (see mailagent.toml(5))"},
	{"<state_dir>/mailagent.db", "the state database (bbolt): messages, queue, outbox, contacts, memory"},
	{"<state_dir>/mailagent.sock", "the watcher's socket, through which the other commands reach it"},
	{"<state_dir>/mailagent.log", "the log (log_file); nothing is logged to the terminal"},
	{"<state_dir>/replay.db", "replay's results, so an interrupted replay resumes"},
}

// Write writes the pages of root into dir (created when missing): one per
// command (mailagent.1, mailagent-queue-show.1…) from the same cobra tree
// the help comes from, so the pages cannot drift from the flags, plus the
// sections cobra does not write (EXIT STATUS, ENVIRONMENT, FILES) and the
// config file's page, mailagent.toml(5).
func Write(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true // no date line that changes every build
	hdr := &doc.GenManHeader{Title: "MAILAGENT", Section: "1", Source: "mailagent " + cmdutil.Version(), Manual: "mailagent manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	top := filepath.Join(dir, "mailagent.1")
	page, err := os.ReadFile(top)
	if err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	if err := os.WriteFile(top, append(page, manSections()...), 0o644); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mailagent.toml.5"), configManPage(), 0o644); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

// roff escapes text for a man page line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// manSections is what mailagent(1) adds to cobra's page.
func manSections() []byte {
	var b bytes.Buffer
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitMeanings {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.code, roff(e.meaning))
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range manEnvironment {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(e[0]), roff(e[1]))
	}
	b.WriteString(".SH FILES\n")
	for _, f := range manFiles {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roff(f[0]), roff(f[1]))
	}
	b.WriteString(".SH SEE ALSO\n.BR mailagent.toml (5)\n")
	return b.Bytes()
}

// configManPage is mailagent.toml(5): where the file is, how secrets are
// given, and an example as `mailagent init` writes it (initcfg.Render,
// so the example is always a file the current version accepts).
func configManPage() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, ".TH MAILAGENT.TOML 5 \"\" \"mailagent %s\" \"mailagent manual\"\n", roff(cmdutil.Version()))
	b.WriteString(".SH NAME\nmailagent.toml \\- the mailagent configuration file\n")
	b.WriteString(".SH DESCRIPTION\n" + roff("The file is TOML, looked for at --config FILE, then $MAILAGENT_CONFIG, then $XDG_CONFIG_HOME/mailagent/config.toml. "+
		"mailagent init writes it; mailagent doctor checks it, naming the file, the key and the fix of every problem. "+
		"Relative paths are relative to the file. It must not be readable by others when it holds a secret.") + "\n")
	b.WriteString(".SH SECRETS\n" + roff("Passwords and keys come only from a command (password_cmd, api_key_cmd), an environment variable "+
		"(password_env, api_key_env) or the system keyring (password_keyring, api_key_keyring); they never appear in logs, traces or errors.") + "\n")
	b.WriteString(".SH EXAMPLE\n" + roff("A file as mailagent init writes it; the README's Configuration reference describes every key.") + "\n.nf\n")
	example := initcfg.Render(&initcfg.Setup{
		Email: "ada@example.com", Name: "Ada Lovelace", Account: "personal", Provider: "Example", Source: "manual",
		IMAP:      initcfg.Server{Host: "imap.example.com", Port: 993, Security: "tls", Username: "ada@example.com"},
		SMTP:      initcfg.Server{Host: "smtp.example.com", Port: 465, Security: "tls", Username: "ada@example.com"},
		Secret:    initcfg.Secret{Kind: initcfg.SecretCmd, Value: "pass show mail/example"},
		APIKeyEnv: "GEMINI_API_KEY", Model: "gemini-2.5-flash", Mode: "review",
	})
	for _, line := range strings.Split(strings.TrimRight(string(example), "\n"), "\n") {
		b.WriteString(roff(line) + "\n")
	}
	b.WriteString(".fi\n.SH SEE ALSO\n.BR mailagent (1)\n")
	return b.Bytes()
}

// GenDocs is the gen-docs program over args (--man-page DIR): it writes
// the man pages of the command tree that tree returns into DIR and
// returns the exit code (mailagent's codes), saying what went wrong on
// stderr. It lives here, not in cmd/gen-docs, so that its test runs in
// internal/cmd/root's test binary instead of linking one of its own.
func GenDocs(args []string, stderr io.Writer, tree func() *cobra.Command) int {
	fs := flag.NewFlagSet("gen-docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("man-page", "", "write the man pages into `DIR` (created when missing)")
	if err := fs.Parse(args); err != nil || *dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: gen-docs --man-page DIR")
		return cmdutil.ExitUsage
	}
	if err := Write(tree(), *dir); err != nil {
		fmt.Fprintln(stderr, "gen-docs:", err)
		return cmdutil.ExitFailure
	}
	return cmdutil.ExitOK
}
