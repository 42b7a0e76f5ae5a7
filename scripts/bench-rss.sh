#!/usr/bin/env bash
# bench-rss.sh: resident memory of an idle `mailagent watch` whose state
# database holds N (default 100,000) message records, beside the same
# watcher on an empty database (the baseline) in the same run. RSS is
# VmRSS from /proc/PID/status: once the watcher is idle (+ SETTLE, default
# 3s), and again after one new message was delivered, synced and decided.
# VmHWM (peak) is printed too, and RSS split into RssAnon (heap, stacks)
# and RssFile (pages of the bbolt file mapped with mmap, which the kernel
# can reclaim). The watcher runs with GODEBUG=gctrace=1; the Go heap after
# the last GC is printed from that trace. BENCH_DROP_CACHE=1 evicts the
# DB file from the page cache before the watcher starts.
source "$(dirname "$0")/bench-lib.sh"
N=${N:-100000}
SETTLE=${SETTLE:-3}
USER_=bob@example.test
build
wait_imap
machine
"$BIN/benchtool" seed -state "$WORK/state-big" -account bench -n "$N" -review-every "${REVIEW_EVERY:-0}"
start_fake 0s
for run in empty big; do
	"$BIN/benchtool" synth -user "$USER_" -mailbox INBOX -n 0 >/dev/null
	state=$WORK/state-$run
	mkdir -p "$state"
	write_config "$WORK/config-$run.toml" "$state" "$USER_" INBOX 4
	# dbstats reads every page: run it before the cache is dropped.
	[[ -f $state/mailagent.db ]] && echo "$run records: $("$BIN/benchtool" dbstats -state "$state")"
	if [[ -n ${BENCH_DROP_CACHE:-} && -f $state/mailagent.db ]]; then
		# Evict the file from the page cache: pages the kernel maps around
		# a faulted page (fault-around) are then only those read from disk.
		dd if="$state/mailagent.db" iflag=nocache count=0 status=none
		echo "$run records: page cache of the DB file dropped"
	fi
	t0=$(now_s)
	GODEBUG=gctrace=1 start_watch "$WORK/config-$run.toml"
	t1=$(now_s)
	sleep "$SETTLE"
	printf '%-5s records: start-to-idle %.2f s; idle: %s\n' "$run" "$(echo "$t1 - $t0" | bc -l)" "$("$BIN/benchtool" rss -pid "$WATCH_PID")"
	"$BIN/benchtool" deliver -user "$USER_" -n 1 -gap 2s >/dev/null
	printf '%-5s records: after one message synced and decided: %s\n' "$run" "$("$BIN/benchtool" rss -pid "$WATCH_PID")"
	stop_pid "$WATCH_PID"
	echo "$run records: last gctrace line: $(grep '^gc ' "$WORK/watch.out" | tail -1)"
done
stop_pid "$FAKE_PID"
