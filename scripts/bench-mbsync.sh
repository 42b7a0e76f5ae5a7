#!/usr/bin/env bash
# bench-mbsync.sh: mbsync alone, alternating over several (Dovecot,
# mailbox) targets, to tell what makes mbsync's pull faster on one Dovecot
# than on another (issue 28). Each target is ENVFILE:MAILBOX (the env file
# of a stack, e.g. /tmp/mailagent-e2e/env or the one
# scripts/bench-dovecot-default.sh writes; the mailbox of carol@example.test,
# loaded before with benchtool load). For each run: wall time, mbsync's
# user and system CPU (/usr/bin/time), and with STRACE=1 one extra run per
# target under strace -f -c (mbsync's own syscalls: its fsync per file).
# MBSYNC_FSYNC=no sets mbsync's FSync off (what its own fsyncs cost).
#
#   RUNS=3 bash scripts/bench-mbsync.sh /tmp/mailagent-e2e/env:bench-h28 \
#       /tmp/mailagent-bench-dovecot/env:bench-ingest
set -euo pipefail
RUNS=${RUNS:-3}
WORK=$(mktemp -d /tmp/mailagent-mbsync.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) load: $(cut -d' ' -f1-3 /proc/loadavg) mbsync FSync ${MBSYNC_FSYNC:-yes}"
rc_for() { # rc_for N ENVFILE MAILBOX: writes $WORK/rcN
	local n=$1 env=$2 mbox=$3
	(
		# shellcheck disable=SC1090
		source "$env"
		pass=$(tr ',' '\n' <<<"$MAILAGENT_E2E_USERS" | awk -F: '$1=="carol@example.test" {print $2}')
		cat >"$WORK/rc$n" <<RC
FSync ${MBSYNC_FSYNC:-yes}

IMAPAccount a
Host $MAILAGENT_E2E_IMAP_HOST
Port $MAILAGENT_E2E_IMAP_PORT
User carol@example.test
Pass $pass
SSLType None
AuthMechs LOGIN

IMAPStore remote
Account a

MaildirStore local
Path $WORK/md$n/
Inbox $WORK/md$n/INBOX
SubFolders Verbatim

Channel c
Far :remote:$mbox
Near :local:$mbox
Sync Pull
Create Near
SyncState *
RC
		chmod 600 "$WORK/rc$n"
	)
}
targets=("$@")
for i in "${!targets[@]}"; do rc_for "$i" "${targets[$i]%%:*}" "${targets[$i]#*:}"; done
pull() { # pull N [PREFIX...]: one fresh pull of target N; sets T, U, S
	rm -rf "$WORK/md$1"; mkdir -p "$WORK/md$1"
	local n=$1; shift
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S' -o "$WORK/time" "$@" mbsync -c "$WORK/rc$n" -q c
	t1=$(date +%s.%N)
	T=$(echo "$t1 - $t0" | bc -l); read -r U S <"$WORK/time"
}
for i in "${!targets[@]}"; do pull "$i"; printf 'warm-up %-50s %7.3f s\n' "${targets[$i]}" "$T"; done
declare -A all
for r in $(seq "$RUNS"); do
	for i in "${!targets[@]}"; do
		pull "$i"
		all[$i]+="$T "
		printf 'run %d %-50s wall %7.3f s  user %5.2f s  sys %5.2f s  files %d\n' "$r" "${targets[$i]}" "$T" "$U" "$S" \
			"$(find "$WORK/md$i" -type f -path '*/cur/*' -o -type f -path '*/new/*' | wc -l)"
	done
done
for i in "${!targets[@]}"; do
	# shellcheck disable=SC2086
	printf '%s\n' ${all[$i]} | sort -g | awk -v l="${targets[$i]}" '{a[NR]=$1} END {printf "%-50s best %.3f median %.3f s\n", l, a[1], a[int((NR+1)/2)]}'
done
if [[ -n ${STRACE:-} ]]; then
	for i in "${!targets[@]}"; do
		pull "$i" strace -f -c -o "$WORK/strace$i"
		echo "--- strace -f -c, one pull of ${targets[$i]} (wall $T s under strace)"
		grep -E 'calls|fsync|fdatasync|rename|openat|write|read|poll|total' "$WORK/strace$i" | head -14
	done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
