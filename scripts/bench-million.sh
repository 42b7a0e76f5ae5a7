#!/usr/bin/env bash
# bench-million.sh: issue 28's "a million messages". Builds mailboxes of
# N = 10,000 / 100,000 / 1,000,000 messages on a private Dovecot (default
# settings, Maildir, port 10244: never the e2e stack's) and measures, for
# each, the figures BENCHMARKS.md's section "A million messages" tabulates.
#
#   bash scripts/bench-million.sh            # build what is missing, measure all sizes
#   SIZES="10000 100000" bash scripts/bench-million.sh
#   bash scripts/bench-million.sh build      # only build (and index) the mailboxes
#   bash scripts/bench-million.sh stop       # stop the private Dovecot
#
# The mailbox: `benchtool maildir` (bench.WriteMaildir) writes the
# SpamAssassin corpus (6,046 messages) round after round as Maildir++
# files, Message-IDs/In-Reply-To/References suffixed per round (threads
# kept), dates spread over 15 years (file mtime = INTERNALDATE), one in ten
# in Sent (From the owner), INBOX = the last 2 years, older mail in
# Archive/<year>. Dovecot indexes it on the first `doveadm mailbox status`
# (timed). A built mailbox is reused (its Maildir under
# $BENCH_MILLION_DIR/dovecot/mail is the cache; delete it to rebuild).
# The dates run up to the build time: rebuild when the "last 24 hours"
# (watch's first start) or "90 days" (triage, replay) should be today's.
#
# Per size it measures: `watch`'s first start to idle (and its CPU-s and
# the bytes of the sessions ended by then), and the bytes Dovecot sent it
# (its logout lines' out=, against the Sent folder's bytes), with the log
# line of the body pass over the owner's Sent mail that follows idle; APPEND → decided (REPS messages) against an IDLE observer's
# EXISTS; idle CPU over IDLE_SECS; VmHWM and VmRSS; `triage --since 90d`
# and `replay --since 90d` msg/s (zero-latency fake Gemini); the state
# database's bytes per message with trace snapshots on and off; and the
# wall time of `status --json`, `queue list --json`, `search_mail` through
# `mailagent mcp` (stdio JSON-RPC) and the TUI's first frame (`review` in
# a private tmux server, until its tab bar shows) against triage's
# database, best and median of RUNS. Disk and time: 1M is 6.9 GB, written
# in about 3.5 min, and Dovecot's first index of it takes about 13 min.
# Env: SIZES, RUNS (default 5), REPS (default 5), IDLE_SECS (default 60),
# ONLY=watch (the watch figures alone: start, idle, RSS, new mail),
# BENCH_MILLION_DIR (default /tmp/mailagent-million), BENCH_MILLION_PORT
# (default 10244).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIZES=${SIZES:-10000 100000 1000000}
MDIR=${BENCH_MILLION_DIR:-/tmp/mailagent-million}
PORT=${BENCH_MILLION_PORT:-10244}
DDIR=$MDIR/dovecot
RUNS=${RUNS:-5}
REPS=${REPS:-5}
IDLE_SECS=${IDLE_SECS:-60}
# Every size's user exists, whatever SIZES is this time.
ALLUSERS="m10000@example.test m100000@example.test m1000000@example.test"
for n in $SIZES; do [[ " $ALLUSERS " == *" m$n@"* ]] || ALLUSERS+=" m$n@example.test"; done

if [[ ${1:-} == stop ]]; then
	BENCH_DOVECOT_DIR=$DDIR bash "$HERE/bench-dovecot-default.sh" stop
	exit 0
fi
# The private Dovecot (restarted: its mail stays), then the shared helpers
# pointed at it.
BENCH_DOVECOT_DIR=$DDIR BENCH_DOVECOT_PORT=$PORT BENCH_DOVECOT_USERS="$ALLUSERS" \
	bash "$HERE/bench-dovecot-default.sh" start
export MAILAGENT_E2E_ENV=$DDIR/env
source "$HERE/bench-lib.sh"

# build_one N: writes m<N>'s Maildir unless it is there, then lets Dovecot
# index every folder (timed).
build_one() {
	local n=$1 user=m$1@example.test root=$DDIR/mail/example.test/m$1/Maildir t0
	if [[ ! -d $root ]]; then
		mkdir -p "$(dirname "$root")"
		t0=$(now_s)
		(cd "$REPO" && "$BIN/benchtool" maildir -root "$root" -n "$n" -owner "$user")
		printf 'm%s: files written in %.1f s\n' "$n" "$(echo "$(now_s) - $t0" | bc -l)"
	fi
	[[ $(stat -c %U "$root") == vmail ]] || chown -R vmail:vmail "$(dirname "$root")"
	t0=$(now_s)
	doveadm -c "$DDIR/dovecot.conf" mailbox status -u "$user" -t 'messages vsize' '*'
	printf 'm%s: doveadm mailbox status (index) %.1f s; Maildir %s\n' "$n" "$(echo "$(now_s) - $t0" | bc -l)" "$(du -sh "$root" | cut -f1)"
}
build
machine
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

# build_one N: writes m<N>'s Maildir unless it is there, then lets Dovecot
# sync every folder (its index, timed; the first sync of a million files).
build_one() {
	local n=$1 user=m$1@example.test root=$DDIR/mail/example.test/m$1/Maildir t0
	if [[ ! -d $root ]]; then
		mkdir -p "$(dirname "$root")"
		t0=$(now_s)
		(cd "$REPO" && "$BIN/benchtool" maildir -root "$root" -n "$n" -owner "$user")
		printf 'm%s: files written in %.1f s\n' "$n" "$(echo "$(now_s) - $t0" | bc -l)"
	fi
	[[ $(stat -c %U "$root") == vmail ]] || chown -R vmail:vmail "$(dirname "$root")"
	t0=$(now_s)
	doveadm -c "$DDIR/dovecot.conf" mailbox status -u "$user" -t 'messages vsize' '*'
	printf 'm%s: doveadm mailbox status (sync and index) %.1f s; Maildir %s\n' "$n" "$(echo "$(now_s) - $t0" | bc -l)" "$(du -sh "$root" | cut -f1)"
}

# window ROOT FOLDER SECS: "count bytes" of FOLDER's files dated within
# SECS of now (the name's leading unix time, its S= size).
window() {
	local dir=$1
	[[ $2 != INBOX ]] && dir=$1/.$2
	find "$dir/cur" -type f -printf '%f\n' | awk -F'[.,=:]' -v since=$(($(date +%s) - $3)) \
		'$1 >= since { n++; for (i = 1; i < NF; i++) if ($i == "S") b += $(i + 1) } END { printf "%d %d", n, b }'
}

# out_bytes USER FROMLINE: the bytes Dovecot sent USER's sessions that
# ended after line FROMLINE of its log (the out= of each logout line).
out_bytes() {
	tail -n +"$(($2 + 1))" "$DDIR/dovecot.log" | grep -F "imap($1)" | sed -n 's/.* out=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'
}

# timed RUNS CMD...: runs CMD RUNS times (output discarded), prints
# "best_ms median_ms".
timed() {
	local r=$1 i t0 d ds=()
	shift
	for i in $(seq "$r"); do
		t0=$(now_s)
		"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
		d=$(echo "($(now_s) - $t0) * 1000" | bc -l)
		ds+=("$d")
	done
	printf '%.1f %.1f' "$(printf '%s\n' "${ds[@]}" | sort -g | head -1)" "$(median "${ds[@]}")"
}

cat >"$WORK/mcp.py" <<'PY'
# One `mailagent mcp` over stdio: initialize, then one tools/call; prints
# the milliseconds from spawn to the call's answer. argv: config tool json-args
import json, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen([sys.argv[1], "--config", sys.argv[2], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"); p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
r = call(2, "tools/call", {"name": sys.argv[3], "arguments": json.loads(sys.argv[4])})
ms = (time.monotonic() - t0) * 1000
res = r.get("result", {})
if "error" in r or res.get("isError"):
    sys.exit("mcp error: " + json.dumps(r)[:300])
sc = res.get("structuredContent", {})
print("%.1f %d" % (ms, len(sc.get("messages", []))))
p.stdin.close(); p.wait()
PY

# mcp_timed RUNS CONFIG TOOL ARGS: "best_ms median_ms messages".
mcp_timed() {
	local i out ds=() n=0
	for i in $(seq "$1"); do
		out=$(python3 "$WORK/mcp.py" "$BIN/mailagent" "$2" "$3" "$4")
		ds+=("${out% *}")
		n=${out#* }
	done
	printf '%.1f %.1f %s' "$(printf '%s\n' "${ds[@]}" | sort -g | head -1)" "$(median "${ds[@]}")" "$n"
}

# tui_open CONFIG: ms from starting `mailagent review` in a detached tmux
# pane (160x50) to its first frame showing the status line.
tui_open() {
	local s=million-$$-$RANDOM t0 i
	t0=$(now_s)
	# A tmux server of its own (-L): other sessions' servers are not ours.
	tmux -L "$s" new-session -d -s "$s" -x 160 -y 50 "$BIN/mailagent --config $1 review; sleep 5"
	for i in $(seq 2000); do
		if tmux -L "$s" capture-pane -p -t "$s" 2>/dev/null | grep -q -E 'watcher|no watcher|queue|Queue'; then break; fi
		sleep 0.005
	done
	printf '%.1f\n' "$(echo "($(now_s) - $t0) * 1000" | bc -l)"
	tmux -L "$s" kill-server 2>/dev/null || true
}

tui_timed() {
	local i ds=()
	for i in $(seq "$1"); do ds+=("$(tui_open "$2")"); done
	printf '%.1f %.1f' "$(printf '%s\n' "${ds[@]}" | sort -g | head -1)" "$(median "${ds[@]}")"
}

# million_start_watch CONFIG DB: bench-lib's start_watch, but `status` is
# polled only once watch has written its database (a `status` racing the
# database's creation under load 40 once left watch an empty file).
million_start_watch() {
	"$BIN/mailagent" --config "$1" watch >"$WORK/watch.out" 2>&1 </dev/null &
	WATCH_PID=$!
	BG_PIDS+=("$WATCH_PID")
	local i
	for i in $(seq 12000); do
		if [[ -s $2 ]] && "$BIN/mailagent" --config "$1" status --json 2>/dev/null | tr -d ' \n' | grep -q '"state":"idle"'; then
			return 0
		fi
		if ! kill -0 "$WATCH_PID" 2>/dev/null; then
			echo "watch exited:" >&2; cat "$WORK/watch.out" >&2; exit 1
		fi
		sleep 0.05
	done
	echo "watch never reported idle" >&2
	exit 1
}

# measure_one N: every figure for the m<N> mailbox.
measure_one() {
	local n=$1 user=m$1@example.test root=$DDIR/mail/example.test/m$1/Maildir
	local st=$WORK/m$n cfg t0 t1 mark sent d
	echo "=== m$n ($n messages) load: $(cut -d' ' -f1-3 /proc/loadavg)"
	for f in INBOX Sent; do echo "window $f 24h: $(window "$root" $f 86400)  90d: $(window "$root" $f 7776000)  365d: $(window "$root" $f 31536000) (messages bytes)"; done
	start_fake 0s
	mkdir -p "$st"
	cfg=$st/watch.toml
	write_config "$cfg" "$st/watch" "$user" INBOX 4

	# 1. watch's first start to idle, and what Dovecot sent it.
	mark=$(wc -l <"$DDIR/dovecot.log")
	t0=$(now_s)
	million_start_watch "$cfg" "$st/watch/mailagent.db"
	t1=$(now_s)
	printf 'watch_first_start_to_idle_s=%.2f\n' "$(echo "$t1 - $t0" | bc -l)"
	echo "watch: cpu_s_until_idle=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$WATCH_PID/stat")"
	# The sessions ended by then (the Sent scan's; not the INBOX's).
	echo "watch: dovecot_out_bytes_of_sessions_ended_by_idle=$(out_bytes "$user" "$mark")"
	echo "rss after start: $("$BIN/benchtool" rss -pid "$WATCH_PID")"
	# 2. idle CPU.
	echo "idle: $("$BIN/benchtool" cpu -pid "$WATCH_PID" -for "${IDLE_SECS}s")"
	# 3. new mail → decision.
	"$BIN/benchtool" deliver -via append -user "$user" -n "$REPS" -gap 1s -out "$st/deliver.jsonl" >/dev/null
	sleep 5 # Dovecot's own notify is seconds late on a 100k-message INBOX: let the last one be decided
	echo "rss after $REPS new: $("$BIN/benchtool" rss -pid "$WATCH_PID")"
	stop_pid "$WATCH_PID"
	sleep 0.5
	echo "watch: dovecot_out_bytes=$(out_bytes "$user" "$mark") (Sent 365d whole: $(window "$root" Sent 31536000 | cut -d' ' -f2) bytes)"
	grep -h "owner's Sent mail read" "$st/watch/mailagent.log" || true # the body pass after idle, if any
	"$BIN/benchtool" decided -state "$st/watch" -account bench -in "$st/deliver.jsonl" | sed 's/smtp_250/append_ok/'
	"$BIN/benchtool" dbstats -state "$st/watch"
	if [[ ${ONLY:-} == watch ]]; then stop_pid "$FAKE_PID"; return; fi

	# 4. triage --since 90d, snapshots on then off: msg/s and DB bytes.
	for snaps in true false; do
		write_config "$st/triage-$snaps.toml" "$st/triage-$snaps" "$user" INBOX 4
		printf '[trace]\nsnapshots = %s\n' "$snaps" >>"$st/triage-$snaps.toml"
		t0=$(now_s)
		"$BIN/mailagent" --config "$st/triage-$snaps.toml" triage --since 90d >/dev/null 2>"$st/triage.err" || [[ $? -eq 5 ]] || { cat "$st/triage.err" >&2; exit 1; }
		d=$(echo "$(now_s) - $t0" | bc -l)
		local msgs
		msgs=$(sed -n 's/^triaged *\([0-9]*\).*/\1/p' "$st/triage.err" | head -1)
		local db
		db=$(stat -c %s "$st/triage-$snaps/mailagent.db")
		printf 'triage_since_90d snapshots=%s s=%.2f messages=%s msg_per_s=%.0f db_bytes=%s bytes_per_msg=%.0f\n' "$snaps" "$d" "${msgs:-0}" \
			"$(echo "${msgs:-0} / $d" | bc -l)" "$db" "$(echo "$db / (${msgs:-0} + 0.000001)" | bc -l)"
		grep -m1 '^triaged' "$st/triage.err" || true
		"$BIN/benchtool" dbstats -state "$st/triage-$snaps"
	done

	# 5. replay --since 90d (its own results file, fresh).
	t0=$(now_s)
	"$BIN/mailagent" --config "$st/triage-true.toml" replay --since 90d --fresh --json >"$st/replay.json" 2>"$st/replay.err" || { tail -3 "$st/replay.err" >&2; }
	d=$(echo "$(now_s) - $t0" | bc -l)
	msgs=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("messages") or r.get("total") or r.get("replayed") or 0)' "$st/replay.json" 2>/dev/null || echo 0)
	printf 'replay_since_90d s=%.2f messages=%s msg_per_s=%.0f\n' "$d" "$msgs" "$(echo "$msgs / $d" | bc -l)"

	# 6. reads against triage's database (snapshots on).
	c=$st/triage-true.toml
	echo "status_json_ms best/median: $(timed "$RUNS" "$BIN/mailagent" --config "$c" status --json)"
	echo "queue_list_json_ms best/median: $(timed "$RUNS" "$BIN/mailagent" --config "$c" queue list --json)"
	echo "mcp_search_mail_first_page_ms best/median/messages: $(mcp_timed "$RUNS" "$c" search_mail '{}')"
	echo "mcp_search_mail_no_match_ms best/median/messages: $(mcp_timed "$RUNS" "$c" search_mail '{"subject":"zzqqxxnomatch"}')"
	echo "tui_first_frame_ms best/median: $(tui_timed "$RUNS" "$c")"
	stop_pid "$FAKE_PID"
}

case ${1:-} in
build) for n in $SIZES; do build_one "$n"; done ;;
"") for n in $SIZES; do build_one "$n"; done
	for n in $SIZES; do measure_one "$n"; done
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" ;;
*) echo "usage: $0 [build|stop]" >&2; exit 2 ;;
esac
