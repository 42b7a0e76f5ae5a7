package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	cmdreview "github.com/mailagent/mailagent/internal/cmd/review"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/demo"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// DemoOptions are the flags of `mailagent demo`.
type DemoOptions struct {
	NoTUI bool
	JSON  bool
	Keep  bool
}

func newDemoCmd(f *Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole agent on a seeded mailbox: no account, no key, no network",
		Long: `demo starts an IMAP server and an SMTP server in this process, on
loopback, seeds about 20 realistic messages (an intro, a scheduling request,
an invoice dispute, a newsletter, a bounce, a thread, a prompt-injection
attempt, a German message…), and runs the real watch pipeline over them in
"auto" mode. Then it opens the review queue: approving a draft really sends
it, to the in-process SMTP server standing in for the outside world.

Without GEMINI_API_KEY the model is an offline demo model: deterministic
keyword rules, no AI. It is labelled as such. With the key set, the demo
uses Gemini for real (your mail never leaves the machine except to the
model).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return demoRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.NoTUI, "no-tui", false, "print the triage table and the outcomes instead of opening the TUI")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcomes as JSON (implies --no-tui)")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the demo's state directory (its path is printed)")
	return cmd
}

// DemoOutcome is one seeded message's outcome, for --json.
type DemoOutcome struct {
	MessageID string   `json:"message_id"`
	From      string   `json:"from"`
	Subject   string   `json:"subject"`
	Route     string   `json:"route"`
	Intents   []string `json:"intents,omitempty"`
	Risk      string   `json:"risk,omitempty"`
	Decision  string   `json:"decision"`
	Reasons   []string `json:"reasons,omitempty"`
}

// DemoReport is what `demo --no-tui --json` prints.
type DemoReport struct {
	Model    string        `json:"model"`
	Outcomes []DemoOutcome `json:"outcomes"`
	Sent     []DemoSent    `json:"sent"`
	Queued   int           `json:"queued"`  // drafts waiting for approval
	Notices  int           `json:"notices"` // messages flagged for the owner
}

// DemoSent is one message the outside world received.
type DemoSent struct {
	To      []AddressJSON `json:"to"`
	Subject string        `json:"subject"`
	Auto    bool          `json:"auto_submitted"`
	Body    string        `json:"body"`
}

func randomSecret() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// demoEnv is the demo's private world: servers, config and state.
type demoEnv struct {
	dir   string
	imap  *memimap.Server
	world *demo.World
	label string
}

func (e *demoEnv) close(keep bool) {
	if e.imap != nil {
		_ = e.imap.Close()
	}
	if e.world != nil {
		_ = e.world.Close()
	}
	if !keep && e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// libLogger hands a library's log.Printf-style lines to the factory's
// logger (the log file; stderr only with -v). The logger is looked up at
// each line: the demo's configuration, and so the log file, is written
// after the servers start.
type libLogger struct{ f *Factory }

func (l libLogger) Printf(format string, args ...any) {
	l.f.Logger().Warn("demo server", "detail", fmt.Sprintf(format, args...))
}

func startDemo(ctx context.Context, f *Factory) (*demoEnv, error) {
	dir, err := os.MkdirTemp("", "mailagent-demo-")
	if err != nil {
		return nil, err
	}
	env := &demoEnv{dir: dir}
	pass := randomSecret()
	env.imap, err = memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: demo.OwnerEmail, Password: pass}},
		Mailboxes: []string{"Sent", "Drafts", "Trash"},
		// The server's own error lines go to the log file, never to the
		// terminal the table, the JSON or the TUI is on.
		Logger: libLogger{f},
	})
	if err != nil {
		return env, err
	}
	env.world, err = demo.StartWorld(demo.OwnerEmail, pass)
	if err != nil {
		return env, err
	}
	// The owner has written to her known contacts before: that is what
	// makes them "known" to the auto-send gate.
	for i, to := range demo.KnownContacts() {
		raw := fmt.Sprintf("From: %s <%s>\r\nTo: %s\r\nSubject: catching up\r\nDate: %s\r\nMessage-ID: <sent-%d@demo.example>\r\n\r\nHello!\r\n",
			demo.OwnerName, demo.OwnerEmail, to, time.Now().AddDate(0, -1, 0).Format(time.RFC1123Z), i)
		if _, err := env.imap.Append(ctx, demo.OwnerEmail, "Sent", []byte(raw), []imap.Flag{imap.FlagSeen}, time.Now().AddDate(0, -1, 0)); err != nil {
			return env, err
		}
	}
	msgs, err := demo.Messages()
	if err != nil {
		return env, err
	}
	msgs = demo.Redate(msgs, time.Now()) // this week's mail, not March's
	for _, raw := range msgs {
		if _, err := env.imap.Append(ctx, demo.OwnerEmail, "INBOX", raw, nil, time.Now()); err != nil {
			return env, err
		}
	}
	profile := filepath.Join(dir, "profile.md")
	if err := os.WriteFile(profile, []byte(demo.OwnerProfile()), 0o600); err != nil {
		return env, err
	}
	// Ada's calendar: a generated file with busy events placed around
	// now, so the scheduling reply has free slots to offer whenever the
	// demo runs.
	ics := filepath.Join(dir, "calendar.ics")
	if err := os.WriteFile(ics, demo.CalendarICS(f.Now()), 0o600); err != nil {
		return env, err
	}
	cfgPath := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`# Written by mailagent demo. Everything here is local and temporary.
state_dir = %q
owner_profile_file = %q
[llm]
api_key_env = "GEMINI_API_KEY"
concurrency = 4
[[accounts]]
name = "demo"
email = %q
display_name = %q
authserv_id = %q
  [accounts.imap]
  host = "127.0.0.1"
  port = %d
  security = "insecure"
  password_env = "MAILAGENT_DEMO_PASSWORD"
  [accounts.smtp]
  host = "127.0.0.1"
  port = %d
  security = "insecure"
  password_env = "MAILAGENT_DEMO_PASSWORD"
  [accounts.calendar]
  url = %q
[scheduling]
timezone = %q
working_hours = %q
days = %q
min_notice = %q
slot_length = %q
[policy]
mode = "auto"
auto_schedule = true
`, filepath.Join(dir, "state"), profile, demo.OwnerEmail, demo.OwnerName, demo.AuthservID, env.imap.Port, env.world.Port,
		ics, demo.Timezone, demo.WorkingHours, demo.WorkingDays, demo.MinNotice, demo.SlotLength)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return env, err
	}
	if err := os.Setenv("MAILAGENT_DEMO_PASSWORD", pass); err != nil {
		return env, err
	}
	f.ConfigPath, f.StateDir = cfgPath, ""
	env.label = "Gemini (GEMINI_API_KEY is set)"
	if os.Getenv("GEMINI_API_KEY") == "" {
		env.label = demo.Label
		f.NewModel = func(context.Context, *config.Config) (llm.Model, error) { return demo.NewModel(), nil }
	}
	return env, nil
}

func demoRun(ctx context.Context, f *Factory, opts *DemoOptions) error {
	if opts.JSON && !opts.NoTUI {
		// JSON is for a program to read: there is no TUI to show it.
		opts.NoTUI = true
	}
	if !opts.NoTUI && !terminalAttached(f) {
		fmt.Fprintln(f.Stderr, "mailagent demo: no terminal to draw on: printing the table instead (as with --no-tui)")
		opts.NoTUI = true
	}
	env, err := startDemo(ctx, f)
	defer func() {
		if env != nil {
			env.close(opts.Keep)
		}
	}()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if opts.Keep {
		// The state directory itself (database, log), not its parent.
		fmt.Fprintf(f.Stderr, "demo state: %s (config: %s)\n", filepath.Join(env.dir, "state"), filepath.Join(env.dir, "config.toml"))
	}
	fmt.Fprintf(f.Stderr, "mailagent demo: model = %s\n", env.label)
	fmt.Fprintf(f.Stderr, "IMAP and SMTP servers run in this process on 127.0.0.1; nothing leaves the machine.\n\n")

	if opts.NoTUI {
		if err := watchRun(ctx, f, &WatchOptions{Once: true}); err != nil {
			return err
		}
		return demoReport(f, env, opts.JSON)
	}

	// Watch in the background (it serves the queue over its socket) and
	// the review TUI in the foreground, connected to it.
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- watchRun(wctx, f, &WatchOptions{demo: true}) }()
	svc, closeSvc, err := waitForWatcher(ctx, f, watchDone)
	if err != nil {
		stopWatch()
		return err
	}
	err = cmdreview.RunTUI(ctx, f.Factory, svc, env.label)
	// The watcher sends what the owner approved once its undo window has
	// passed; quitting the review inside that window must not drop it
	// silently, so the demo keeps the watcher until those sends are done.
	waitForApprovals(ctx, f.Stderr, svc, demoApprovalWait)
	_ = closeSvc()
	stopWatch()
	if werr := <-watchDone; werr != nil && err == nil {
		err = werr
	}
	printDelivered(f.Stdout, env.world.Delivered())
	return err
}

// waitForWatcher waits until the background watcher's socket answers and
// its first sync is done.
func waitForWatcher(ctx context.Context, f *Factory, watchDone <-chan error) (api.Service, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := api.Dial(ctx, api.SocketPath(cfg.StateDir))
		if err == nil {
			// The first sync is done when every seeded message is terminal.
			for time.Now().Before(deadline) {
				st, err := c.Status(ctx)
				if err == nil && st.Counts[store.StateDone]+st.Counts[store.StateNeedsReview] >= 20 {
					return c, c.Close, nil
				}
				time.Sleep(100 * time.Millisecond) // waiting for a background sync, nothing asserted on time
			}
			return c, c.Close, nil
		}
		select {
		case err := <-watchDone:
			return nil, nil, fmt.Errorf("demo watcher stopped: %w", err)
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("demo watcher did not start")
		}
	}
}

func demoReport(f *Factory, env *demoEnv, asJSON bool) error {
	st, err := f.openStore(store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	rep := DemoReport{Model: env.label, Outcomes: []DemoOutcome{}, Sent: []DemoSent{}}
	err = st.ListMessages(store.MessageFilter{Account: "demo", Mailbox: "INBOX"}, func(r *store.MessageRecord) error {
		o := DemoOutcome{MessageID: r.MessageID, From: r.From.Email, Subject: r.Subject, Route: r.Route, Decision: r.Decision, Reasons: r.Reasons}
		if c := r.Classification; c != nil {
			o.Intents, o.Risk = c.Intents, c.Risk
		}
		rep.Outcomes = append(rep.Outcomes, o)
		return nil
	})
	if err != nil {
		return err
	}
	_ = st.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if q.Kind == store.KindDraft {
			rep.Queued++
		} else {
			rep.Notices++
		}
		return nil
	})
	for _, d := range env.world.Delivered() {
		m := mail.Parse(d.Data)
		rep.Sent = append(rep.Sent, DemoSent{To: emailsJSON(d.To), Subject: m.Subject, Auto: m.AutoSubmitted(), Body: m.CleanText})
	}
	if asJSON {
		return writeJSON(f.Stdout, rep)
	}
	var tb table
	tb.row("FROM", "SUBJECT", "ROUTE", "INTENT", "RISK", "DECISION")
	sort.SliceStable(rep.Outcomes, func(i, j int) bool { return rep.Outcomes[i].Decision < rep.Outcomes[j].Decision })
	for _, o := range rep.Outcomes {
		tb.row(termsafe.Line(o.From), truncate(termsafe.Line(o.Subject), 38), o.Route, termsafe.Line(strings.Join(o.Intents, ",")), termsafe.Line(o.Risk), o.Decision)
	}
	if err := tb.write(f.Stdout); err != nil {
		return err
	}
	fmt.Fprintf(f.Stdout, "\n%s and %s wait in the queue (run `mailagent demo` without --no-tui to review them).\n", plural(rep.Queued, "draft"), plural(rep.Notices, "notice"))
	printDelivered(f.Stdout, env.world.Delivered())
	fmt.Fprintf(f.Stdout, "\nmodel: %s\n", env.label)
	return nil
}

func printDelivered(w io.Writer, ds []demo.Delivered) {
	fmt.Fprintf(w, "\nthe outside world received %d message(s):\n", len(ds))
	for _, d := range ds {
		m := mail.Parse(d.Data)
		kind := "approved by you"
		if m.AutoSubmitted() {
			kind = "sent automatically"
		}
		fmt.Fprintf(w, "  to %s: %q (%s)\n", termsafe.Line(strings.Join(d.To, ", ")), termsafe.Line(m.Subject), kind)
		for _, line := range strings.Split(strings.TrimSpace(termsafe.Text(m.CleanText)), "\n") {
			fmt.Fprintf(w, "    | %s\n", line)
		}
	}
}

// demoApprovalWait bounds how long the demo waits, after the review is
// closed, for approved replies still in their undo window.
const demoApprovalWait = 30 * time.Second

// waitForApprovals waits until no approved reply is waiting to be sent
// (scheduled, pending or sending), at most limit, saying on w what it
// waits for and, if it gives up or is interrupted, what was not sent.
func waitForApprovals(ctx context.Context, w io.Writer, svc api.Service, limit time.Duration) {
	waiting := func() int {
		n := 0
		for _, st := range []string{store.OutboxScheduled, store.OutboxPending, store.OutboxSending} {
			obs, err := svc.Outbox(ctx, st)
			if err != nil {
				return 0
			}
			for _, ob := range obs {
				if !ob.Auto {
					n++
				}
			}
		}
		return n
	}
	n := waiting()
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "mailagent demo: sending %s you approved when the undo window ends (Ctrl-C leaves it unsent)\n", pluralWord(n, "reply", "replies"))
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n > 0 {
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "mailagent demo: interrupted: %s not sent\n", pluralWord(n, "approved reply", "approved replies"))
			return
		case <-deadline.C:
			fmt.Fprintf(w, "mailagent demo: %s still not sent after %s\n", pluralWord(n, "approved reply", "approved replies"), limit)
			return
		case <-tick.C:
			n = waiting()
		}
	}
}
