package config

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// Calendar is an account's calendar source ([accounts.calendar]): a
// CalDAV calendar, calendar home or principal URL (with a login from the
// same secret sources as IMAP), or a read-only iCalendar feed (an http(s)
// URL ending in .ics, or a file path). Unset when URL is empty.
type Calendar struct {
	// URL is the CalDAV URL ("https://caldav.fastmail.com/dav/calendars/user/ada@example.com/"),
	// an .ics feed URL, or a path to an .ics file ("~/cal.ics", "file:///…").
	URL string `toml:"url"`
	// Kind is "caldav" or "ics"; "" guesses from URL (a file or a URL
	// ending in .ics is "ics").
	Kind     string `toml:"kind"`
	Username string `toml:"username"` // default: the account's email
	// Password is a literal password, accepted only in a 0600 file.
	Password        Secret `toml:"password"`
	PasswordCmd     string `toml:"password_cmd"`
	PasswordEnv     string `toml:"password_env"`
	PasswordKeyring bool   `toml:"password_keyring"` // service "mailagent", user "<account>/calendar"
	OAuth2TokenCmd  string `toml:"oauth2_token_cmd"` // a bearer token (Google's CalDAV)
	// CmdTimeout bounds password_cmd and oauth2_token_cmd (default 30s).
	CmdTimeout Duration `toml:"cmd_timeout"`
	// Timeout bounds one fetch of the calendar (default 30s).
	Timeout Duration `toml:"timeout"`
	// Write lets `mailagent queue rsvp` store an answered invitation on
	// this CalDAV calendar (a PUT, after the REPLY is sent). An .ics
	// source is never written.
	Write bool `toml:"write"`

	account string
}

// Calendar source kinds.
const (
	CalendarCalDAV = "caldav"
	CalendarICS    = "ics"
)

// Configured reports whether the account names a calendar source.
func (c Calendar) Configured() bool { return strings.TrimSpace(c.URL) != "" }

// IsFile reports whether URL names a local file (a path, relative to
// the config file's directory, or a file:// URL).
func (c Calendar) IsFile() bool {
	u := strings.TrimSpace(c.URL)
	return u != "" && (strings.HasPrefix(u, "file://") || !strings.Contains(u, "://"))
}

// FilePath returns the local path of a file source.
func (c Calendar) FilePath() string {
	return expandHome(strings.TrimPrefix(strings.TrimSpace(c.URL), "file://"))
}

// HasSecret reports whether a password or token source is set.
func (c Calendar) HasSecret() bool { return c.endpoint().hasSource() }

func (c Calendar) endpoint() Endpoint {
	return Endpoint{
		Username: c.Username, Password: c.Password, PasswordCmd: c.PasswordCmd, PasswordEnv: c.PasswordEnv,
		PasswordKeyring: c.PasswordKeyring, OAuth2TokenCmd: c.OAuth2TokenCmd, CmdTimeout: c.CmdTimeout,
		account: c.account, kind: "calendar",
	}
}

// ResolvePassword returns the calendar password (see
// Endpoint.ResolvePassword); keyring user "<account>/calendar".
func (c Calendar) ResolvePassword(ctx context.Context) (Secret, error) {
	return c.endpoint().ResolvePassword(ctx)
}

// ResolveOAuth2Token runs oauth2_token_cmd.
func (c Calendar) ResolveOAuth2Token(ctx context.Context) (Secret, error) {
	return c.endpoint().ResolveOAuth2Token(ctx)
}

func (c *Calendar) fill(a *Account, cfg *Config) {
	c.account = a.Name
	c.URL = strings.TrimSpace(c.URL)
	c.Kind = strings.ToLower(strings.TrimSpace(c.Kind))
	if !c.Configured() {
		return
	}
	if c.IsFile() && !strings.HasPrefix(c.URL, "file://") {
		c.URL = cfg.resolvePath(c.URL)
	}
	if c.Kind == "" {
		if c.IsFile() || strings.HasSuffix(strings.ToLower(strings.SplitN(c.URL, "?", 2)[0]), ".ics") {
			c.Kind = CalendarICS
		} else {
			c.Kind = CalendarCalDAV
		}
	}
	if c.Username == "" {
		c.Username = a.Email
	}
	if c.CmdTimeout.Duration == 0 && !c.CmdTimeout.bad {
		c.CmdTimeout = Dur(30 * time.Second)
	}
	if c.Timeout.Duration == 0 && !c.Timeout.bad {
		c.Timeout = Dur(30 * time.Second)
	}
}

func (c *Config) validateCalendar(p *problems, key string, cal *Calendar) {
	if !cal.Configured() {
		return
	}
	switch cal.Kind {
	case CalendarCalDAV, CalendarICS:
	default:
		p.add(key+".kind", fmt.Sprintf("%q is not caldav or ics", cal.Kind), `use "caldav", "ics", or leave it empty to guess from the url`)
	}
	if cal.IsFile() {
		if cal.Kind == CalendarCalDAV {
			p.add(key+".url", "a file cannot be a CalDAV calendar", `set kind = "ics", or give the CalDAV server's https:// URL`)
		} else if _, err := os.Stat(cal.FilePath()); err != nil {
			p.add(key+".url", fmt.Sprintf("cannot read %s: %v", cal.FilePath(), unwrapPath(err)), "point it at an .ics file, or at the calendar's https:// URL")
		}
	} else {
		u, err := url.Parse(cal.URL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			p.add(key+".url", fmt.Sprintf("%q is not an http(s) URL or a file path", cal.URL), `write the CalDAV URL, e.g. "https://caldav.fastmail.com/dav/", an .ics URL, or a file path`)
		case u.User != nil:
			p.add(key+".url", "contains a user name or password", "remove it from the URL; set username and password_cmd/password_env/password_keyring instead")
		case u.Scheme == "http" && !netpolicy.IsLoopback(u.Hostname()) && cal.HasSecret():
			p.add(key+".url", fmt.Sprintf("plain http to the non-loopback host %q would send the password in clear text", u.Hostname()), "use https://")
		}
	}
	var set []string
	for name, on := range map[string]bool{"password": !cal.Password.Empty(), "password_cmd": cal.PasswordCmd != "", "password_env": cal.PasswordEnv != "",
		"password_keyring": cal.PasswordKeyring, "oauth2_token_cmd": cal.OAuth2TokenCmd != ""} {
		if on {
			set = append(set, name)
		}
	}
	if len(set) > 1 {
		p.add(key, "sets more than one password source: "+strings.Join(sortedStrings(set), ", "), "keep exactly one")
	}
	if cal.Kind == CalendarCalDAV && len(set) == 0 && !cal.IsFile() {
		p.add(key, "a CalDAV calendar needs a login and no password source is set",
			`set one of password_cmd = "pass show cal/you", password_env = "VAR", password_keyring = true or oauth2_token_cmd`)
	}
	if !cal.Password.Empty() {
		c.literalSecret(p, key+".password", "password_cmd, password_env or password_keyring")
	}
	p.duration(key+".cmd_timeout", cal.CmdTimeout, `"30s"`, false)
	p.duration(key+".timeout", cal.Timeout, `"30s"`, false)
}
