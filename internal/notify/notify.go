// Package notify tells the owner's desktop that an item needs them: a
// draft waits for approval, a message was set aside for review.
//
// The contract:
//
//   - A notification says who the message is from and its subject, and
//     nothing else: never the body, never the model's words (Note has no
//     field for them). The sender is marked "(unverified)" unless the
//     owner's server authenticated it (store's identity layer decides).
//   - Both are untrusted text: they are sanitised with termsafe.Line (no
//     control character, escape sequence, bidi override or line break
//     survives), capped (MaxSender, MaxSubject runes, then "…"), and, when
//     the notification server renders markup in the body (the
//     freedesktop "body-markup" capability, which notify-send and most
//     desktops honour), HTML-escaped, so "<b>", "<a href>" and "<img>" show
//     as text.
//   - On a host with no desktop session (no D-Bus session bus, no
//     notification service on it, no osascript on macOS, another OS) the
//     first Notify logs one warning, "desktop notifications are on but this
//     host has no desktop session: …", and every Notify returns nil; it
//     tries again each time, silently, so a desktop that appears later is
//     used.
//
// On Linux and the BSDs it speaks the freedesktop notification protocol
// over D-Bus with github.com/esiqveland/notify (pure Go, over godbus, which
// the module has already): chosen over github.com/gen2brain/beeep, which
// wraps the same library on Linux but on macOS splices the text into an
// AppleScript program with Go's %q quoting (not AppleScript's, so a hostile
// subject could break out of the string), silently falls back to
// notify-send and kdialog, and brings six modules for Windows icons. On
// macOS it runs osascript with the text as arguments (argv), never as
// program text.
package notify

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/esiqveland/notify"
	"github.com/godbus/dbus/v5"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// Note is what a notification may say: the sender and the subject of
// the message that needs the owner. There is deliberately no field for the
// body or for anything the model wrote.
type Note struct {
	From mail.Address
	// Verified: the owner's server authenticated this From address
	// (store.MessageRecord.Correspondent() is its mail.AddrKey).
	Verified bool
	Subject  string
}

// Notifier tells the owner about a Note. Notify must not block for long:
// callers bound it with ctx.
type Notifier interface {
	Notify(ctx context.Context, n Note) error
}

// Caps of the two texts, in runes, after sanitising.
const (
	MaxSender  = 80
	MaxSubject = 120
)

// AppName is the application name the notifications carry.
const AppName = "mailagent"

// Options configures a Desktop notifier.
type Options struct {
	// Logger receives the one no-desktop warning (default slog.Default()).
	Logger *slog.Logger
	// BusAddress is the D-Bus session bus (default
	// $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus when it exists).
	BusAddress string
	// Expire is how long the notification stays (default 10s).
	Expire time.Duration

	// raw turns sanitising off: the positive control of the tests only.
	raw bool
}

// Desktop is the Notifier of the host's desktop. It is safe for concurrent
// use.
type Desktop struct {
	opts   Options
	warned sync.Once
}

// New returns the desktop Notifier.
func New(opts Options) *Desktop {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Expire <= 0 {
		opts.Expire = 10 * time.Second
	}
	return &Desktop{opts: opts}
}

// FromConfig returns the Notifier [notify] asks for, or nil when
// notifications are off (the default).
func FromConfig(c config.Notify, log *slog.Logger) Notifier {
	if !c.Desktop {
		return nil
	}
	return New(Options{Logger: log})
}

// noDesktopError is a host without a desktop session; Notify reports it
// once, in the log.
type noDesktopError struct{ why string }

func (e *noDesktopError) Error() string { return e.why }

func noDesktop(format string, a ...any) error {
	return &noDesktopError{why: fmt.Sprintf(format, a...)}
}

// Notify shows n on the desktop. It returns nil on a host without a
// desktop session (after the one warning), and an error when the desktop
// refused or failed to show it.
func (d *Desktop) Notify(ctx context.Context, n Note) error {
	var err error
	switch runtime.GOOS {
	case "darwin":
		err = d.osascript(ctx, n)
	case "linux", "freebsd", "netbsd", "openbsd", "dragonfly", "illumos", "solaris":
		err = d.dbus(ctx, n)
	default:
		err = noDesktop("desktop notifications are not supported on %s", runtime.GOOS)
	}
	var nd *noDesktopError
	if errors.As(err, &nd) {
		d.warned.Do(func() {
			d.opts.Logger.Warn("desktop notifications are on but this host has no desktop session: " + nd.why +
				"; set [notify] desktop = false to silence this")
		})
		return nil
	}
	if err != nil {
		return fmt.Errorf("desktop notification: %w", err)
	}
	return nil
}

// busAddress is the session bus to use, or "".
func (d *Desktop) busAddress() string {
	if d.opts.BusAddress != "" {
		return d.opts.BusAddress
	}
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		sock := filepath.Join(rt, "bus")
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + sock
		}
	}
	return ""
}

func (d *Desktop) dbus(ctx context.Context, n Note) error {
	addr := d.busAddress()
	if addr == "" {
		return noDesktop("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset)")
	}
	// The connection ends with ctx, and with it any call still waiting.
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return noDesktop("cannot reach the D-Bus session bus: %v", err)
	}
	defer func() { _ = conn.Close() }()
	caps, err := notify.GetCapabilities(conn)
	if err != nil {
		var de dbus.Error
		if errors.As(err, &de) && de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" {
			return noDesktop("no notification service on the D-Bus session bus")
		}
		return fmt.Errorf("ask the notification service: %w", err)
	}
	markup := false
	for _, c := range caps {
		markup = markup || c == "body-markup"
	}
	summary, body := d.texts(n, markup)
	note := notify.Notification{AppName: AppName, Summary: summary, Body: body, ExpireTimeout: d.opts.Expire}
	note.SetUrgency(notify.UrgencyNormal)
	if _, err := notify.SendNotification(conn, note); err != nil {
		return fmt.Errorf("send the notification: %w", err)
	}
	return nil
}

// osascriptProgram reads the texts from argv: they are never program text.
const osascriptProgram = `on run argv
display notification (item 2 of argv) with title "mailagent" subtitle (item 1 of argv)
end run`

func (d *Desktop) osascript(ctx context.Context, n Note) error {
	bin, err := exec.LookPath("osascript")
	if err != nil {
		return noDesktop("osascript is not on PATH")
	}
	summary, body := d.texts(n, false)
	out, err := exec.CommandContext(ctx, bin, "-e", osascriptProgram, summary, body).CombinedOutput()
	if err != nil {
		return fmt.Errorf("osascript: %w: %s", err, termsafe.Line(strings.TrimSpace(string(out))))
	}
	return nil
}

func (d *Desktop) texts(n Note, markup bool) (summary, body string) {
	if d.opts.raw {
		return n.From.Name + " <" + n.From.Email + ">", n.Subject
	}
	return Texts(n, markup)
}

// Texts is what a notification shows for n: the summary (the sender) and
// the body (the subject), sanitised and capped; the body is HTML-escaped
// when markup is true (the server renders body markup).
func Texts(n Note, markup bool) (summary, body string) {
	summary = capRunes(termsafe.Address(n.From.Name, n.From.Email), MaxSender)
	if !n.Verified {
		summary += " (unverified)"
	}
	body = capRunes(strings.TrimSpace(termsafe.Line(n.Subject)), MaxSubject)
	if body == "" {
		body = "(no subject)"
	}
	if markup {
		body = html.EscapeString(body)
	}
	return summary, body
}

// capRunes cuts s to at most max runes, the last being "…" when cut.
func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
