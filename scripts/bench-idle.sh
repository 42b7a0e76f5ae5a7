#!/usr/bin/env bash
# bench-idle.sh: CPU used by an idle `mailagent watch` whose state database
# holds a long history: N (default 100,000) message records, SENDS (10,000)
# finished sends and QUEUE (5,000) queue items (benchtool seed). The
# watcher runs against the e2e Dovecot (IMAP IDLE on an empty INBOX); once
# it reports idle and SETTLE seconds (default 10) have passed, its CPU
# time (utime+stime from /proc/PID/stat) is read over IDLE seconds
# (default 60) and printed as % of one core, with its voluntary context
# switches per second (wake-ups). The same run is made with the binary of
# BASE (default: the commit before the due-time timer replaced the 1 s
# ticker), alternating, REPS times (default 3); best and median of each
# are printed last. Every run starts from a fresh copy of the seeded
# database.
source "$(dirname "$0")/bench-lib.sh"
N=${N:-100000}
SENDS=${SENDS:-10000}
QUEUE=${QUEUE:-5000}
SETTLE=${SETTLE:-10}
IDLE=${IDLE:-60}
REPS=${REPS:-3}
USER_=bob@example.test
if [[ -z ${BASE:-} ]]; then
	first=$(cd "$REPO" && git log --reverse --format=%H -S'func (d *Daemon) dueLoop' -- internal/daemon/daemon.go internal/app/daemon/daemon.go | head -1)
	BASE=${first:+$first^}
	BASE=${BASE:-HEAD}
fi
BASE=$(cd "$REPO" && git rev-parse --short "$BASE")
build
mkdir -p "$WORK/base-src"
(cd "$REPO" && git archive "$BASE") | tar -x -C "$WORK/base-src"
(cd "$WORK/base-src" && go build -o "$BIN/mailagent-base" ./cmd/mailagent)
cp "$BIN/mailagent" "$BIN/mailagent-new"
wait_imap
machine
echo "base: $BASE  new: $(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD -- . || echo '+dirty')"
"$BIN/benchtool" seed -state "$WORK/seed" -account bench -n "$N" -sends "$SENDS" -queue "$QUEUE"
echo "seeded: $("$BIN/benchtool" dbstats -state "$WORK/seed")"
"$BIN/benchtool" synth -user "$USER_" -mailbox INBOX -n 0 >/dev/null
start_fake 0s
declare -A PCTS
for rep in $(seq "$REPS"); do
	for which in base new; do
		state=$WORK/state-$which-$rep
		cp -r "$WORK/seed" "$state"
		write_config "$WORK/config-$which.toml" "$state" "$USER_" INBOX 4
		cp "$BIN/mailagent-$which" "$BIN/mailagent" # start_watch runs $BIN/mailagent
		start_watch "$WORK/config-$which.toml"
		sleep "$SETTLE"
		out=$("$BIN/benchtool" cpu -pid "$WATCH_PID" -for "${IDLE}s")
		state_now=$("$BIN/mailagent" --config "$WORK/config-$which.toml" status --json 2>/dev/null | tr -d ' \n' | grep -o '"state":"[a-z]*"' | head -1)
		stop_pid "$WATCH_PID"
		echo "run $rep $which: $out $state_now"
		pct=${out#*pct_core=}
		PCTS[$which]+="${pct%% *} "
	done
done
stop_pid "$FAKE_PID"
for which in base new; do
	# shellcheck disable=SC2086
	best=$(printf '%s\n' ${PCTS[$which]} | sort -g | head -1)
	# shellcheck disable=SC2086
	echo "$which ($([[ $which == base ]] && echo "$BASE" || echo HEAD)): % of one core over ${IDLE}s idle: best $best, median $(median ${PCTS[$which]}) (runs: ${PCTS[$which]% })"
done
