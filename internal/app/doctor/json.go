package doctor

import (
	"strings"

	"github.com/mailagent/mailagent/internal/app/view"
)

// checkIDs maps the human label of a per-account check (after "imap ACCOUNT: "
// or "smtp ACCOUNT: ") to its fixed id suffix.
var checkIDs = map[string]string{
	"secret":            "secret",
	"connect and login": "login",
	"connect and AUTH":  "login",
	"capabilities":      "capabilities",
	"authserv_id":       "authserv_id",
	"Drafts folder":     "drafts_folder",
	"Sent folder":       "sent_folder",
}

// fixedCheckIDs maps the labels of the account-free checks to their ids.
var fixedCheckIDs = map[string]string{
	"config":                              "config",
	"model: api key":                      "model.api_key",
	"model: structured output round trip": "model.round_trip",
	"state dir":                           "state.dir",
	"state database":                      "state.database",
}

// toCheckJSON turns a doctor check into its JSON form: the label's account
// and mailbox move to fields of their own, leaving a fixed id.
func toCheckJSON(c Check) view.CheckJSON {
	j := view.CheckJSON{Check: c.Name, Status: c.Status, Detail: view.OptStr(c.Detail), Fix: view.OptStr(c.Fix),
		Account: view.OptStr(c.Account), Mailbox: view.OptStr(c.Mailbox)}
	if id, ok := fixedCheckIDs[c.Name]; ok {
		j.Check = id
		return j
	}
	proto, rest, ok := strings.Cut(c.Name, " ")
	if !ok || (proto != "imap" && proto != "smtp") || c.Account == "" {
		return j
	}
	label, ok := strings.CutPrefix(rest, c.Account+": ")
	if !ok {
		return j
	}
	if box, ok := strings.CutPrefix(label, "mailbox "); ok {
		j.Check = proto + ".mailbox"
		j.Mailbox = &box
		return j
	}
	if id, ok := checkIDs[label]; ok {
		j.Check = proto + "." + id
		if strings.HasSuffix(id, "_folder") && c.Status != "fail" {
			j.Mailbox = view.OptStr(strings.TrimPrefix(c.Detail, "created ")) // the folder found (or made by --fix)
		}
	} else {
		j.Check = proto + "." + strings.ReplaceAll(strings.ToLower(label), " ", "_")
	}
	return j
}

// ToChecksJSON is the --json form of a report: one view.CheckJSON per
// check, in order.
func ToChecksJSON(cs []Check) []view.CheckJSON {
	out := make([]view.CheckJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, toCheckJSON(c))
	}
	return out
}
