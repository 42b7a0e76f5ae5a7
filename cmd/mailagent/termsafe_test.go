package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/store"
)

// hostileBits are the attacks put into every field of one message and
// into the model's output. marker is text that must not reach the
// terminal at all ("" when only the control bytes matter).
var hostileBits = []struct {
	name, s, marker string
}{
	{"OSC title set", "\x1b]0;pwned-title\x07", "pwned-title"},
	{"OSC 8 hyperlink", "\x1b]8;;http://evil.test/x\x1b\\", "evil.test/x"},
	{"CSI clear screen", "\x1b[2J\x1b[H", ""},
	{"cursor up and erase line", "\x1b[1A\x1b[2K", ""},
	{"hidden text attribute", "\x1b[8m", ""},
	{"C1 CSI (UTF-8)", "\u009b2J", ""},
	{"bidi override", "\u202etset.knab\u202c", ""},
	{"bidi isolate", "\u2066x\u2069", ""},
	{"zero-width joiner", "a\u200db", ""},
	{"NUL", "\x00", ""},
	{"DEL", "\x7f", ""},
	{"backspace overprint", "a\bb", ""},
	{"carriage return overprint", "ok\rEVIL", ""},
}

func hostileString() string {
	var b strings.Builder
	for _, h := range hostileBits {
		b.WriteString(h.s)
		b.WriteString(" ")
	}
	return b.String()
}

// encodedWord hides s from the header parser's line handling: RFC 2047
// B encoding, which the parser decodes back to the raw bytes.
func encodedWord(s string) string {
	return "=?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// hostileModel classifies and drafts with escape sequences in every free
// text field.
func hostileModel(req *geminitest.Request) geminitest.Reply {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	usage := llm.Usage{PromptTokens: 300, OutputTokens: 30, TotalTokens: 330}
	if _, ok := props["intents"]; ok {
		return geminitest.JSONReply(map[string]any{
			"intents": []string{"information_request"}, "risk": "low", "action": "reply", "requires_approval": false,
			"confidence": 0.99, "summary": "summary " + hostileString(), "comments": "comments " + hostileString(),
		}, usage)
	}
	return geminitest.JSONReply(map[string]any{"body": "draft " + hostileString() + "\nsecond line", "tone": "brief", "needs_owner_input": false}, usage)
}

// badRune reports why r may not be printed on a terminal, or "".
func badRune(r rune) string {
	switch {
	case r == '\n' || r == '\t':
		return ""
	case r == utf8.RuneError:
		return "invalid UTF-8"
	case r < 0x20 || r == 0x7f:
		return "C0/DEL"
	case r >= 0x80 && r <= 0x9f:
		return "C1"
	case unicode.Is(unicode.Cf, r):
		return "format/bidi"
	}
	return ""
}

// TestHostileTextNeverReachesTheTerminal puts escape sequences, C1
// controls, bidi overrides and overprinting into the subject, the display
// name, the body and the model's output, then checks the human output of
// every command that shows them. Its positive control, the subtest
// "detector", shows the same check catching each hostile kind printed
// raw from the queue item.
func TestHostileTextNeverReachesTheTerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hostileModel, "")
	hs := hostileString()
	body := "Hello " + hs + "\nmore " + hs
	// The attacker authenticates their own domain (anyone can), so the
	// contact record exists and `contacts show` prints their name too.
	raw := authResults("evil@x.test", "pass") + "\n" +
		"From: " + encodedWord("bob@bank.test "+hs) + " <evil@x.test>\n" +
		"Reply-To: " + encodedWord("Bob "+hs) + " <collect@evil.test>\n" +
		"To: Ada <ada@example.com>\nSubject: " + encodedWord("Invoice "+hs) + "\n" +
		"Date: Mon, 02 Nov 2026 10:00:00 +0000\nMessage-ID: <hostile@test.example>\n" +
		"MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n" +
		base64.StdEncoding.EncodeToString([]byte(body)) + "\n"
	h.deliver(raw)
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 {
		t.Fatalf("queue: got %d items, want the one draft", len(items))
	}
	q := items[0]
	// The attack must have reached the store intact, or this test shows
	// nothing about the display.
	if !strings.Contains(q.Subject, "\x1b]0;pwned-title") || !strings.Contains(q.Draft, "\x1b[2J") || !strings.Contains(q.From.Name, "\u202e") {
		t.Fatalf("the hostile text did not reach the queue item: subject %q from %+v draft %q", q.Subject, q.From, q.Draft)
	}

	commands := [][]string{
		{"queue", "list"},
		{"queue", "list", "--all"},
		{"queue", "show", q.ID},
		{"explain", "hostile@test.example"},
		{"contacts", "list"},
		{"contacts", "show", "evil@x.test"},
		{"status"},
	}
	tried, through := 0, 0
	for _, args := range commands {
		stdout, stderr, code := h.run(args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
			continue
		}
		for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
			checks, bad := terminalViolations(out)
			tried += checks
			through += len(bad)
			for _, b := range bad {
				t.Errorf("%v %s: %s", args, name, b)
			}
		}
	}
	t.Logf("%d commands, %d hostile kinds in each field: %d checks of their output, %d violations got through", len(commands), len(hostileBits), tried, through)
	if through != 0 {
		t.Errorf("hostile text on the terminal: got %d violations in %d checks, want 0", through, tried)
	}

	// The positive control (detector: termsafe is structural, nothing to
	// switch off): each hostile kind, as the store holds it in the queue
	// item, printed without cleaning, is caught by the same check. So the
	// zero above is the commands' cleaning, not a check that cannot see.
	t.Run("detector", func(t *testing.T) {
		landed := 0
		for _, hb := range hostileBits {
			fields := map[string]string{"subject": q.Subject, "from name": q.From.Name, "draft": q.Draft}
			stored := ""
			for _, f := range []string{"subject", "from name", "draft"} {
				if strings.Contains(fields[f], hb.s) {
					stored = f
					break
				}
			}
			if stored == "" {
				t.Errorf("%s: not stored intact in the queue item (subject, from name, draft): the attack tests nothing", hb.name)
				continue
			}
			_, bad := terminalViolations("queue show: " + stored + " " + hb.s + "\n")
			if hb.marker != "" {
				// Its payload with only the control runes dropped (a
				// cleaner that leaves the sequence's text) is caught too.
				stripped := strings.Map(func(r rune) rune {
					if badRune(r) != "" {
						return -1
					}
					return r
				}, hb.s)
				if _, b := terminalViolations("queue show: " + stored + " " + stripped + "\n"); len(b) == 0 {
					bad = nil
					t.Errorf("%s: its payload %q without the control runes is not caught", hb.name, stripped)
				}
			}
			if len(bad) > 0 {
				landed++
				t.Logf("%s, raw from the %s: caught: %s", hb.name, stored, bad[0])
			} else {
				t.Errorf("%s, raw from the %s: the check does not see it", hb.name, stored)
			}
		}
		t.Logf("hostile kinds printed raw: %d tried, %d caught", len(hostileBits), landed)
		if landed != len(hostileBits) {
			t.Errorf("detector: got %d of %d hostile kinds caught raw, want all", landed, len(hostileBits))
		}
	})

	// What the owner must still see: the real sender and the real
	// recipient, never the display name in the address position.
	list, _, _ := h.run("queue", "list")
	if !strings.Contains(list, "[new] ") || !strings.Contains(list, "collect@evil.test") {
		t.Errorf("queue list lacks the new recipient:\n%s", list)
	}
	show, _, _ := h.run("queue", "show", q.ID)
	if !strings.Contains(show, "from evil@x.test (name \"bob@bank.test") {
		t.Errorf("queue show: the sender is not shown by its address first:\n%s", show)
	}
	if !strings.Contains(show, "\nto [new] Bob") || !strings.Contains(show, "<collect@evil.test>") {
		t.Errorf("queue show: the recipient is not shown, marked new:\n%s", show)
	}

	// --json stays exact: the hostile text round-trips, escaped.
	js, _, _ := h.run("queue", "show", q.ID, "--json")
	if strings.ContainsRune(js, 0x1b) || !strings.Contains(js, `\u001b]0;pwned-title`) {
		t.Errorf("queue show --json: want ESC escaped as \\u001b, raw ESC never")
	}
	var d struct{ Item store.QueueItem }
	if err := json.Unmarshal([]byte(js), &d); err != nil || d.Item.Subject != q.Subject {
		t.Errorf("queue show --json does not round-trip the subject: %v %q", err, d.Item.Subject)
	}
}

// runTTY runs the command line in process over stdin, counted as a
// terminal (IOStreams.SetStdinTTY: the seam that replaced the stdinIsTTY
// package global), and returns stdout, stderr and the exit code.
func (h *harness) runTTY(stdin io.Reader, args ...string) (string, string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	ios := iostreams.New(stdin, &out, &errb)
	ios.SetStdinTTY(true)
	code := root.Main(append([]string{"--config", h.cfgPath}, args...), ios, wireLegacy)
	return out.String(), errb.String(), code
}

// TestApproveToNewAddressAsks: `queue approve` of a draft whose recipient
// the owner never wrote to (Reply-To points at a stranger) refuses
// without --yes when stdin is not a terminal, asks when it is, and sends
// only on yes.
func TestApproveToNewAddressAsks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("\"bob@bank.test\" <bob@bank.test>", "Account check", "Please confirm.", "Reply-To: collect@evil.test"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 || len(items[0].To) != 1 || items[0].To[0].Email != "collect@evil.test" {
		t.Fatalf("queue: got %+v, want one draft to collect@evil.test", items)
	}
	id := items[0].ID

	_, stderr, code := h.run("queue", "approve", id)
	if code != ExitUsage || !strings.Contains(stderr, "never written to collect@evil.test") || !strings.Contains(stderr, "--yes") {
		t.Fatalf("approve without --yes, stdin not a terminal: got %d %q, want a refusal naming the address and --yes", code, stderr)
	}

	for _, answer := range []string{"n\n", "\n", "", "yy\n"} {
		_, stderr, code = h.runTTY(strings.NewReader(answer), "queue", "approve", id)
		// The Reply-To redirect also fails the recipients gate: one
		// question names both.
		if code == 0 || !strings.Contains(stderr, "send to a new address collect@evil.test, and send although the safety gates above failed? y/N") ||
			!strings.Contains(stderr, "FAIL recipients: Reply-To points to collect@evil.test") {
			t.Fatalf("approve at a terminal, answer %q: got %d %q, want the question and no send", answer, code, stderr)
		}
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent %d messages before a yes", n)
	}
	if _, stderr, code = h.runTTY(strings.NewReader("y\n"), "queue", "approve", id); code != 0 {
		t.Fatalf("approve answered y: %d %s", code, stderr)
	}
	sent := h.smtp.Messages()
	if len(sent) != 1 || len(sent[0].To) != 1 || sent[0].To[0] != "collect@evil.test" {
		t.Fatalf("after yes: sent %+v, want one message to collect@evil.test", sent)
	}
}

// TestApproveYesSkipsQuestion: --yes is the scripted way through.
func TestApproveYesSkipsQuestion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 {
		t.Fatalf("queue: got %d items", len(items))
	}
	if _, stderr, code := h.run("queue", "approve", "--yes", items[0].ID); code != 0 {
		t.Fatalf("approve --yes: %d %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
}

// TestApproveKnownAddressDoesNotAsk: a reply to someone the owner has
// written to (found in Sent) is approved without --yes, stdin not a
// terminal.
func TestApproveKnownAddressDoesNotAsk(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Lunch", "Lunch next week?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 {
		t.Fatalf("queue: got %d items, want 1", len(items))
	}
	show, _, _ := h.run("queue", "show", items[0].ID)
	if !strings.Contains(show, "\nto Bob <bob@example.org>\n") {
		t.Errorf("queue show: want the known recipient unmarked:\n%s", show)
	}
	if _, stderr, code := h.run("queue", "approve", items[0].ID); code != 0 {
		t.Fatalf("approve to a known address: %d %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
}

// TestReportSanitisesErrors: the one place that prints a command's error
// strips what a server or a mail put in it.
func TestReportSanitisesErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		errors.New("smtp: 550 " + hostileString()),
		&UserError{Code: ExitUsage, Err: errors.New("no contact " + hostileString()), Hint: "hint " + hostileString()},
	} {
		var b bytes.Buffer
		cmdutil.Report(&b, err)
		for _, r := range b.String() {
			if why := badRune(r); why != "" {
				t.Errorf("report(%T) printed %s %U: %q", err, why, r, b.String())
				break
			}
		}
		if strings.Contains(b.String(), "pwned-title") {
			t.Errorf("report(%T): the OSC payload got through: %q", err, b.String())
		}
	}
}

// terminalViolations checks out, one command's human output, as
// TestHostileTextNeverReachesTheTerminal does: no rune a terminal would
// act on (badRune: the first is reported), and no payload marker of
// hostileBits. It returns how many checks it made and what failed.
//
// The Reply-To display name reaches the store with its ESC bytes already
// removed by the reply builder, so the inert tails of its sequences are
// plain text there; every other field keeps the sequences whole until
// display. The output guard's reason names the link it found in the
// draft (the OSC 8 target), escaped and on purpose. Lines with either are
// left out of the marker checks.
func terminalViolations(out string) (checks int, bad []string) {
	checks++
	for i, r := range out {
		if why := badRune(r); why != "" {
			bad = append(bad, fmt.Sprintf("%s %U at byte %d: %q", why, r, i, out[max(0, i-20):min(len(out), i+20)]))
			break
		}
	}
	var kept []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, "collect@evil.test") && !strings.Contains(l, "output_guard") {
			kept = append(kept, l)
		}
	}
	for _, hb := range hostileBits {
		if hb.marker == "" {
			continue
		}
		checks++
		if strings.Contains(strings.Join(kept, "\n"), hb.marker) {
			bad = append(bad, fmt.Sprintf("the payload of %s got through: %q", hb.name, lineWith(kept, hb.marker)))
		}
	}
	return checks, bad
}

func lineWith(lines []string, s string) string {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
