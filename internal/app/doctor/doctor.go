// Package doctor holds mailagent's checks of a configuration: the
// config, each account's IMAP (login, capabilities, mailbox, Drafts and
// Sent folders, authserv_id, push) and SMTP (login), its calendar, every
// model the configuration names, and the state directory and database.
// Run returns one Check per line; the command tier prints them. The
// logins and the model come in through Env, so the CLI and init use the
// same checks.
package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/store"
)

// Check is one line of the doctor's report.
type Check struct {
	Name   string `json:"check"`
	Status string `json:"status"` // pass | warn | fail
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
	// Account is the account the check concerns ("" for global checks);
	// the JSON form (CheckJSON) carries it beside a fixed check id.
	Account string `json:"-"`
	Mailbox string `json:"-"`
}

type doctor struct {
	env     Env
	checks  []Check
	account string // the account being checked, "" for global checks
	cfg     *config.Config
	fix     bool // --fix: create missing folders
}

func (d *doctor) pass(name, detail string) {
	d.checks = append(d.checks, Check{Name: name, Status: "pass", Detail: detail, Account: d.account})
}
func (d *doctor) warn(name, detail, fix string) {
	d.checks = append(d.checks, Check{Name: name, Status: "warn", Detail: detail, Fix: fix, Account: d.account})
}
func (d *doctor) fail(name string, err error, fix string) {
	detail, own := splitFix(err.Error())
	if own != "" {
		fix = own // the error's own fix is the specific one: say it once
	}
	d.checks = append(d.checks, Check{Name: name, Status: "fail", Detail: detail, Fix: fix, Account: d.account})
}

// splitFix takes the " (fix: …)" that config and secret errors end with
// off a one-line message, so that the fix is printed once, on its own
// line.
func splitFix(msg string) (detail, fix string) {
	i := strings.LastIndex(msg, " (fix: ")
	if i < 0 || strings.Contains(msg, "\n") || !strings.HasSuffix(msg, ")") {
		return msg, ""
	}
	return msg[:i], msg[i+len(" (fix: ") : len(msg)-1]
}

func (d *doctor) failed() bool {
	for _, c := range d.checks {
		if c.Status == "fail" {
			return true
		}
	}
	return false
}

// connFix turns a connection error into the fix a user needs.
func connFix(err error, e config.Endpoint, kind string) string {
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, imapsync.ErrAuth), errors.Is(err, smtpsend.ErrAuth):
		return "the server refused the login: check username and the password source (Gmail and iCloud need an app password, or oauth2_token_cmd)"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth):
		return "the server's certificate is not signed by an authority this system trusts: set accounts." + kind + ".tls_ca_file to the PEM file of the CA that signed it (a self-hosted server's own CA, or Proton Bridge's cert.pem)"
	case errors.As(err, &hostErr):
		return "the certificate does not name " + e.Host + ": use the host name the provider documents"
	case errors.As(err, &dnsErr):
		return "the host name " + e.Host + " does not resolve: check accounts." + kind + ".host (and that this machine is online)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing listens on %s: check the port (%s: 993 for tls, 143 for starttls; smtp: 465 tls, 587 starttls)", e.Addr(), kind)
	case kind == "smtp" && isTLSRecordErr(err):
		return fmt.Sprintf("%s does not speak implicit TLS: use security = \"starttls\" (port 587), or port 465 for security = \"tls\"", e.Addr())
	case kind == "imap" && isTLSRecordErr(err):
		return fmt.Sprintf("%s does not speak implicit TLS: use security = \"starttls\" (port 143), or port 993 for security = \"tls\"", e.Addr())
	case e.Security == config.SecurityStartTLS && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		tlsPort := 993
		if kind == "smtp" {
			tlsPort = 465
		}
		return fmt.Sprintf("%s closed the connection before STARTTLS: if it speaks implicit TLS (usually port %d), use security = \"tls\"", e.Addr(), tlsPort)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "no answer from " + e.Addr() + ": a firewall, or the wrong port or security mode"
	case errors.Is(err, netpolicy.ErrPlaintextNotLoopback): // IMAP's and SMTP's
		return `use security = "tls" or "starttls": plaintext is allowed only to a loopback address (127.0.0.1, ::1, localhost)`
	}
	return "check host, port and security in accounts." + kind
}

func (d *doctor) imap(ctx context.Context, acct *config.Account) {
	name := "imap " + acct.Name
	opts, err := d.env.IMAPOptions(ctx, acct)
	if err != nil {
		d.fail(name+": secret", err, "set the source named in accounts.imap (password_cmd, password_env, password_keyring or oauth2_token_cmd)")
		return
	}
	d.pass(name+": secret", "resolved (value not shown)")
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	opts.DialTimeout = 10 * time.Second
	c, err := imapsync.Dial(dctx, opts)
	if err != nil {
		d.fail(name+": connect and login", err, connFix(err, acct.IMAP, "imap"))
		return
	}
	defer func() { _ = c.Close() }()
	d.pass(name+": connect and login", fmt.Sprintf("%s (%s)", acct.IMAP.Addr(), securityWords(acct.IMAP.Security)))
	var have, missing []string
	for _, cp := range []string{"IDLE", "MOVE", "UIDPLUS", "CONDSTORE", "SPECIAL-USE"} {
		if c.Has(cp) {
			have = append(have, cp)
		} else {
			missing = append(missing, cp)
		}
	}
	if len(missing) == 0 {
		d.pass(name+": capabilities", strings.Join(have, " "))
	} else {
		fallbacks := map[string]string{
			"MOVE":        "moves are COPY then delete",
			"UIDPLUS":     "moved originals stay marked \\Deleted, not expunged",
			"CONDSTORE":   "watchers cannot claim messages one by one (if several watch this account, set sync.claims = \"on\" to elect one)",
			"SPECIAL-USE": "Sent and Drafts are found by their usual names (set sent_mailbox/drafts_mailbox if that fails)",
		}
		var said []string
		for _, cp := range missing {
			said = append(said, "without "+cp+" "+fallbacks[cp])
		}
		fix := "nothing needed: " + strings.Join(said, "; ")
		if !c.Has("IDLE") {
			fix = "no IDLE: watch polls every sync.poll_interval instead"
		}
		d.warn(name+": capabilities", "missing "+strings.Join(missing, " "), fix)
	}
	if _, err := c.Select(dctx, acct.Mailbox, true); err != nil {
		d.fail(name+": mailbox "+acct.Mailbox, err, "set accounts.mailbox to an existing folder (usually INBOX)")
	} else {
		d.pass(name+": mailbox "+acct.Mailbox, "found")
		d.authserv(dctx, c, acct)
	}
	d.folders(dctx, c, acct)
	d.push(ctx, c, acct, opts)
}

// folders checks (with --fix: creates) the account's Drafts and Sent
// folders. A folder mailagent reads as incoming mail (config.
// IncomingAccount) is never offered nor taken for either: mailagent
// would take its own drafts for the owner's replies and for new mail.
func (d *doctor) folders(ctx context.Context, c *imapsync.Client, acct *config.Account) {
	name := "imap " + acct.Name
	incoming := func(n string) bool {
		if d.cfg == nil {
			return config.SameMailbox(acct.Mailbox, n)
		}
		return d.cfg.IncomingAccount(acct, n) != nil
	}
	for _, box := range []struct{ attr, configured, key string }{
		{`\Drafts`, acct.DraftsMailbox, "drafts_mailbox"}, {`\Sent`, acct.SentMailbox, "sent_mailbox"},
	} {
		fallback := strings.TrimPrefix(box.attr, `\`)
		check := name + ": " + fallback + " folder"
		if d.fix {
			got, created, err := c.EnsureFolder(ctx, imapsync.EnsureOptions{Attr: box.attr, Configured: box.configured, Incoming: incoming})
			switch {
			case err == nil && created:
				d.pass(check, "created "+got)
			case err == nil:
				d.pass(check, got)
			case errors.Is(err, imapsync.ErrIncomingFolder):
				d.fail(check, err, fmt.Sprintf("set accounts.%s to a folder that is not the watched mailbox", box.key))
			default:
				d.fail(check, err, fmt.Sprintf("create a %s folder in your mail client (the server refused CREATE), or set accounts.%s to an existing folder that is not the watched mailbox", fallback, box.key))
			}
			continue
		}
		attr, names := box.attr, []string(nil) // nil: the common names, under the server's namespace
		if box.configured != "" {
			// A configured name wins over SPECIAL-USE (as watch uses it),
			// so a missing one is reported rather than hidden.
			attr, names = "", []string{box.configured}
		}
		got, err := c.FindSpecialUse(ctx, attr, names...)
		if err == nil && incoming(got) {
			err = fmt.Errorf("the folder found for %s, %q, is the mailbox mailagent watches", fallback, got)
			d.fail(check, err, fmt.Sprintf("run `mailagent doctor --fix` to create a %s folder, or set accounts.%s to a folder that is not the watched mailbox", fallback, box.key))
			continue
		}
		if err != nil {
			fix := fmt.Sprintf("create a %s folder, or set accounts.%s to the right name", fallback, box.key)
			if nf := (*imapsync.NoMailboxError)(nil); errors.As(err, &nf) {
				fix = folderFix(nf, box.key, fallback, incoming)
				err = errors.New(folderMissing(nf, fallback))
			}
			d.fail(check, err, fix)
			d.checks[len(d.checks)-1].Mailbox = orDefault(box.configured, fallback)
			continue
		}
		d.pass(check, got)
	}
}

func (d *doctor) smtp(ctx context.Context, acct *config.Account) {
	name := "smtp " + acct.Name
	opts, err := d.env.SMTPOptions(ctx, acct)
	if err != nil {
		d.fail(name+": secret", err, "set the source named in accounts.smtp (or leave it out to reuse the IMAP login)")
		return
	}
	d.pass(name+": secret", "resolved (value not shown)")
	opts.Timeout = 10 * time.Second
	s, err := smtpsend.New(opts)
	if err != nil {
		d.fail(name+": connect and AUTH", err, connFix(err, acct.SMTP, "smtp"))
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := s.Check(cctx); err != nil {
		d.fail(name+": connect and AUTH", errors.New(smtpFailDetail(err, acct.SMTP)), connFix(err, acct.SMTP, "smtp"))
		return
	}
	d.pass(name+": connect and AUTH", fmt.Sprintf("%s (%s)", acct.SMTP.Addr(), securityWords(acct.SMTP.Security)))
}

func (d *doctor) state(cfg *config.Config) {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		d.fail("state dir", err, "set state_dir to a directory you can write")
		return
	}
	probe := filepath.Join(cfg.StateDir, ".doctor-probe")
	if err := os.WriteFile(probe, []byte("ok"), 0o600); err != nil {
		d.fail("state dir", err, "set state_dir to a directory you can write")
		return
	}
	_ = os.Remove(probe)
	d.pass("state dir", cfg.StateDir)
	st, err := store.Open(dbPath(cfg), store.Options{Timeout: time.Second, ReadOnly: fileExists(dbPath(cfg))})
	switch {
	case errors.Is(err, store.ErrLocked):
		d.warn("state database", "in use by another process (a running `mailagent watch`)", "that is fine while watch runs")
	case errors.Is(err, store.ErrCorrupt):
		d.fail("state database", err, "run `mailagent doctor --repair`")
	case err != nil:
		d.fail("state database", err, "move the file aside if it is damaged; mailagent recreates it")
	default:
		if err := st.Check(); err != nil {
			_ = st.Close()
			d.fail("state database", err, "run `mailagent doctor --repair`")
			return
		}
		counts, _ := st.CountByState()
		_ = st.Close()
		keys := make([]string, 0, len(counts))
		for k, v := range counts {
			keys = append(keys, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(keys)
		summary := "empty: nothing processed yet"
		if len(keys) > 0 {
			summary = strings.Join(keys, ", ")
		}
		d.pass("state database", "not locked; "+summary)
	}
}

// smtpFailDetail words an SMTP check failure for the doctor: the address
// and how the connection was secured (implicit TLS or STARTTLS), then the
// server's or the TLS library's reason, without smtpsend's "permanent smtp
// failure" classification, which is for the retry logic.
func smtpFailDetail(err error, e config.Endpoint) string {
	var se *smtpsend.SendError
	if !errors.As(err, &se) {
		return err.Error()
	}
	mode := securityMode(e.Security)
	if errors.Is(err, smtpsend.ErrAuth) {
		return fmt.Sprintf("%s (%s): login refused: %v", e.Addr(), mode, se.Err)
	}
	return fmt.Sprintf("%s (%s): %v", e.Addr(), mode, se.Err)
}

// securityMode names a security mode for a newcomer.
func securityMode(security string) string {
	switch security {
	case config.SecurityStartTLS:
		return "STARTTLS"
	case config.SecurityInsecure:
		return "plain text, loopback only"
	}
	return "implicit TLS"
}

// securityWords is securityMode for a connection that succeeded.
func securityWords(security string) string {
	if security == config.SecurityInsecure {
		return securityMode(security)
	}
	return securityMode(security) + ", certificate verified"
}

// isTLSRecordErr reports a TLS client that got something else than TLS:
// a plain-text greeting on a port dialled with implicit TLS.
func isTLSRecordErr(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) || strings.Contains(err.Error(), "first record does not look like a TLS handshake")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// folderFix advises on a folder that was not found: `doctor --fix`,
// which creates it (with the server's namespace prefix, such as
// "INBOX.Sent" on Courier-IMAP), or one of the server's other folders;
// never a folder mailagent reads as incoming mail (incoming).
func folderFix(nf *imapsync.NoMailboxError, key, fallback string, incoming func(string) bool) string {
	create := nf.Create
	if create == "" {
		create = fallback
	}
	others := slices.DeleteFunc(slices.Clone(nf.Existing), func(n string) bool { return incoming(n) || otherUse(n, fallback) })
	if len(others) == 0 {
		return fmt.Sprintf("run `mailagent doctor --fix` to create %q (or create it in your mail client)", create)
	}
	return fmt.Sprintf("run `mailagent doctor --fix` to create %q, or set accounts.%s to one of the server's other folders (%s)", create, key, quoteNames(others))
}

// otherUse reports a folder whose name is a usual name of another
// special use (Sent when Drafts is wanted, Trash, Junk, Archive): it is
// no candidate either.
func otherUse(name, fallback string) bool {
	leaf := name[strings.LastIndexAny(name, "./")+1:]
	for _, attr := range []string{`\Sent`, `\Drafts`, `\Trash`, `\Junk`, `\Archive`} {
		if strings.EqualFold(attr, `\`+fallback) {
			continue
		}
		if slices.ContainsFunc(imapsync.CommonNames(attr), func(c string) bool { return strings.EqualFold(c, leaf) }) {
			return true
		}
	}
	return false
}

// folderMissing says which folder was not found, by its name (or its
// special-use flag) and the names tried, never with an empty name.
func folderMissing(nf *imapsync.NoMailboxError, fallback string) string {
	names := slices.DeleteFunc(slices.Clone(nf.Tried), func(n string) bool { return n == "" })
	tried := fmt.Sprintf("%q", fallback)
	switch {
	case len(names) > 3:
		tried = fmt.Sprintf("%s or %d other usual names", quoteNames(names[:2]), len(names)-2)
	case len(names) > 0:
		tried = strings.Join(strings.Split(quoteNames(names), ", "), " or ")
	}
	what := "no folder named " + tried
	if nf.Attr != "" {
		what = fmt.Sprintf("no folder is marked %s and none is named %s", nf.Attr, tried)
	}
	if len(nf.Existing) == 0 {
		return what + "; the server lists no folders"
	}
	return what + "; the server has " + quoteNames(nf.Existing)
}

// quoteNames quotes folder names for a one-line message ("" for none).
func quoteNames(names []string) string {
	q := make([]string, 0, len(names))
	for _, n := range names {
		if n != "" {
			q = append(q, fmt.Sprintf("%q", n))
		}
	}
	return strings.Join(q, ", ")
}

// Env is what the checks need from the process: the logins (secrets
// resolved) and the model client.
type Env struct {
	IMAPOptions func(ctx context.Context, acct *config.Account) (imapsync.Options, error)
	SMTPOptions func(ctx context.Context, acct *config.Account) (smtpsend.Options, error)
	NewModel    func(ctx context.Context, cfg *config.Config) (llm.Model, error)
}

// Options choose the checks: Fix creates a missing Sent or Drafts folder
// (imapsync.Client.EnsureFolder); NoModel skips the model round trip.
type Options struct {
	Fix, NoModel bool
}

// Run checks cfg (loaded from file) for accounts, at now, and returns
// one Check per line in the order they ran; a failed check has Status
// "fail". Nothing is written but the state directory's probe file and,
// with Fix, the missing folders.
func Run(ctx context.Context, env Env, cfg *config.Config, file string, accounts []*config.Account, now time.Time, o Options) []Check {
	d := &doctor{env: env, fix: o.Fix, cfg: cfg}
	d.pass("config", file)
	for _, acct := range accounts {
		d.account = acct.Name
		d.imap(ctx, acct)
		d.smtp(ctx, acct)
		d.calendar(ctx, cfg, acct, now)
	}
	d.account = ""
	if !o.NoModel {
		d.model(ctx, cfg)
	}
	d.state(cfg)
	return d.checks
}

// ConfigFailed is the report of a configuration that does not load: its
// one failed check.
func ConfigFailed(err error) []Check {
	d := &doctor{}
	d.fail("config", err, "run `mailagent init`, or fix the key named above")
	return d.checks
}

// Failed reports whether a check in checks failed.
func Failed(checks []Check) bool { return (&doctor{checks: checks}).failed() }

// ConnFix turns a connection error into the fix a user needs (init's
// server probes word theirs with it too).
func ConnFix(err error, e config.Endpoint, kind string) string { return connFix(err, e, kind) }

// PollingFix is the fix when a server's push is slow: how often watch
// polls it.
func PollingFix(server string) string { return pollingFix(server) }

// dbPath is where the state database lives (cmdutil.DBPath's rule).
func dbPath(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "mailagent.db") }

// orDefault is v trimmed, or def when v is blank.
func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}

// SecurityMode and SecurityWords word an endpoint's security setting the
// way the checks do (init's interview and probes say it the same way).
func SecurityMode(security string) string  { return securityMode(security) }
func SecurityWords(security string) string { return securityWords(security) }

// PollEvery is how often watch polls a server whose push is slow, in
// the checks' words.
func PollEvery(server string) string { return pollEvery(server) }
