#!/usr/bin/env bash
# Shared helpers of scripts/e2e-stack.sh and scripts/e2e-courier.sh
# (sourced, not run): finding and stopping a daemon, waiting for a port,
# and the pieces of Dovecot configuration both private Dovecots share.
# The caller sets LOG_TAG (the name its lines start with), DIR, HOST,
# DOMAIN, USERS and START_TIMEOUT.

log() { printf '%s: %s\n' "$LOG_TAG" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# pid_from PIDFILE: the pid in PIDFILE when that process runs, or false.
pid_from() {
	local pid
	[[ -s $1 ]] || return 1
	pid=$(<"$1")
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

# any_alive PID...: true when at least one of the processes still exists.
any_alive() {
	local p
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}

# stop_master PID NAME: end a Dovecot master and its children together.
# Dovecot's master exits on SIGTERM, but its children do not all follow:
# imap processes keep serving their clients and auth keeps serving
# Postfix's open connection, and the master waits a few seconds for them.
# Note the children (by parent pid) first and end them together with the
# master, so a restart is quick and really cuts every session.
stop_master() {
	local pid=$1 name=$2 i children
	children=$(pgrep -P "$pid" || true)
	# shellcheck disable=SC2086
	kill -TERM "$pid" $children 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		# shellcheck disable=SC2086
		any_alive "$pid" $children || return 0
		sleep 0.1
	done
	log "$name (pid $pid) did not stop in 10s; killing it"
	# shellcheck disable=SC2086
	kill -KILL "$pid" $children 2>/dev/null || true
}

# port_open HOST PORT [greeting]: true when something accepts a TCP
# connection on HOST:PORT and, with "greeting", sends the first bytes of a
# plaintext greeting (IMAP "* OK", SMTP "220").
port_open() {
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
	if [[ ${3:-} == greeting ]]; then
		timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" && head -c 3 <&3 >/dev/null' _ "$1" "$2" 2>/dev/null
	else
		timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
	fi
}

# wait_port HOST PORT [greeting]: wait until port_open is true, for at most
# START_TIMEOUT seconds; false when it never is.
wait_port() {
	local deadline=$((SECONDS + START_TIMEOUT))
	until port_open "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# dovecot_users FILE: the passwd-file of the test users (USERS at DOMAIN,
# password "<user>-pass").
dovecot_users() {
	local f=$1 u
	: >"$f"
	for u in $USERS; do
		echo "$u@$DOMAIN:{PLAIN}$u-pass::::::" >>"$f"
	done
	chmod 0644 "$f"
}

# dovecot_conf_auth USERSFILE MAILDIR: the Dovecot 2.3 lines for TLS (the
# stack's certificate in DIR), plaintext logins checked against USERSFILE,
# and maildirs under MAILDIR owned by vmail.
dovecot_conf_auth() {
	local usersfile=$1 mail=$2 vmail_uid dh=""
	vmail_uid=$(id -u vmail)
	[[ -s /usr/share/dovecot/dh.pem ]] && dh="ssl_dh = </usr/share/dovecot/dh.pem"
	cat <<-EOF
		ssl = yes
		ssl_cert = <$DIR/server.pem
		ssl_key = <$DIR/server.key
		$dh
		disable_plaintext_auth = no
		auth_mechanisms = plain login
		auth_username_format = %Lu
		# Tests try wrong passwords; the default 2 s penalty only slows them.
		auth_failure_delay = 0

		passdb {
		  driver = passwd-file
		  args = scheme=PLAIN username_format=%u $usersfile
		}
		userdb {
		  driver = static
		  args = uid=vmail gid=vmail home=$mail/%d/%n
		}
		first_valid_uid = $vmail_uid
		mail_location = maildir:~/Maildir
		mail_uid = vmail
		mail_gid = vmail
		# Test data only: skipping fsync makes bulk APPENDs many times faster.
		mail_fsync = never
	EOF
}

# dovecot_conf_listeners IMAP_PORT IMAPS_PORT: the Dovecot lines for IMAP
# (STARTTLS) and IMAPS on HOST, no POP3, and no auth penalty.
dovecot_conf_listeners() {
	cat <<-EOF
		service imap-login {
		  # Login processes started ahead, each serving many clients
		  # (Dovecot's "high-performance" login mode): with the default
		  # (a new process per connection, started on demand) a
		  # connection waited over 10 s in the listen queue while the
		  # e2e packages ran side by side at load 13, and init's reach
		  # said "no answer" (TestInitEarlyProbeUnderTmux).
		  service_count = 0
		  process_min_avail = 2
		  client_limit = 1000
		  inet_listener imap {
		    address = $HOST
		    port = $1
		  }
		  inet_listener imaps {
		    address = $HOST
		    port = $2
		    ssl = yes
		  }
		}
		service pop3-login {
		  inet_listener pop3 {
		    port = 0
		  }
		  inet_listener pop3s {
		    port = 0
		  }
		}
		service anvil {
		  # Turn off the auth penalty (the documented way): tests try wrong
		  # passwords on purpose, and the penalty would then delay every
		  # later login from 127.0.0.1 by seconds.
		  unix_listener anvil-auth-penalty {
		    mode = 0
		  }
		}
	EOF
}
