package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
)

// Finding accounts.authserv_id: the authserv-id the owner's own server
// writes at the top of the Authentication-Results of every delivered
// message. Only headers carrying it are trusted to authenticate a sender.

// presetAuthservIDs are the ids of the providers init has presets for.
var presetAuthservIDs = map[string]string{
	"gmail":    "mx.google.com",
	"fastmail": "*.messagingengine.com", // mx1…mx6.messagingengine.com
	"icloud":   "*.icloud.com",          // one header per method: dmarc.icloud.com, dkim-verifier.icloud.com, …
	"outlook":  agent.MicrosoftAuthservID,
}

// PresetAuthservID is the id for an init source such as "preset:gmail".
func PresetAuthservID(source string) string {
	id, _ := strings.CutPrefix(source, "preset:")
	return presetAuthservIDs[id]
}

// authservScan is how many of the newest messages are read.
const authservScan = 20

// AuthservDiscovery is what the newest messages of a mailbox say about
// the owner's server.
type AuthservDiscovery struct {
	Looked, WithAR int
	// Tops counts the id of the topmost header, per message.
	Tops map[string]int
	// Suggest is the authserv_id to configure; "" when the mail shows none
	// or the ids disagree.
	Suggest string
	// Mismatch counts messages whose topmost id the configured value does
	// not match (0 when nothing is configured).
	Mismatch int
}

// DiscoverAuthserv reads the headers of the newest messages in mailbox
// (read-only, BODY.PEEK) and proposes an authserv_id: the topmost id when
// every message agrees, "*.domain" when the ids differ but share one
// organisational domain (a provider naming each receiving host, or one
// header per method as iCloud does).
func DiscoverAuthserv(ctx context.Context, c *imapsync.Client, mailbox, configured string) (AuthservDiscovery, error) {
	d := AuthservDiscovery{Tops: map[string]int{}}
	if _, err := c.Select(ctx, mailbox, true); err != nil {
		return d, err
	}
	uids, err := c.Search(ctx, imapsync.Criteria{})
	if err != nil {
		return d, err
	}
	if len(uids) > authservScan {
		uids = uids[len(uids)-authservScan:]
	}
	block := map[string]bool{}
	err = c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: 256 << 10}, func(r imapsync.RawMessage) error {
		d.Looked++
		ids := agent.AuthResultsIDs(mail.Parse(r.Raw))
		if len(ids) == 0 {
			return nil
		}
		d.WithAR++
		d.Tops[ids[0]]++
		if configured != "" && !agent.AuthservMatches(configured, ids[0]) {
			d.Mismatch++
		}
		// The top block: the run of ids under the topmost one's domain.
		org := orgDomain(ids[0])
		for _, id := range ids {
			if orgDomain(id) != org {
				break
			}
			block[id] = true
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	d.Suggest = SuggestAuthserv(slices.Sorted(maps.Keys(block)))
	return d, nil
}

// SuggestAuthserv turns the ids of the top blocks into one authserv_id.
func SuggestAuthserv(ids []string) string {
	switch {
	case len(ids) == 0:
		return ""
	case len(ids) == 1:
		return ids[0]
	}
	org := orgDomain(ids[0])
	for _, id := range ids {
		if orgDomain(id) != org || org == "" {
			return ""
		}
	}
	return "*." + org
}

func orgDomain(host string) string {
	d, err := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(host))
	if err != nil {
		return ""
	}
	return d
}

// topList renders Tops as "id (n messages), …", most frequent first.
func (d AuthservDiscovery) topList() string {
	ids := slices.SortedFunc(maps.Keys(d.Tops), func(a, b string) int { return d.Tops[b] - d.Tops[a] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s (%d)", id, d.Tops[id])
	}
	return strings.Join(parts, ", ")
}

// authserv is doctor's check of accounts.authserv_id against the mail in
// the account's mailbox.
func (d *doctor) authserv(ctx context.Context, c *imapsync.Client, acct *config.Account) {
	name := "imap " + acct.Name + ": authserv_id"
	got, err := DiscoverAuthserv(ctx, c, acct.Mailbox, acct.AuthservID)
	switch {
	case err != nil:
		d.warn(name, "could not read recent mail: "+err.Error(), "set accounts.authserv_id to the id at the top of the Authentication-Results headers of mail in your inbox")
	case acct.AuthservID == "" && got.Suggest != "":
		d.warn(name, fmt.Sprintf("not set: no sender can be authenticated, so nothing is sent automatically; %d of the newest %d messages carry Authentication-Results from %s", got.WithAR, got.Looked, got.topList()),
			fmt.Sprintf("add authserv_id = %q to [[accounts]] %q", got.Suggest, acct.Name))
	case acct.AuthservID == "" && got.Looked == 0:
		d.warn(name, "not set, and the mailbox is empty: there is no mail to learn it from yet",
			"run `mailagent doctor` again when mail has arrived, or ask your provider which authserv-id its servers write; without it nothing is sent automatically")
	case got.WithAR == 0 && got.Looked == 0 && acct.AuthservID != "":
		d.warn(name, fmt.Sprintf("%s is set; the mailbox is empty, so there is no mail to check it against yet", acct.AuthservID), "check again when mail has arrived")
	case acct.AuthservID == "":
		d.warn(name, fmt.Sprintf("not set, and none of the newest %d messages show a consistent Authentication-Results id (%s)", got.Looked, orNothing(got.topList())),
			"ask your provider which authserv-id its servers write, and set accounts.authserv_id; without it nothing is sent automatically")
	case got.WithAR == 0:
		d.warn(name, fmt.Sprintf("%s is set, but none of the newest %d messages carry Authentication-Results", acct.AuthservID, got.Looked), "check again when mail has arrived")
	case got.Mismatch > 0:
		fix := "set accounts.authserv_id to the id your server writes"
		if got.Suggest != "" {
			fix = fmt.Sprintf("set authserv_id = %q in [[accounts]] %q", got.Suggest, acct.Name)
		}
		d.fail(name, fmt.Errorf("%s does not match the topmost Authentication-Results of %d of the newest %d messages (%s): their senders cannot be authenticated",
			acct.AuthservID, got.Mismatch, got.WithAR, got.topList()), fix)
	default:
		d.pass(name, fmt.Sprintf("%s matches the topmost Authentication-Results of the newest %d messages", acct.AuthservID, got.WithAR))
	}
}

func orNothing(s string) string {
	if s == "" {
		return "no Authentication-Results at all"
	}
	return s
}

// initAuthserv fills s.AuthservID before the config is written: from the
// provider preset when there is one, otherwise (when login is set) from
// the newest mail, logging in with the settings the wizard gathered. A
