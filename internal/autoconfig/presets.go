package autoconfig

import (
	"strings"
)

// Preset is built-in knowledge of one provider. Host names and usernames
// may hold the templates %EMAILADDRESS%, %EMAILLOCALPART% and %EMAILDOMAIN%;
// Result resolves them.
type Preset struct {
	ID      string   // "gmail"; Result.Source is "preset:" + ID
	Name    string   // display name
	Domains []string // lowercase address domains served; empty for Generic
	IMAP    Server
	SMTP    Server
	// Notes tells the user what the provider needs beyond a password.
	Notes string
}

// Presets returns the built-in provider presets, Generic last. The slice is
// a fresh copy on every call.
func Presets() []Preset {
	return []Preset{
		{
			ID:      "gmail",
			Name:    "Gmail",
			Domains: []string{"gmail.com", "googlemail.com"},
			IMAP:    Server{Host: "imap.gmail.com", Port: 993, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			SMTP:    Server{Host: "smtp.gmail.com", Port: 465, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			Notes: "Gmail needs an app password (turn on 2-Step Verification, then create one at " +
				"https://myaccount.google.com/apppasswords) or OAuth2; your normal password will be refused.",
		},
		{
			ID:      "fastmail",
			Name:    "Fastmail",
			Domains: []string{"fastmail.com", "fastmail.fm"},
			IMAP:    Server{Host: "imap.fastmail.com", Port: 993, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			SMTP:    Server{Host: "smtp.fastmail.com", Port: 465, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			Notes:   "Fastmail needs an app password with IMAP and SMTP access (Settings → Privacy & Security → App passwords).",
		},
		{
			ID:      "icloud",
			Name:    "iCloud Mail",
			Domains: []string{"icloud.com", "me.com", "mac.com"},
			// Apple documents the IMAP login as the name part of the
			// address, and the SMTP login as the full address.
			IMAP:  Server{Host: "imap.mail.me.com", Port: 993, Security: SecurityTLS, Username: "%EMAILLOCALPART%", Auth: AuthPassword},
			SMTP:  Server{Host: "smtp.mail.me.com", Port: 587, Security: SecuritySTARTTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			Notes: "iCloud needs an app-specific password (appleid.apple.com → Sign-In and Security → App-Specific Passwords).",
		},
		{
			ID:      "outlook",
			Name:    "Outlook / Office 365",
			Domains: []string{"outlook.com", "hotmail.com", "live.com"},
			IMAP:    Server{Host: "outlook.office365.com", Port: 993, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthOAuth2},
			SMTP:    Server{Host: "smtp.office365.com", Port: 587, Security: SecuritySTARTTLS, Username: "%EMAILADDRESS%", Auth: AuthOAuth2},
			Notes:   "Microsoft has turned off password logins for IMAP and SMTP on most accounts: OAuth2 is required.",
		},
		{
			ID:      "proton",
			Name:    "Proton Mail (Bridge)",
			Domains: []string{"proton.me", "protonmail.com", "protonmail.ch", "pm.me"},
			IMAP:    Server{Host: "127.0.0.1", Port: 1143, Security: SecuritySTARTTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			SMTP:    Server{Host: "127.0.0.1", Port: 1025, Security: SecuritySTARTTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			Notes: "Proton Mail works through Proton Mail Bridge, which must be running. Use the password Bridge shows " +
				"(not your Proton password). Bridge uses its own self-signed certificate: export it from Bridge " +
				"(Settings → Export TLS certificates) and configure it as the trusted CA for both servers.",
		},
		{
			ID:    "generic",
			Name:  "Generic (guess)",
			IMAP:  Server{Host: "imap.%EMAILDOMAIN%", Port: 993, Security: SecurityTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			SMTP:  Server{Host: "smtp.%EMAILDOMAIN%", Port: 587, Security: SecuritySTARTTLS, Username: "%EMAILADDRESS%", Auth: AuthPassword},
			Notes: "These are common defaults, not discovered settings: check your provider's documentation.",
		},
	}
}

// PresetFor returns the preset serving email's domain. Generic is never
// returned; ok is false for unknown domains and unparseable addresses.
func PresetFor(email string) (Preset, bool) {
	_, _, domain, err := splitEmail(email)
	if err != nil {
		return Preset{}, false
	}
	for _, p := range Presets() {
		for _, d := range p.Domains {
			if strings.EqualFold(d, domain) {
				return p, true
			}
		}
	}
	return Preset{}, false
}

// Result resolves the preset's templates for email. Source is
// "preset:<ID>".
func (p Preset) Result(email string) (*Result, error) {
	addr, local, domain, err := splitEmail(email)
	if err != nil {
		return nil, err
	}
	vars := templateVars{address: addr, local: local, domain: domain}
	resolve := func(s Server) *Server {
		s.Host = vars.expand(s.Host)
		s.Username = vars.expand(s.Username)
		return &s
	}
	r := &Result{
		IMAP:     resolve(p.IMAP),
		SMTP:     resolve(p.SMTP),
		Source:   "preset:" + p.ID,
		Provider: p.Name,
		Notes:    p.Notes,
	}
	r.addInsecureWarnings()
	return r, nil
}
