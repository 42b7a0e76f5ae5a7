package doctor

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/store"
)

// addRepairFlag adds --repair to the doctor command.
func addRepairFlag(cmd *cobra.Command, opts *DoctorOptions) {
	cmd.Flags().BoolVar(&opts.Repair, "repair", false,
		"salvage a damaged state database: copy what is readable into a new file and keep the damaged one as <name>.damaged-<time>")
}

// repairRun is `mailagent doctor --repair`. A healthy database is left
// alone (exit 0). A damaged one is salvaged (store.Repair): exit 0 when
// nothing was lost, 5 when some records could not be read. It refuses to
// run while a watcher holds the database (exit 4).
func repairRun(opts *DoctorOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	path := cmdutil.DBPath(cfg)
	if _, err := os.Stat(path); err != nil {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no state database to repair at %s: %w", path, err)}
	}
	st, err := store.Open(path, store.Options{ReadOnly: true})
	if err == nil {
		err = st.Check()
		_ = st.Close()
		if err == nil {
			if opts.JSON {
				return cmdutil.WriteJSON(opts.IO.Out, map[string]any{"path": path, "healthy": true})
			}
			fmt.Fprintf(opts.IO.Out, "the state database %s is healthy; nothing to repair\n", path)
			return nil
		}
	}
	if errors.Is(err, store.ErrLocked) {
		return err
	}
	if !errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("check %s: %w", path, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "damage found: %v\n", errors.Unwrap(err))
	rep, err := store.Repair(path)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if opts.JSON {
		if err := cmdutil.WriteJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		if rep.Opened {
			fmt.Fprintf(opts.IO.Out, "repaired %s: %d records salvaged, %d unreadable stretches or records lost\n", path, rep.TotalCopied(), rep.TotalLost())
		} else {
			// Nothing could be read at all: "0 lost" would be a lie.
			fmt.Fprintf(opts.IO.Out, "repaired %s: nothing could be salvaged (no readable page); how much was lost is unknown\n", path)
		}
		names := make([]string, 0, len(rep.Copied))
		for k := range rep.Copied {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(opts.IO.Out, "  %-14s %d\n", k, rep.Copied[k])
		}
		fmt.Fprintf(opts.IO.Out, "the damaged file is kept as %s\n", rep.DamagedPath)
		for _, p := range rep.Problems {
			fmt.Fprintf(opts.IO.ErrOut, "  %s\n", p)
		}
	}
	if rep.TotalLost() > 0 || !rep.Opened {
		fmt.Fprintln(opts.IO.ErrOut, "some records could not be read; messages whose record was lost are processed again by the next watch")
		return cmdutil.ErrPartial
	}
	return nil
}
