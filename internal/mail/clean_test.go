package mail

import (
	"strings"
	"testing"
)

func TestSplitText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		in                       string
		clean, quoted, signature string
		forwarded                bool
	}{
		{
			name:  "plain",
			in:    "Hi,\n\nsounds good.\n",
			clean: "Hi,\n\nsounds good.",
		},
		{
			name:   "top posted gmail",
			in:     "Yes, Tuesday works.\n\nOn Mon, Aug 19, 2002 at 10:00 AM Bob <bob@example.com> wrote:\n> Does Tuesday work?\n> Bob\n",
			clean:  "Yes, Tuesday works.",
			quoted: "On Mon, Aug 19, 2002 at 10:00 AM Bob <bob@example.com> wrote:\n> Does Tuesday work?\n> Bob",
		},
		{
			name:   "attribution wrapped over two lines",
			in:     "Fine by me.\n\nOn Mon, Aug 19, 2002 at 10:00 AM, Robert Example <\nbob@example.com> wrote:\n> Does Tuesday work?\n",
			clean:  "Fine by me.",
			quoted: "On Mon, Aug 19, 2002 at 10:00 AM, Robert Example <\nbob@example.com> wrote:\n> Does Tuesday work?",
		},
		{
			name:   "interleaved replies kept",
			in:     "Bob wrote:\n> first question?\nfirst answer\n\n> second question?\nsecond answer\n",
			clean:  "first answer\n\nsecond answer",
			quoted: "Bob wrote:\n> first question?\n> second question?",
		},
		{
			name:   "french attribution",
			in:     "Merci !\n\nLe lun. 12 mars 2020 à 10:00, Jean <jean@example.fr> a écrit :\n> Bonjour\n",
			clean:  "Merci !",
			quoted: "Le lun. 12 mars 2020 à 10:00, Jean <jean@example.fr> a écrit :\n> Bonjour",
		},
		{
			name:   "german attribution without quote marks",
			in:     "Danke.\n\nAm 12.03.2020 um 10:00 schrieb Hans <hans@example.de>:\nHallo zusammen\n",
			clean:  "Danke.",
			quoted: "Am 12.03.2020 um 10:00 schrieb Hans <hans@example.de>:\nHallo zusammen",
		},
		{
			name:   "spanish attribution",
			in:     "Gracias\n\nEl lun., 12 mar. 2020 a las 10:00, Juan (<juan@example.es>) escribió:\n> Hola\n",
			clean:  "Gracias",
			quoted: "El lun., 12 mar. 2020 a las 10:00, Juan (<juan@example.es>) escribió:\n> Hola",
		},
		{
			name:   "outlook original message",
			in:     "See below.\n\n-----Original Message-----\nFrom: Bob\nSent: Monday\nTo: Alice\nSubject: plan\n\nThe plan.\n",
			clean:  "See below.",
			quoted: "-----Original Message-----\nFrom: Bob\nSent: Monday\nTo: Alice\nSubject: plan\n\nThe plan.",
		},
		{
			name:   "outlook header block with rule",
			in:     "Approved.\n\n________________________________\nFrom: Bob Example <bob@example.com>\nSent: Monday, August 19, 2002 10:00 AM\nTo: Alice\nSubject: budget\n\nPlease approve.\n",
			clean:  "Approved.",
			quoted: "________________________________\nFrom: Bob Example <bob@example.com>\nSent: Monday, August 19, 2002 10:00 AM\nTo: Alice\nSubject: budget\n\nPlease approve.",
		},
		{
			name:      "forwarded message",
			in:        "FYI, see below.\n\n---------- Forwarded message ---------\nFrom: Carol <carol@example.com>\nDate: Mon, Aug 19, 2002\nSubject: news\n\nBig news.\n",
			clean:     "FYI, see below.",
			quoted:    "---------- Forwarded message ---------\nFrom: Carol <carol@example.com>\nDate: Mon, Aug 19, 2002\nSubject: news\n\nBig news.",
			forwarded: true,
		},
		{
			name:      "apple forward",
			in:        "Look at this\n\nBegin forwarded message:\n\nFrom: Carol\nSubject: news\n",
			clean:     "Look at this",
			quoted:    "Begin forwarded message:\n\nFrom: Carol\nSubject: news",
			forwarded: true,
		},
		{
			name:      "signature delimiter",
			in:        "Thanks!\n\n-- \nAlice Example\nACME Corp\n",
			clean:     "Thanks!",
			signature: "-- \nAlice Example\nACME Corp",
		},
		{
			name:      "bare double dash signature",
			in:        "Thanks!\n--\nAlice\n",
			clean:     "Thanks!",
			signature: "--\nAlice",
		},
		{
			name:      "signature then quote",
			in:        "Agreed.\n-- \nAlice\n\nOn Mon, Aug 19, 2002 Bob <b@example.com> wrote:\n> proposal\n",
			clean:     "Agreed.",
			quoted:    "On Mon, Aug 19, 2002 Bob <b@example.com> wrote:\n> proposal",
			signature: "-- \nAlice",
		},
		{
			name:      "mailing list footer",
			in:        "Any ideas?\n\n-------------------------------------------------------\nThis sf.net email is sponsored by: OSDN\n_______________________________________________\nExmh-workers mailing list\nExmh-workers@redhat.com\n",
			clean:     "Any ideas?",
			signature: "-------------------------------------------------------\nThis sf.net email is sponsored by: OSDN\n_______________________________________________\nExmh-workers mailing list\nExmh-workers@redhat.com",
		},
		{
			name:      "mobile footer",
			in:        "On my way.\n\nSent from my iPhone\n",
			clean:     "On my way.",
			signature: "Sent from my iPhone",
		},
		{
			name:      "german mobile footer before quote",
			in:        "Passt.\n\nVon meinem iPhone gesendet\n\n> Passt Dienstag?\n",
			clean:     "Passt.",
			quoted:    "> Passt Dienstag?",
			signature: "Von meinem iPhone gesendet",
		},
		{
			name:   "everything quoted falls back to text",
			in:     "> only quoted\n> lines\n",
			clean:  "> only quoted\n> lines",
			quoted: "> only quoted\n> lines",
		},
		{
			name:  "on sentence that is not an attribution",
			in:    "On the other hand, I wrote:\nthe report is done.\n",
			clean: "On the other hand, I wrote:\nthe report is done.",
		},
		{
			name:  "crlf input",
			in:    "Hello\r\n\r\n> old\r\n",
			clean: "Hello", quoted: "> old",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitText(tt.in)
			if got.Clean != tt.clean {
				t.Errorf("Clean: got %q, want %q", got.Clean, tt.clean)
			}
			if got.Quoted != tt.quoted {
				t.Errorf("Quoted: got %q, want %q", got.Quoted, tt.quoted)
			}
			if got.Signature != tt.signature {
				t.Errorf("Signature: got %q, want %q", got.Signature, tt.signature)
			}
			if got.Forwarded != tt.forwarded {
				t.Errorf("Forwarded: got %v, want %v", got.Forwarded, tt.forwarded)
			}
		})
	}
}

func TestSplitTextNeverEmpty(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"-- \nsig only", "   ", "\n\n", "On Mon, 1 Jan 2020 x@y wrote:\nall history"} {
		got := SplitText(in)
		if strings.TrimSpace(in) != "" && strings.TrimSpace(got.Clean) == "" {
			t.Errorf("SplitText(%q): got empty Clean, want non-empty", in)
		}
		if in != "" && got.Clean == "" {
			t.Errorf("SplitText(%q): got empty Clean, want the input", in)
		}
	}
}

// A pathological body must stay linear: many blank lines between quotes.
func TestSplitTextManyBlankLines(t *testing.T) {
	t.Parallel()
	in := "> a\n" + strings.Repeat("\n", 200000) + "> b\nreply"
	got := SplitText(in)
	if got.Clean != "reply" {
		t.Errorf("got Clean %q, want %q", short(got.Clean), "reply")
	}
}
