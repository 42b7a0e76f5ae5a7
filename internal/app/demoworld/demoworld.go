// Package demoworld is the private world `mailagent demo` runs the agent
// in: an IMAP server (memimap) and an SMTP server standing for the
// outside world (internal/demo), both in this process on loopback, the
// owner's mailbox seeded with the demo's messages (redated to this week)
// and her earlier Sent mail, her profile and calendar, and a
// configuration over all of it in a temporary directory. Without
// GEMINI_API_KEY the model is the offline demo model. The command
// (internal/cmd/demo) points the Factory at the configuration and runs
// watch and review over it.
package demoworld

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/demo"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
)

// Account is the name of the demo's one account in its configuration.
const Account = "demo"

// World is the demo's private world: servers, configuration and state.
type World struct {
	// Dir holds the configuration (ConfigPath), the profile, the
	// calendar and the state directory (StateDir).
	Dir        string
	ConfigPath string
	StateDir   string
	// Label names the model for the owner: the offline demo model, or
	// Gemini when GEMINI_API_KEY is set.
	Label string
	// NewModel builds the offline demo model; nil when GEMINI_API_KEY is
	// set (the configured model is Gemini, for real).
	NewModel func(context.Context, *config.Config) (llm.Model, error)
	// IMAPPort is the in-process IMAP server's port on 127.0.0.1.
	IMAPPort int

	imap  *memimap.Server
	world *demo.World
}

// Delivered is one message the outside world received, parsed.
type Delivered struct {
	To      []string
	Subject string
	Auto    bool // Auto-Submitted: sent by the agent itself
	Body    string
}

func randomSecret() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// libLogger hands a library's log.Printf-style lines to the logger (the
// log file; stderr only with -v). The logger is looked up at each line:
// the demo's configuration, and so the log file, is written after the
// servers start.
type libLogger struct{ logger func() *slog.Logger }

func (l libLogger) Printf(format string, args ...any) {
	l.logger().Warn("demo server", "detail", fmt.Sprintf(format, args...))
}

// Start builds the world: its servers' own error lines go to logger()
// (never to the standard log, which writes to the terminal), its
// calendar has busy events around now. It sets MAILAGENT_DEMO_PASSWORD,
// the servers' password the configuration names. On an error the
// returned World (when not nil) still needs Close.
func Start(ctx context.Context, logger func() *slog.Logger, now time.Time) (*World, error) {
	dir, err := os.MkdirTemp("", "mailagent-demo-")
	if err != nil {
		return nil, err
	}
	w := &World{Dir: dir, StateDir: filepath.Join(dir, "state"), ConfigPath: filepath.Join(dir, "config.toml")}
	pass := randomSecret()
	w.imap, err = memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: demo.OwnerEmail, Password: pass}},
		Mailboxes: []string{"Sent", "Drafts", "Trash"},
		// The server's own error lines go to the log file, never to the
		// terminal the table, the JSON or the TUI is on.
		Logger: libLogger{logger},
	})
	if err != nil {
		return w, err
	}
	w.IMAPPort = w.imap.Port
	w.world, err = demo.StartWorld(demo.OwnerEmail, pass)
	if err != nil {
		return w, err
	}
	// The owner has written to her known contacts before: that is what
	// makes them "known" to the auto-send gate.
	for i, to := range demo.KnownContacts() {
		raw := fmt.Sprintf("From: %s <%s>\r\nTo: %s\r\nSubject: catching up\r\nDate: %s\r\nMessage-ID: <sent-%d@demo.example>\r\n\r\nHello!\r\n",
			demo.OwnerName, demo.OwnerEmail, to, time.Now().AddDate(0, -1, 0).Format(time.RFC1123Z), i)
		if _, err := w.imap.Append(ctx, demo.OwnerEmail, "Sent", []byte(raw), []imap.Flag{imap.FlagSeen}, time.Now().AddDate(0, -1, 0)); err != nil {
			return w, err
		}
	}
	msgs, err := demo.Messages()
	if err != nil {
		return w, err
	}
	msgs = demo.Redate(msgs, time.Now()) // this week's mail, not March's
	for _, raw := range msgs {
		if _, err := w.imap.Append(ctx, demo.OwnerEmail, "INBOX", raw, nil, time.Now()); err != nil {
			return w, err
		}
	}
	profile := filepath.Join(dir, "profile.md")
	if err := os.WriteFile(profile, []byte(demo.OwnerProfile()), 0o600); err != nil {
		return w, err
	}
	// Ada's calendar: a generated file with busy events placed around
	// now, so the scheduling reply has free slots to offer whenever the
	// demo runs.
	ics := filepath.Join(dir, "calendar.ics")
	if err := os.WriteFile(ics, demo.CalendarICS(now), 0o600); err != nil {
		return w, err
	}
	cfg := fmt.Sprintf(`# Written by mailagent demo. Everything here is local and temporary.
state_dir = %q
owner_profile_file = %q
[llm]
api_key_env = "GEMINI_API_KEY"
concurrency = 4
[[accounts]]
name = %q
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
`, w.StateDir, profile, Account, demo.OwnerEmail, demo.OwnerName, demo.AuthservID, w.imap.Port, w.world.Port,
		ics, demo.Timezone, demo.WorkingHours, demo.WorkingDays, demo.MinNotice, demo.SlotLength)
	if err := os.WriteFile(w.ConfigPath, []byte(cfg), 0o600); err != nil {
		return w, err
	}
	if err := os.Setenv("MAILAGENT_DEMO_PASSWORD", pass); err != nil {
		return w, err
	}
	w.Label = "Gemini (GEMINI_API_KEY is set)"
	if os.Getenv("GEMINI_API_KEY") == "" {
		w.Label = demo.Label
		w.NewModel = func(context.Context, *config.Config) (llm.Model, error) { return demo.NewModel(), nil }
	}
	return w, nil
}

// Close stops the servers and, unless keep, removes the directory.
func (w *World) Close(keep bool) {
	if w.imap != nil {
		_ = w.imap.Close()
	}
	if w.world != nil {
		_ = w.world.Close()
	}
	if !keep && w.Dir != "" {
		_ = os.RemoveAll(w.Dir)
	}
}

// Delivered is what the outside world has received so far, in order.
func (w *World) Delivered() []Delivered {
	var out []Delivered
	for _, d := range w.world.Delivered() {
		m := mail.Parse(d.Data)
		out = append(out, Delivered{To: d.To, Subject: m.Subject, Auto: m.AutoSubmitted(), Body: m.CleanText})
	}
	return out
}
