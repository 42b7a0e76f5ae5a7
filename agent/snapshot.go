package agent

import (
	"bytes"
	"encoding/json"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Redactor removes secrets from text before it is stored in a step
// snapshot (config.Redactor is the one the product wires).
type Redactor interface {
	Redact(s string) string
}

// newTracer starts the trace t with the pipeline's snapshot settings.
func (p *Pipeline) newTracer(t *store.Trace) *tracer {
	return &tracer{t: t, now: p.now, snapshots: p.Snapshots, redact: p.Redactor}
}

// snap returns the snapshot of one step: in and out are text as is, or
// anything else as indented JSON; both are redacted (secrets never reach
// the store) and capped (store.CapSnapshot). It is nil when snapshots are
// off. Without a Redactor nothing is stored: an unredacted snapshot could
// keep a credential.
func (tr *tracer) snap(in, out any) *store.StepSnapshot {
	if tr == nil || !tr.snapshots || tr.redact == nil {
		return nil
	}
	return &store.StepSnapshot{
		Input:  store.CapSnapshot(tr.redact.Redact(snapText(in))),
		Output: store.CapSnapshot(tr.redact.Redact(snapText(out))),
	}
}

// snapText renders v for a snapshot. Mail text keeps its bytes (the
// viewer sanitises it); values become JSON without HTML escaping.
func snapText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case error:
		return x.Error()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "unrenderable: " + err.Error()
	}
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

// rawHeaders returns the header block of a raw message (up to the first
// empty line), which is what the parse step read.
func rawHeaders(raw []byte) string {
	for _, sep := range [][]byte{[]byte("\r\n\r\n"), []byte("\n\n")} {
		if i := bytes.Index(raw, sep); i >= 0 {
			return string(raw[:i])
		}
	}
	return string(raw)
}

// modelAnswer is a model step's output: the raw answer when the model
// client reported it, else what was decoded from it.
func modelAnswer(raw string, decoded any, err error) any {
	switch {
	case raw != "" && err != nil:
		return raw + "\n\nerror: " + err.Error()
	case raw != "":
		return raw
	case err != nil:
		return err
	}
	return decoded
}

// parseSummary is the parse step's output: what was read from the
// message, with its text by size only (the model steps show the text).
func parseSummary(m *mail.Message) map[string]any {
	atts := make([]string, 0, len(m.Attachments))
	for _, a := range firstN(m.Attachments, maxListed) {
		atts = append(atts, a.Filename+" ("+a.ContentType+")")
	}
	return map[string]any{
		"message_id": m.MessageID, "from": formatAddress(m.From), "to": formatAddresses(firstN(m.To, maxListed)),
		"subject": m.Subject, "date": m.Date, "content_type": m.ContentType,
		"text_bytes": len(m.Text), "clean_text_bytes": len(m.CleanText), "attachments": atts,
		"forwarded": m.Forwarded, "truncated": m.Truncated, "problems": m.Problems,
	}
}

// routeHeaders are the header fields routing looks at.
var routeHeaders = []string{"Auto-Submitted", "Precedence", "List-Id", "List-Unsubscribe", "Return-Path",
	"X-Auto-Response-Suppress", "X-Autoreply", "X-Mailagent", "Feedback-Id"}

func routeInputs(m *mail.Message, fromSent bool) map[string]any {
	h := map[string][]string{}
	for _, k := range routeHeaders {
		if v := m.Header[k]; len(v) > 0 {
			h[k] = firstN(v, maxListed)
		}
	}
	return map[string]any{"from": formatAddress(m.From), "from_sent_folder": fromSent,
		"in_reply_to": firstN(m.InReplyTo, maxListed), "headers": h}
}

// decisionSnapshot is the decide step's output.
func decisionSnapshot(rec *store.MessageRecord) map[string]any {
	return map[string]any{"decision": rec.Decision, "reasons": rec.Reasons, "gates": rec.Gates}
}
