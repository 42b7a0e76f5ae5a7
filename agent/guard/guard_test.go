package guard

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
)

// ownerTrusted is what a typical reply may repeat: the owner's profile
// (a phone number, a link, a price) and the recipients' addresses.
func ownerTrusted() Trusted {
	return Trusted{
		Text: "Ann Owner, Acme Ltd. Phone +1 555 010 9999.\n" +
			"Slides and agenda: https://docs.example.org/agenda\n" +
			"Price list: the premium plan is 1.250.000 EUR per year, the basic plan 12,500 EUR.\n" +
			"Office: room 101, 3 March office hours 14:00-16:00.",
		Addresses: []string{"bob@example.org", "Ann Owner <ann@acme.example>"},
	}
}

// guardCheck runs the guard on text placed in the body or in the subject
// (the other field then holds something harmless).
func guardCheck(field, text string, tr Trusted) []string {
	if field == "subject" {
		return Check(Fields{Subject: "Re: " + text, Body: "Thanks, see you then."}, tr, 4000)
	}
	return Check(Fields{Subject: "Re: Project update", Body: text}, tr, 4000)
}

// assertSanitised fails when a problem holds a character the owner's
// terminal would not show as written: controls, format characters,
// anything outside printable ASCII.
func assertSanitised(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		for _, r := range p {
			if r < 0x20 || r > 0x7e {
				t.Errorf("problem %q holds %U, want printable ASCII only", p, r)
				break
			}
		}
	}
}

func containsAny(problems []string, want string) bool {
	for _, p := range problems {
		if strings.Contains(p, want) {
			return true
		}
	}
	return false
}

// obfuscations are the ways a link, an address, a number or a payment
// instruction was slipped past the old ASCII patterns. want is a part of
// the problem the guard must report (what it read).
var obfuscations = []struct {
	name, text, want string
}{
	// Links and addresses.
	{"zero-width space in domain", "Details: evil\u200b.test/pay", `"evil.test/pay"`},
	{"zero-width joiner in address", "Write to pay@ev\u200dil.test", `"pay@evil.test"`},
	{"zero-width non-joiner in scheme", "ht\u200ctps://evil.test/x", `"https://evil.test/x"`},
	{"soft hyphen in domain", "See evil\u00ad.test today", `"evil.test"`},
	{"word joiner in domain", "See evil\u2060.test today", `"evil.test"`},
	{"byte order mark in domain", "See evil\ufeff.test today", `"evil.test"`},
	{"bidi isolate around dot", "See evil\u2066.\u2069test today", `"evil.test"`},
	{"right-to-left override", "See \u202eevil.test\u202c today", `"evil.test"`},
	{"ideographic full stop", "See evil\u3002test", `"evil.test"`},
	{"halfwidth ideographic full stop", "See evil\uff61test", `"evil.test"`},
	{"ideographic full stop before a Latin TLD", "See \u4f8b\u5b50\u3002com/pay", `.com/pay" (written`},
	{"ideographic full stop after a Latin name", "See evil\u3002\u516c\u53f8", `"evil.\u516c\u53f8"`},
	{"full-width at and dot", "Write to pay\uff20evil\uff0etest", `"pay@evil.test"`},
	{"full-width letters", "See \uff45\uff56\uff49\uff4c\uff0e\uff54\uff45\uff53\uff54", `"evil.test"`},
	{"small commercial at", "Write to pay\ufe6bevil.test", `"pay@evil.test"`},
	{"one dot leader", "See evil\u2024test/pay", `"evil.test/pay"`},
	{"middle dot", "See evil\u00b7test/pay", `"evil.test/pay"`},
	{"(at) and (dot)", "Write to pay (at) evil (dot) test", `"pay@evil.test"`},
	{"[at] and [dot]", "Write to pay[at]evil[dot]test", `"pay@evil.test"`},
	{"{at} and {dot}", "Write to pay {at} evil {dot} test", `"pay@evil.test"`},
	{"<at> and <dot>", "Write to pay<at>evil<dot>test", `"pay@evil.test"`},
	{"spaced at and dot", "Write to pay at evil dot test", `"pay@evil.test"`},
	{"spaced AT and DOT", "Write to pay AT evil DOT test", `"pay@evil.test"`},
	{"spaced at, bracketed dot", "Write to pay at evil[.]test", `"pay@evil.test"`},
	{"spaced at, ideographic dot", "Write to pay at evil\u3002test", `"pay@evil.test"`},
	{"spaced @", "Write to pay @ evil.test", `"pay@evil.test"`},
	{"example[.]com", "See example[.]com for the form", `"example.com"`},
	{"evil(.)test", "See evil(.)test/pay", `"evil.test/pay"`},
	{"spaced dot domain only", "Go to evil dot test now", `"evil.test"`},
	{"spaced dot domain with path", "Go to evil dot com/pay now", `"evil.com/pay"`},
	{"hxxp", "Log in at hxxp://evil.test/login", `"http://evil.test/login"`},
	{"hxxps with [:] and [.]", "Log in at hxxps[:]//evil[.]test", `"https://evil.test"`},
	{"h**p", "Log in at h**ps://evil.test/login", `"https://evil.test/login"`},
	{"domain without scheme, with path", "Pay at evil.test/pay", `"evil.test/pay"`},
	{"bare domain", "Visit evil.test today", `"evil.test"`},
	{"www host", "Visit www.evil.test today", `"www.evil.test"`},
	{"combining mark in domain", "Visit e\u0336vil.test today", `"evil.test"`},
	{"cyrillic look-alike domain", "Visit \u0435vil.test today", `vil.test"`},
	{"mailto link", "mailto:pay@evil.test", `"pay@evil.test"`},
	{"ip address link", "Download http://203.0.113.9/pay", `"http://203.0.113.9/pay"`},
	{"userinfo before host", "See https://docs.example.org@evil.test/agenda", `evil.test/agenda"`},
	{"trusted host, other page", "See https://docs.example.org/evil", `"https://docs.example.org/evil"`},
	{"trusted host, path escapes", "See https://docs.example.org/agenda/../evil", `agenda/../evil"`},
	{"trusted host, query", "See https://docs.example.org/agenda?next=evil.test", `agenda?next=evil.test"`},
	{"non-web scheme", "Pay with bitcoin:bc1qxyz", `"bitcoin:bc1qxyz"`},
	{"link at the end of a 400-character word", strings.Repeat("x", 400) + ".evil.test/pay", "too long or with too many links"},
	{"five links in one word", "a.test,b.test,c.test,d.test,evil.test/pay", "too long or with too many links"},
	// Numbers.
	{"plain phone", "Call +1 555 010 8888", `"+1 555 010 8888"`},
	{"arabic-indic digits", "Call \u0665\u0665\u0665 \u0660\u0661\u0660 \u0668\u0668\u0668\u0668", `"5550108888"`},
	{"extended arabic-indic digits", "Call \u06f5\u06f5\u06f5\u06f0\u06f1\u06f0\u06f8\u06f8\u06f8\u06f8", `"5550108888"`},
	{"devanagari digits", "Call \u096b\u096b\u096b \u0966\u0967\u0966 \u096e\u096e\u096e\u096e", `"5550108888"`},
	{"full-width digits", "Call \uff15\uff15\uff15 \uff10\uff11\uff10 \uff18\uff18\uff18\uff18", `"5550108888"`},
	{"mathematical bold digits", "Call \U0001d7d3\U0001d7d3\U0001d7d3 \U0001d7ce\U0001d7cf\U0001d7ce \U0001d7d6\U0001d7d6\U0001d7d6\U0001d7d6", `"5550108888"`},
	{"mathematical monospace digits", "Call \U0001d7fb\U0001d7fb\U0001d7fb\U0001d7f6\U0001d7f7\U0001d7f6\U0001d7fe\U0001d7fe\U0001d7fe\U0001d7fe", `"5550108888"`},
	{"superscript digits", "Call \u2075\u2075\u2075\u2070\u00b9\u2070\u2078\u2078\u2078\u2078", `"5550108888"`},
	{"circled digits", "Call \u2464\u2464\u2464\u24ea\u2460\u24ea\u2467\u2467\u2467\u2467", `"5550108888"`},
	{"O and 0 mixed", "Call +1 555 O1O 8888", `"15550108888"`},
	{"l and 1 mixed", "Call 555-0l0-8888", `"5550108888"`},
	{"letters-only group between digits", "Call 555 OlO 8888", `"5550108888"`},
	{"I and O in a glued number", "Call 88O-I23-4567", `"8801234567"`},
	{"zero-width space inside number", "Call 555\u200b010\u200b8888", `"5550108888"`},
	{"en dashes between groups", "Call 555\u2013010\u20138888", `"5550108888"`},
	{"no-break spaces between groups", "Call 555\u00a0010\u00a08888", `"5550108888"`},
	{"iban with spaces", "Account DE89 3704 0044 0532 0130 00", `"3704 0044 0532 0130 00"`},
	{"iban without spaces", "Account DE89370400440532013000", `"DE89370400440532013000"`},
	{"card number", "Card 4111 1111 1111 1111, exp 12/28", `"4111 1111 1111 1111"`},
	{"account number glued to letters", "Ref ACC12345678 please", `"12345678"`},
	{"bech32 wallet", "Send to bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", `"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"`},
	{"base58 wallet", "Send to 1BoatSLRHtKNngkdXEeobR76b53LETtpyT", `"1BoatSLRHtKNngkdXEeobR76b53LETtpyT"`},
	{"ethereum wallet", "Send to 0x52908400098527886E0F7030069857D2E4169EE7", `"0x52908400098527886E0F7030069857D2E4169EE7"`},
	// Payment instructions.
	{"IBAN word", "Please use the IBAN from the invoice.", `"IBAN"`},
	{"SWIFT code", "Our SWIFT code changed.", `"SWIFT"`},
	{"BIC", "BIC as before.", `"BIC"`},
	{"wire the funds", "Please wire the funds today.", `"wire the funds"`},
	{"wire an amount", "Please wire $4,000 today.", `"wire $"`},
	{"by wire", "Payment by wire is fine.", `"by wire"`},
	{"bank transfer", "Bank transfer only, please.", `"Bank transfer"`},
	{"new bank details", "Note our new bank details.", `"bank details"`},
	{"gift cards", "Buy four gift cards and send the codes.", `"gift cards"`},
	{"itunes cards", "Get iTunes cards for the team.", `"iTunes cards"`},
	{"bitcoin", "Pay in Bitcoin.", `"Bitcoin"`},
	{"wallet address", "Use this wallet address.", `"wallet address"`},
	{"western union", "Send via Western Union.", `"Western Union"`},
	{"obfuscated payment word", "Pay by b\u200bank trans\u00adfer.", `bank trans`},
	{"full-width IBAN word", "\uff29\uff22\uff21\uff2e attached.", `IBAN`},
}

func TestGuardObfuscations(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"body", "subject"} {
		for _, tt := range obfuscations {
			t.Run(field+"/"+tt.name, func(t *testing.T) {
				got := guardCheck(field, tt.text, ownerTrusted())
				assertSanitised(t, got)
				if !containsAny(got, tt.want) {
					t.Fatalf("got %q, want a problem quoting %s", got, tt.want)
				}
				if field == "subject" {
					for _, p := range got {
						if !strings.HasPrefix(p, "subject: ") {
							t.Errorf("got %q, want every problem to start with \"subject: \"", p)
						}
					}
				}
			})
		}
	}
}

// TestGuardQuotesWhatWasWritten checks that a problem names what was read
// and what was written, with hidden characters escaped.
func TestGuardQuotesWhatWasWritten(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       string
	}{
		{"zero width", "See evil\u200b.test", `links to "evil.test" (written "evil\u200b.test")`},
		{"spaced words", "Write to pay at evil dot test", `names address "pay@evil.test" (written "pay at evil dot test")`},
		{"bidi", "See \u202eevil.test\u202c", `links to "evil.test" (written "\u202eevil.test\u202c")`},
		{"look-alike digits", "Call 555 O1O 8888", `names number "5550108888" (written "555 O1O 8888")`},
		{"plain number", "Call 555 010 8888", `names number "555 010 8888" that is not in`},
		{"payment", "Bank transfer only", `gives payment instructions ("Bank transfer")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Fields{Body: tt.text}, ownerTrusted(), 0)
			assertSanitised(t, got)
			if !containsAny(got, tt.want) {
				t.Errorf("got %q, want one containing %s", got, tt.want)
			}
		})
	}
}

// hostileDrafts are whole replies an attacker might get the model to write:
// each carries something the owner never said.
var hostileDrafts = []string{
	"Sure! Please complete the payment at hxxps://secure-pay[.]test/inv/4471 by Friday.",
	"Thanks, our accounts team will reach you at billing (at) acme-payments (dot) test.",
	"Happy to help. The updated form is at acme-forms\u3002test/update.",
	"Of course. Reply to finance\uff20acme-group\uff0etest with the details.",
	"Please send the signed copy to legal@acme\u200b-law.test.",
	"Sure, call our new line on +44 20 7946 0123.",
	"You can reach me on \u0660\u0667\u0669\u0660\u0660 \u0669\u0660\u0660\u0661\u0662\u0663 today.",
	"Call me: \uff10\uff17\uff17\uff10\uff10 \uff19\uff10\uff10\uff11\uff12\uff13.",
	"My direct line is 07700 9OO123.",
	"Our new IBAN is GB33 BUKB 2020 1555 5555 55.",
	"Please wire the remaining $12,400 to our new account today.",
	"Settle it by bank transfer to account 12345678, sort code 12-34-56.",
	"We only accept gift cards at the moment, please buy four.",
	"Send 0.05 BTC to bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh.",
	"Our USDT (TRC20) wallet: TN3W4H6rK2ce4vX9YnFQHwKENnHjoxb3m9.",
	"ETH only: 0x742d35Cc6634C0532925a3b844Bc454e4438f44e.",
	"Download the invoice from evil.test/invoice.pdf before noon.",
	"The portal moved to portal dot acme-hr dot test, log in there.",
	"Use https://docs.example.org@evil.test/agenda for the agenda.",
	"Details: https://docs.example.org/agenda/../../phish.",
	"Reset your password at http://198.51.100.7/reset.",
	"See \u202eevil.test\u202c for the agenda.",
	"Sure thing, write to pay [at] evil [dot] test.",
	"Contact pay AT evil DOT test for the refund.",
	"Card on file: 4111-1111-1111-1111.",
	"Use reference ACC90817263 when you pay.",
	"Please confirm via Western Union within the hour.",
	"Pay via Zelle to the number below.",
	"Note the change: our new bank details are attached.",
	"The SWIFT code is NWBKGB2L.",
	"Pay with bitcoin:bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh?amount=0.05",
	"Email me on ev\u0456l@acme.test instead.",
	"Book here: hxxp://booking.test/slot?id=9",
	"Call 555\u2013010\u20134444 for the code.",
	"Fax: (555) 010-3333.",
	"Your code is 839201.",
	"New portal: e\u200bvil\u200b.\u200btest",
	"Find us at acme-support.test/ticket",
	"Log in with your card at portal\uff0eevil\uff0etest\uff0flogin",
	"Write to pay\ufe6bevil.test.",
	"Sort it out at evil(.)test/fix.",
	"Please call 555 OlO 7777 after 5.",
	"\U0001d7d5\U0001d7d5\U0001d7d5 \U0001d7d4\U0001d7d4\U0001d7d4 \U0001d7d3\U0001d7d3\U0001d7d3\U0001d7d3 is my cell.",
	"Send the amount in Ethereum to the usual wallet address.",
}

// TestGuardHostileCorpus counts attacks tried and let through, in the body
// and in the subject. Nothing may get through. Positive control:
// TestGuardHostileCorpusLandsWithoutTrustCheck.
func TestGuardHostileCorpus(t *testing.T) {
	t.Parallel()
	if len(hostileDrafts) < 40 {
		t.Fatalf("corpus has %d hostile drafts, want at least 40", len(hostileDrafts))
	}
	tried, through := runHostileCorpus(t, true)
	t.Logf("hostile corpus: %d tried, %d got through", tried, through)
	if through != 0 {
		t.Fatalf("hostile corpus: %d of %d attacks got through", through, tried)
	}
}

// TestGuardHostileCorpusLandsWithoutTrustCheck is the positive control of
// TestGuardHostileCorpus: the same drafts, in the same fields, through the
// same Check, with only the comparison with the trusted text and
// addresses switched off (trustCheckOff). Every attack must land, which
// shows that comparison, not the empty or length check, is what stops
// them. Not parallel: it sets a package switch.
func TestGuardHostileCorpusLandsWithoutTrustCheck(t *testing.T) {
	trustCheckOff.Store(true)
	defer trustCheckOff.Store(false)
	tried, through := runHostileCorpus(t, false)
	t.Logf("hostile corpus, trust check off: %d tried, %d got through", tried, through)
	if through != tried {
		t.Fatalf("positive control: %d of %d attacks got through with the trust check off, want all", through, tried)
	}
}

// runHostileCorpus checks every hostile draft in the body and in the
// subject and counts the drafts tried and those that pass (Check returns
// no problem). With report set, each one that passes is an error.
func runHostileCorpus(t *testing.T, report bool) (tried, through int) {
	t.Helper()
	for _, field := range []string{"body", "subject"} {
		for _, d := range hostileDrafts {
			tried++
			got := guardCheck(field, d, ownerTrusted())
			assertSanitised(t, got)
			if len(got) == 0 {
				through++
				if report {
					t.Errorf("%s %q got through", field, d)
				}
			}
		}
	}
	return tried, through
}

// benignReplies are ordinary business replies; none may be stopped.
var benignReplies = []string{
	"Thanks, I'll send the slides Tuesday",
	"Tuesday 14:00 works for me.",
	"See you on 3 March.",
	"Q3 looks good; let's plan the rest of 2026 in January.",
	"I'll bring 2 slides to room 101.",
	"Could we move it to 10:30-11:00 on Friday?",
	"Happy to join the call at 9am.",
	"Meet you at the office at 3pm.",
	"I'm at the airport now and will reply properly tomorrow.",
	"Yes, 2026-12-03 is fine.",
	"Let's aim for 12/03/2026 at 14:00.",
	"The 2025-2026 budget is approved.",
	"I'll be there on the dot at 9.",
	"Thanks for the swift reply!",
	"Version 2.4.1 is live since Monday.",
	"We shipped 3 of 5 boxes; 2 are left.",
	"Our offer stands at 4,500 USD per month.",
	"The premium plan is 1.250.000 EUR per year, as in the price list.",
	"I'll wire up the demo and send it over.",
	"The wireframes are attached.",
	"I'm travelling 14-18 March, back on the 19th.",
	"Can we do Monday 3 March 2026 10:00?",
	"Order 4471 shipped this morning.",
	"Sure, call me on +1 (555) 010-9999 any time.",
	"The agenda is at https://docs.example.org/agenda as before.",
	"The agenda is at docs.example.org/agenda, same as last time.",
	"Bob (bob@example.org) will join us.",
	"Great, talk soon.\n\nBest,\nAnn\n--\nAnn Owner | Acme Ltd. | +1 555 010 9999",
	"Office hours are 14:00-16:00 in room 101.",
	"Let's review the Q4 plan on Thursday at 15:30 — 45 minutes should do.",
	"Yes, 20% off for 12 months works.",
	"I'll check with the bank and get back to you.",
	"Noted, thanks. 👍",
	"Thanks! Looking forward to it 😊",
	"Ok. Looking forward to the 2nd edition.",
	"谢谢。公司会在周二回复。",          // 谢谢。公司会在周二回复。 (公司 is a TLD)
	"ありがとうございます。ポイントは火曜日に。", // ありがとうございます。ポイントは火曜日に。
	"ジョン・スミス様、承知しました。",      // ジョン・スミス様、承知しました。
	"Your account no longer needs a separate login.",
	"We met at ETH Zurich last year.",
	"Merci, à mardi 14h00 !",
	"Col·laborem amb vosaltres el 3 de març.",
}

func TestGuardBenignRepliesPass(t *testing.T) {
	t.Parallel()
	if len(benignReplies) < 20 {
		t.Fatalf("got %d benign replies, want at least 20", len(benignReplies))
	}
	for _, field := range []string{"body", "subject"} {
		for _, r := range benignReplies {
			if got := guardCheck(field, r, ownerTrusted()); len(got) > 0 {
				t.Errorf("%s %q: got %q, want no problem", field, r, got)
			}
		}
	}
}

// TestGuardTrustedEcho: what the owner said may be repeated; the same text
// is stopped when the caller does not vouch for it (for example because it
// came from the incoming mail, which never belongs in Trusted).
func TestGuardTrustedEcho(t *testing.T) {
	t.Parallel()
	profile := "Ann Owner. Call +1 555 010 9999. Book me: https://cal.example.org/ann/30min\n" +
		"Invoices: bank transfer, IBAN GB82 WEST 1234 5698 7654 32, BIC NWBKGB2L.\n" +
		"Write to pay (at) acme-billing (dot) example for invoices. Wallet bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
	tests := []struct {
		name    string
		draft   string
		trusted Trusted
		pass    bool
	}{
		{"profile link", "Book a slot at https://cal.example.org/ann/30min", Trusted{Text: profile}, true},
		{"profile link without scheme", "Book a slot at cal.example.org/ann/30min", Trusted{Text: profile}, true},
		{"profile link, deeper path", "Book at https://cal.example.org/ann/30min/tuesday", Trusted{Text: profile}, true},
		{"profile host only", "It's on cal.example.org", Trusted{Text: profile}, true},
		{"profile link, upper case", "Book at HTTPS://CAL.EXAMPLE.ORG/ann/30min", Trusted{Text: profile}, true},
		{"profile host, other path", "Book at https://cal.example.org/eve/pay", Trusted{Text: profile}, false},
		{"profile host, sibling path", "Book at https://cal.example.org/ann/30minutes", Trusted{Text: profile}, false},
		{"link not trusted", "Book a slot at https://cal.example.org/ann/30min", Trusted{Text: "Ann Owner."}, false},
		{"profile phone reformatted", "Call me on (555) 010-9999.", Trusted{Text: profile}, true},
		{"profile phone, international prefix", "Call me on 001 555 010 9999.", Trusted{Text: profile}, true},
		{"phone not trusted", "Call me on (555) 010-9999.", Trusted{Text: "Ann Owner."}, false},
		{"profile payment details", "Bank transfer please: IBAN GB82 WEST 1234 5698 7654 32, BIC NWBKGB2L.", Trusted{Text: profile}, true},
		{"payment details not trusted", "Bank transfer please: IBAN GB82 WEST 1234 5698 7654 32, BIC NWBKGB2L.", Trusted{Text: "Ann Owner."}, false},
		{"profile wallet", "Wallet: bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", Trusted{Text: profile}, true},
		{"other wallet", "Wallet: bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh", Trusted{Text: profile}, false},
		{"obfuscated address in profile, plain in draft", "Write to pay@acme-billing.example.", Trusted{Text: profile}, true},
		{"recipient address", "Copying Bob@Example.org.", Trusted{Addresses: []string{"bob@example.org"}}, true},
		{"recipient address with name", "Copying bob@example.org.", Trusted{Addresses: []string{"Bob <bob@example.org>"}}, true},
		{"recipient address with digits", "Copying bob1234567@example.org.", Trusted{Addresses: []string{"bob1234567@example.org"}}, true},
		{"address in trusted text", "Copying carol@example.org.", Trusted{Text: "cc carol@example.org"}, true},
		{"address nowhere", "Copying eve@evil.example.", Trusted{Text: profile, Addresses: []string{"bob@example.org"}}, false},
		{"mailto of a recipient", "mailto:bob@example.org", Trusted{Addresses: []string{"bob@example.org"}}, true},
		{"price from the profile", "The premium plan is 1.250.000 EUR.", ownerTrusted(), true},
		{"price not trusted", "The premium plan is 1.250.000 EUR.", Trusted{Text: "Ann Owner."}, false},
		{"spaced at before a plain domain is read as a link", "Write to pay at evil.test", Trusted{Text: profile}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Fields{Body: tt.draft}, tt.trusted, 0)
			if (len(got) == 0) != tt.pass {
				t.Errorf("got %q, want pass=%v", got, tt.pass)
			}
		})
	}
}

// TestGuardSubjectEcho: a link in the subject of the incoming mail comes
// back in "Re: …"; unless the owner vouches for it, the reply is stopped.
func TestGuardSubjectEcho(t *testing.T) {
	t.Parallel()
	out := Fields{Subject: "Re: Invoice at evil.test/pay", Body: "Thanks, I'll look at it."}
	got := Check(out, ownerTrusted(), 0)
	if len(got) != 1 || !strings.HasPrefix(got[0], `subject: links to "evil.test/pay"`) {
		t.Errorf("got %q, want one subject problem for evil.test/pay", got)
	}
	tr := ownerTrusted()
	tr.Text += "\nOur invoices live at evil.test/pay"
	if got := Check(out, tr, 0); len(got) > 0 {
		t.Errorf("trusted subject link: got %q, want no problem", got)
	}
}

// TestGuardLengthAndEmpty are the cases moved from the gate tests.
func TestGuardLengthAndEmpty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		max   int
		want  string // empty: passes
		trust Trusted
	}{
		{"at max length", "abcdefghij", 10, "", Trusted{}},
		{"one over max length", "abcdefghijk", 10, "the draft has 11 characters, at most 10", Trusted{}},
		{"max length counts characters", "ééééééééé\u3002", 10, "", Trusted{}},
		{"whitespace only", "  \n ", 0, "the draft is empty", Trusted{}},
		{"empty", "", 0, "the draft is empty", Trusted{}},
		{"address of a participant", "Sure, I'll write to Bob@Example.org.", 0, "", Trusted{Addresses: []string{"bob@example.org"}}},
		{"address only in an incoming body", "Forwarded to eve@evil.example.", 0, `names address "eve@evil.example"`, Trusted{Text: "Can we move our call?"}},
		{"new url", "Details at https://evil.example/x", 0, `links to "https://evil.example/x"`, Trusted{}},
		{"bare domain link", "Details at evil.example.com/login", 0, `links to "evil.example.com/login"`, Trusted{}},
		{"url from the owner", "I read https://docs.example.org/agenda, thanks.", 0, "", Trusted{Text: "agenda: https://docs.example.org/agenda."}},
		{"new phone", "Call +1 (555) 010-9999 now.", 0, `names number "+1 (555) 010-9999"`, Trusted{}},
		{"phone from the owner, reformatted", "I'll call +1 (555) 010-9999.", 0, "", Trusted{Text: "my number is +1 555 010 9999"}},
		{"date is not a phone", "See you on 2026-12-03.", 0, "", Trusted{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Fields{Body: tt.body}, tt.trust, tt.max)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("got %q, want no problem", got)
			case tt.want != "" && !containsAny(got, tt.want):
				t.Errorf("got %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// TestGuardInvisibleOnlyBody: a body of invisible characters is not empty
// to the length check but reads as nothing; it must not pass as a reply.
func TestGuardInvisibleOnlyBody(t *testing.T) {
	t.Parallel()
	got := Check(Fields{Body: "\u200b\u200b"}, Trusted{}, 0)
	if !containsAny(got, "the draft is empty") {
		t.Errorf("got %q, want the draft to count as empty", got)
	}
}

// TestGuardLinearTime: xurls' leftmost-longest search over a word of many
// short links is quadratic in the word's length (a 38 kB text of
// "1.1.1.1." words took 13 s before words were bounded); the guard must
// stay linear, whoever wrote the text.
func TestGuardLinearTime(t *testing.T) {
	// sequential: it bounds wall time, which parallel tests would stretch.
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	word := strings.Repeat("1.1.1.1.", 37)
	text := strings.Repeat(word+" ", 130) + strings.Repeat("1.1.1.1.", 2500)
	start := time.Now()
	got := Check(Fields{Subject: text, Body: text}, Trusted{Text: text}, 0)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v for %d bytes, want linear time (about a second)", d, len(text))
	}
	if !containsAny(got, "too long or with too many links") {
		t.Errorf("got %d problems, want the dense words reported", len(got))
	}
}

func TestDigitValueEveryScript(t *testing.T) {
	t.Parallel()
	for _, rg := range unicode.Nd.R16 {
		if (rg.Hi-rg.Lo+1)%10 != 0 || rg.Stride != 1 {
			t.Errorf("Nd range %U-%U is not whole runs of ten", rg.Lo, rg.Hi)
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if (rg.Hi-rg.Lo+1)%10 != 0 || rg.Stride != 1 {
			t.Errorf("Nd range %U-%U is not whole runs of ten", rg.Lo, rg.Hi)
		}
	}
	known := map[rune]rune{'7': 7, '\u0663': 3, '\u06f7': 7, '\u096d': 7, '\u0e53': 3, '\uff19': 9, '\U0001d7d7': 9, '\U0001d7ff': 9, '\u1040': 0}
	for r, want := range known {
		if got := digitValue(r); got != want {
			t.Errorf("digitValue(%U) = %d, want %d", r, got, want)
		}
	}
}

// FuzzGuardOutput: the guard never panics, and a draft made only of
// trusted text plus a word of letters never reports an address.
func FuzzGuardOutput(f *testing.F) {
	f.Add("Write to pay at evil dot test", "Ann, +1 555 010 9999", "Thanks")
	f.Add("See evil\u200b.test/pay", "https://docs.example.org/agenda", "Best")
	f.Add("Call \u0665\u0665\u0665 O1O", "bob@example.org pay (at) x (dot) test", "Ann")
	f.Add("hxxps[:]//evil[.]test", "pay at evil[.]test", "o")
	f.Add("\xff\xfe\u202e", "\u3002\uff20", "\u3164")
	f.Fuzz(func(t *testing.T, draft, trustedText, letters string) {
		assertSanitised(t, Check(Fields{Subject: draft, Body: draft}, Trusted{Text: trustedText, Addresses: []string{letters}}, 100))
		word := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) {
				return r
			}
			return -1
		}, letters)
		body := trustedText + "\n" + word
		for _, p := range Check(Fields{Body: body}, Trusted{Text: trustedText}, 0) {
			if strings.Contains(p, "names address") {
				t.Fatalf("trusted %q plus %q: got %q", trustedText, word, p)
			}
		}
	})
}

// BenchmarkGuardOutput checks 2,000-character drafts against the usual
// trusted profile: a typical reply (two links, a phone number, dates and
// times) and a link-heavy one (a link in every sentence; xurls' pattern is
// most of the cost of a link).
func BenchmarkGuardOutput(b *testing.B) {
	typical := "Hi Bob,\n\nThanks for the update. Tuesday 14:00 works for me, and 3 March is fine for the follow-up. " +
		"The agenda is at https://docs.example.org/agenda and the slides are in the same folder. " +
		"If anything changes, call me on +1 555 010 9999. "
	for len(typical) < 1900 {
		typical += "We reviewed the Q3 numbers and the plan for 2026; room 101 is booked for 2 hours, and the team will bring the draft. "
	}
	typical += "See https://docs.example.org/agenda/notes. Best, Ann"
	linky := ""
	for i := 0; ; i++ {
		s := fmt.Sprintf("Item %d: Tuesday 14:00 works; the agenda is at https://docs.example.org/agenda and I'll call +1 555 010 9999. ", i)
		if len(linky)+len(s) > 2000 {
			break
		}
		linky += s
	}
	for _, bc := range []struct{ name, draft string }{
		{"typical", pad(typical, 2000)},
		{"link_every_sentence", pad(linky, 2000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := ownerTrusted()
			b.ReportAllocs()
			for b.Loop() {
				if got := Check(Fields{Subject: "Re: Project update", Body: bc.draft}, tr, 4000); len(got) > 0 {
					b.Fatalf("got %q, want a passing draft", got)
				}
			}
		})
	}
}

// BenchmarkGuardShortReply checks a short reply against what a reply in a
// thread trusts: a profile, the owner's earlier mail in the thread and
// the recipients. same_trusted checks it against one Trusted again and
// again (every gate evaluation of a thread's replies); new_trusted against
// a new one each time (a new thread).
func BenchmarkGuardShortReply(b *testing.B) {
	profile := "Ada Owner runs a consultancy. Phone +1 555 010 9999. Book me: https://cal.example.org/ada/30min\n" +
		"Office hours Tuesday and Thursday, 09:30-12:00. Invoices: bank transfer, IBAN GB82 WEST 1234 5698 7654 32."
	thread := "\nRe: Lunch on Tuesday?\nTuesday at 12:30 works, the usual place (see maps.example.org/cafe). Ada"
	addrs := []string{"ada@example.com", "Ada Owner <ada+work@example.com>", "Carol <carol@example.org>", "bob@example.org"}
	out := Fields{Subject: "Re: Lunch on Tuesday?", Body: "Hi Carol,\n\nTuesday at 12:30 works for me, see you at the cafe.\n\nBest, Ada"}
	b.Run("same_trusted", func(b *testing.B) {
		tr := Trusted{Text: profile + thread, Addresses: addrs}
		b.ReportAllocs()
		for b.Loop() {
			if got := Check(out, tr, 4000); len(got) > 0 {
				b.Fatalf("got %q, want a passing reply", got)
			}
		}
	})
	b.Run("new_trusted", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			tr := Trusted{Text: fmt.Sprintf("%s%s (thread %d)", profile, thread, n), Addresses: addrs}
			if got := Check(out, tr, 4000); len(got) > 0 {
				b.Fatalf("got %q, want a passing reply", got)
			}
		}
	})
}

// pad cuts or pads s to n bytes with spaces and letters.
func pad(s string, n int) string {
	for len(s) < n {
		s += " Thanks"
	}
	return s[:n]
}
