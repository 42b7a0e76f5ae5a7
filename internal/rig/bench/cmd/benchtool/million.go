package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/mailagent/mailagent/internal/rig/bench"
)

// maildir writes an N-message mailbox (bench.WriteMaildir) under a
// temporary name and renames it to -root when complete, so an interrupted
// build is never reused as a finished one.
func maildir(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("maildir", flag.ExitOnError)
	root := fs.String("root", "", "the user's Maildir to create (must not exist)")
	n := fs.Int("n", 10000, "messages")
	owner := fs.String("owner", "", "the owner's address (From of the Sent folder's mail)")
	years := fs.Int("years", 15, "dates spread over this many years before now")
	workers := fs.Int("workers", 4, "concurrent writers")
	_ = fs.Parse(args)
	if *root == "" || *owner == "" {
		return fmt.Errorf("need -root and -owner")
	}
	files, err := bench.CorpusFiles(bench.SpamAssassinDirs...)
	if err != nil {
		return err
	}
	corpus := make([][]byte, 0, len(files))
	for _, f := range files {
		raw, err := bench.ReadMessage(f)
		if err != nil {
			return err
		}
		corpus = append(corpus, raw)
	}
	tmp := *root + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	start := time.Now()
	st, err := bench.WriteMaildir(bench.MaildirSpec{Root: tmp, N: *n, Corpus: corpus, Owner: *owner,
		End: time.Now(), Years: *years, Workers: *workers})
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, *root); err != nil {
		return err
	}
	var names []string
	for f := range st.Folders {
		names = append(names, f)
	}
	slices.Sort(names)
	fmt.Printf("maildir messages=%d bytes=%d folders=%d root=%s in %s\n", *n, st.Bytes, len(names), *root, time.Since(start).Round(time.Millisecond))
	for _, f := range names {
		fmt.Printf("  %-14s %d\n", f, st.Folders[f])
	}
	return nil
}
