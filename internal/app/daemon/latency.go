package daemon

import (
	"bufio"
	"bytes"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/status"
)

// latency is the push-latency bookkeeping of every account (d.mu held).
type latency struct {
	syncAt    map[string]time.Time // when each account's latest sync began
	liveSince map[string]time.Time // the sync before it: mail newer than this arrived while watching
	window    map[string]*status.Latencies
}

// beginSync notes that a sync of account starts now: mail that arrived
// after the previous sync began reached the watcher live, and its
// latency counts (the first sync's catch-up never does).
func (d *Daemon) beginSync(account string) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lat.syncAt == nil {
		d.lat.syncAt, d.lat.liveSince, d.lat.window = map[string]time.Time{}, map[string]time.Time{}, map[string]*status.Latencies{}
	}
	d.lat.liveSince[account] = d.lat.syncAt[account]
	d.lat.syncAt[account] = now
}

// noteArrival records how long m took to reach the watcher, when it
// arrived while the watcher ran (see beginSync): from its arrival time
// (Arrival) to now, the sync that fetched it after an EXISTS or a poll.
func (d *Daemon) noteArrival(account string, m imapsync.RawMessage) {
	arrived := Arrival(m)
	if arrived.IsZero() {
		return
	}
	now := d.now()
	d.setStatus(account, func(s *Status) {
		since := d.lat.liveSince[account]
		// Arrival times are to the second: a message of the same second
		// as the previous sync's start counts.
		if since.IsZero() || arrived.Before(since.Truncate(time.Second)) {
			return
		}
		w := d.lat.window[account]
		if w == nil {
			w = &status.Latencies{}
			d.lat.window[account] = w
		}
		w.Add(now.Sub(arrived), s)
	})
}

// Arrival is when m reached the owner's server: its INTERNALDATE, else
// the date of its topmost Received header (the owner's server's own,
// written last), else zero.
func Arrival(m imapsync.RawMessage) time.Time {
	if !m.InternalDate.IsZero() {
		return m.InternalDate
	}
	hdr, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(m.Raw))).ReadMIMEHeader()
	if err != nil && len(hdr) == 0 {
		return time.Time{}
	}
	rcv := hdr.Values("Received")
	if len(rcv) == 0 {
		return time.Time{}
	}
	i := strings.LastIndexByte(rcv[0], ';')
	if i < 0 {
		return time.Time{}
	}
	t, err := netmail.ParseDate(strings.TrimSpace(rcv[0][i+1:]))
	if err != nil {
		return time.Time{}
	}
	return t
}
