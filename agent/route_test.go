package agent

import (
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

func msg(from string, header map[string]string) *mail.Message {
	m := &mail.Message{MessageID: "m1@example.org", From: mail.Address{Email: from}, Header: map[string][]string{"From": {from}}, ContentType: "text/plain"}
	for k, v := range header {
		m.Header[k] = append(m.Header[k], v)
	}
	return m
}

func TestRoute(t *testing.T) {
	t.Parallel()
	owner := Owner{Name: "Ada", Addresses: []string{"ada@example.com", "ada@alias.example"}, AuthservID: "mx.example.com"}
	tests := []struct {
		name     string
		m        *mail.Message
		fromSent bool
		sentByUs bool
		want     string
		claims   bool
	}{
		{name: "plain person", m: msg("bob@example.org", nil), want: RouteExternal},
		{name: "our trace header", m: msg("bob@example.org", map[string]string{"X-Mailagent-Trace": "tr_1"}), want: RouteSelf},
		{name: "our message id", m: msg("ada@example.com", nil), sentByUs: true, want: RouteSelf},
		{name: "owner via Sent", m: msg("ADA@example.com", nil), fromSent: true, want: RouteOwner},
		{name: "owner alias via Sent", m: msg("ada@alias.example", nil), fromSent: true, want: RouteOwner},
		{name: "owner DKIM pass", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.example.com; dkim=pass header.d=example.com"}), want: RouteOwner},
		// SPF vouches for the envelope sender, not for From.
		{name: "owner SPF pass only", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.example.com; spf=pass smtp.mailfrom=ada@example.com"}), want: RouteExternal, claims: true},
		{name: "owner DMARC pass", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.example.com; dmarc=pass header.from=example.com"}), want: RouteOwner},
		{name: "owner DKIM pass for another domain", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.example.com; dkim=pass header.d=evil.example"}), want: RouteExternal, claims: true},
		{name: "owner forged authserv id", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.evil.example; dkim=pass header.d=example.com"}), want: RouteExternal, claims: true},
		{name: "owner dkim fail", m: msg("ada@example.com", map[string]string{"Authentication-Results": "mx.example.com; dkim=fail header.d=example.com"}), want: RouteExternal, claims: true},
		{name: "owner unauthenticated", m: msg("ada@example.com", nil), want: RouteExternal, claims: true},
		{name: "auto-submitted", m: msg("bob@example.org", map[string]string{"Auto-Submitted": "auto-replied"}), want: RouteAutomated},
		{name: "auto-submitted no", m: msg("bob@example.org", map[string]string{"Auto-Submitted": "no"}), want: RouteExternal},
		{name: "precedence bulk", m: msg("bob@example.org", map[string]string{"Precedence": "Bulk"}), want: RouteAutomated},
		{name: "precedence list", m: msg("bob@example.org", map[string]string{"Precedence": "list"}), want: RouteAutomated},
		{name: "precedence junk", m: msg("bob@example.org", map[string]string{"Precedence": "junk"}), want: RouteAutomated},
		{name: "precedence first-class", m: msg("bob@example.org", map[string]string{"Precedence": "first-class"}), want: RouteExternal},
		{name: "list-id", m: msg("bob@example.org", map[string]string{"List-Id": "<dev.lists.example.org>"}), want: RouteAutomated},
		{name: "list-unsubscribe", m: msg("news@example.org", map[string]string{"List-Unsubscribe": "<mailto:u@example.org>"}), want: RouteAutomated},
		{name: "null return-path", m: msg("bob@example.org", map[string]string{"Return-Path": "<>"}), want: RouteAutomated},
		{name: "mailer-daemon", m: msg("MAILER-DAEMON@mx.example.org", nil), want: RouteAutomated},
		{name: "no-reply", m: msg("no-reply@shop.example", nil), want: RouteAutomated},
		{name: "noreply suffix", m: msg("alerts-noreply@bank.example", nil), want: RouteAutomated},
		{name: "donotreply", m: msg("do_not_reply@bank.example", nil), want: RouteAutomated},
		{name: "reply-able name containing reply", m: msg("replyguy@example.org", nil), want: RouteExternal},
	}
	report := msg("postmaster2@example.org", nil)
	report.ContentType = "multipart/report"
	tests = append(tests, struct {
		name     string
		m        *mail.Message
		fromSent bool
		sentByUs bool
		want     string
		claims   bool
	}{name: "multipart/report", m: report, want: RouteAutomated})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Route(tt.m, owner, tt.fromSent, func(string) bool { return tt.sentByUs })
			if got.Route != tt.want {
				t.Errorf("route: got %s (%s), want %s", got.Route, got.Reason, tt.want)
			}
			if got.ClaimsOwner != tt.claims {
				t.Errorf("claims owner: got %v, want %v", got.ClaimsOwner, tt.claims)
			}
			if got.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
}

func TestRouteTopmostAuthResultsWins(t *testing.T) {
	t.Parallel()
	owner := Owner{Addresses: []string{"ada@example.com"}, AuthservID: "mx.example.com"}
	m := msg("ada@example.com", nil)
	// The receiving server's header is on top; a forged one below it must
	// not be able to upgrade the verdict.
	m.Header["Authentication-Results"] = []string{
		"mx.example.com; dkim=fail header.d=example.com",
		"mx.example.com; dkim=pass header.d=example.com",
	}
	if got := Route(m, owner, false, nil); got.Route != RouteExternal || !got.ClaimsOwner {
		t.Errorf("got %s claims=%v, want external with claims", got.Route, got.ClaimsOwner)
	}
}
