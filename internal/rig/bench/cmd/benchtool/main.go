// Command benchtool is the helper the scripts/bench-*.sh drivers call. It
// is not part of the product. Subcommands:
//
//	fakegemini -urlfile F [-delay 300ms] [-provider openai] [-cpuprofile F]   serve a fake model (Gemini, or
//	                                         OpenAI-compatible) until SIGTERM, then print its stats
//	load  -user U -mailbox M [-set all|ham] [-n N]   reset M and APPEND the SpamAssassin corpus
//	synth -user U -mailbox M -n N            reset M and APPEND N synthetic external messages
//	deliver -user U -n N -out F [-gap 1s] [-via append]   SMTP-deliver (or APPEND) N messages one at a
//	                                         time, timing SMTP 250 and an IDLE client's EXISTS for each
//	maildir -root DIR -n N -owner A          write an N-message Maildir++ mailbox from the corpus
//	                                         (bench.WriteMaildir; issue 28's million messages)
//	decided -state DIR -account A -in F      join deliver's timings with the decisions stored
//	seed  -state DIR -account A -n N [-sends S -queue Q]   write N message records (store.PutMessage),
//	                                         S finished sends and Q queue items into a state database
//	cpu   -pid P [-for 60s]                  CPU time of a process over a while, as % of one core
//	dbstats -state DIR                       print the DB file size and each bucket's keys and pages
//	rss   -pid P                             print VmRSS, VmHWM, RssAnon, RssFile of a process in MiB
//
// Every subcommand prints its figures on stdout and errors on stderr, and
// exits 1 on failure.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/bench"
	"github.com/mailagent/mailagent/store"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool fakegemini|load|synth|deliver|decided|seed|rss|dbstats|cpu|maildir [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string) error{
		"fakegemini": fakeGemini, "load": load, "synth": synth, "deliver": deliver,
		"decided": decided, "seed": seed, "rss": rss, "dbstats": dbstats, "cpu": cpuUse,
		"maildir": maildir,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "benchtool: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func fakeGemini(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fakegemini", flag.ExitOnError)
	urlFile := fs.String("urlfile", "", "write the base URL here once listening")
	delay := fs.Duration("delay", 0, "latency of each answer")
	provider := fs.String("provider", "gemini", "wire to speak: gemini or openai (same answer, delay and stats)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the fake here (what it costs the shared cores)")
	_ = fs.Parse(args)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fg := &bench.FakeGemini{Delay: *delay}
	var h http.Handler = fg
	url := "http://" + ln.Addr().String()
	switch *provider {
	case "gemini":
	case "openai":
		fo := &bench.FakeOpenAI{}
		fo.Delay = *delay
		fg, h, url = &fo.FakeGemini, fo, url+"/v1"
	default:
		return fmt.Errorf("-provider %q: want gemini or openai", *provider)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(url), 0o600); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	s := fg.Stats()
	span := s.Last.Sub(s.First)
	fmt.Printf("fakegemini calls=%d max_in_flight=%d first_to_last_ms=%s\n", s.Calls, s.MaxInFlight, bench.Millis(span))
	return nil
}

func dialIMAP(st *bench.Stack, user string, opts *imapclient.Options) (*imapclient.Client, error) {
	pass, err := st.Password(user)
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &imapclient.Options{}
	}
	opts.Dialer = &net.Dialer{Timeout: 30 * time.Second}
	// Plaintext on loopback: Dovecot's TLS proxy makes each APPEND several
	// times slower, and loading is not what is measured.
	c, err := imapclient.DialInsecure(st.IMAPAddr, opts)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", st.IMAPAddr, err)
	}
	if err := c.Login(user, pass).Wait(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("login %s: %w", user, err)
	}
	return c, nil
}

// resetMailbox makes mailbox exist and be empty.
func resetMailbox(c *imapclient.Client, mailbox string) error {
	sel, err := c.Select(mailbox, nil).Wait()
	if err != nil {
		if cerr := c.Create(mailbox, nil).Wait(); cerr != nil {
			return fmt.Errorf("select %s: %w (create: %v)", mailbox, err, cerr)
		}
		return nil
	}
	if sel.NumMessages > 0 {
		all := imap.SeqSet{}
		all.AddRange(1, 0)
		if err := c.Store(all, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
			return fmt.Errorf("store \\Deleted: %w", err)
		}
		if err := c.Expunge().Close(); err != nil {
			return fmt.Errorf("expunge: %w", err)
		}
	}
	return c.Unselect().Wait()
}

func appendRaw(c *imapclient.Client, mailbox string, raw []byte) error {
	cmd := c.Append(mailbox, int64(len(raw)), nil)
	if _, err := cmd.Write(raw); err != nil {
		_ = cmd.Close()
		return err
	}
	if err := cmd.Close(); err != nil {
		return err
	}
	_, err := cmd.Wait()
	return err
}

func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	user := fs.String("user", "carol@example.test", "stack user")
	mailbox := fs.String("mailbox", "bench-ingest", "mailbox to reset and fill")
	set := fs.String("set", "all", "all (ham and spam, 6,046 messages) or ham")
	n := fs.Int("n", 0, "at most N messages (0 = all)")
	raw := fs.Bool("raw", false, "APPEND each file as it is on disk (mbox From line, bare LF), not stripped and CRLF")
	_ = fs.Parse(args)
	st, err := bench.StackFromEnv()
	if err != nil {
		return err
	}
	dirs := bench.SpamAssassinDirs
	if *set == "ham" {
		dirs = bench.HamDirs
	}
	files, err := bench.CorpusFiles(dirs...)
	if err != nil {
		return err
	}
	if *n > 0 && len(files) > *n {
		files = files[:*n]
	}
	// Other test suites sharing the stack may restart Dovecot: start over
	// (reset and reload) a few times rather than fail.
	for attempt := 1; ; attempt++ {
		err := loadOnce(ctx, st, *user, *mailbox, files, *raw)
		if err == nil || attempt == 5 || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "load attempt %d: %v; retrying\n", attempt, err)
		if err := bench.WaitDone(ctx, 3*time.Second); err != nil {
			return err
		}
	}
}

// loadOnce resets mailbox and APPENDs files to it: each stripped of its
// mbox From line and turned to CRLF, or with asIs exactly as on disk.
func loadOnce(ctx context.Context, st *bench.Stack, user, mailbox string, files []string, asIs bool) error {
	c, err := dialIMAP(st, user, nil)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if err := resetMailbox(c, mailbox); err != nil {
		return err
	}
	start := time.Now()
	var bytesTotal int
	for i, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var raw []byte
		if asIs {
			raw, err = os.ReadFile(f)
		} else {
			raw, err = bench.ReadMessage(f)
		}
		if err != nil {
			return err
		}
		if !asIs {
			raw = bench.CRLF(raw)
		}
		bytesTotal += len(raw)
		if err := appendRaw(c, mailbox, raw); err != nil {
			return fmt.Errorf("append %d (%s): %w", i+1, f, err)
		}
	}
	_ = c.Logout().Wait()
	fmt.Printf("loaded messages=%d bytes=%d user=%s mailbox=%s in %s\n", len(files), bytesTotal, user, mailbox, time.Since(start).Round(time.Millisecond))
	return nil
}

// synthMessage is an ordinary message from a person outside the account:
// routed external, so it costs one model call.
func synthMessage(i int, to string) (id string, raw []byte) {
	id = fmt.Sprintf("bench-%d-%d@outside.example", time.Now().UnixNano(), i)
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: Sender %d <sender%d@outside.example>\r\n", i, i%97)
	fmt.Fprintf(&b, "To: <%s>\r\n", to)
	fmt.Fprintf(&b, "Subject: Question %d about the project schedule\r\n", i)
	fmt.Fprintf(&b, "Date: %s\r\n", time.Now().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s>\r\n", id)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	fmt.Fprintf(&b, "Hi,\r\n\r\nCould you tell me whether item %d is still planned for next week?\r\n"+
		"We need to book the room and order the equipment before Friday.\r\n\r\nThanks,\r\nSender %d\r\n", i, i)
	return id, b.Bytes()
}

func synth(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("synth", flag.ExitOnError)
	user := fs.String("user", "carol@example.test", "stack user")
	mailbox := fs.String("mailbox", "bench-burst", "mailbox to reset and fill")
	n := fs.Int("n", 500, "messages")
	_ = fs.Parse(args)
	st, err := bench.StackFromEnv()
	if err != nil {
		return err
	}
	c, err := dialIMAP(st, *user, nil)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if err := resetMailbox(c, *mailbox); err != nil {
		return err
	}
	start := time.Now()
	for i := range *n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_, raw := synthMessage(i, *user)
		if err := appendRaw(c, *mailbox, raw); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
	}
	_ = c.Logout().Wait()
	fmt.Printf("synthesized messages=%d user=%s mailbox=%s in %s\n", *n, *user, *mailbox, time.Since(start).Round(time.Millisecond))
	return nil
}

// Timing is one delivered message, as deliver writes it (JSON lines).
type Timing struct {
	MessageID string    `json:"message_id"`
	Accepted  time.Time `json:"accepted"` // SMTP DATA answered 250
	Exists    time.Time `json:"exists"`   // the observer's IDLE saw EXISTS
}

func deliver(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("deliver", flag.ExitOnError)
	user := fs.String("user", "bob@example.test", "recipient (the watched account)")
	n := fs.Int("n", 50, "messages")
	out := fs.String("out", "", "write timings here (JSON lines)")
	gap := fs.Duration("gap", time.Second, "wait after each EXISTS before the next delivery")
	via := fs.String("via", "smtp", "smtp (Postfix; accepted = DATA answered 250) or append (IMAP APPEND to INBOX; accepted = APPEND answered OK)")
	_ = fs.Parse(args)
	st, err := bench.StackFromEnv()
	if err != nil {
		return err
	}
	type exists struct {
		n  uint32
		at time.Time
	}
	events := make(chan exists, 1024)
	c, err := dialIMAP(st, *user, &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				select {
				case events <- exists{*d.NumMessages, time.Now()}:
				default:
				}
			}
		},
	}})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	sel, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return fmt.Errorf("examine INBOX: %w", err)
	}
	count := sel.NumMessages
	idle, err := c.Idle()
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	defer func() { _ = idle.Close() }()
	if err := bench.WaitDone(ctx, 200*time.Millisecond); err != nil { // let IDLE start
		return err
	}

	send := func(raw []byte) (time.Time, error) {
		return smtpSend(st.SMTPAddr, "sender@outside.example", *user, raw)
	}
	switch *via {
	case "smtp":
	case "append": // a server without SMTP (the million-message Dovecot)
		ac, err := dialIMAP(st, *user, nil)
		if err != nil {
			return err
		}
		defer func() { _ = ac.Close() }()
		send = func(raw []byte) (time.Time, error) {
			if err := appendRaw(ac, "INBOX", raw); err != nil {
				return time.Time{}, err
			}
			return time.Now(), nil
		}
	default:
		return fmt.Errorf("-via %q: want smtp or append", *via)
	}

	var timings []Timing
	for i := range *n {
		id, raw := synthMessage(i, *user)
		acc, err := send(raw)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		want := count + 1
		var ex time.Time
		deadline := time.NewTimer(30 * time.Second)
		for ex.IsZero() {
			select {
			case e := <-events:
				if e.n >= want {
					ex = e.at
					count = e.n
				}
			case <-deadline.C:
				return fmt.Errorf("message %d: no EXISTS %d after 30s", i, want)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		deadline.Stop()
		timings = append(timings, Timing{MessageID: id, Accepted: acc, Exists: ex})
		if err := bench.WaitDone(ctx, *gap); err != nil {
			return err
		}
	}
	var idles []time.Duration
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, t := range timings {
		idles = append(idles, t.Exists.Sub(t.Accepted))
		_ = enc.Encode(t)
	}
	if *out != "" {
		if err := os.WriteFile(*out, buf.Bytes(), 0o600); err != nil {
			return err
		}
	}
	printDist("smtp_250_to_idle_exists", idles)
	return nil
}

// smtpSend delivers raw through Postfix and returns when DATA was
// answered 250.
func smtpSend(addr, from, to string, raw []byte) (time.Time, error) {
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return time.Time{}, fmt.Errorf("dial smtp: %w", err)
	}
	c := smtp.NewClient(conn)
	defer func() { _ = c.Close() }()
	if err := c.Hello("bench.outside.example"); err != nil {
		return time.Time{}, err
	}
	if err := c.Mail(from, nil); err != nil {
		return time.Time{}, err
	}
	if err := c.Rcpt(to, nil); err != nil {
		return time.Time{}, err
	}
	w, err := c.Data()
	if err != nil {
		return time.Time{}, err
	}
	if _, err := w.Write(raw); err != nil {
		return time.Time{}, err
	}
	if err := w.Close(); err != nil {
		return time.Time{}, err
	}
	acc := time.Now()
	_ = c.Quit()
	return acc, nil
}

func printDist(name string, ds []time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	fmt.Printf("%s n=%d p50_ms=%s p95_ms=%s min_ms=%s max_ms=%s\n", name, len(s),
		bench.Millis(bench.Percentile(s, 50)), bench.Millis(bench.Percentile(s, 95)),
		bench.Millis(bench.Percentile(s, 0)), bench.Millis(bench.Percentile(s, 100)))
}

func decided(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("decided", flag.ExitOnError)
	state := fs.String("state", "", "state directory of the (stopped) watcher")
	account := fs.String("account", "bench", "account name in the config")
	in := fs.String("in", "", "timings written by deliver")
	_ = fs.Parse(args)
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := store.Open(*state+"/mailagent.db", store.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	var idle, toFetch, toDecide, toDone, agentOnly []time.Duration
	sc := bufio.NewScanner(f)
	missing := 0
	for sc.Scan() {
		var t Timing
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return err
		}
		recs, err := st.FindByMessageID(*account, t.MessageID)
		if err != nil || len(recs) == 0 {
			missing++
			continue
		}
		rec := recs[0]
		tr, err := st.GetTrace(rec.TraceID)
		if err != nil {
			return fmt.Errorf("trace of %s: %w", t.MessageID, err)
		}
		var dec time.Time
		for _, s := range tr.Steps {
			if s.Name == "decide" {
				dec = s.Start.Add(time.Duration(s.LatencyMS) * time.Millisecond)
			}
		}
		if dec.IsZero() {
			missing++
			continue
		}
		idle = append(idle, t.Exists.Sub(t.Accepted))
		toFetch = append(toFetch, tr.Started.Sub(t.Accepted))
		toDecide = append(toDecide, dec.Sub(t.Accepted))
		toDone = append(toDone, rec.UpdatedAt.Sub(t.Accepted))
		agentOnly = append(agentOnly, dec.Sub(t.Exists))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	printDist("smtp_250_to_idle_exists(observer)", idle)
	printDist("smtp_250_to_pipeline_start", toFetch)
	printDist("smtp_250_to_decided", toDecide)
	printDist("smtp_250_to_record_done", toDone)
	printDist("observer_exists_to_decided", agentOnly)
	fmt.Printf("messages_without_decision=%d\n", missing)
	if len(toDecide) == 0 {
		return errors.New("no message reached a decision")
	}
	return nil
}

func seed(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	state := fs.String("state", "", "state directory")
	account := fs.String("account", "bench", "account name")
	n := fs.Int("n", 100000, "records")
	writers := fs.Int("writers", 32, "concurrent PutMessage callers (their commits are batched)")
	sends := fs.Int("sends", 0, "finished outbox records (and a few scheduled days ahead)")
	queue := fs.Int("queue", 0, "queue items, mostly closed, some pending and snoozed")
	reviewEvery := fs.Int("review-every", 0, "make every k-th record needs_review (0 = none): the watcher retries those at start-up, one IMAP round trip each")
	_ = fs.Parse(args)
	if err := os.MkdirAll(*state, 0o700); err != nil {
		return err
	}
	st, err := store.Open(*state+"/mailagent.db", store.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	base := time.Now().Add(-time.Duration(*n) * time.Minute)
	decisions := []string{"ignore", "archive", "queue", "archive"}
	start := time.Now()
	// Concurrent writers: store.PutMessage batches concurrent callers into
	// one commit (bbolt DB.Batch, 2 ms delay), so one writer alone would
	// wait 2 ms per record. Each record still goes through PutMessage, which
	// also writes the thread-input index the watcher rebuilds its threader
	// from. CreatedAt is set per record, so the index order does not depend
	// on the order of the writes.
	g, _ := errgroup.WithContext(context.Background())
	g.SetLimit(*writers)
	for i := 1; i <= *n; i++ {
		// A closed mailbox (UIDVALIDITY 1) that the watched INBOX never
		// reuses: the records weigh on the database and on the threader
		// built at start-up, as a long history would.
		mid := fmt.Sprintf("seed-%08d@history.example", i)
		rec := &store.MessageRecord{
			MessageKey: store.MessageKey{Account: *account, Mailbox: "Archive", UIDValidity: 1, UID: uint32(i)},
			MessageID:  mid,
			ThreadID:   mail.IDKey(fmt.Sprintf("seed-%08d@history.example", i-i%4+1)),
			From:       mail.Address{Name: "Sender Name", Email: fmt.Sprintf("sender%d@example.com", i%500)},
			To:         []mail.Address{{Name: "Bob", Email: "bob@example.test"}},
			Subject:    fmt.Sprintf("Re: quarterly planning meeting, item %d", i/4),
			Date:       base.Add(time.Duration(i) * time.Minute),
			Excerpt:    "Hi Bob, thanks for the notes. Could we move Thursday's call to Friday at 10? Best, Sender",
			Route:      "external",
			Decision:   decisions[i%len(decisions)],
			State:      store.StateDone,
			TraceID:    fmt.Sprintf("seed-trace-%d", i),
			CreatedAt:  base.Add(time.Duration(i) * time.Minute),
			UpdatedAt:  base.Add(time.Duration(i) * time.Minute),
		}
		if *reviewEvery > 0 && i%*reviewEvery == 0 {
			rec.State, rec.Decision, rec.Error = store.StateNeedsReview, "needs_review", "classification failed: seeded"
		}
		if i%4 != 1 {
			parent := fmt.Sprintf("seed-%08d@history.example", i-1)
			rec.InReplyTo = []string{parent}
			rec.References = []string{fmt.Sprintf("seed-%08d@history.example", i-i%4+1), parent}
		}
		g.Go(func() error {
			if err := st.PutMessage(rec); err != nil {
				return fmt.Errorf("put %d: %w", rec.UID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := seedSends(st, *account, *sends, *queue, *writers); err != nil {
		return err
	}
	var inputs int
	if err := st.ThreadInputs(time.Time{}, 0, func(mail.ThreadInput) error { inputs++; return nil }); err != nil {
		return err
	}
	fi, _ := os.Stat(*state + "/mailagent.db")
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Printf("seeded records=%d sends=%d queue=%d thread_inputs=%d db_bytes=%d writers=%d in %s\n", *n, *sends, *queue, inputs, size, *writers, time.Since(start).Round(time.Millisecond))
	return nil
}

// dbstats prints, per bucket, the number of keys and the bytes of the
// pages it holds, from a read-only open of the state database.
func dbstats(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("dbstats", flag.ExitOnError)
	state := fs.String("state", "", "state directory")
	_ = fs.Parse(args)
	path := *state + "/mailagent.db"
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	var parts []string
	err = db.View(func(tx *bolt.Tx) error {
		parts = append(parts, fmt.Sprintf("file_MiB=%.1f", float64(tx.Size())/(1<<20)))
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			if st.KeyN == 0 {
				return nil
			}
			pages := st.BranchPageN + st.BranchOverflowN + st.LeafPageN + st.LeafOverflowN
			parts = append(parts, fmt.Sprintf("%s: keys=%d pages_MiB=%.1f", name, st.KeyN, float64(pages*db.Info().PageSize)/(1<<20)))
			return nil
		})
	})
	if err != nil {
		return err
	}
	fmt.Println(strings.Join(parts, "; "))
	return nil
}

func rss(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("rss", flag.ExitOnError)
	pid := fs.Int("pid", 0, "process id")
	_ = fs.Parse(args)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", *pid))
	if err != nil {
		return err
	}
	var parts []string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM" && k != "RssAnon" && k != "RssFile") {
			continue
		}
		var kb int
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
			return fmt.Errorf("parse %s: %w", k, err)
		}
		parts = append(parts, fmt.Sprintf("%s_MiB=%.1f", k, float64(kb)/1024))
	}
	fmt.Println(strings.Join(parts, " "))
	return nil
}
