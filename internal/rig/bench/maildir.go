package bench

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaildirSpec describes a benchmark mailbox written as Maildir++ files
// (Dovecot's default layout) for issue 28's "a million messages".
//
// Contract of WriteMaildir:
//   - N messages are written, corpus message i%len(Corpus) in round
//     i/len(Corpus). Every Message-ID, In-Reply-To and References id of
//     round r gets the suffix ".r<r>" before its "@", so ids are unique
//     across rounds and a round's threads stay threads.
//   - Dates: the corpus's order by date is spread evenly over round r's
//     slice of the Years before End, so a reply stays after its parent; the Date header and the file's
//     mtime (Dovecot's INTERNALDATE for Maildir) are that date.
//   - Folders: one message in ten (by a hash of its index) goes to Sent,
//     with From rewritten to Owner; the rest go to INBOX when dated within
//     InboxYears of End, else to Archive/<year>. INBOX mail of the last 30
//     days is unseen; everything else carries \Seen.
//   - Files are named "<unix date>.M<i>.million,S=<size>:2,<flags>", so
//     Dovecot's first sync gives UIDs in date order without a stat for
//     the size. Bodies keep their LF line ends (Maildir's convention).
//   - Root must not exist yet: a half-written mailbox is never taken for a
//     finished one (the caller renames a finished temporary root).
type MaildirSpec struct {
	Root       string    // the user's Maildir (created)
	N          int       // messages to write
	Corpus     [][]byte  // raw messages (mbox "From " line stripped)
	Owner      string    // the owner's address (From of Sent mail)
	End        time.Time // date of the newest message
	Years      int       // span of the dates before End (default 15)
	InboxYears int       // INBOX keeps this many years (default 2)
	Workers    int       // concurrent writers (default 4)
}

// MaildirStats counts what WriteMaildir wrote, per folder.
type MaildirStats struct {
	Folders map[string]int // folder name ("INBOX", "Sent", "Archive/2019") → messages
	Bytes   int64
}

// WriteMaildir writes the mailbox spec describes; see MaildirSpec.
func WriteMaildir(spec MaildirSpec) (MaildirStats, error) {
	st := MaildirStats{Folders: map[string]int{}}
	if spec.N <= 0 || len(spec.Corpus) == 0 {
		return st, errors.New("write maildir: need N > 0 and a corpus")
	}
	if _, err := os.Stat(spec.Root); err == nil {
		return st, fmt.Errorf("write maildir: %s exists already", spec.Root)
	}
	years := cmp0(spec.Years, 15)
	inboxYears := cmp0(spec.InboxYears, 2)
	workers := cmp0(spec.Workers, 4)
	span := time.Duration(years) * 365 * 24 * time.Hour
	start := spec.End.Add(-span)
	inboxFrom := spec.End.Add(-time.Duration(inboxYears) * 365 * 24 * time.Hour)
	unseenFrom := spec.End.Add(-30 * 24 * time.Hour)
	rank := corpusDateRanks(spec.Corpus)
	c := len(spec.Corpus)
	rounds := (spec.N + c - 1) / c

	var mu sync.Mutex
	made := map[string]bool{}
	folderDir := func(folder string) (string, error) {
		dir := spec.Root
		if folder != "INBOX" {
			dir = filepath.Join(spec.Root, "."+strings.ReplaceAll(folder, "/", "."))
		}
		mu.Lock()
		defer mu.Unlock()
		if !made[folder] {
			for _, sub := range []string{"cur", "new", "tmp"} {
				if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
					return "", fmt.Errorf("write maildir: %w", err)
				}
			}
			made[folder] = true
		}
		return dir, nil
	}
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bytesW int64
			counts := map[string]int{}
			for i := w; i < spec.N; i += workers {
				r, j := i/c, i%c
				frac := float64(rank[j]) / float64(c)
				date := start.Add(time.Duration((float64(r) + frac) / float64(rounds) * float64(span))).Truncate(time.Second)
				sent := fnvIndex(i)%10 == 0
				folder := "INBOX"
				switch {
				case sent:
					folder = "Sent"
				case date.Before(inboxFrom):
					folder = "Archive/" + strconv.Itoa(date.Year())
				}
				owner := ""
				if sent {
					owner = spec.Owner
				}
				raw := RewriteMessage(spec.Corpus[j], ".r"+strconv.Itoa(r), date, owner)
				flags := "S"
				if folder == "INBOX" && !date.Before(unseenFrom) {
					flags = ""
				}
				dir, err := folderDir(folder)
				if err != nil {
					errc <- err
					return
				}
				name := fmt.Sprintf("%d.M%d.million,S=%d:2,%s", date.Unix(), i, len(raw), flags)
				path := filepath.Join(dir, "cur", name)
				if err := os.WriteFile(path, raw, 0o600); err != nil {
					errc <- fmt.Errorf("write maildir: %w", err)
					return
				}
				if err := os.Chtimes(path, date, date); err != nil {
					errc <- fmt.Errorf("write maildir: %w", err)
					return
				}
				counts[folder]++
				bytesW += int64(len(raw))
			}
			mu.Lock()
			for f, n := range counts {
				st.Folders[f] += n
			}
			st.Bytes += bytesW
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return st, err
	}
	var subs []string
	for f := range st.Folders {
		if f != "INBOX" {
			subs = append(subs, f)
		}
	}
	slices.Sort(subs)
	if err := os.WriteFile(filepath.Join(spec.Root, "subscriptions"), []byte(strings.Join(subs, "\n")+"\n"), 0o600); err != nil {
		return st, fmt.Errorf("write maildir: %w", err)
	}
	return st, nil
}

func cmp0(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func fnvIndex(i int) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strconv.Itoa(i)))
	return h.Sum32()
}

// corpusDateRanks returns each corpus message's rank in date order (ties
// and undated messages by their index): scaling ranks rather than dates
// spreads the corpus evenly over a round (its dates bunch in a few months,
// with outliers years off) and still keeps a reply after its parent.
func corpusDateRanks(corpus [][]byte) []int {
	type dated struct {
		i int
		d time.Time
	}
	ds := make([]dated, len(corpus))
	var last time.Time
	for i, raw := range corpus {
		d, ok := headerDate(raw)
		if !ok {
			d = last // undated: beside its neighbour
		}
		last = d
		ds[i] = dated{i, d}
	}
	slices.SortStableFunc(ds, func(a, b dated) int { return a.d.Compare(b.d) })
	rank := make([]int, len(corpus))
	for r, x := range ds {
		rank[x.i] = r
	}
	return rank
}

// headerEnd returns the index just past the header block's blank line, or
// len(raw) when there is none.
func headerEnd(raw []byte) int {
	if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		return i + 2
	}
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		return i + 4
	}
	return len(raw)
}

// headerFields splits a header block into its fields, each with its
// folded continuation lines and line ends.
func headerFields(h []byte) [][]byte {
	var out [][]byte
	for len(h) > 0 {
		end := 0
		for {
			nl := bytes.IndexByte(h[end:], '\n')
			if nl < 0 {
				end = len(h)
				break
			}
			end += nl + 1
			if end >= len(h) || (h[end] != ' ' && h[end] != '\t') {
				break
			}
		}
		out = append(out, h[:end])
		h = h[end:]
	}
	return out
}

func fieldName(f []byte) string {
	i := bytes.IndexByte(f, ':')
	if i < 0 {
		return ""
	}
	return strings.ToLower(string(bytes.TrimSpace(f[:i])))
}

func headerDate(raw []byte) (time.Time, bool) {
	for _, f := range headerFields(raw[:headerEnd(raw)]) {
		if fieldName(f) == "date" {
			v := strings.TrimSpace(string(f[bytes.IndexByte(f, ':')+1:]))
			if i := strings.Index(v, " ("); i > 0 { // "… +0100 (CET)"
				v = v[:i]
			}
			d, err := netmail.ParseDate(v)
			return d, err == nil
		}
	}
	return time.Time{}, false
}

// RewriteMessage returns raw with every id in Message-ID, In-Reply-To and
// References suffixed with suffix before its "@", the Date set to date,
// and, when owner is set, From set to owner (the Sent folder's mail). A
// message without a Message-ID gets one made from its Subject-free bytes'
// hash. The body is unchanged.
func RewriteMessage(raw []byte, suffix string, date time.Time, owner string) []byte {
	he := headerEnd(raw)
	var out bytes.Buffer
	out.Grow(len(raw) + 128)
	hasID, hasDate := false, false
	for _, f := range headerFields(raw[:he]) {
		switch fieldName(f) {
		case "message-id", "in-reply-to", "references", "resent-message-id":
			if fieldName(f) == "message-id" {
				hasID = true
			}
			out.Write(suffixIDs(f, suffix))
		case "date":
			hasDate = true
			out.WriteString("Date: " + date.Format(time.RFC1123Z) + "\n")
		case "from":
			if owner != "" {
				out.WriteString("From: Million Owner <" + owner + ">\n")
			} else {
				out.Write(f)
			}
		default:
			if len(bytes.TrimSpace(f)) == 0 {
				continue // the blank line: written below
			}
			out.Write(f)
		}
	}
	if !hasDate {
		out.WriteString("Date: " + date.Format(time.RFC1123Z) + "\n")
	}
	if !hasID {
		h := fnv.New64a()
		_, _ = h.Write(raw)
		fmt.Fprintf(&out, "Message-ID: <%x%s@million.invalid>\n", h.Sum64(), suffix)
	}
	out.WriteString("\n")
	out.Write(raw[he:])
	return out.Bytes()
}

// suffixIDs inserts suffix before the "@" (or the ">") of every <id> in f.
func suffixIDs(f []byte, suffix string) []byte {
	var out bytes.Buffer
	for {
		lt := bytes.IndexByte(f, '<')
		if lt < 0 {
			out.Write(f)
			return out.Bytes()
		}
		gt := bytes.IndexByte(f[lt:], '>')
		if gt < 0 {
			out.Write(f)
			return out.Bytes()
		}
		id := f[lt : lt+gt+1]
		at := bytes.LastIndexByte(id, '@')
		if at < 0 {
			at = len(id) - 1
		}
		out.Write(f[:lt])
		out.Write(id[:at])
		out.WriteString(suffix)
		out.Write(id[at:])
		f = f[lt+gt+1:]
	}
}
