package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/mail"
)

// TestInvitationPrefilterMissesNone: readInvitation skips the second MIME
// walk when mail.Parse saw no part that could be iCalendar data. For
// every message calendar.ParseInvitation finds an invitation in, the
// parse must say Calendar: the real clients' invitations, the same ICS
// wrapped every way a part can be named, and the edge-case MIME corpus
// when present. Where ParseInvitation fails on MIME without a calendar
// part (an mbox "From " line, a broken boundary) the skip is wanted: the
// message is no invitation, and the parse, which reads such mail
// leniently, records any damage itself.
func TestInvitationPrefilterMissesNone(t *testing.T) {
	t.Parallel()
	var msgs [][]byte
	files, _ := filepath.Glob("../internal/calendar/testdata/imip/*.eml")
	if len(files) == 0 {
		t.Fatal("no invitation fixtures found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	ics := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:u1@example.test\r\nDTSTART:20261201T100000Z\r\n" +
		"DTEND:20261201T110000Z\r\nSUMMARY:Review\r\nORGANIZER:mailto:bob@example.test\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	head := "From: bob@example.test\r\nTo: ada@example.test\r\nSubject: invite\r\nMIME-Version: 1.0\r\n"
	part := func(hdr string) string {
		return head + "Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b1\r\n" +
			hdr + "\r\n\r\n" + ics + "--b1--\r\n"
	}
	for _, hdr := range []string{
		"Content-Type: text/calendar; method=REQUEST",
		"Content-Type: TEXT/CALENDAR",
		"Content-Type: application/ics",
		"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=invite.ics",
		"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"INVITE.ICS\"",
		"Content-Type: text/plain\r\nContent-Disposition: inline; filename=invite.ics",
		"Content-Type: text/html\r\nContent-Disposition: inline; filename=invite.ics",
		"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''inv%C3%A9.ics",
		"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"=?UTF-8?B?aW52aXRlLmljcw==?=\"",
		"Content-Type: text/calendar; method=REQUEST\r\nContent-Transfer-Encoding: base64",
	} {
		msgs = append(msgs, []byte(part(hdr)))
	}
	msgs = append(msgs, []byte(head+"Content-Type: text/calendar; method=REQUEST\r\n\r\n"+ics))
	msgs = append(msgs, []byte(head+"Content-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\nContent-Type: text/plain\r\n\r\nx\r\n--a\r\n"+
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/calendar\r\n\r\n"+ics+"--b--\r\n--a--\r\n"))
	if root := corporaRoot(); root != "" {
		_ = filepath.WalkDir(filepath.Join(root, "mime-edge"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil {
					msgs = append(msgs, b)
				}
			}
			return nil
		})
	}
	found, flagged := 0, 0
	for i, raw := range msgs {
		inv, _ := calendar.ParseInvitation(raw)
		m := mail.Parse(raw)
		if m.Calendar {
			flagged++
		}
		if inv == nil {
			continue
		}
		found++
		if !m.Calendar {
			t.Errorf("message %d: ParseInvitation finds an invitation but the parse says no calendar part:\n%.400s", i, raw)
		}
	}
	if found < len(files)+8 {
		t.Errorf("only %d invitations found in %d messages", found, len(msgs))
	}
	plain := mail.Parse([]byte(head + "Content-Type: text/plain\r\n\r\nsee topics.ics tomorrow; text/calendar\r\n"))
	if plain.Calendar {
		t.Error("a plain text message mentioning .ics is flagged as holding a calendar part")
	}
	t.Logf("%d messages, %d invitations found, %d flagged", len(msgs), found, flagged)
}

// corporaRoot is ../shared/corpora beside the repository, or
// $MAILAGENT_CORPORA, or "" when neither is there.
func corporaRoot() string {
	if c := os.Getenv("MAILAGENT_CORPORA"); c != "" {
		return c
	}
	if _, err := os.Stat("../../shared/corpora"); err == nil {
		return "../../shared/corpora"
	}
	return ""
}
