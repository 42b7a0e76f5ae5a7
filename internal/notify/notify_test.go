package notify

import (
	"bytes"
	"html"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/termsafe"
)

var carol = mail.Address{Name: "Carol", Email: "carol@example.org"}

// TestDesktopDeliversSenderAndSubject: through a real session bus, the
// notification server receives the sender as the summary and the subject
// as the body, under the name mailagent; an unauthenticated sender is
// marked.
func TestDesktopDeliversSenderAndSubject(t *testing.T) {
	t.Parallel()
	addr := sessionBus(t)
	srv := serveNotifications(t, addr, "body", "body-markup")
	d := New(Options{BusAddress: addr, Logger: slog.New(slog.DiscardHandler)})
	ctx := testContext(t)
	if err := d.Notify(ctx, Note{From: carol, Verified: true, Subject: "Lunch on Tuesday? Fish & chips"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Notify(ctx, Note{From: carol, Subject: ""}); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	want := []received{
		{AppName: "mailagent", Summary: "Carol <carol@example.org>", Body: "Lunch on Tuesday? Fish &amp; chips"},
		{AppName: "mailagent", Summary: "Carol <carol@example.org> (unverified)", Body: "(no subject)"},
	}
	if len(got) != len(want) {
		t.Fatalf("the server received %d notifications, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("notification %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPlainServerGetsPlainText: a server without body-markup shows text
// as it is, so nothing is escaped for it (an escaped "&amp;" would show).
func TestPlainServerGetsPlainText(t *testing.T) {
	t.Parallel()
	addr := sessionBus(t)
	srv := serveNotifications(t, addr, "body")
	d := New(Options{BusAddress: addr, Logger: slog.New(slog.DiscardHandler)})
	if err := d.Notify(testContext(t), Note{From: carol, Verified: true, Subject: "Fish & chips <3"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); len(got) != 1 || got[0].Body != "Fish & chips <3" {
		t.Errorf("got %+v, want the subject unescaped", got)
	}
}

// attack is hostile mail text aimed at the notification.
type attack struct {
	name string
	note Note
	// landed reports, beyond the generic checks, whether this attack's
	// aim shows in what the server received.
	landed func(summary, body string) bool
}

// landedGeneric: control characters, escape sequences, bidi or line
// breaks in either text, live markup in the body, or a text over its cap.
func landedGeneric(summary, body string) bool {
	return !termsafe.Safe(summary, false) || !termsafe.Safe(body, false) ||
		strings.ContainsAny(body, "<>") ||
		utf8.RuneCountInString(summary) > MaxSender+len(" (unverified)") ||
		utf8.RuneCountInString(html.UnescapeString(body)) > MaxSubject
}

func hostileNotes() []attack {
	from := func(name string) Note {
		return Note{From: mail.Address{Name: name, Email: "eve@evil.test"}, Subject: "hello"}
	}
	subj := func(s string) Note { return Note{From: carol, Verified: true, Subject: s} }
	return []attack{
		{name: "subject bidi override", note: subj("Invoice \u202Efdp.exe")},
		{name: "subject bidi isolate", note: subj("pay \u2067evil\u2069 now")},
		{name: "subject OSC window title", note: subj("\x1b]0;pwned\x07quarterly report")},
		{name: "subject CSI clear", note: subj("\x1b[2J\x1b[Hreport")},
		{name: "subject 8-bit CSI", note: subj("a\u009b31mred")},
		{name: "subject bold markup", note: subj("<b>URGENT</b> wire the money")},
		{name: "subject link markup", note: subj(`<a href="https://evil.test/login">your bank</a>`)},
		{name: "subject image markup", note: subj(`<img src="file:///etc/passwd">`)},
		{name: "subject 10 KB", note: subj(strings.Repeat("A very long subject. ", 512))},
		{name: "subject newline forged header", note: subj("Hi\nFrom: boss@corp.test")},
		{name: "subject CRLF", note: subj("Hi\r\nmailagent: approved")},
		{name: "subject NUL", note: subj("a\x00b")},
		{name: "subject line separator", note: subj("a\u2028b")},
		{name: "subject zero-width", note: subj("pay\u200bpal")},
		{name: "from name bidi", note: from("\u202Etset.knab@bob")},
		{name: "from name newline", note: from("Bob\nIT Support")},
		{name: "from name OSC", note: from("\x1b]8;;https://evil.test\x07Bob")},
		{name: "from name 10 KB", note: from(strings.Repeat("Bob ", 2560))},
		{name: "from name is another address", note: Note{From: mail.Address{Name: "boss@corp.test", Email: "eve@evil.test"}, Subject: "hi"},
			landed: func(s, _ string) bool {
				return !strings.HasPrefix(s, "eve@evil.test") || !strings.Contains(s, "(unverified)")
			}},
		{name: "unauthenticated sender unmarked", note: Note{From: mail.Address{Name: "Your Bank", Email: "bank@bank.test"}, Subject: "hi"},
			landed: func(s, _ string) bool { return !strings.HasSuffix(s, "(unverified)") }},
	}
}

// TestHostileTextNeutralised sends every attack through a real session bus
// to a notification server that renders body markup, and counts what
// reached it intact. Positive control: with sanitising off, every attack
// lands, so the checks can see each one.
func TestHostileTextNeutralised(t *testing.T) {
	t.Parallel()
	addr := sessionBus(t)
	srv := serveNotifications(t, addr, "body", "body-markup")
	ctx := testContext(t)
	attacks := hostileNotes()

	run := func(raw bool) (tried, through int) {
		d := New(Options{BusAddress: addr, Logger: slog.New(slog.DiscardHandler), raw: raw})
		for _, a := range attacks {
			tried++
			// A notification the bus refused (D-Bus forbids NUL in a
			// string) is an attack that landed too: the owner is never
			// told.
			before := len(srv.received())
			err := d.Notify(ctx, a.note)
			got := srv.received()[before:]
			var r received
			if err == nil && len(got) == 1 {
				r = got[0]
			}
			if err != nil || len(got) != 1 || landedGeneric(r.Summary, r.Body) || (a.landed != nil && a.landed(r.Summary, r.Body)) {
				through++
				if !raw {
					t.Errorf("%s got through: summary %q body %q, err %v", a.name, r.Summary, r.Body, err)
				}
			} else if raw {
				t.Errorf("positive control: %s did not land with sanitising off (summary %q body %q)", a.name, r.Summary, r.Body)
			}
		}
		return tried, through
	}

	tried, through := run(false)
	t.Logf("notification attacks: tried %d, through %d", tried, through)
	if tried != len(attacks) || through != 0 {
		t.Errorf("attacks: tried %d, through %d; want %d, 0", tried, through, len(attacks))
	}
	ctried, cthrough := run(true)
	t.Logf("positive control (sanitising off): tried %d, landed %d", ctried, cthrough)
	if cthrough != ctried {
		t.Errorf("positive control: %d of %d attacks landed, want all", cthrough, ctried)
	}
}

// TestNoDesktopSaysSoOnce: on a host without a desktop session Notify
// logs one warning, whatever the number of notifications, and returns nil
// each time (the watcher goes on); the three ways a host lacks one.
func TestNoDesktopSaysSoOnce(t *testing.T) {
	addr := sessionBus(t) // a bus with no notification service on it
	for _, c := range []struct {
		name, bus, why string
	}{
		{"no session bus", "", "DBUS_SESSION_BUS_ADDRESS is unset"},
		{"unreachable bus", "unix:path=" + t.TempDir() + "/no-bus", "cannot reach the D-Bus session bus"},
		{"no notification service", addr, "no notification service on the D-Bus session bus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no bus socket in it
			var log bytes.Buffer
			d := New(Options{BusAddress: c.bus, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			for i := range 3 {
				if err := d.Notify(testContext(t), Note{From: carol, Subject: "hi"}); err != nil {
					t.Fatalf("notify %d: %v, want nil on a host without a desktop", i, err)
				}
			}
			out := log.String()
			if n := strings.Count(out, "desktop notifications are on but this host has no desktop session"); n != 1 {
				t.Errorf("warnings: got %d, want 1:\n%s", n, out)
			}
			if !strings.Contains(out, c.why) || !strings.Contains(out, "level=WARN") {
				t.Errorf("the warning does not say %q at WARN:\n%s", c.why, out)
			}
		})
	}
}

// TestDesktopAppearsLater: after the no-desktop warning, a notification
// service that starts later is used (Notify tries again, silently).
func TestDesktopAppearsLater(t *testing.T) {
	t.Parallel()
	addr := sessionBus(t)
	var log bytes.Buffer
	d := New(Options{BusAddress: addr, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := d.Notify(testContext(t), Note{From: carol, Subject: "first"}); err != nil {
		t.Fatal(err)
	}
	srv := serveNotifications(t, addr, "body")
	if err := d.Notify(testContext(t), Note{From: carol, Subject: "second"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); len(got) != 1 || got[0].Body != "second" {
		t.Errorf("got %+v, want the second notification delivered", got)
	}
	if n := strings.Count(log.String(), "no desktop session"); n != 1 {
		t.Errorf("warnings: %d, want 1", n)
	}
}

// TestFromConfig: off by default (nil Notifier); on gives the desktop one.
func TestFromConfig(t *testing.T) {
	t.Parallel()
	if n := FromConfig(configNotify(false), nil); n != nil {
		t.Errorf("desktop = false: got %T, want nil", n)
	}
	if n, ok := FromConfig(configNotify(true), nil).(*Desktop); !ok || n == nil {
		t.Errorf("desktop = true: got %T, want *Desktop", n)
	}
}

func configNotify(on bool) config.Notify { return config.Notify{Desktop: on} }
