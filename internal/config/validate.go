package config

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// FieldError is one problem with one key of the configuration file.
type FieldError struct {
	File    string // the config file, "" when parsed from memory
	Key     string // e.g. "accounts[0].imap.port"
	Problem string
	Fix     string // what to change; may be empty
}

// maxNudgeText bounds followup.nudge_text: a follow-up is a few sentences.
const maxNudgeText = 4000

// Error reads: config FILE: KEY: PROBLEM (fix: FIX).
func (e *FieldError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config %s: %s: %s", displayFile(e.File), e.Key, e.Problem)
	if e.Fix != "" {
		fmt.Fprintf(&b, " (fix: %s)", e.Fix)
	}
	return b.String()
}

type problems struct {
	file string
	errs []error
}

func (p *problems) add(key, problem, fix string) {
	p.errs = append(p.errs, &FieldError{File: p.file, Key: key, Problem: problem, Fix: fix})
}

func (p *problems) duration(key string, d Duration, min string, allowZero bool) {
	switch {
	case d.bad:
		p.add(key, fmt.Sprintf("%q is not a duration", d.raw), `write it with a unit, e.g. "90s", "2m" or "1h30m"`)
	case d.Duration < 0:
		p.add(key, fmt.Sprintf("%s is negative", d.Duration), "use a positive duration")
	case d.Duration == 0 && !allowZero:
		p.add(key, "must be longer than 0", "use a duration such as "+min)
	}
}

// Validate checks the whole configuration and returns every problem found,
// joined; each is a *FieldError.
func (c *Config) Validate() error {
	p := &problems{file: c.File}

	if c.StateDir == "" {
		p.add("state_dir", "is empty", "set state_dir, or set $XDG_STATE_HOME or $HOME")
	}

	// [llm], [llm.classify], [llm.draft]
	c.validateModel(p, "llm", c.LLM)
	for _, task := range []string{TaskClassify, TaskDraft} {
		c.validateModel(p, "llm."+task, c.LLM.ForTask(task))
	}
	p.duration("llm.cmd_timeout", c.LLM.CmdTimeout, `"30s"`, false)
	if c.LLM.Concurrency < 1 || c.LLM.Concurrency > 64 {
		p.add("llm.concurrency", fmt.Sprintf("%d is out of range", c.LLM.Concurrency), "use a number from 1 to 64 (default 4)")
	}
	if c.LLM.RequestsPerMinute < 0 {
		p.add("llm.requests_per_minute", fmt.Sprintf("%d is negative", c.LLM.RequestsPerMinute), "use 0 for no limit, or your quota (e.g. 10)")
	}
	if c.LLM.MaxBodyChars < 100 {
		p.add("llm.max_body_chars", fmt.Sprintf("%d is too small", c.LLM.MaxBodyChars), "use at least 100 (default 4000)")
	}

	// [[accounts]]
	if len(c.Accounts) == 0 {
		p.add("accounts", "no account is configured", "add an [[accounts]] table with name, email, [accounts.imap] and [accounts.smtp]")
	}
	seen := map[string]int{}
	for i := range c.Accounts {
		c.validateAccount(p, i, seen)
	}

	// [sync]
	if c.Sync.MaxMessageBytes < 1024 {
		p.add("sync.max_message_bytes", fmt.Sprintf("%d is too small", c.Sync.MaxMessageBytes), "use at least 1024 (default 10485760)")
	}
	p.duration("sync.poll_interval", c.Sync.PollInterval, `"60s"`, false)
	p.duration("sync.initial_lookback", c.Sync.InitialLookback, `"24h"`, true)
	p.duration("sync.retry_interval", c.Sync.RetryInterval, `"15m"`, false)
	p.duration("sync.claim_lease", c.Sync.ClaimLease, `"10m"`, true)
	if d := c.Sync.ClaimLease.Duration; d > 0 && d < 10*time.Second {
		p.add("sync.claim_lease", fmt.Sprintf("%s is too short", d), `use at least "10s" (default "10m")`)
	}

	// [policy]
	switch c.Policy.Mode {
	case ModeReview, ModeAuto:
	default:
		p.add("policy.mode", fmt.Sprintf("%q is not one of review, auto", c.Policy.Mode), `use "review" (never auto-send) or "auto"`)
	}
	if c.Policy.MinConfidence < 0 || c.Policy.MinConfidence > 1 {
		p.add("policy.min_confidence", fmt.Sprintf("%g is outside 0..1", c.Policy.MinConfidence), "use a number between 0 and 1 (default 0.8)")
	}
	for i, intent := range c.Policy.NeverAuto {
		if !slices.Contains(Intents, intent) {
			fix := "use one of " + strings.Join(Intents, ", ")
			if s := suggest(intent, Intents); s != "" {
				fix = fmt.Sprintf("did you mean %q?", s)
			}
			p.add(fmt.Sprintf("policy.never_auto[%d]", i), fmt.Sprintf("%q is not a known intent", intent), fix)
		}
	}
	if c.Policy.MaxAutoPerContactPerDay < 0 {
		p.add("policy.max_auto_per_contact_per_day", "is negative", "use 0 (no auto-sends) or more")
	}
	if c.Policy.MaxAutoPerDay < 0 {
		p.add("policy.max_auto_per_day", "is negative", "use 0 (no auto-sends) or more")
	}
	p.duration("policy.send_delay", c.Policy.SendDelay, `"0s"`, true)
	p.duration("policy.approval_delay", c.Policy.ApprovalDelay, `"5s"`, true)
	if d := c.Policy.ApprovalDelay.D(); d > time.Hour {
		p.add("policy.approval_delay", fmt.Sprintf("%s is longer than an hour", d), `it is an undo window: use a few seconds ("5s", "30s"), or "0s" to send at once`)
	}
	for i, d := range c.Policy.AllowDomains {
		if d = strings.TrimSpace(d); d == "" || strings.ContainsAny(d, "@ \t\r\n,;<>") {
			p.add(fmt.Sprintf("policy.allow_domains[%d]", i), fmt.Sprintf("%q is not a domain", d), `write a domain ("mail.lan") or an address literal ("[10.0.0.5]"), without "user@"`)
		}
	}
	if c.Policy.AIFooter && strings.TrimSpace(c.Policy.FooterText) == "" {
		p.add("policy.footer_text", "is empty while ai_footer is on", "write a footer, or set ai_footer = false")
	}
	if c.Policy.MaxDraftChars < 100 {
		p.add("policy.max_draft_chars", fmt.Sprintf("%d is too small", c.Policy.MaxDraftChars), "use at least 100 (default 4000)")
	}
	// [followup]
	p.duration("followup.default_after", c.Followup.DefaultAfter.Duration, `"3d"`, false)
	if d := c.Followup.DefaultAfter.D(); d > 0 && d < time.Hour {
		p.add("followup.default_after", fmt.Sprintf("%s is shorter than an hour", d), `use days, e.g. "3d"`)
	}
	if n := c.Followup.MaxNudges; n < 1 || n > 10 {
		p.add("followup.max_nudges", fmt.Sprintf("%d is outside 1–10", n), "use 2 (the default)")
	}
	if t := c.Followup.NudgeText; t != "" {
		switch {
		case strings.TrimSpace(t) == "":
			p.add("followup.nudge_text", "is only white space", "write the follow-up text, or remove the key for the default")
		case len(t) > maxNudgeText:
			p.add("followup.nudge_text", fmt.Sprintf("is %d bytes, more than %d", len(t), maxNudgeText), "shorten it to a few sentences")
		case strings.ContainsRune(t, 0):
			p.add("followup.nudge_text", "contains a NUL byte", "remove it")
		}
	}
	// [mailbox]
	if a := c.Mailbox.Archive; a != ArchiveOff && a != ArchiveMove && a != ArchiveKeyword {
		p.add("mailbox.archive", fmt.Sprintf("%q is not off, move or keyword", a), `use "off" (the default), "move" or "keyword"`)
	}
	if strings.ContainsAny(c.Mailbox.ArchiveFolder, "\r\n\x00*%") {
		p.add("mailbox.archive_folder", "contains a control or wildcard character", `name the folder, e.g. "Archive"`)
	}
	// [store]
	p.duration("store.retention", c.Store.Retention.Duration, `"90d"`, true)
	c.validateDigest(p)
	for _, a := range c.MCP.Accounts {
		if _, found := c.Account(a); !found {
			p.add("mcp.accounts", fmt.Sprintf("no account %q", a), "use the names of [[accounts]], or leave it out to expose all")
		}
	}
	c.Scheduling.validate(p)
	c.Tools.validate(p)
	c.validateTrace(p)
	c.validateNotify(p)
	if r := c.Store.Retention.D(); r > 0 && r < MinRetention {
		p.add("store.retention", fmt.Sprintf("%s is shorter than 7 days", r), `use "90d" (the default), at least "7d", or "0" to keep everything`)
	}
	return errors.Join(p.errs...)
}

func (c *Config) validateAccount(p *problems, i int, seen map[string]int) {
	a := &c.Accounts[i]
	key := fmt.Sprintf("accounts[%d]", i)
	switch {
	case strings.TrimSpace(a.Name) == "":
		p.add(key+".name", "is empty", `give the account a short name, e.g. "personal"`)
	case strings.ContainsFunc(a.Name, func(r rune) bool { return r == '/' || unicode.IsControl(r) }):
		p.add(key+".name", fmt.Sprintf("%q contains '/' or a control character", a.Name), "use letters, digits, '-', '_' or '.'")
	default:
		if j, dup := seen[a.Name]; dup {
			p.add(key+".name", fmt.Sprintf("%q is already used by accounts[%d]", a.Name, j), "give each account a unique name")
		} else {
			seen[a.Name] = i
		}
	}
	if a.Email == "" {
		p.add(key+".email", "is empty", "set the owner's address on this account")
	} else if !bareAddress(a.Email) {
		p.add(key+".email", fmt.Sprintf("%q is not an email address", a.Email), `write a bare address such as "ada@example.com"`)
	}
	for j, al := range a.Aliases {
		if !bareAddress(al) {
			p.add(fmt.Sprintf("%s.aliases[%d]", key, j), fmt.Sprintf("%q is not an email address", al), `write a bare address such as "ada@example.org"`)
		}
	}
	if a.AssistantAddress != "" && !bareAddress(a.AssistantAddress) {
		p.add(key+".assistant_address", fmt.Sprintf("%q is not an email address", a.AssistantAddress), `write a bare address such as "ada+agent@example.com"`)
	}
	for _, id := range strings.FieldsFunc(a.AuthservID, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !validAuthservID(id) {
			p.add(key+".authserv_id", fmt.Sprintf("%q is not a host name or *.domain pattern", id),
				"copy the id from the first Authentication-Results header of mail in your inbox (e.g. \"mx.google.com\"); `mailagent doctor` shows it")
			break
		}
	}
	if strings.ContainsRune(a.Mailbox, 0) {
		p.add(key+".mailbox", "contains a NUL byte", "use the mailbox name as the server lists it")
	}
	c.validateEndpoint(p, key+".imap", "imap", &a.IMAP)
	c.validateEndpoint(p, key+".smtp", "smtp", &a.SMTP)
	c.validateCalendar(p, key+".calendar", &a.Calendar)
	for _, f := range []struct{ key, name string }{{"drafts_mailbox", a.DraftsMailbox}, {"sent_mailbox", a.SentMailbox}} {
		if f.name == "" {
			continue
		}
		if in := c.IncomingAccount(a, f.name); in != nil {
			what := "this account's mailbox"
			if in != a {
				what = fmt.Sprintf("the mailbox account %q watches on the same server", in.Name)
			}
			p.add(key+"."+f.key, fmt.Sprintf("%q is %s: mailagent would take its own drafts and copies for incoming mail, and a draft for the owner's reply", f.name, what),
				"leave "+f.key+" out and run `mailagent doctor --fix` to create the folder")
		}
	}
}

// SameMailbox reports whether two mailbox names name the same folder:
// INBOX is case-insensitive (RFC 3501 5.1), every other name is compared
// as written.
func SameMailbox(a, b string) bool {
	if strings.EqualFold(a, "INBOX") {
		return strings.EqualFold(b, "INBOX")
	}
	return a == b
}

// IncomingAccount returns the account that reads name as its incoming
// mailbox on the same IMAP login as a (a itself, or another account with
// the same host and username), or nil when none does. It is the one rule
// for "this folder is incoming mail": such a folder can never hold the
// owner's Drafts or Sent.
func (c *Config) IncomingAccount(a *Account, name string) *Account {
	if SameMailbox(a.Mailbox, name) || (a.Mailbox == "" && SameMailbox("INBOX", name)) {
		return a
	}
	for i := range c.Accounts {
		o := &c.Accounts[i]
		if o == a || !strings.EqualFold(o.IMAP.Host, a.IMAP.Host) || o.IMAP.Username != a.IMAP.Username {
			continue
		}
		if SameMailbox(o.Mailbox, name) {
			return o
		}
	}
	return nil
}

func (c *Config) validateEndpoint(p *problems, key, kind string, e *Endpoint) {
	if strings.TrimSpace(e.Host) == "" {
		p.add(key+".host", "is empty", fmt.Sprintf("set the %s server's host name, e.g. %q", strings.ToUpper(kind), kind+".example.com"))
	}
	if e.Port < 1 || e.Port > 65535 {
		p.add(key+".port", fmt.Sprintf("%d is not a TCP port", e.Port), fmt.Sprintf("use %s", portHint(kind)))
	}
	switch e.Security {
	case SecurityTLS, SecurityStartTLS:
	case SecurityInsecure:
		if !netpolicy.IsLoopback(e.Host) {
			p.add(key+".security", fmt.Sprintf(`"insecure" is refused for the non-loopback host %q: the password would cross the network in clear text`, e.Host),
				`use "tls" or "starttls"; "insecure" is only for 127.0.0.1/localhost test servers`)
		}
	default:
		p.add(key+".security", fmt.Sprintf("%q is not one of tls, starttls, insecure", e.Security), securityFix(kind, e.Port))
	}
	if e.TLSCAFile != "" {
		if _, err := os.Stat(e.TLSCAFile); err != nil {
			p.add(key+".tls_ca_file", fmt.Sprintf("cannot read %s: %v", e.TLSCAFile, errors.Unwrap(err)), "point it at a PEM CA bundle, or leave it empty to use the system roots")
		}
	}
	p.duration(key+".cmd_timeout", e.CmdTimeout, `"30s"`, false)
	if e.inherited {
		return // the IMAP table already answers for the login
	}
	var set []string
	if !e.Password.Empty() {
		set = append(set, "password")
	}
	if e.PasswordCmd != "" {
		set = append(set, "password_cmd")
	}
	if e.PasswordEnv != "" {
		set = append(set, "password_env")
	}
	if e.PasswordKeyring {
		set = append(set, "password_keyring")
	}
	if e.OAuth2TokenCmd != "" {
		set = append(set, "oauth2_token_cmd")
	}
	switch {
	case len(set) == 0:
		p.add(key, "no password source is set", `set one of password_cmd = "pass show mail/you", password_env = "VAR", password_keyring = true or oauth2_token_cmd`)
	case len(set) > 1:
		p.add(key, "sets more than one password source: "+strings.Join(set, ", "), "keep exactly one")
	}
	if !e.Password.Empty() {
		c.literalSecret(p, key+".password", "password_cmd, password_env or password_keyring")
	}
}

// literalSecret refuses a secret written in a file others can read.
func (c *Config) literalSecret(p *problems, key, alternatives string) {
	if c.Mode&0o077 == 0 {
		return
	}
	p.add(key, fmt.Sprintf("a literal secret is accepted only in a file no one else can read, and %s has mode %04o", displayFile(c.File), uint32(c.Mode.Perm())),
		fmt.Sprintf("chmod 600 %s, or use %s", displayFile(c.File), alternatives))
}

func bareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

func portHint(kind string) string {
	if kind == "smtp" {
		return "465 (tls) or 587 (starttls)"
	}
	return "993 (tls) or 143 (starttls)"
}

func securityFix(kind string, port int) string {
	switch port {
	case 993, 465:
		return fmt.Sprintf("use %q for port %d", SecurityTLS, port)
	case 143, 587, 25:
		return fmt.Sprintf("use %q for port %d", SecurityStartTLS, port)
	}
	return fmt.Sprintf(`use "tls" (implicit TLS) or "starttls"; usual ports are %s`, portHint(kind))
}

// unknownKeys reports every key of the file that no field decoded, once
// per unknown subtree.
func unknownKeys(file string, md toml.MetaData) []error {
	p := &problems{file: file}
	var reported []toml.Key
	for _, k := range md.Undecoded() {
		if slices.ContainsFunc(reported, func(r toml.Key) bool { return hasPrefix(k, r) }) {
			continue
		}
		reported = append(reported, k)
		parent := strings.Join(k[:len(k)-1], ".")
		name := k[len(k)-1]
		known := knownKeys()[parent]
		fix := "remove it"
		if s := suggest(name, known); s != "" {
			fix = fmt.Sprintf("did you mean %q?", s)
		} else if len(known) > 0 {
			fix = "remove it; keys allowed here: " + strings.Join(known, ", ")
		}
		p.add(k.String(), "unknown key", fix)
	}
	return p.errs
}

func hasPrefix(k, prefix toml.Key) bool {
	return len(k) > len(prefix) && slices.Equal(k[:len(prefix)], prefix)
}

// knownKeys maps a table path ("", "llm", "accounts.imap") to the keys
// allowed in it, read from the struct tags so that it cannot drift.
func knownKeys() map[string][]string {
	m := map[string][]string{}
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for f := range t.Fields() {
			tag := strings.Split(f.Tag.Get("toml"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			m[path] = append(m[path], tag)
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[Duration]() && ft != reflect.TypeFor[Secret]() {
				sub := tag
				if path != "" {
					sub = path + "." + tag
				}
				walk(sub, ft)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return m
}

// suggest returns the candidate closest to s when it is close enough to be
// a typo. Hand-rolled Levenshtein: a dozen lines do not justify a module.
func suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// validAuthservID accepts a host name, optionally written "*.domain" to
// match every host under domain.
func validAuthservID(id string) bool {
	id = strings.TrimPrefix(id, "*.")
	if id == "" || len(id) > 253 || strings.HasPrefix(id, ".") || strings.Contains(id, "..") {
		return false
	}
	for _, r := range id {
		if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// validateDigest checks [digest]: "daily HH:MM", a configured account.
func (c *Config) validateDigest(p *problems) {
	d := c.Digest
	if d.Schedule != "" {
		f := strings.Fields(d.Schedule)
		ok := len(f) == 2 && strings.EqualFold(f[0], "daily") && len(f[1]) == 5 && f[1][2] == ':'
		if ok {
			h, m := f[1][:2], f[1][3:]
			ok = h >= "00" && h <= "23" && m >= "00" && m <= "59" && strings.Trim(h+m, "0123456789") == ""
		}
		if !ok {
			p.add("digest.schedule", fmt.Sprintf("%q is not a schedule", d.Schedule), `write "daily HH:MM", e.g. "daily 08:00"`)
		}
	}
	if d.Account != "" {
		if _, found := c.Account(d.Account); !found {
			p.add("digest.account", fmt.Sprintf("no account %q", d.Account), "use the name of one of [[accounts]]")
		}
	}
	if d.To != "" {
		if _, err := mail.ParseAddress(d.To); err != nil {
			p.add("digest.to", fmt.Sprintf("%q is not an address", d.To), "write an address such as you@example.com")
		}
	}
}

// validateModel checks the effective settings of one model (key is "llm",
// "llm.classify" or "llm.draft"). A task section is reported only for
// what it sets itself: the inherited [llm] keys are checked once.
func (c *Config) validateModel(p *problems, key string, l LLM) {
	task := key != "llm"
	own := func(set bool) bool { return !task || set } // a task reports only its own keys
	var t LLMTask
	switch key {
	case "llm." + TaskClassify:
		t = c.LLM.Classify
	case "llm." + TaskDraft:
		t = c.LLM.Draft
	}
	switch l.Provider {
	case ProviderGemini:
		if own(t.Provider != "") && l.StructuredOutput != "" && own(t.StructuredOutput != "" || t.Provider != "") {
			p.add(key+".structured_output", "applies to provider \"openai\" only", "remove it: gemini always gets the schema as its response schema")
		}
	case ProviderOpenAI:
		switch l.StructuredOutput {
		case "", "json_schema", "json_object", "prompt":
		default:
			if own(t.StructuredOutput != "") {
				p.add(key+".structured_output", fmt.Sprintf("%q is not a structured-output mode", l.StructuredOutput),
					`use "json_schema" (server supports response_format json_schema), "json_object" (JSON mode only) or "prompt" (neither)`)
			}
		}
	default:
		if own(t.Provider != "") {
			p.add(key+".provider", fmt.Sprintf("%q is not a supported provider", l.Provider),
				`use "gemini", or "openai" for any OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio)`)
		}
	}
	if strings.TrimSpace(l.Model) == "" && own(t.Provider != "") {
		fix := `set a model name, e.g. "gemini-2.5-flash"`
		if l.Provider == ProviderOpenAI {
			fix = `set the name the server lists at /v1/models, e.g. "qwen2.5:7b" for Ollama`
		}
		p.add(key+".model", "is empty", fix)
	}
	if own(t.APIKeyEnv != "" || t.APIKeyCmd != "" || t.APIKeyKeyring || !t.APIKey.Empty()) {
		n := 0
		for _, set := range []bool{l.APIKeyEnv != "", l.APIKeyCmd != "", l.APIKeyKeyring, !l.APIKey.Empty()} {
			if set {
				n++
			}
		}
		if n > 1 {
			p.add(key, "sets more than one of api_key_env, api_key_cmd, api_key_keyring and api_key", "keep exactly one")
		}
		if !l.APIKey.Empty() {
			c.literalSecret(p, key+".api_key", "api_key_env or api_key_cmd")
		}
	}
	if l.BaseURL != "" && own(t.BaseURL != "") {
		u, err := url.Parse(l.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(key+".base_url", fmt.Sprintf("%q is not an http(s) URL", l.BaseURL), `write a full URL such as "https://gateway.example.com/" or "http://localhost:11434/v1", or leave it empty`)
		}
	}
	if l.RequestsPerMinute < 0 && own(t.RequestsPerMinute != 0) {
		p.add(key+".requests_per_minute", fmt.Sprintf("%d is negative", l.RequestsPerMinute), "use 0 for no limit, or your quota (e.g. 10)")
	}
	if own(t.Timeout != (Duration{})) {
		p.duration(key+".timeout", l.Timeout, `"60s"`, false)
	}
}
