// Package config loads, defaults and validates mailagent's TOML
// configuration, and resolves the secrets it points to.
//
// Contract:
//   - The file is found by Find/Load in this order: the explicit path (the
//     --config flag), $MAILAGENT_CONFIG, then
//     $XDG_CONFIG_HOME/mailagent/config.toml (XDG_CONFIG_HOME defaults to
//     ~/.config).
//   - Parse decodes, applies defaults and validates. Every problem is
//     reported at once (errors.Join of *FieldError), each naming the file,
//     the key (accounts[0].imap.port) and a fix. Unknown keys are errors,
//     with a "did you mean" suggestion when one is close.
//   - Relative paths in the file are resolved against the file's directory;
//     a leading "~/" means the home directory.
//   - The schema only grows: keys are never renamed or given a new meaning.
//   - Secrets are never stored in plain strings: a literal password in the
//     file decodes into a Secret, and resolved passwords, tokens and API
//     keys are returned as Secret, which prints "[redacted]" in fmt, JSON,
//     text and slog. A literal secret is accepted only when the file's mode
//     is 0600 or stricter.
//   - Nothing here runs a command or touches a keyring until a Resolve*
//     method is called, so `--help` and `validate` stay side-effect free.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mailagent/mailagent/internal/humantime"
)

// EnvConfig names the environment variable that points at the config file.
const EnvConfig = "MAILAGENT_CONFIG"

// DefaultFooter is the default policy.footer_text. {{name}} is replaced by
// the account's display name.
const DefaultFooter = "—\nThis reply was written by an AI assistant on behalf of {{name}}."

// Intents is the closed set of intents the classifier may return; the
// policy's never_auto list must be drawn from it. It must equal
// agent.Intents, the classification schema's enum (config, a leaf
// library, cannot import agent, so the list is repeated; agent's tests
// should compare them).
var Intents = []string{
	"scheduling", "information_request", "action_request", "introduction_networking",
	"sales_vendor", "fyi_notification", "sensitive_legal_financial", "complaint",
	"follow_up", "spam", "unknown_ambiguous",
}

// DefaultNeverAuto is the default policy.never_auto list.
var DefaultNeverAuto = []string{"sensitive_legal_financial", "complaint", "sales_vendor", "unknown_ambiguous", "spam"}

// Config is the whole configuration file, with defaults applied.
type Config struct {
	// StateDir holds the bbolt database, the socket and the log. Default
	// $XDG_STATE_HOME/mailagent (~/.local/state/mailagent).
	StateDir string `toml:"state_dir"`
	// PromptsDir holds optional user overrides of the embedded prompts.
	PromptsDir string `toml:"prompts_dir"`
	// OwnerProfileFile is a markdown/text file describing the owner and
	// their writing style; it is given to the drafting prompt.
	OwnerProfileFile string `toml:"owner_profile_file"`
	// LogFile defaults to <state_dir>/mailagent.log.
	LogFile string `toml:"log_file"`

	LLM      LLM       `toml:"llm"`
	Accounts []Account `toml:"accounts"`
	Sync     Sync      `toml:"sync"`
	Policy   Policy    `toml:"policy"`
	Store    Store     `toml:"store"`
	Digest   Digest    `toml:"digest"`
	Followup Followup  `toml:"followup"`
	Mailbox  Mailbox   `toml:"mailbox"`
	MCP      MCP       `toml:"mcp"`
	// Scheduling holds the owner's meeting preferences for free slots.
	Scheduling Scheduling `toml:"scheduling"`
	// Tools bounds the tool step before drafting and names MCP servers.
	Tools Tools `toml:"tools"`
	// Trace says what a message's trace keeps (step snapshots).
	Trace Trace `toml:"trace"`
	// Notify turns on desktop notifications (off by default).
	Notify Notify `toml:"notify"`

	// File is the path the configuration was read from ("" when parsed
	// from memory without a name).
	File string `toml:"-"`
	// Mode is the permission bits of File, used by the literal-secret check.
	Mode fs.FileMode `toml:"-"`

	logDefaulted bool
}

// The model providers.
const (
	ProviderGemini = "gemini"
	// ProviderOpenAI is any server speaking the OpenAI chat completions API:
	// OpenAI itself, Ollama, llama.cpp's server, vLLM, LM Studio, gateways.
	ProviderOpenAI = "openai"
)

// LLM configures the language model.
type LLM struct {
	Provider string `toml:"provider"` // "gemini" (default) or "openai"
	Model    string `toml:"model"`
	// APIKeyEnv defaults to GEMINI_API_KEY for gemini when no other source
	// is set; provider "openai" needs no key (local servers).
	APIKeyEnv string `toml:"api_key_env"`
	APIKeyCmd string `toml:"api_key_cmd"`
	// APIKeyKeyring reads the key from the system keyring: service
	// "mailagent", user "llm" ("llm/classify", "llm/draft" for a task
	// section that names its own source).
	APIKeyKeyring bool `toml:"api_key_keyring"`
	// APIKey is a literal key, accepted only in a 0600 file.
	APIKey Secret `toml:"api_key"`
	// CmdTimeout bounds api_key_cmd (default 30s).
	CmdTimeout Duration `toml:"cmd_timeout"`
	// BaseURL overrides the API endpoint (gateways, proxies, tests).
	BaseURL     string `toml:"base_url"`
	Concurrency int    `toml:"concurrency"`
	// RequestsPerMinute spaces model calls (0 = no limit); set it to your
	// quota so that long triage runs do not live on 429 responses.
	RequestsPerMinute int      `toml:"requests_per_minute"`
	Timeout           Duration `toml:"timeout"` // per call
	MaxBodyChars      int      `toml:"max_body_chars"`
	ClassifyAutomated bool     `toml:"classify_automated"`
	// StructuredOutput is how provider "openai" asks for JSON:
	// "json_schema" (default), "json_object" or "prompt". The answer is
	// validated the same way whatever the mode.
	StructuredOutput string `toml:"structured_output"`

	// Classify and Draft override the model for one task (a small local
	// model to classify, a larger one to draft); unset keys fall back to
	// [llm]. See ForTask.
	Classify LLMTask `toml:"classify"`
	Draft    LLMTask `toml:"draft"`

	keyringUser string // set by ForTask for a task's own keyring entry; "" is "llm"
}

// KeyringUser is the keyring user of the API key: "llm", or "llm/TASK"
// for a task section with its own key source.
func (l LLM) KeyringUser() string {
	if l.keyringUser != "" {
		return l.keyringUser
	}
	return "llm"
}

// HasKeySource reports whether any API key source is configured.
func (l LLM) HasKeySource() bool {
	return l.APIKeyEnv != "" || l.APIKeyCmd != "" || l.APIKeyKeyring || !l.APIKey.Empty()
}

// LLMTask is an [llm.classify] or [llm.draft] section: the keys that may
// differ per task. Empty keys fall back to [llm].
type LLMTask struct {
	Provider          string   `toml:"provider"`
	Model             string   `toml:"model"`
	BaseURL           string   `toml:"base_url"`
	APIKeyEnv         string   `toml:"api_key_env"`
	APIKeyCmd         string   `toml:"api_key_cmd"`
	APIKeyKeyring     bool     `toml:"api_key_keyring"`
	APIKey            Secret   `toml:"api_key"`
	StructuredOutput  string   `toml:"structured_output"`
	Timeout           Duration `toml:"timeout"`
	RequestsPerMinute int      `toml:"requests_per_minute"`
}

// The tasks ForTask knows.
const (
	TaskClassify = "classify"
	TaskDraft    = "draft"
)

// ForTask returns the effective model settings of task (TaskClassify or
// TaskDraft; anything else returns l itself): l with the task section's
// non-empty keys on top. A section that names another provider or
// base_url does not inherit [llm]'s API key source, so a key meant for one
// server is never sent to another; it names its own, or none (a local
// server), or gets GEMINI_API_KEY for gemini.
func (l LLM) ForTask(task string) LLM {
	var t LLMTask
	switch task {
	case TaskClassify:
		t = l.Classify
	case TaskDraft:
		t = l.Draft
	default:
		return l
	}
	out := l
	out.Classify, out.Draft = LLMTask{}, LLMTask{}
	if t == (LLMTask{}) {
		return out
	}
	elsewhere := (t.Provider != "" && t.Provider != l.Provider) || (t.BaseURL != "" && t.BaseURL != l.BaseURL)
	if t.Provider != "" {
		out.Provider = t.Provider
		if t.Provider != l.Provider { // another provider's URL, mode and model do not apply
			out.BaseURL, out.StructuredOutput, out.Model = "", "", ""
		}
	}
	if t.Model != "" {
		out.Model = t.Model
	}
	if t.BaseURL != "" {
		out.BaseURL = t.BaseURL
	}
	if t.StructuredOutput != "" {
		out.StructuredOutput = t.StructuredOutput
	}
	if t.Timeout.Duration != 0 || t.Timeout.bad {
		out.Timeout = t.Timeout
	}
	if t.RequestsPerMinute != 0 {
		out.RequestsPerMinute = t.RequestsPerMinute
	}
	if t.APIKeyEnv != "" || t.APIKeyCmd != "" || t.APIKeyKeyring || !t.APIKey.Empty() || elsewhere {
		out.APIKeyEnv, out.APIKeyCmd, out.APIKeyKeyring, out.APIKey = t.APIKeyEnv, t.APIKeyCmd, t.APIKeyKeyring, t.APIKey
		out.keyringUser = "llm/" + task
		if out.Provider == ProviderGemini && !out.HasKeySource() {
			out.APIKeyEnv = "GEMINI_API_KEY"
		}
	}
	return out
}

// Account is one mailbox the agent watches.
type Account struct {
	Name          string   `toml:"name"`
	Email         string   `toml:"email"` // the owner's address on this account
	DisplayName   string   `toml:"display_name"`
	Mailbox       string   `toml:"mailbox"`        // default INBOX
	SentMailbox   string   `toml:"sent_mailbox"`   // "" = SPECIAL-USE \Sent, then "Sent"
	DraftsMailbox string   `toml:"drafts_mailbox"` // "" = SPECIAL-USE \Drafts, then "Drafts"
	Aliases       []string `toml:"aliases"`        // other owner addresses
	// AuthservID is the authserv-id of the owner's own server in
	// Authentication-Results: only the topmost headers carrying it are
	// trusted, to authenticate senders (and the owner's own mail). One id
	// ("mx.google.com"), several separated by commas, or "*.domain" for a
	// provider whose id names the receiving host ("*.messagingengine.com",
	// "*.icloud.com"); "protection.outlook.com" for Microsoft, whose header
	// has no id. Without it no sender is authenticated and nothing is sent
	// automatically. `mailagent doctor` shows the id the server uses.
	AuthservID string   `toml:"authserv_id"`
	IMAP       Endpoint `toml:"imap"`
	SMTP       Endpoint `toml:"smtp"`
	// AssistantAddress is the agent's own address: the owner's
	// (authenticated) mail to it is an instruction, a Cc to it lets the
	// agent learn, a forward to it delegates the reply. The "+agent"
	// plus-address of the owner's address always counts too.
	AssistantAddress string `toml:"assistant_address"`
	// Calendar is the account's calendar source (optional).
	Calendar Calendar `toml:"calendar"`
}

// OwnerAddresses returns Email followed by the aliases.
func (a Account) OwnerAddresses() []string {
	return append([]string{a.Email}, a.Aliases...)
}

// Security values of Endpoint.Security.
const (
	SecurityTLS      = "tls"      // implicit TLS
	SecurityStartTLS = "starttls" // plain connection upgraded with STARTTLS
	SecurityInsecure = "insecure" // no TLS; refused unless the host is loopback
)

// Endpoint is an IMAP or SMTP server and how to log in to it. Exactly one
// secret source must be set: Password, PasswordCmd, PasswordEnv,
// PasswordKeyring or OAuth2TokenCmd. When the [accounts.smtp] table sets no
// source and no username, it uses the IMAP ones.
type Endpoint struct {
	Host     string `toml:"host"`
	Port     int    `toml:"port"`     // default by protocol and security
	Security string `toml:"security"` // tls (default) | starttls | insecure
	Username string `toml:"username"` // default: the account's email

	// Password is a literal password, accepted only in a 0600 file.
	Password        Secret `toml:"password"`
	PasswordCmd     string `toml:"password_cmd"`
	PasswordEnv     string `toml:"password_env"`
	PasswordKeyring bool   `toml:"password_keyring"` // service "mailagent", user "<account>/<imap|smtp>"
	OAuth2TokenCmd  string `toml:"oauth2_token_cmd"`
	// CmdTimeout bounds password_cmd and oauth2_token_cmd (default 30s).
	CmdTimeout Duration `toml:"cmd_timeout"`
	TLSCAFile  string   `toml:"tls_ca_file"` // extra CA bundle (PEM)

	// set by Parse: who this endpoint belongs to, for keyring look-ups and
	// error messages.
	account string
	kind    string // "imap" | "smtp"
	// inherited: the login was copied from the IMAP table.
	inherited bool
}

// Addr returns host:port.
func (e Endpoint) Addr() string {
	return fmt.Sprintf("%s:%d", bracketIPv6(e.Host), e.Port)
}

func bracketIPv6(h string) string {
	if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
		return "[" + h + "]"
	}
	return h
}

// UsesOAuth2 reports whether the endpoint authenticates with an OAuth2
// bearer token (XOAUTH2/OAUTHBEARER) rather than a password.
func (e Endpoint) UsesOAuth2() bool { return e.OAuth2TokenCmd != "" }

// Sync configures fetching.
type Sync struct {
	MaxMessageBytes int64    `toml:"max_message_bytes"`
	PollInterval    Duration `toml:"poll_interval"`
	InitialLookback Duration `toml:"initial_lookback"`
	RetryInterval   Duration `toml:"retry_interval"`
	// Claims makes watch claim each new message in the mailbox before
	// acting on it, so that several watchers of one account (on
	// different machines, each with its own state) never both answer or
	// queue a message (internal/app/daemon claim.go): "auto" (the
	// default) claims where the server has CONDSTORE, with a keyword set
	// by a conditional STORE, and assumes one watcher where it has not;
	// "on" (or true) also elects one acting watcher through a lease
	// folder on a server without CONDSTORE; "off" (or false) never claims.
	Claims ClaimsMode `toml:"claims"`
	// ClaimLease is how long a claim (or the elected watcher's lease)
	// holds without being renewed or finished: a watcher that died leaves
	// its messages to the others after it (default 10m; 0: the default).
	ClaimLease Duration `toml:"claim_lease"`
}

// ClaimsMode is sync.claims: ClaimsAuto, ClaimsOn or ClaimsOff.
type ClaimsMode string

// sync.claims values.
const (
	ClaimsAuto ClaimsMode = "auto"
	ClaimsOn   ClaimsMode = "on"
	ClaimsOff  ClaimsMode = "off"
)

// UnmarshalTOML implements toml.Unmarshaler: "auto", "on", "off", or a
// boolean (true is "on", false "off", as the first release wrote it).
func (m *ClaimsMode) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case bool:
		*m = ClaimsOff
		if v {
			*m = ClaimsOn
		}
		return nil
	case string:
		switch mode := ClaimsMode(strings.ToLower(strings.TrimSpace(v))); mode {
		case ClaimsAuto, ClaimsOn, ClaimsOff:
			*m = mode
			return nil
		}
		return fmt.Errorf("%q is not one of auto, on, off", v)
	}
	return fmt.Errorf("a TOML %T: use \"auto\", \"on\" or \"off\"", v)
}

// MCP configures `mailagent mcp`, the Model Context Protocol server.
type MCP struct {
	// Enabled lets the server start (default true).
	Enabled bool `toml:"enabled"`
	// ReadOnly drops the one write tool, propose_reply.
	ReadOnly bool `toml:"read_only"`
	// Accounts limits the accounts the server exposes (default: all).
	Accounts []string `toml:"accounts"`
}

// Store configures the state database.
// Digest configures the owner's periodic digest (mailagent digest).
type Digest struct {
	// Schedule is when watch mails the digest: "daily HH:MM" (local
	// time); "" sends none.
	Schedule string `toml:"schedule"`
	// Account sends it (default: the first account); To receives it
	// (default: that account's address).
	Account string `toml:"account"`
	To      string `toml:"to"`
}

type Store struct {
	// Retention is how long finished sends and closed queue items are
	// kept ("90d"; days may be written with d). "0" keeps them forever.
	// The raw copy of a finished send is dropped after 7 days (or the
	// retention, when shorter); message records and traces are kept.
	Retention Days `toml:"retention"`
}

// Followup configures reply tracking (`mailagent followups`).
type Followup struct {
	// Enabled tracks needs-reply and awaiting-reply threads (default
	// true; it only writes the state database and queues follow-up drafts
	// for approval, never sends).
	Enabled bool `toml:"enabled"`
	// DefaultAfter is how long a thread waits for an answer before it is
	// stale, when the mail gives no date ("3d"); also the wait between
	// later reminders and follow-up drafts.
	DefaultAfter Days `toml:"default_after"`
	// BusinessDays counts DefaultAfter in working days (Monday–Friday).
	BusinessDays bool `toml:"business_days"`
	// MaxNudges is how many reminders or follow-up drafts are made before
	// the thread is given up (default 2).
	MaxNudges int `toml:"max_nudges"`
	// AutoSendKnownContacts lets a follow-up draft go out without your
	// approval when policy.mode is "auto", the thread has one
	// correspondent, you have written to them before, and the daily
	// auto-send caps allow it. Default false: every follow-up waits.
	AutoSendKnownContacts bool `toml:"auto_send_known_contacts"`
	// NudgeText is the text of a follow-up draft, in the owner's words
	// and language ("" = a short English default). It is used as written:
	// nothing from the other side's mail is put into it.
	NudgeText string `toml:"nudge_text"`
}

// Values of mailbox.archive.
const (
	ArchiveOff     = "off"     // archive decisions leave the message where it is
	ArchiveMove    = "move"    // move it to the Archive folder
	ArchiveKeyword = "keyword" // only set the $mailagent-archived keyword
)

// Mailbox configures how the agent's decisions show in the mailbox.
// Everything is off by default; triage never changes the mailbox.
type Mailbox struct {
	// Archive is what an "archive" decision does: off | move | keyword.
	Archive string `toml:"archive"`
	// ArchiveFolder names the Archive folder; "" finds it by SPECIAL-USE
	// \Archive, else "Archive" (or "INBOX.Archive" on Courier-style
	// servers).
	ArchiveFolder string `toml:"archive_folder"`
	// Keywords sets IMAP keywords for the agent's labels
	// ($mailagent-queued, $mailagent-<intent>) where the server allows
	// them (PERMANENTFLAGS).
	Keywords bool `toml:"keywords"`
}

// MinRetention is the shortest store.retention accepted: a week of
// history is what `explain` and a weekly digest need.
const MinRetention = 7 * 24 * time.Hour

// StoreRetention returns store.retention for store.Options.Retention: a
// negative value for "keep forever".
func (c *Config) StoreRetention() time.Duration {
	if c.Store.Retention.D() == 0 {
		return -1
	}
	return c.Store.Retention.D()
}

// Days is a Duration (the same grammar: "90d", "2w", "36h") written back
// as a whole number of days when it is one.
type Days struct{ Duration }

// UnmarshalText implements encoding.TextUnmarshaler: the one duration
// grammar of Duration ("90d" is 90 days of 24 hours).
func (d *Days) UnmarshalText(b []byte) error {
	return d.Duration.UnmarshalText(b)
}

// MarshalText writes whole days as "Nd".
func (d Days) MarshalText() ([]byte, error) {
	if v := d.Duration.Duration; v > 0 && v%(24*time.Hour) == 0 {
		return []byte(strconv.Itoa(int(v/(24*time.Hour))) + "d"), nil
	}
	return d.Duration.MarshalText()
}

// Policy modes.
const (
	ModeReview = "review" // never auto-send
	ModeAuto   = "auto"
)

// DefaultApprovalDelay is policy.approval_delay's default.
const DefaultApprovalDelay = 5 * time.Second

// Defaults of sync.initial_lookback and sync.retry_interval: the one
// place each is written (the watch runtime falls back to them too).
const (
	DefaultInitialLookback = 24 * time.Hour
	DefaultRetryInterval   = 15 * time.Minute
)

// Policy configures the deterministic send gates.
type Policy struct {
	Mode                    string   `toml:"mode"`
	MinConfidence           float64  `toml:"min_confidence"`
	NeverAuto               []string `toml:"never_auto"`
	AutoSendNewContacts     bool     `toml:"auto_send_new_contacts"`
	MaxAutoPerContactPerDay int      `toml:"max_auto_per_contact_per_day"`
	MaxAutoPerDay           int      `toml:"max_auto_per_day"`
	SendDelay               Duration `toml:"send_delay"`
	ReplyAll                bool     `toml:"reply_all"`
	DraftsToIMAP            bool     `toml:"drafts_to_imap"`
	AIFooter                bool     `toml:"ai_footer"`
	FooterText              string   `toml:"footer_text"`
	MaxDraftChars           int      `toml:"max_draft_chars"`
	// ApprovalDelay is the undo window of an approval: an approved reply
	// waits this long, cancellable (`mailagent queue cancel`, the TUI),
	// before it is sent. Default 5s; 0 sends at once.
	ApprovalDelay Duration `toml:"approval_delay"`
	// AutoSchedule lets a reply to a scheduling mail go out without
	// approval (when every other gate passes) only if every date and time
	// it names came from the calendar's free slots. Default false: such
	// replies wait for you.
	AutoSchedule bool `toml:"auto_schedule"`
	// AllowDomains are domains mail may be sent to although they are not
	// public names (a ".lan", ".internal" or dotless domain, an address
	// literal "[10.0.0.5]"): netpolicy.CheckMailAddress refuses every
	// other such recipient for every outgoing mail. The accounts' own
	// and owner addresses' domains need no entry. Default empty.
	AllowDomains []string `toml:"allow_domains"`
}

// Footer returns the footer for an account's display name, or "" when
// ai_footer is off.
func (p Policy) Footer(name string) string {
	if !p.AIFooter {
		return ""
	}
	return strings.ReplaceAll(p.FooterText, "{{name}}", name)
}

// Duration is a time.Duration written in the file in the one duration
// grammar (humantime.ParseDuration: "90s", "2m", "1h30m", "2d", "1w"). A value that does not parse is kept, not rejected at
// decode time, so that Validate can report it with its key alongside every
// other problem.
type Duration struct {
	time.Duration
	raw string
	bad bool
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return d.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	d.raw = string(b)
	v, err := humantime.ParseDuration(d.raw)
	if err != nil {
		d.bad = true
		d.Duration = 0
		return nil
	}
	d.bad = false
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Dur builds a Duration, for code that fills a Config by hand.
func Dur(v time.Duration) Duration { return Duration{Duration: v} }

// ErrNotFound is returned by Find and Load when no configuration file
// exists at any of the places looked at.
var ErrNotFound = errors.New("no configuration file found")

// Find returns the configuration file to use: explicit when non-empty,
// else $MAILAGENT_CONFIG, else $XDG_CONFIG_HOME/mailagent/config.toml.
// explicit and $MAILAGENT_CONFIG are returned even when the file does not
// exist (the user asked for it); the default location is returned only
// when it exists, otherwise the error wraps ErrNotFound and names it.
func Find(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p, nil
	}
	p, err := DefaultPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: looked at --config, $%s and %s (fix: create %s, or run `mailagent init`)", ErrNotFound, EnvConfig, p, p)
		}
		return "", fmt.Errorf("config %s: %w", p, err)
	}
	return p, nil
}

// DefaultPath is $XDG_CONFIG_HOME/mailagent/config.toml, with
// XDG_CONFIG_HOME defaulting to ~/.config.
func DefaultPath() (string, error) {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find config dir: %w", err)
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "mailagent", "config.toml"), nil
}

// DefaultStateDir is $XDG_STATE_HOME/mailagent, with XDG_STATE_HOME
// defaulting to ~/.local/state.
func DefaultStateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find state dir: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "mailagent"), nil
}

// Load finds (see Find), reads and parses the configuration. It returns
// the file used even when parsing fails, so the caller can name it.
func Load(path string) (*Config, string, error) {
	file, err := Find(path)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, file, fmt.Errorf("config %s: %w (fix: create it, or run `mailagent init`)", file, err)
		}
		return nil, file, fmt.Errorf("config %s: %w", file, err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, file, fmt.Errorf("config %s: %w", file, err)
	}
	cfg, err := Parse(data, file, fi.Mode().Perm())
	return cfg, file, err
}

// Parse decodes data, applies defaults and validates. file names the source
// in errors and anchors relative paths; mode is the file's permission bits
// (pass 0600 for in-memory data that holds no literal secret concerns).
// On validation failure Parse returns the config together with the joined
// errors, so a caller such as `mailagent doctor` can still inspect it.
func Parse(data []byte, file string, mode fs.FileMode) (*Config, error) {
	cfg := defaults()
	cfg.File = file
	cfg.Mode = mode.Perm()
	md, err := toml.Decode(string(data), cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) && strings.Contains(pe.Message, ErrSecretNotString.Error()) {
			// Not ErrorWithPosition: it would quote the line, secret and all.
			return nil, &FieldError{File: file, Key: fmt.Sprintf("%s (line %d)", pe.LastKey, pe.Position.Line),
				Problem: "a secret must be a quoted string, not a bare number, boolean, date or array",
				Fix:     `put the value in double quotes ("…")`}
		}
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("config %s: %s", displayFile(file), pe.ErrorWithPosition())
		}
		return nil, fmt.Errorf("config %s: %w", displayFile(file), err)
	}
	var errs []error
	errs = append(errs, unknownKeys(file, md)...)
	if err := cfg.applyDefaults(md); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return cfg, nil
}

// OverrideStateDir replaces the state directory (the --state-dir flag). A
// log file that was defaulted follows it.
func (c *Config) OverrideStateDir(dir string) {
	if dir == "" {
		return
	}
	dir = expandHome(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c.StateDir = dir
	if c.logDefaulted {
		c.LogFile = filepath.Join(c.StateDir, "mailagent.log")
	}
}

// Account returns the named account, or the first one when name is "".
func (c *Config) Account(name string) (*Account, bool) {
	for i := range c.Accounts {
		if name == "" || c.Accounts[i].Name == name {
			return &c.Accounts[i], true
		}
	}
	return nil, false
}

// defaults returns a Config with every scalar default set, so that keys
// absent from the file keep them.
func defaults() *Config {
	return &Config{
		LLM: LLM{
			Provider:     "gemini",
			Model:        "gemini-2.5-flash",
			CmdTimeout:   Dur(30 * time.Second),
			Concurrency:  4,
			Timeout:      Dur(60 * time.Second),
			MaxBodyChars: 4000,
		},
		Sync: Sync{
			MaxMessageBytes: 10 << 20,
			PollInterval:    Dur(60 * time.Second),
			InitialLookback: Dur(DefaultInitialLookback),
			RetryInterval:   Dur(DefaultRetryInterval),
			Claims:          ClaimsAuto,
		},
		Store:      Store{Retention: Days{Dur(90 * 24 * time.Hour)}},
		Followup:   Followup{Enabled: true, DefaultAfter: Days{Dur(72 * time.Hour)}, MaxNudges: 2},
		MCP:        MCP{Enabled: true},
		Mailbox:    Mailbox{Archive: ArchiveOff},
		Scheduling: defaultScheduling(),
		Trace:      Trace{Snapshots: true, SnapshotRetention: Days{Dur(DefaultSnapshotRetention)}},
		Policy: Policy{
			Mode:                    ModeReview,
			MinConfidence:           0.8,
			NeverAuto:               append([]string(nil), DefaultNeverAuto...),
			MaxAutoPerContactPerDay: 3,
			MaxAutoPerDay:           20,
			DraftsToIMAP:            true,
			AIFooter:                true,
			FooterText:              DefaultFooter,
			MaxDraftChars:           4000,
			ApprovalDelay:           Dur(DefaultApprovalDelay),
		},
	}
}

// applyDefaults fills what depends on other values or on the environment.
func (c *Config) applyDefaults(md toml.MetaData) error {
	var err error
	if c.StateDir == "" {
		c.StateDir, err = DefaultStateDir()
	} else {
		c.StateDir = c.resolvePath(c.StateDir)
	}
	c.PromptsDir = c.resolvePath(c.PromptsDir)
	c.OwnerProfileFile = c.resolvePath(c.OwnerProfileFile)
	if c.LogFile == "" {
		c.logDefaulted = true
		c.LogFile = filepath.Join(c.StateDir, "mailagent.log")
	} else {
		c.LogFile = c.resolvePath(c.LogFile)
	}
	if c.LLM.Provider == ProviderGemini && !c.LLM.HasKeySource() {
		c.LLM.APIKeyEnv = "GEMINI_API_KEY"
	}
	if c.LLM.Provider != ProviderGemini && !md.IsDefined("llm", "model") {
		c.LLM.Model = "" // the Gemini default names no model another server has
	}
	if !md.IsDefined("llm", "cmd_timeout") && c.LLM.CmdTimeout.Duration == 0 {
		c.LLM.CmdTimeout = Dur(30 * time.Second)
	}
	for i := range c.Accounts {
		a := &c.Accounts[i]
		a.Email = strings.TrimSpace(a.Email)
		if a.DisplayName == "" {
			a.DisplayName = a.Name
		}
		if a.Mailbox == "" {
			a.Mailbox = "INBOX"
		}
		if !a.SMTP.hasSource() && a.SMTP.Username == "" {
			inheritSecret(&a.SMTP, a.IMAP)
		}
		a.IMAP.fill(a, "imap")
		a.SMTP.fill(a, "smtp")
		a.IMAP.TLSCAFile = c.resolvePath(a.IMAP.TLSCAFile)
		a.SMTP.TLSCAFile = c.resolvePath(a.SMTP.TLSCAFile)
		a.Calendar.fill(a, c)
	}
	return err
}

// inheritSecret copies the IMAP login to SMTP, the common case of one
// password for both.
func inheritSecret(dst *Endpoint, src Endpoint) {
	dst.inherited = true
	dst.Username = src.Username
	dst.Password = src.Password
	dst.PasswordCmd = src.PasswordCmd
	dst.PasswordEnv = src.PasswordEnv
	dst.OAuth2TokenCmd = src.OAuth2TokenCmd
	if src.PasswordKeyring {
		dst.PasswordKeyring = true
		dst.kind = "imap" // the keyring entry is the IMAP one
	}
	if dst.CmdTimeout.Duration == 0 && !dst.CmdTimeout.bad {
		dst.CmdTimeout = src.CmdTimeout
	}
}

func (e *Endpoint) fill(a *Account, kind string) {
	e.account = a.Name
	if e.kind == "" {
		e.kind = kind
	}
	e.Security = strings.ToLower(strings.TrimSpace(e.Security))
	if e.Security == "" {
		e.Security = SecurityTLS
	}
	if e.Port == 0 {
		e.Port = DefaultPort(kind, e.Security)
	}
	if e.Username == "" {
		e.Username = a.Email
	}
	if e.CmdTimeout.Duration == 0 && !e.CmdTimeout.bad {
		e.CmdTimeout = Dur(30 * time.Second)
	}
}

// DefaultPort is the usual port of an IMAP or SMTP server ("imap"|"smtp")
// with the given security.
func DefaultPort(kind, security string) int {
	switch kind + "/" + security {
	case "imap/tls":
		return 993
	case "imap/starttls", "imap/insecure":
		return 143
	case "smtp/tls":
		return 465
	case "smtp/starttls":
		return 587
	case "smtp/insecure":
		return 25
	}
	return 0
}

// resolvePath expands "~/" and anchors relative paths at the file's dir.
func (c *Config) resolvePath(p string) string {
	if p == "" {
		return ""
	}
	p = expandHome(p)
	if !filepath.IsAbs(p) && c.File != "" {
		p = filepath.Join(filepath.Dir(c.File), p)
	}
	return filepath.Clean(p)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func displayFile(file string) string {
	if file == "" {
		return "(in memory)"
	}
	return file
}
