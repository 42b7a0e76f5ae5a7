package initcmd

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/prompter"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// Reaching each server as soon as its section is answered, before the
// next question: TCP connect, TLS (implicit, or STARTTLS) with the CA
// given, and the greeting (IMAP CAPABILITY, SMTP EHLO). Nothing logs in:
// the password source is asked later, and the login is tested then
// (init_probe.go). A failure says what failed and the fix, and lets the
// user type that section again, give the CA (unknown authority), try
// again, or keep the settings (the server may be unreachable from here
// right now). --non-interactive does not reach anything early: there is
// nobody to answer, and doctor tests everything once the file is written.

// serverReach connects to one server (kind "imap" or "smtp") without
// logging in. InitNet.Reach replaces it in tests; the live one is
// setup.Reach.
type serverReach func(ctx context.Context, kind string, ep config.Endpoint) error

// defaultReachTimeout bounds one reach: connect, TLS, greeting and
// capabilities. A server that says nothing in that time is reported as
// "no answer" (a firewall, or the other security mode).
const defaultReachTimeout = 10 * time.Second

// reasonMax bounds how much of a server's text a failure shows: a hostile
// or broken server may send a greeting of any length.
const reasonMax = 200

// reachState remembers, for one round of answers, the endpoints already
// reached and those kept although they could not be reached, so that
// settings accepted again are not tested again and a kept server is not
// asked about twice.
type reachState struct {
	reached map[string]bool // endpoint key → true: reached; false: kept unreached
	reach   serverReach     // the connect test (InitNet.reach)
}

func newReachState(n InitNet) *reachState {
	return &reachState{reached: map[string]bool{}, reach: n.reach()}
}

// keptUnreached reports that the user kept kind's current endpoint
// although it could not be reached.
func (st *reachState) keptUnreached(s *initSetup, kind string) bool {
	if st == nil {
		return false
	}
	ok, seen := st.reached[reachKey(kind, serverEndpoint(s, kind))]
	return seen && !ok
}

// forgetKept makes kind's current endpoint, kept unreached, tested again
// (its section was typed again); one that answered stays answered.
func (st *reachState) forgetKept(s *initSetup, kind string) {
	key := reachKey(kind, serverEndpoint(s, kind))
	if ok, seen := st.reached[key]; seen && !ok {
		delete(st.reached, key)
	}
}

func reachKey(kind string, ep config.Endpoint) string {
	return fmt.Sprintf("%s|%s|%d|%s|%s", kind, ep.Host, ep.Port, ep.Security, ep.TLSCAFile)
}

// serverEndpoint is kind's server as the setup says it, with the CA it
// trusts: SMTP's own, else the IMAP one (the config copies it).
func serverEndpoint(s *initSetup, kind string) config.Endpoint {
	srv, ca := s.IMAP, s.TLSCAFile
	if kind == "smtp" {
		srv = s.SMTP
		if s.SMTPCAFile != "" {
			ca = s.SMTPCAFile
		}
	}
	ep := config.Endpoint{Host: srv.Host, Port: srv.Port, Security: srv.Security}
	if ep.Port == 0 {
		ep.Port = config.DefaultPort(kind, ep.Security)
	}
	if ep.Security != config.SecurityInsecure {
		ep.TLSCAFile = ca
	}
	return ep
}

// reachServers reaches IMAP, then SMTP (the settings were accepted as a
// whole: a preset, autodiscovery, or the answers shown again); those
// already tested as they are now are not tested again.
func reachServers(ctx context.Context, p Prompter, s *initSetup, st *reachState) error {
	for _, kind := range []string{"imap", "smtp"} {
		if _, seen := st.reached[reachKey(kind, serverEndpoint(s, kind))]; !seen {
			p.Say("\nTesting that the servers answer (no login yet):\n")
			break
		}
	}
	for _, kind := range []string{"imap", "smtp"} {
		if err := reachServer(ctx, p, s, kind, st); err != nil {
			return err
		}
	}
	return nil
}

// reachServer reaches one server until it answers or the user keeps the
// settings as they are.
func reachServer(ctx context.Context, p Prompter, s *initSetup, kind string, st *reachState) error {
	label := strings.ToUpper(kind)
	for {
		ep := serverEndpoint(s, kind)
		key := reachKey(kind, ep)
		if _, seen := st.reached[key]; seen {
			return nil
		}
		err := st.reach(ctx, kind, ep)
		if err == nil {
			st.reached[key] = true
			p.Say("  ✓ %s: %s answers (%s); the login is tested once the password source is known\n",
				label, termsafe.Line(ep.Addr()), appdoctor.SecurityWords(ep.Security))
			if ep.TLSCAFile != "" {
				p.Say("    trusting the CA in %s\n", termsafe.Line(ep.TLSCAFile))
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if unknownAuthority(err) {
			again, err := askUnknownAuthority(ctx, p, s, kind, ep.Addr(), ep.TLSCAFile)
			if err != nil {
				return err
			}
			if again {
				continue
			}
		} else {
			// The reason carries server text (greetings, NO replies).
			p.Say("  ✗ %s: %s\n    fix: %s\n", label, termsafe.Line(probeReason(err)), termsafe.Line(reachFix(err, ep, kind)))
		}
		choice, err := p.Choose(ctx, "What now?", []prompter.Choice{
			{Key: "edit", Label: "type the " + label + " settings again"},
			{Key: "retry", Label: "test again (after fixing it elsewhere)"},
			{Key: "keep", Label: "keep these settings: the server may be unreachable from here right now (doctor tests it at the end)"},
		}, "edit")
		if err != nil {
			return err
		}
		switch choice {
		case "edit":
			srv := &s.IMAP
			if kind == "smtp" {
				srv = &s.SMTP
			}
			if err := editServer(ctx, p, label, kind, srv); err != nil {
				return err
			}
			markEdited(s)
		case "keep":
			st.reached[key] = false
			return nil
		}
	}
}

// reachFix is doctor's fix for a connection failure, in the interview's
// words when doctor would name a config key the user has not seen yet.
func reachFix(err error, ep config.Endpoint, kind string) string {
	fix := appdoctor.ConnFix(err, ep, kind)
	if fix == "check host, port and security in accounts."+kind {
		return fmt.Sprintf("%s did not answer as an %s server: check the host, port and security (usually %s)",
			ep.Addr(), strings.ToUpper(kind), initPortHint(kind))
	}
	return fix
}

// markEdited records that the server settings are the user's answers.
func markEdited(s *initSetup) {
	if strings.HasPrefix(s.Source, "preset:proton") {
		s.Source = "preset:proton, edited"
	} else {
		s.Provider, s.Source = "", "your answers"
	}
	s.Notes = ""
}

// clipReason shortens a failure's text to reasonMax runes.
func clipReason(s string) string {
	if utf8.RuneCountInString(s) <= reasonMax {
		return s
	}
	r := []rune(s)
	return string(r[:reasonMax]) + "…"
}

// askUnknownAuthority says that the certificate of the server at addr is
// signed by no authority the system trusts (nor by ca, when set), asks
// for the CA certificate that signed it, and records it on s for the
// server kind. It reports whether a CA was given, so the test runs again.
func askUnknownAuthority(ctx context.Context, p Prompter, s *initSetup, kind, addr, ca string) (bool, error) {
	p.Say("  ✗ %s: the certificate of %s is not signed by an authority this system trusts.\n", strings.ToUpper(kind), termsafe.Line(addr))
	if ca != "" {
		p.Say("    It is not signed by %s either.\n", termsafe.Line(ca))
	}
	p.Say("    A self-hosted server often has its own CA: give its certificate (PEM), as your other mail clients use it.\n")
	path, err := askCAFile(ctx, p, "Path to the CA certificate that signed it (empty: not now)")
	if err != nil || path == "" {
		return false, err
	}
	if kind == "imap" {
		s.TLSCAFile = path
	} else {
		s.SMTPCAFile = path
	}
	return true, nil
}
