package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
)

// doctorPushWait is how long doctor waits for the push probe's EXISTS: a
// server that pushes answers in well under a second, one that polls
// (stock Courier-IMAP, Cyrus without idled) only after up to 60 s.
const doctorPushWait = 10 * time.Second

// slowPushProbe is the probe latency doctor warns about: pushing servers
// answer in 0.1–1.5 s.
const slowPushProbe = 2 * time.Second

// push measures how soon new mail reaches a client in IDLE
// (imapsync.Client.ProbePush, on a scratch folder it deletes) and names
// the server and its fix when the server only polls.
func (d *doctor) push(ctx context.Context, c *imapsync.Client, acct *config.Account, opts imapsync.Options) {
	name := "imap " + acct.Name + ": push"
	if !c.Has("IDLE") {
		return // the capabilities check says watch polls
	}
	pctx, cancel := context.WithTimeout(ctx, doctorPushWait+20*time.Second)
	defer cancel()
	server := c.ServerName(pctx)
	dial := func(ctx context.Context) (*imapsync.Client, error) { return imapsync.Dial(ctx, opts) }
	p, err := c.ProbePush(pctx, dial, doctorPushWait)
	if err != nil {
		d.warn(name, "not measured: "+err.Error(), "nothing needed; once watch runs, `mailagent status` shows how soon new mail reaches it")
		return
	}
	who := "the server"
	if server != "" {
		who += " (" + server + ")"
	}
	if p.Arrived && p.Latency < slowPushProbe {
		detail := "new mail reached IDLE in " + humantime.Latency(p.Latency)
		if server != "" {
			detail += " (" + server + ")"
		}
		d.pass(name, detail)
		return
	}
	seen := fmt.Sprintf("new mail reached IDLE only after %s", humantime.Latency(p.Latency))
	if !p.Arrived {
		seen = fmt.Sprintf("new mail did not reach IDLE within %s", humantime.Latency(p.Latency))
	}
	d.warn(name, fmt.Sprintf("%s: %s tells IDLE clients of new mail only when it polls%s", seen, who, pollEvery(server)), pollingFix(server))
}

// pollEvery says how often a known polling server polls with its stock
// settings.
func pollEvery(server string) string {
	s := strings.ToLower(server)
	if strings.Contains(s, "courier") || strings.Contains(s, "cyrus") {
		return " (every ~60 s with stock settings)"
	}
	return ""
}

// pollingFix is the server setting that makes new mail reach IDLE at
// once, by server software (imapsync.Client.ServerName).
func pollingFix(server string) string {
	s := strings.ToLower(server)
	switch {
	case strings.Contains(s, "courier"):
		return "set IMAP_ENHANCEDIDLE=1 in /etc/courier/imapd (with FAM or gamin installed) and restart courier-imap: new mail then reaches IDLE at once"
	case strings.Contains(s, "cyrus"):
		return "enable idled: uncomment `idled cmd=\"idled\"` in the DAEMON section of /etc/cyrus.conf and restart cyrus-imapd: new mail then reaches IDLE at once"
	case strings.Contains(s, "dovecot"):
		return "Dovecot pushes through inotify: keep the mail on a local file system, raise fs.inotify.max_user_instances/max_user_watches if they run out, and lower mailbox_idle_check_interval (default 30s)"
	}
	return "ask the server's admin to make IDLE push new mail (Courier-IMAP: IMAP_ENHANCEDIDLE=1; Cyrus: idled in cyrus.conf); until then new mail waits for the server's poll"
}
