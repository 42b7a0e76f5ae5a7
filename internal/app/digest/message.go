package digest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/mailagent/mailagent/agent"
)

// Header marks a digest mail; its value is the period (or "manual").
const Header = "X-Mailagent-Digest"

// MessageIDPrefix starts the local part of every digest's Message-ID.
const MessageIDPrefix = "digest."

// Message builds the digest mail from owner to owner: plain text (UTF-8,
// quoted-printable), with Header, agent.TraceHeader (the loop guard, so
// the pipeline routes it "self"), Auto-Submitted: auto-generated (RFC
// 3834) and a Message-ID "digest.<period>.<random>@<owner's domain>". It
// returns the raw message and its Message-ID. Only the body carries text
// from mail; every header is built from period, the owner's address and
// counts.
func Message(r *Report, from, to, period string, now time.Time) (raw []byte, messageID string, err error) {
	var body bytes.Buffer
	if err := Text(&body, r); err != nil {
		return nil, "", err
	}
	var h gomail.Header
	h.SetDate(now)
	h.SetAddressList("From", []*gomail.Address{{Name: "mailagent", Address: from}})
	h.SetAddressList("To", []*gomail.Address{{Address: to}})
	h.SetSubject(Subject(r))
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	domain := "mailagent.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i+1 < len(from) {
		domain = from[i+1:]
	}
	safe := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '-'
	}, period)
	messageID = MessageIDPrefix + safe + "." + hex.EncodeToString(rnd[:]) + "@" + domain
	h.SetMessageID(messageID)
	h.Set(Header, safe)
	h.Set(agent.TraceHeader, "digest-"+safe)
	h.Set("Auto-Submitted", "auto-generated")
	h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	var out bytes.Buffer
	w, err := gomail.CreateSingleInlineWriter(&out, h)
	if err != nil {
		return nil, "", fmt.Errorf("digest mail: %w", err)
	}
	if _, err := w.Write(body.Bytes()); err != nil {
		return nil, "", fmt.Errorf("digest mail: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("digest mail: %w", err)
	}
	return out.Bytes(), messageID, nil
}
