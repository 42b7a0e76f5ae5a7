#!/usr/bin/env bash
# e2e-realservers.sh runs the real Debian Courier-IMAP (5.0.13) and Cyrus
# IMAP (3.6.1) beside the stack's Dovecot, for mailagent's tests of bare
# accounts and of push latency on servers that poll.
#
# Debian's courier-imap and cyrus-imapd conflict with dovecot-imapd, so
# they are never installed: `install` downloads their .debs and the
# dependencies this host lacks (apt-get download, as apt would resolve an
# install of each) and unpacks them with dpkg -x into a private root
# (E2E_DEBS_DIR, default /opt/mailagent-e2e-debs). Each server then runs in
# a mount and PID namespace of its own (unshare) where that root is laid
# over /usr and /etc (overlayfs, read-only) and its config files are bound
# over the stock ones, so the binaries find the paths they were built with
# and nothing on the host changes. Stopping an instance ends its namespace
# and every process in it.
#
# Four instances, every account bare (INBOX alone, as a new account on
# these servers is), users and passwords as the main stack's:
#   courier        Courier-IMAP, stock Debian settings (IMAP_ENHANCEDIDLE=0:
#                  IDLE is a 60 s poll), port E2E_COURIERREAL_IMAP_PORT (10146)
#   courier-idle   the same with the fix, IMAP_ENHANCEDIDLE=1 (FAM through
#                  gamin's gam_server, started by libgamin on demand),
#                  port E2E_COURIERREAL_IDLE_IMAP_PORT (10148)
#   cyrus          Cyrus IMAP, stock Debian cyrus.conf (no idled: IDLE
#                  polls every imapidlepoll, 60 s), port E2E_CYRUS_IMAP_PORT (10147)
#   cyrus-idled    the same with idled in DAEMON, port E2E_CYRUS_IDLED_IMAP_PORT (10149)
# Every port speaks plaintext and STARTTLS with the stack's certificate.
# Courier authenticates through courier-authlib's authdaemond and a private
# userdb; Cyrus through SASL auxprop with a private sasldb.
#
# Usage:
#   scripts/e2e-realservers.sh install        download and unpack (root)
#   scripts/e2e-realservers.sh start [DIR]    (re)start all four, add env lines
#   scripts/e2e-realservers.sh stop [DIR]     stop all four
#   scripts/e2e-realservers.sh env [DIR]      print their env lines
#   scripts/e2e-realservers.sh status [DIR]   say what is running
#
# scripts/e2e-stack.sh calls install and start/stop itself. When the
# packages cannot be had, start says so and exits 0 without env lines: the
# stack runs on, and the tests of these servers skip with that reason.
set -euo pipefail

DIR=${2:-${MAILAGENT_E2E_DIR:-/tmp/mailagent-e2e}}
HOST=127.0.0.1
DOMAIN=example.test
USERS="ada bob carol sink corpus"
START_TIMEOUT=${E2E_START_TIMEOUT:-30}
DEBS_DIR=${E2E_DEBS_DIR:-/opt/mailagent-e2e-debs}
ROOT=$DEBS_DIR/root
RDIR=$DIR/realservers
ENV_FILE=$RDIR/env

COURIER_PORT=${E2E_COURIERREAL_IMAP_PORT:-10146}
COURIER_IDLE_PORT=${E2E_COURIERREAL_IDLE_IMAP_PORT:-10148}
CYRUS_PORT=${E2E_CYRUS_IMAP_PORT:-10147}
CYRUS_IDLED_PORT=${E2E_CYRUS_IDLED_IMAP_PORT:-10149}

# What apt would install for each server (resolved separately: the two
# conflict with each other and with dovecot-imapd).
COURIER_PACKAGES="courier-imap"
CYRUS_PACKAGES="cyrus-imapd sasl2-bin"

LOG_TAG=e2e-realservers
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

# ---------------------------------------------------------------------------
# install

# resolve PKG...: the packages apt would install (or upgrade) for PKG on
# this host, from a simulated install (nothing is changed).
resolve() {
	apt-get install -s --no-install-recommends "$@" 2>/dev/null |
		sed -n 's/^Inst \([^ ]*\) .*/\1/p'
}

# fixup_root: what the packages' maintainer scripts would have done that
# the servers need: update-alternatives' links to Courier's makedat and
# maildirmake.
fixup_root() {
	ln -sfn makedat.courier "$ROOT/usr/bin/makedat"
	ln -sfn maildirmake.courier "$ROOT/usr/bin/maildirmake"
}

cmd_install() {
	if [[ -e $ROOT/.complete ]]; then
		fixup_root
		return 0
	fi
	[[ $(id -u) -eq 0 ]] || die "install must run as root"
	local pkgs t
	# A fresh machine has no package lists.
	if ! apt-cache show courier-imap >/dev/null 2>&1; then
		apt-get update -qq || die "apt-get update failed"
	fi
	# shellcheck disable=SC2086
	pkgs="$(resolve $COURIER_PACKAGES) $(resolve $CYRUS_PACKAGES)"
	[[ $pkgs == *courier-imap* && $pkgs == *cyrus-imapd* ]] ||
		die "apt cannot resolve $COURIER_PACKAGES / $CYRUS_PACKAGES on this host"
	log "downloading: $pkgs"
	mkdir -p "$DEBS_DIR/debs"
	t=$(mktemp -d "$DEBS_DIR/root.XXXXXX")
	# apt-get download writes into the current directory.
	# shellcheck disable=SC2086
	(cd "$DEBS_DIR/debs" && apt-get download -qq $pkgs 2>&1 | grep -v 'unsandboxed' >&2 || true)
	local p f
	for p in $pkgs; do
		f=$(find "$DEBS_DIR/debs" -maxdepth 1 -name "${p}_*.deb" | head -n 1)
		[[ -n $f ]] || die "apt-get download $p failed"
		dpkg -x "$f" "$t" || die "dpkg -x $f failed"
	done
	# Debian 12 merged /lib into /usr/lib; some packages still ship /lib.
	if [[ -d $t/lib ]]; then
		cp -a "$t/lib/." "$t/usr/lib/"
	fi
	echo "$pkgs" >"$t/.complete"
	rm -rf "$ROOT"
	mv "$t" "$ROOT"
	chmod 0755 "$ROOT"
	fixup_root
	log "unpacked into $ROOT"
}

# ---------------------------------------------------------------------------
# namespaces

# ns_run NAME SCRIPT ARGS...: start SCRIPT (bash) as PID 1 of a new mount
# and PID namespace where ROOT lies over /usr and /etc and RDIR/NAME/run
# is /run; unshare's pid goes to RDIR/NAME/ns.pid. SCRIPT sets up the
# rest and must stay in the foreground (it is the namespace's init).
ns_run() {
	local name=$1 script=$2
	shift 2
	local d=$RDIR/$name
	mkdir -p "$d/run"
	# shellcheck disable=SC2016 # expanded by the inner bash
	setsid unshare --mount --pid --fork --kill-child --mount-proc --propagation private \
		bash -c '
			set -e
			mount -t overlay overlay -o lowerdir="$1/usr":/usr /usr
			mount -t overlay overlay -o lowerdir="$1/etc":/etc /etc
			mount --bind "$2/run" /run
			shift 2
			exec bash "$@"' _ "$ROOT" "$d" "$script" "$@" \
		</dev/null >>"$d/ns.log" 2>&1 &
	echo $! >"$d/ns.pid"
	disown $!
}

ns_stop() {
	local name=$1 pid i
	pid=$(pid_from "$RDIR/$name/ns.pid") || return 0
	# --kill-child: unshare's death SIGKILLs the namespace's init, and
	# with it every process in the namespace.
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		any_alive "$pid" || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$RDIR/$name/ns.pid"
}

# init_loop: the last line of a namespace's script: reap orphans forever.
INIT_LOOP='while :; do sleep 3600 & wait $! || true; done'

# ---------------------------------------------------------------------------
# Courier-IMAP

# courier_write NAME PORT ENHANCEDIDLE: the instance's /etc/courier (a copy
# of Debian's, changed only where the paths, the port and ENHANCEDIDLE
# must be), its userdb, and fresh maildirs with INBOX alone.
courier_write() {
	local name=$1 port=$2 enhanced=$3 d=$RDIR/$1 u uid gid
	uid=$(id -u vmail)
	gid=$(id -g vmail)
	rm -rf "$d/etc" "$d/mail"
	mkdir -p "$d/etc" "$d/mail" "$d/run"
	cp -a "$ROOT/etc/courier/." "$d/etc/"
	# Stock settings, listening on loopback at PORT; TLS with the stack's
	# certificate (Courier wants key and certificate in one file).
	sed -i -e "s|^ADDRESS=.*|ADDRESS=$HOST|" -e "s|^PORT=.*|PORT=$port|" \
		-e "s|^IMAP_ENHANCEDIDLE=.*|IMAP_ENHANCEDIDLE=$enhanced|" \
		"$d/etc/imapd"
	cat "$DIR/server.key" "$DIR/server.pem" >"$d/etc/imapd.pem"
	chmod 0600 "$d/etc/imapd.pem"
	chown vmail:vmail "$d/etc/imapd.pem" # read by couriertls as "courier"
	sed -i -e 's|^TLS_CACHEFILE=.*|TLS_CACHEFILE=|' "$d/etc/imapd-ssl"
	# imapd talks to FAM (gamin's gam_server, one per user) through an
	# abstract socket, which every namespace on the host shares; a
	# gam_server aborts on a client of another PID namespace. Each
	# instance gets a socket name of its own (the start script exports
	# every variable of this file).
	printf '\n# Added by scripts/e2e-realservers.sh\nGAM_CLIENT_ID=mailagent-e2e-%s\n' "$port" >>"$d/etc/imapd"
	sed -i -e 's|^authmodulelist=.*|authmodulelist="authuserdb"|' "$d/etc/authdaemonrc"
	: >"$d/etc/userdb"
	for u in $USERS; do
		mkdir -p "$d/mail/$u"
		printf '%s@%s\tuid=%s|gid=%s|home=%s|mail=%s|systempw=%s\n' \
			"$u" "$DOMAIN" "$uid" "$gid" "$d/mail/$u" "$d/mail/$u/Maildir" \
			"$(openssl passwd -6 "$u-pass")" >>"$d/etc/userdb"
	done
	chmod 0600 "$d/etc/userdb"
	chown -R vmail:vmail "$d/mail"
	: >"$d/ns.log"
}

# The namespace's script: the maildirs, userdb.dat, authdaemond, then
# Debian's own start script of the IMAP listener.
# shellcheck disable=SC2016
COURIER_INIT='
set -e
d=$1
mount --bind "$d/etc" /etc/courier
# couriertls runs as the user "courier" (the package would create it):
# here a name for vmail, in this namespace only.
cp /etc/passwd "$d/passwd"
cp /etc/group "$d/group"
echo "courier:x:$(id -u vmail):$(id -g vmail):Courier:/nonexistent:/usr/sbin/nologin" >>"$d/passwd"
echo "courier:x:$(id -g vmail):" >>"$d/group"
mount --bind "$d/passwd" /etc/passwd
mount --bind "$d/group" /etc/group
certtool --get-dh-params --sec-param medium >/etc/courier/dhparams.pem 2>/dev/null
for m in "$d"/mail/*; do
	setpriv --reuid=vmail --regid=vmail --clear-groups maildirmake.courier "$m/Maildir"
done
makeuserdb
mkdir -p /run/courier/authdaemon
/usr/sbin/courierlogger -pid=/run/courier/authdaemon/pid -start /usr/lib/courier/courier-authlib/authdaemond
# With IMAP_ENHANCEDIDLE=1 imapd asks FAM (libgamin) about the maildir.
# libgamin would fork gam_server on first use (and it exits when idle);
# one started here, without that timeout, is there for every IDLE. Were
# it to die, IDLE would fall back to the 60 s poll and the latency tests
# would say so.
if grep -q "^IMAP_ENHANCEDIDLE=1" /etc/courier/imapd; then
	GAM_CLIENT_ID=$(sed -n "s/^GAM_CLIENT_ID=//p" /etc/courier/imapd) \
		setpriv --reuid=vmail --regid=vmail --clear-groups /usr/libexec/gam_server --notimeout &
fi
/usr/sbin/imapd start
'"$INIT_LOOP"

courier_start() {
	local name=$1 port=$2 enhanced=$3
	courier_write "$name" "$port" "$enhanced"
	echo "$COURIER_INIT" >"$RDIR/$name/init.sh"
	ns_run "$name" "$RDIR/$name/init.sh" "$RDIR/$name"
}

# ---------------------------------------------------------------------------
# Cyrus IMAP

# cyrus_write NAME PORT IDLED: Debian's imapd.conf with private paths (and
# the vmail user), Debian's cyrus.conf cut to IMAP on PORT (plus idled in
# DAEMON when IDLED is 1), a sasldb of the users; no mailbox exists until
# a user logs in (autocreate makes INBOX alone).
cyrus_write() {
	local name=$1 port=$2 idled=$3 d=$RDIR/$1
	rm -rf "$d/lib" "$d/spool" "$d/etc"
	mkdir -p "$d/etc" "$d/lib" "$d/spool" "$d/run/cyrus/socket" "$d/run/cyrus/lock" "$d/run/cyrus/proc"
	sed -e "s|^configdirectory:.*|configdirectory: $d/lib|" \
		-e "s|^partition-default:.*|partition-default: $d/spool|" \
		-e '/^partition-news:/d' -e '/^newsspool:/d' -e '/^syslog_prefix:/d' \
		"$ROOT/etc/imapd.conf" >"$d/etc/imapd.conf"
	install -m 0600 -o vmail -g vmail "$DIR/server.pem" "$d/etc/server.pem"
	install -m 0600 -o vmail -g vmail "$DIR/server.key" "$d/etc/server.key"
	cat >>"$d/etc/imapd.conf" <<-EOF
		# Added by scripts/e2e-realservers.sh
		# Logins are user@domain, as on the other servers.
		virtdomains: userid
		cyrus_user: vmail
		cyrus_group: vmail
		sasl_sasldb_path: $d/etc/sasldb2
		tls_server_cert: $d/etc/server.pem
		tls_server_key: $d/etc/server.key
		syslog_prefix: cyrus-e2e-$name
	EOF
	local daemon=""
	[[ $idled == 1 ]] && daemon='idled cmd="idled"'
	cat >"$d/etc/cyrus.conf" <<-EOF
		# Debian's cyrus.conf, IMAP only, on $HOST:$port (scripts/e2e-realservers.sh)
		START {
			recover cmd="/usr/sbin/cyrus ctl_cyrusdb -r"
		}
		SERVICES {
			imap cmd="imapd -U 30" listen="$HOST:$port" prefork=0 maxchild=100
		}
		EVENTS {
			checkpoint cmd="/usr/sbin/cyrus ctl_cyrusdb -c" period=30
		}
		DAEMON {
			$daemon
		}
	EOF
	# What Debian's postinst makes in configdirectory; imapd binds its
	# end of the idled conversation in socket/.
	local sub
	for sub in socket proc log msg user quota db sieve ptclient sync lock md5; do
		mkdir -p "$d/lib/$sub"
	done
	chown -R vmail:vmail "$d/lib" "$d/spool" "$d/run/cyrus"
	: >"$d/ns.log"
}

# shellcheck disable=SC2016
CYRUS_INIT='
set -e
d=$1
shift
mount --bind "$d/etc/imapd.conf" /etc/imapd.conf
mount --bind "$d/etc/cyrus.conf" /etc/cyrus.conf
for u in "$@"; do
	echo "$u-pass" | saslpasswd2 -p -c -f "$d/etc/sasldb2" -u '"$DOMAIN"' "$u"
done
chown vmail:vmail "$d/etc/sasldb2"
chmod 0600 "$d/etc/sasldb2"
/usr/lib/cyrus/bin/master -d -p /run/cyrus/master.pid
'"$INIT_LOOP"

cyrus_start() {
	local name=$1 port=$2 idled=$3
	cyrus_write "$name" "$port" "$idled"
	# shellcheck disable=SC2086
	echo "$CYRUS_INIT" >"$RDIR/$name/init.sh"
	ns_run "$name" "$RDIR/$name/init.sh" "$RDIR/$name" $USERS
}

# ---------------------------------------------------------------------------
# commands

INSTANCES="courier courier-idle cyrus cyrus-idled"

cmd_stop() {
	local n
	for n in $INSTANCES; do
		ns_stop "$n"
	done
	rm -f "$ENV_FILE"
}

cmd_start() {
	[[ $(id -u) -eq 0 ]] || die "start must run as root"
	[[ -s $DIR/server.pem ]] || die "no stack in $DIR (run scripts/e2e-stack.sh start first)"
	cmd_stop
	mkdir -p "$RDIR"
	if [[ ! -e $ROOT/.complete ]]; then
		log "Courier-IMAP and Cyrus are not unpacked in $ROOT (run: $0 install); their tests will skip"
		return 0
	fi
	courier_start courier "$COURIER_PORT" 0
	courier_start courier-idle "$COURIER_IDLE_PORT" 1
	cyrus_start cyrus "$CYRUS_PORT" 0
	cyrus_start cyrus-idled "$CYRUS_IDLED_PORT" 1
	local ok=1 n p
	for n in courier:$COURIER_PORT courier-idle:$COURIER_IDLE_PORT cyrus:$CYRUS_PORT cyrus-idled:$CYRUS_IDLED_PORT; do
		p=${n#*:}
		n=${n%%:*}
		if ! wait_port "$HOST" "$p" greeting; then
			log "error: $n on $HOST:$p did not greet within ${START_TIMEOUT}s; last lines of $RDIR/$n/ns.log:"
			tail -n 20 "$RDIR/$n/ns.log" >&2 || true
			ok=0
		fi
	done
	if ((!ok)); then
		cmd_stop
		log "real servers not started; their tests will skip"
		return 0
	fi
	cat >"$ENV_FILE" <<-EOF
		export MAILAGENT_E2E_COURIERREAL_IMAP_HOST=$HOST
		export MAILAGENT_E2E_COURIERREAL_IMAP_PORT=$COURIER_PORT
		export MAILAGENT_E2E_COURIERREAL_IDLE_IMAP_PORT=$COURIER_IDLE_PORT
		export MAILAGENT_E2E_CYRUS_IMAP_HOST=$HOST
		export MAILAGENT_E2E_CYRUS_IMAP_PORT=$CYRUS_PORT
		export MAILAGENT_E2E_CYRUS_IDLED_IMAP_PORT=$CYRUS_IDLED_PORT
	EOF
	# DIR/env is the stack's: replace our lines in it, keep the rest.
	if [[ -s $DIR/env ]]; then
		sed -i -e '/^export MAILAGENT_E2E_COURIERREAL_/d' -e '/^export MAILAGENT_E2E_CYRUS_/d' "$DIR/env"
		cat "$ENV_FILE" >>"$DIR/env"
	fi
	log "Courier-IMAP on $HOST:$COURIER_PORT (stock) and :$COURIER_IDLE_PORT (IMAP_ENHANCEDIDLE=1); Cyrus on $HOST:$CYRUS_PORT (no idled) and :$CYRUS_IDLED_PORT (idled)"
}

cmd_status() {
	local n pid rc=0
	for n in $INSTANCES; do
		if pid=$(pid_from "$RDIR/$n/ns.pid"); then echo "$n: running (namespace pid $pid)"; else
			echo "$n: stopped"
			rc=1
		fi
	done
	return $rc
}

case ${1:-} in
install) cmd_install ;;
start) cmd_start ;;
stop)
	cmd_stop
	# DIR/env keeps no lines of stopped servers.
	[[ ! -s $DIR/env ]] || sed -i -e '/^export MAILAGENT_E2E_COURIERREAL_/d' -e '/^export MAILAGENT_E2E_CYRUS_/d' "$DIR/env"
	;;
env)
	[[ -s $ENV_FILE ]] || die "no $ENV_FILE (run: $0 start $DIR)"
	cat "$ENV_FILE"
	;;
status) cmd_status ;;
*)
	sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
	;;
esac
