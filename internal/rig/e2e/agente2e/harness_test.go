package agente2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// Generous deadlines: they bound waits on conditions, they assert nothing
// about speed.
const (
	waitShort = 30 * time.Second
	waitLong  = 90 * time.Second
	// commandTimeout bounds one run of the binary (watch --once, doctor, …).
	commandTimeout = 2 * time.Minute
)

const (
	account     = "e2e"
	ownerName   = "Ada Lovelace"
	passwordEnv = "MA_E2E_PASSWORD"
	apiKeyEnv   = "MA_E2E_GEMINI_KEY"
)

// options shape one test's config file.
type options struct {
	Mode          string // policy.mode: "review" (default) or "auto"
	Concurrency   int    // llm.concurrency; 0 means 4
	Password      string // the owner's password as the agent sees it; "" = the right one
	IMAPPort      int    // 0 = the stack's
	DraftsMailbox string // accounts.drafts_mailbox; "" = not set
	// Courier runs the test against the second Dovecot, laid out as
	// Courier-IMAP (folders under "INBOX.", no SPECIAL-USE); mail is put
	// in its INBOX with APPEND, replies still go out through Postfix.
	Courier bool
	// Model answers the agent's model calls; nil answers every request
	// cautiously (a draft that needs approval).
	Model geminitest.Handler
	// OpenAI, when set, serves Model through the OpenAI-compatible fake in
	// that mode (llm.provider = "openai", a local server with no key);
	// the Gemini fake then fails every call.
	OpenAI *openaitest.Mode
	// FoldersOf, on the main server, makes this env watch and file into
	// the folders of that env (the same test's) instead of its own.
	FoldersOf *env
}

// env is one test's mailagent: its config, state directory and fake model,
// against the shared stack.
type env struct {
	t        *testing.T
	s        *e2e.Stack
	tag      string // unique per test run: goes into Subjects and Message-IDs
	dir      string
	cfgPath  string
	stateDir string
	password string
	model    *geminitest.Server
	openai   *openaitest.Bridge // nil: the model is Gemini's
	courier  bool               // the IMAP server is the Courier-style one (options.Courier)
	main     *e2e.Stack         // the main stack (Postfix delivers there, whatever the test's server)
	// folders is the prefix of this env's own folders on the main server
	// ("e2e-<tag>": the watched mailbox, and "-Sent", "-Drafts" after
	// it), "" on the Courier-style and real servers. Tests share the
	// owner's account, so each agent watches and files into folders of
	// its own (see box) and tests run in parallel.
	folders  string
	lookback string // sync.initial_lookback as written in the config
	// extraEnv is added to the environment of every mailagent this env
	// runs (t.Setenv cannot be used in parallel tests).
	extraEnv []string

	mu       sync.Mutex
	watchers []*watcher
}

func newEnv(t *testing.T, o options) *env {
	t.Helper()
	s := e2e.Require(t)
	if binary == "" {
		t.Fatal("the mailagent binary was not built (TestMain)")
	}
	if o.Courier && o.IMAPPort == 0 {
		courierExclusive(t)
	}
	// A short directory of our own: the socket path must stay under the
	// 108-byte limit of unix sockets whatever TMPDIR is.
	dir, err := os.MkdirTemp("", "ma-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	h := o.Model
	if h == nil {
		h = cautiousModel
	}
	main := s
	if o.Courier {
		s = s.Courier(t)
	}
	e := &env{
		t: t, s: s, main: main, tag: newTag(), dir: dir, courier: o.Courier,
		cfgPath:  filepath.Join(dir, "config.toml"),
		stateDir: filepath.Join(dir, "state"),
		password: o.Password,
	}
	if o.OpenAI != nil {
		e.openai = openaitest.NewBridge(t, *o.OpenAI, h)
		h = func(*geminitest.Request) geminitest.Reply {
			t.Errorf("provider openai: the Gemini endpoint was called")
			return geminitest.ErrorReply(http.StatusInternalServerError, "INTERNAL", "wrong provider")
		}
	}
	e.model = geminitest.NewServer(t, h)
	if e.password == "" {
		e.password = s.Password(t, e2e.Owner)
	}
	switch {
	case o.FoldersOf != nil:
		e.folders = o.FoldersOf.folders
	case !o.Courier:
		e.makeFolders()
	}
	e.writeConfig(o)
	t.Cleanup(e.dumpOnFailure)
	return e
}

// courierMu gives the owner account of the Courier-style Dovecot to one
// test at a time: its tests use its INBOX, INBOX.Drafts and INBOX.Sent
// themselves (they test how they are found), so they cannot have folders
// of their own as tests on the main server do.
var (
	courierMu   sync.Mutex
	courierHeld sync.Map // *testing.T → struct{}: the test holding courierMu
)

// courierExclusive takes courierMu for t until t ends; a test holding it
// already (a second env) goes on.
func courierExclusive(t *testing.T) {
	t.Helper()
	if _, held := courierHeld.Load(t); held {
		return
	}
	courierMu.Lock()
	courierHeld.Store(t, struct{}{})
	t.Cleanup(func() {
		courierHeld.Delete(t)
		courierMu.Unlock()
	})
}

// makeFolders creates this env's own folders in the owner's account on
// the main server (box names them) and deletes them when the test passes
// (a failed test's are kept to look at).
func (e *env) makeFolders() {
	e.t.Helper()
	e.folders = "e2e-" + e.tag
	boxes := []string{e.box("INBOX"), e.box("Sent"), e.box("Drafts")}
	for _, b := range boxes {
		e.s.ResetMailbox(e.t, e2e.Owner, b)
	}
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("the owner's folders of this test are kept: %v", boxes)
			return
		}
		for _, b := range boxes {
			e.s.DeleteMailbox(e.t, e2e.Owner, b)
		}
	})
}

// newTag is ten random letters. No digits: a tag goes into subjects,
// and the output guard (rightly) holds an auto-reply whose subject echoes
// a long number from the incoming mail.
func newTag() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return 'g' + (r - '0')
		}
		return r
	}, hex.EncodeToString(b[:]))
}

func (e *env) writeConfig(o options) {
	e.t.Helper()
	mode := o.Mode
	if mode == "" {
		mode = "review"
	}
	conc := o.Concurrency
	if conc == 0 {
		conc = 4
	}
	imapPort := o.IMAPPort
	if imapPort == 0 {
		imapPort = e.s.IMAPPort
	}
	drafts := ""
	switch {
	case o.DraftsMailbox != "":
		drafts = fmt.Sprintf("drafts_mailbox = %q\n", o.DraftsMailbox)
	case e.folders != "":
		drafts = fmt.Sprintf("drafts_mailbox = %q\n", e.box("Drafts"))
	}
	if e.folders != "" {
		drafts += fmt.Sprintf("mailbox = %q\nsent_mailbox = %q\n", e.box("INBOX"), e.box("Sent"))
	}
	// The stack's milters stamp every delivered message with their
	// Authentication-Results: a correctly configured owner names that
	// server (doctor proposes it), so every env trusts it.
	if id := os.Getenv("MAILAGENT_E2E_AUTHSERV_ID"); id != "" {
		drafts += fmt.Sprintf("authserv_id = %q\n", id)
	}
	// poll_interval is an hour: within a test, new mail can only be seen
	// through IDLE. initial_lookback is an hour in the env's own folder
	// (all of it is the test's mail: `watch --once` after a delivery sees
	// it however slow the machine), and tiny on the Courier-style and
	// real servers so that a fresh state directory never picks up other
	// tests' mail from their shared INBOX.
	e.lookback = "2s"
	if e.folders != "" {
		e.lookback = "1h"
	}
	cfg := fmt.Sprintf(`state_dir = %q

[llm]
%s
concurrency = %d
timeout = "30s"

[sync]
initial_lookback = %q
poll_interval = "1h"

[policy]
mode = %q
max_auto_per_contact_per_day = 100
max_auto_per_day = 100

[[accounts]]
name = %q
email = %q
display_name = %q
%s
  [accounts.imap]
  host = %q
  port = %d
  security = "starttls"
  tls_ca_file = %q
  password_env = %q

  [accounts.smtp]
  host = %q
  port = %d
  security = "starttls"
  tls_ca_file = %q
  password_env = %q
`, e.stateDir, e.llmConfig(), conc, e.lookback, mode,
		account, e2e.Owner, ownerName, drafts,
		e.s.IMAPHost, imapPort, e.s.CAFile, passwordEnv,
		e.s.SMTPHost, e.s.SMTPPort, e.s.CAFile, passwordEnv)
	if err := os.WriteFile(e.cfgPath, []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// llmConfig is the body of the [llm] section: the Gemini fake, or the
// OpenAI-compatible one as a local server would be configured (no key).
func (e *env) llmConfig() string {
	if e.openai != nil {
		mode := e.openai.Srv.Mode
		return fmt.Sprintf("provider = \"openai\"\nmodel = %q\nbase_url = %q\nstructured_output = %q",
			openaitest.DefaultModel, e.openai.Srv.URL, mode.StructuredOutput())
	}
	return fmt.Sprintf("model = \"gemini-test\"\napi_key_env = %q\nbase_url = %q", apiKeyEnv, e.model.URL)
}

// command builds a mailagent command line for this env.
func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, append([]string{"--config", e.cfgPath}, args...)...)
	cmd.Env = append(os.Environ(), passwordEnv+"="+e.password, apiKeyEnv+"=e2e-not-a-real-key")
	cmd.Env = append(cmd.Env, e.extraEnv...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// run executes mailagent to completion and returns stdout, stderr and the
// exit code.
func (e *env) run(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := e.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		e.t.Fatalf("mailagent %v: %v\nstderr:\n%s", args, err, errb.String())
	}
	if ctx.Err() != nil {
		e.t.Fatalf("mailagent %v: still running after %v\nstderr:\n%s", args, commandTimeout, errb.String())
	}
	return out.String(), errb.String(), code
}

// mustRun runs mailagent and fails the test unless it exits 0.
func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	out, errs, code := e.run(args...)
	if code != 0 {
		e.t.Fatalf("mailagent %v: exit %d, want 0\nstderr:\n%s", args, code, errs)
	}
	return out
}

// dumpOnFailure prints what the watchers said and the end of the log.
func (e *env) dumpOnFailure() {
	if !e.t.Failed() {
		return
	}
	e.mu.Lock()
	ws := slices.Clone(e.watchers)
	e.mu.Unlock()
	for i, w := range ws {
		e.t.Logf("watcher %d (pid %d) stderr:\n%s", i+1, w.pid(), w.stderr.String())
	}
	e.t.Logf("tail of %s:\n%s", e.logPath(), tail(e.logPath(), 60))
}

func (e *env) logPath() string { return filepath.Join(e.stateDir, "mailagent.log") }

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockedBuffer collects a subprocess's output while tests read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// watcher is a running `mailagent watch` subprocess.
type watcher struct {
	e      *env
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, once done is closed
	client *api.Client
}

func (w *watcher) pid() int {
	if w.cmd.Process == nil {
		return 0
	}
	return w.cmd.Process.Pid
}

func (w *watcher) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// startWatch starts `mailagent watch` and waits until its socket answers
// and every account is idle (its first sync is done and it sits in IDLE).
// The process is stopped when the test ends if the test has not.
func (e *env) startWatch() *watcher {
	e.t.Helper()
	cmd := e.command(context.Background(), "watch")
	w := &watcher{e: e, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout = w.stderr
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start mailagent watch: %v", err)
	}
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	e.mu.Lock()
	e.watchers = append(e.watchers, w)
	e.mu.Unlock()
	e.t.Cleanup(func() {
		if w.client != nil {
			_ = w.client.Close()
		}
		if w.exited() {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-w.done
		}
	})
	w.waitIdle()
	return w
}

// waitIdle waits until the watcher's socket answers and reports every
// account idle.
func (w *watcher) waitIdle() {
	t := w.e.t
	t.Helper()
	ctx := context.Background()
	sock := api.SocketPath(w.e.stateDir)
	deadline := time.Now().Add(waitLong)
	state := "no socket"
	for {
		if w.exited() {
			t.Fatalf("mailagent watch exited early (%v)\nstderr:\n%s", w.err, w.stderr.String())
		}
		if w.client == nil {
			if c, err := api.Dial(ctx, sock); err == nil {
				w.client = c
			} else {
				state = err.Error()
			}
		}
		if w.client != nil {
			st, err := w.client.Status(ctx)
			if err != nil {
				state = err.Error()
			} else if idle, s := allIdle(st); idle {
				return
			} else {
				state = s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailagent watch: not idle after %v, last state: %s", waitLong, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allIdle(st api.Status) (bool, string) {
	if !st.Watcher || len(st.Accounts) == 0 {
		return false, fmt.Sprintf("%+v", st)
	}
	var states []string
	idle := true
	for _, a := range st.Accounts {
		states = append(states, a.Name+"="+a.State)
		if a.State != "idle" {
			idle = false
		}
	}
	return idle, strings.Join(states, " ")
}

// stop sends SIGTERM and waits for a clean exit (status 0).
func (w *watcher) stop() {
	t := w.e.t
	t.Helper()
	if w.client != nil {
		_ = w.client.Close()
		w.client = nil
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil && !w.exited() {
		t.Fatalf("SIGTERM watcher: %v", err)
	}
	select {
	case <-w.done:
	case <-time.After(waitShort):
		t.Fatalf("mailagent watch did not stop within %v of SIGTERM\nstderr:\n%s", waitShort, w.stderr.String())
	}
	if w.err != nil {
		t.Fatalf("mailagent watch after SIGTERM: %v, want exit 0\nstderr:\n%s", w.err, w.stderr.String())
	}
}

// kill9 sends SIGKILL, as a crash or the OOM killer would, and waits.
func (w *watcher) kill9() {
	t := w.e.t
	t.Helper()
	if w.client != nil {
		_ = w.client.Close()
		w.client = nil
	}
	if err := w.cmd.Process.Kill(); err != nil && !w.exited() {
		t.Fatalf("SIGKILL watcher: %v", err)
	}
	<-w.done
}

// records lists the message records the watcher holds, by Message-ID.
func (w *watcher) records() (map[string][]store.MessageRecord, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	out := map[string][]store.MessageRecord{}
	err := w.client.StoreContext(ctx).ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		out[r.MessageID] = append(out[r.MessageID], *r)
		return nil
	})
	return out, err
}

// waitTerminal waits until every Message-ID in ids has a terminal record
// in the running watcher.
func (w *watcher) waitTerminal(ids []string, timeout time.Duration) {
	t := w.e.t
	t.Helper()
	eventually(t, timeout, "messages reach a terminal state", func() (bool, string) {
		if w.exited() {
			t.Fatalf("mailagent watch exited (%v)\nstderr:\n%s", w.err, w.stderr.String())
		}
		recs, err := w.records()
		if err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, id := range ids {
			rs := recs[id]
			if len(rs) == 0 || !rs[0].State.Terminal() {
				st := "missing"
				if len(rs) > 0 {
					st = string(rs[0].State)
				}
				waiting = append(waiting, id+"="+st)
			}
		}
		return len(waiting) == 0, "waiting for " + strings.Join(waiting, ", ")
	})
}

// queueItem waits for the queue item of the message with that Message-ID.
func (w *watcher) queueItem(messageID string, timeout time.Duration) store.QueueItem {
	t := w.e.t
	t.Helper()
	var got store.QueueItem
	eventually(t, timeout, "queue item for "+messageID, func() (bool, string) {
		if w.exited() {
			t.Fatalf("mailagent watch exited (%v)\nstderr:\n%s", w.err, w.stderr.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitShort)
		defer cancel()
		items, err := w.client.Queue(ctx, api.QueueFilter{})
		if err != nil {
			return false, err.Error()
		}
		for _, q := range items {
			if q.MessageID == messageID {
				got = q
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d other items", len(items))
	})
	return got
}

// eventually polls cond every 100ms until it holds, and fails the test
// with cond's last word once timeout has passed.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v (%s)", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openStore opens the state database of a stopped watcher.
func (e *env) openStore() *store.Store {
	e.t.Helper()
	st, err := store.Open(filepath.Join(e.stateDir, "mailagent.db"), store.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		e.t.Fatalf("open the state database: %v", err)
	}
	e.t.Cleanup(func() { _ = st.Close() })
	return st
}

// ---------------------------------------------------------------------------
// mail

// message is an email a test delivers.
type message struct {
	From, To, Cc, Subject, Body string
	ID                          string // Message-ID without brackets
	InReplyTo, References       string // bracketed lists, optional
}

func (m message) raw() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\n", m.From, m.To)
	if m.Cc != "" {
		fmt.Fprintf(&b, "Cc: %s\r\n", m.Cc)
	}
	fmt.Fprintf(&b, "Subject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\n", m.Subject, time.Now().Format(time.RFC1123Z), m.ID)
	if m.InReplyTo != "" {
		fmt.Fprintf(&b, "In-Reply-To: %s\r\n", m.InReplyTo)
	}
	if m.References != "" {
		fmt.Fprintf(&b, "References: %s\r\n", m.References)
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString(strings.ReplaceAll(m.Body, "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}

// id makes a Message-ID unique to this test run.
func (e *env) id(name string) string { return name + "." + e.tag + "@e2e.example.test" }

// deliver sends m through Postfix to ada, as mail from the outside world
// arrives, and waits until Dovecot has it in ada's INBOX.
func (e *env) deliver(m message) {
	e.t.Helper()
	e.deliverRaw(m.From, m.ID, e.signed(m.From, m.raw()))
}

// signed DKIM-signs raw for the domain of from when the stack has a key
// for it (its own example.test, partner.test, …), as the sender's server
// would: the stack's milters then authenticate it.
func (e *env) signed(from string, raw []byte) []byte {
	e.t.Helper()
	addr := bareAddr(from)
	domain := strings.ToLower(addr[strings.LastIndexByte(addr, '@')+1:])
	_, a := e2e.RequireSenderAuth(e.t)
	if _, ok := a.Keys[domain]; !ok {
		return raw
	}
	out, err := a.Sign(raw, domain)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// deliverRaw submits raw through Postfix (and its milters) to the owner,
// and waits until it is in the mailbox this env watches: on the main
// server Postfix files it in the owner's INBOX and it is moved from there
// to this env's own (moveIn). The Courier-style server has no MTA in
// front of it: the message goes through the main server first, and the
// copy as stamped there, with its real Authentication-Results, is
// appended to the Courier INBOX.
func (e *env) deliverRaw(from, id string, raw []byte) {
	e.t.Helper()
	if e.courier {
		e.main.Deliver(e.t, bareAddr(from), []string{e2e.Sink}, raw)
		uid := e.main.WaitForMessageID(e.t, e2e.Sink, "INBOX", id, waitShort)
		e.s.Append(e.t, e2e.Owner, "INBOX", e.main.FetchRaw(e.t, e2e.Sink, "INBOX", uid))
		return
	}
	e.s.Deliver(e.t, bareAddr(from), []string{e2e.Owner}, raw)
	e.moveIn(id)
}

// moveIn waits until the message id that Postfix delivers to the owner is
// in the owner's INBOX, and moves it to the mailbox this env watches (a
// no-op wait where that is INBOX).
func (e *env) moveIn(id string) {
	e.t.Helper()
	if e.folders == "" {
		e.s.WaitForMessageID(e.t, e2e.Owner, "INBOX", id, waitShort)
		return
	}
	e.s.MoveMessageID(e.t, e2e.Owner, "INBOX", e.box("INBOX"), id, waitShort)
}

// box is the full name of one of the owner's folders ("INBOX", "Sent",
// "Drafts") as this env's agent uses it: "INBOX.Sent" for "Sent" on the
// Courier-style server, this env's own folder on the main server
// ("e2e-<tag>" for INBOX, "e2e-<tag>-Sent"). Other names are unchanged.
func (e *env) box(name string) string {
	switch {
	case e.courier && name != "INBOX":
		return "INBOX." + name
	case e.folders == "":
		return name
	case name == "INBOX":
		return e.folders
	case name == "Sent" || name == "Drafts":
		return e.folders + "-" + name
	}
	return name
}

func bareAddr(a string) string {
	if i := strings.LastIndex(a, "<"); i >= 0 {
		return strings.TrimSuffix(a[i+1:], ">")
	}
	return a
}

// seedSent files a message from ada to rcpt in ada's Sent folder, so that
// rcpt is a known contact when a fresh watcher scans Sent on its first
// start.
func (e *env) seedSent(rcpt string) string {
	e.t.Helper()
	id := e.id("earlier")
	e.s.Append(e.t, e2e.Owner, e.box("Sent"), message{
		From: ownerName + " <" + e2e.Owner + ">", To: rcpt, Subject: "Catching up " + e.tag, ID: id,
		Body: "Hi, good to see you last week.",
	}.raw(), imap.FlagSeen)
	return id
}

// barrier delivers one message to each user through Postfix and waits for
// it. Postfix hands mail to Dovecot in the order it was queued, so a reply
// that mailagent submitted before the barrier has been delivered by the
// time the barrier is: it makes "nothing more arrives" checkable without
// sleeping.
func (e *env) barrier(users ...string) {
	e.t.Helper()
	id := e.id("barrier-" + newTag())
	e.s.Deliver(e.t, "barrier@example.test", users, message{
		From: "Barrier <barrier@example.test>", To: strings.Join(users, ", "), Subject: "barrier " + e.tag, ID: id, Body: "barrier",
	}.raw())
	for _, u := range users {
		e.s.WaitForMessageID(e.t, u, "INBOX", id, waitShort)
	}
}

// found is one message read back over IMAP.
type found struct {
	UID   imap.UID
	Flags []imap.Flag
	Raw   []byte
	M     *mail.Message
}

// find returns the messages in user's mailbox whose header contains value.
func (e *env) find(user, mailbox, header, value string) []found {
	e.t.Helper()
	out, err := e.findErr(user, mailbox, header, value)
	if err != nil {
		e.t.Fatalf("search %s %s for %s %q: %v", user, mailbox, header, value, err)
	}
	return out
}

func (e *env) findErr(user, mailbox, header, value string) ([]found, error) {
	// Only the owner's mailbox is on the Courier-style server; Postfix
	// delivers everyone's mail to the main Dovecot.
	s := e.s
	if user != e2e.Owner {
		s = e.main
	}
	c, err := imapclient.DialStartTLS(s.IMAPAddr(), &imapclient.Options{TLSConfig: s.TLSConfig(e.t)})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(user, e.s.Password(e.t, user)).Wait(); err != nil {
		return nil, err
	}
	defer func() { _ = c.Logout().Wait() }()
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		return nil, err
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: header, Value: value}}}, nil).Wait()
	if err != nil {
		return nil, err
	}
	uids := data.AllUIDs()
	if len(uids) == 0 {
		return nil, nil
	}
	msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID: true, Flags: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	}).Collect()
	if err != nil {
		return nil, err
	}
	var out []found
	for _, m := range msgs {
		var raw []byte
		for _, b := range m.BodySection {
			raw = b.Bytes
		}
		out = append(out, found{UID: m.UID, Flags: m.Flags, Raw: raw, M: mail.Parse(raw)})
	}
	return out, nil
}

// waitFind waits until user's mailbox holds at least n messages whose
// header contains value, and returns them.
func (e *env) waitFind(user, mailbox, header, value string, n int, timeout time.Duration) []found {
	e.t.Helper()
	var got []found
	eventually(e.t, timeout, fmt.Sprintf("%s %s: %d message(s) with %s %q", user, mailbox, n, header, value), func() (bool, string) {
		var err error
		got, err = e.findErr(user, mailbox, header, value)
		if err != nil {
			return false, err.Error()
		}
		return len(got) >= n, fmt.Sprintf("have %d", len(got))
	})
	return got
}

// ---------------------------------------------------------------------------
// the fake model

// isClassify tells the classification call from the drafting call by the
// response schema it asks for.
func isClassify(req *geminitest.Request) bool {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	_, ok := props["intents"]
	return ok
}

var usage = llm.Usage{PromptTokens: 400, OutputTokens: 40, TotalTokens: 440}

// verdict is a classification the fake model returns.
type verdict struct {
	Intent     string
	Risk       string
	Confidence float64
	Approval   bool
}

func (v verdict) reply() geminitest.Reply {
	return geminitest.JSONReply(map[string]any{
		"intents": []string{v.Intent}, "risk": v.Risk, "action": "reply", "requires_approval": v.Approval,
		"confidence": v.Confidence, "summary": "e2e: " + v.Intent, "comments": "scripted by the e2e test",
	}, usage)
}

// lowRisk is what a model says of a harmless question.
var lowRisk = verdict{Intent: "information_request", Risk: "low", Confidence: 0.95}

// needsApproval is what a careful model says of anything else.
var needsApproval = verdict{Intent: "action_request", Risk: "medium", Confidence: 0.9, Approval: true}

func draftReply(body string) geminitest.Reply {
	return geminitest.JSONReply(map[string]any{"body": body, "tone": "brief", "needs_owner_input": false}, usage)
}

// cautiousModel classifies everything as needing approval and drafts a
// neutral reply. Mail that other packages deliver to ada while a watcher
// of ours runs ends up here, and is only ever queued.
func cautiousModel(req *geminitest.Request) geminitest.Reply {
	if isClassify(req) {
		return needsApproval.reply()
	}
	return draftReply("Thanks, I will get back to you.")
}

// setLookback rewrites sync.initial_lookback in the env's config.
func (e *env) setLookback(d time.Duration) {
	e.t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	old := fmt.Sprintf("initial_lookback = %q\n", e.lookback)
	if !strings.Contains(string(b), old) {
		e.t.Fatalf("config has no %q line", strings.TrimSpace(old))
	}
	e.lookback = d.Round(time.Second).String()
	b = bytes.Replace(b, []byte(old), []byte(fmt.Sprintf("initial_lookback = %q\n", e.lookback)), 1)
	if err := os.WriteFile(e.cfgPath, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
}
