package root

import "github.com/spf13/cobra"

// commandExamples is the Example text of each command, keyed by its path
// without "mailagent ". They live in one table, applied to the tree in
// newRootCmd, so that `--help`, the man pages and the test that every
// command has examples all read the same text; a command that already
// sets its own Example (init) keeps it.
var commandExamples = map[string]string{
	"replay": `  mailagent replay --since 90d              # score the agent on the last 90 days of your mail
  mailagent replay --drafts --limit 500 --html report.html
  mailagent replay --policy strict.toml --json | jq '.thresholds'`,
	"digest": `  mailagent digest                          # what the agent did in the last 24 hours
  mailagent digest --since 7d --json
  mailagent digest --send                   # mail it to yourself`,
	"triage": `  mailagent triage --dry-run --since 7d     # what it would do with last week's mail
  mailagent triage --unseen --limit 50      # classify the 50 newest unread messages
  mailagent triage --json | jq -r .route   # one JSON object per line`,
	"explain": `  mailagent explain '<CAF=abc123@mail.example.com>'   # by Message-ID
  mailagent explain tr_3f9a1c2e5b7d9e01                           # by trace id (from triage, queue show)
  mailagent explain fu_3f9a1c2e5b7d9e01                           # a followup: its state, deadline and message
  mailagent explain mem_001a2095f9736e35                          # a memory record and what it was learned from
  mailagent explain tr_3f9a1c2e5b7d9e01 --steps                   # each step's input and output (prompt, raw answer, gates)
  mailagent explain tr_3f9a1c2e5b7d9e01 --json`,
	"watch": `  mailagent watch                    # every account, until Ctrl-C
  mailagent watch --account work
  mailagent watch --once             # one sync, then exit (cron)`,
	"doctor": `  mailagent doctor
  mailagent doctor --no-model        # skip the model call
  mailagent doctor --account work --json`,
	"decisions": `  mailagent decisions                 # the last 7 days
  mailagent decisions --since 24h --json | jq '.[] | select(.decision == "auto_send") | .reply.to'`,
	"queue": `  mailagent queue list
  mailagent queue show ID
  mailagent queue approve ID --yes`,
	"queue list": `  mailagent queue list
  mailagent queue list --all --json | jq '.[] | select(.status == "pending") | .id'`,
	"queue show": `  mailagent queue show ID          # ids from: mailagent queue list (Tab completes them)`,
	"queue approve": `  mailagent queue approve ID       # asks y/N for a recipient you never wrote to
  mailagent queue approve ID --yes # in a script`,
	"queue reject": `  mailagent queue reject ID --reason "already answered by phone"`,
	"queue edit": `  EDITOR=vim mailagent queue edit ID   # else $VISUAL, else vi
  mailagent queue edit ID --text "Thursday works. Ada"`,
	"queue snooze": `  mailagent queue snooze ID --for 90m
  mailagent queue snooze ID --for tomorrow   # 08:00, as in the review TUI`,
	"queue unsnooze":   `  mailagent queue unsnooze ID   # back in the queue now`,
	"queue regenerate": `  mailagent queue regenerate ID --instruction "shorter, and decline politely"`,
	"queue retry": `  mailagent queue retry tr_3f9a1c2e5b7d9e01             # a trace id (Tab completes those that need review)
  mailagent queue retry '<CAF=abc123@mail.example.com>'  # or the Message-ID`,
	"queue rsvp": `  mailagent queue rsvp ID accept      # iTIP REPLY to the organizer; the event on a writable calendar
  mailagent queue rsvp ID tentative   # or decline; undo within policy.approval_delay: mailagent queue cancel ID`,
	"queue cancel": `  mailagent queue cancel OUTBOX-ID   # within policy.send_delay of an auto-send`,
	"followups": `  mailagent followups                          # threads waiting for you or for them, with age and deadline
  mailagent followups --state needs-reply --from example.org --since 7d
  mailagent followups --recent 2d --json       # recently replied`,
	"calendar": `  mailagent calendar free                  # free slots in the next 7 days`,
	"calendar free": `  mailagent calendar free                  # the next 7 days, as the agent would offer them
  mailagent calendar free --days 14 --account work
  mailagent calendar free --json | jq '.[0].start'`,
	"followups done":   `  mailagent followups done fu_3f9a1c2e5b7d9e01`,
	"followups snooze": `  mailagent followups snooze fu_3f9a1c2e5b7d9e01 --for 2d`,
	"followups nudge":  `  mailagent followups nudge fu_3f9a1c2e5b7d9e01   # then: mailagent queue show ID`,
	"schedule": `  mailagent schedule list                     # the watcher's timed jobs, the next due first, and why
  mailagent schedule list --all --json`,
	"schedule list":     `  mailagent schedule list --json | jq '.[] | select(.last_error != null)'`,
	"followups replies": `  mailagent followups replies '<CAF=abc123@mail.example.com>' --json`,
	"unsubscribe": `  mailagent unsubscribe '<CAF=abc123@news.example.com>'   # shows what it will send, asks y/N
  mailagent unsubscribe tr_3f9a1c2e5b7d9e01 --yes --json`,
	"contacts": `  mailagent contacts list
  mailagent contacts show grace@hopper.example`,
	"contacts list": `  mailagent contacts list --account work --json`,
	"contacts show": `  mailagent contacts show grace@hopper.example --json`,
	"contacts forget": `  mailagent contacts forget spammer@example.net         # asks y/N at a terminal
  mailagent contacts forget spammer@example.net --yes   # in a script`,
	"memory": `  mailagent memory list --contact carol@example.org
  mailagent memory add --contact carol@example.org --kind preference "answer in German"`,
	"memory list":   `  mailagent memory list --contact carol@example.org --json`,
	"memory show":   `  mailagent memory show mem_0190a1b2c3d4e5f60718293a4b`,
	"memory forget": `  mailagent memory forget mem_0190a1b2c3d4e5f60718293a4b`,
	"memory add": `  mailagent memory add --contact carol@example.org --kind preference "answer in German"
  mailagent memory add --contact @acme.example --kind rule "never promise delivery dates"
  mailagent memory add --kind temporary --expires 2027-03-07 "I am away until 7 March; say so"
  mailagent memory add --kind style "signs off with 'Best, Ada'"`,
	"memory edit":   `  mailagent memory edit mem_0190a1b2c3d4e5f60718293a4b "answer in German, formally"`,
	"contacts note": `  mailagent contacts note grace@hopper.example "prefers short answers; call her Grace"`,
	"mcp": `  mailagent mcp                     # started by an AI client (see README: MCP)
  npx @modelcontextprotocol/inspector --cli mailagent mcp --method tools/list`,
	"status": `  mailagent status
  mailagent status --json | jq .watcher`,
	"review": `  mailagent review                  # in a terminal; scripts use: mailagent queue list`,
	"demo": `  mailagent demo                    # the TUI on a seeded mailbox
  mailagent demo --no-tui           # print what it did as a table
  mailagent demo --no-tui --json`,
	"version": `  mailagent version
  mailagent --version`,
	"completion": `  source <(mailagent completion bash)
  mailagent completion zsh > "${fpath[1]}/_mailagent"
  mailagent completion fish > ~/.config/fish/completions/mailagent.fish`,
	"completion bash":       `  source <(mailagent completion bash)`,
	"completion zsh":        `  mailagent completion zsh > "${fpath[1]}/_mailagent"`,
	"completion fish":       `  mailagent completion fish > ~/.config/fish/completions/mailagent.fish`,
	"completion powershell": `  mailagent completion powershell | Out-String | Invoke-Expression`,
	"help":                  `  mailagent help queue approve`,
}

// applyExamples sets Example from commandExamples on every command that
// has none.
func applyExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Example == "" {
			c.Example = commandExamples[CommandKey(c)]
		}
	}
	walk(root)
}

// CommandKey is c's path without the root's name: "queue show".
func CommandKey(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	if k := CommandKey(c.Parent()); k != "" {
		return k + " " + c.Name()
	}
	return c.Name()
}

// ExampleKeys are the commands (as CommandKey names them) the examples
// table has an example for; a test checks each names a command.
func ExampleKeys() []string {
	keys := make([]string, 0, len(commandExamples))
	for k := range commandExamples {
		keys = append(keys, k)
	}
	return keys
}
