#!/usr/bin/env bash
# e2e-stack.sh runs a private Dovecot (IMAP, LMTP, SASL) and Postfix (SMTP)
# on 127.0.0.1 for mailagent's end-to-end tests. Nothing touches the system
# configuration: every config file, socket, queue, log and mailbox lives in
# one state directory, and every address Postfix sees is delivered locally
# (unknown recipients end in sink@example.test), so no mail leaves the host.
#
# Usage:
#   scripts/e2e-stack.sh install            install the Debian packages (root)
#   scripts/e2e-stack.sh start [DIR]        (re)start the stack, write DIR/env
#   scripts/e2e-stack.sh stop [DIR]         stop every daemon
#   scripts/e2e-stack.sh restart-dovecot [DIR]   stop and start Dovecot only
#   scripts/e2e-stack.sh env [DIR]          print DIR/env (shell export lines)
#   scripts/e2e-stack.sh status [DIR]       say what is running
#   scripts/e2e-stack.sh start-realservers [DIR]  (re)start only the real
#                                           Courier-IMAP and Cyrus beside a
#                                           running stack (scripts/e2e-realservers.sh)
#
# DIR defaults to $MAILAGENT_E2E_DIR or /tmp/mailagent-e2e. Ports can be
# overridden with E2E_IMAP_PORT, E2E_IMAPS_PORT and E2E_SMTP_PORT; Radicale
# (CalDAV, scripts/e2e-radicale.sh) listens on E2E_RADICALE_PORT.
#
# Sender authentication (RFC 8601 Authentication-Results): Postfix's SMTP
# listener runs every message through two verifying milters, OpenDKIM and
# then OpenDMARC, both with the authserv-id mx.example.test. A private DNS
# server (dnsmasq on E2E_DNS_ADDR port 53, by default an address in
# 127.0.0.0/8 derived from the SMTP port) serves the DKIM keys and DMARC
# records of the "outside" sender domains partner.test and other.test (and
# of example.test itself); their private keys stay in DIR/dkim so tests can
# sign mail as those senders.
# OpenDKIM reaches that server through an Unbound config file; OpenDMARC,
# which only uses the system resolver, runs in a private mount namespace
# where DIR/dns/resolv.conf is bind-mounted over /etc/resolv.conf.
#
# Users (domain example.test, plain passwords, all stored as vmail):
#   ada@example.test ada-pass   (the mailbox owner in tests)
#   bob@example.test bob-pass
#   carol@example.test carol-pass
#   sink@example.test sink-pass (catch-all for every other address)
#   corpus@example.test corpus-pass (bulk corpus tests, e.g. threading)
set -euo pipefail

DIR=${2:-${MAILAGENT_E2E_DIR:-/tmp/mailagent-e2e}}
HOST=127.0.0.1
IMAP_PORT=${E2E_IMAP_PORT:-10143}
IMAPS_PORT=${E2E_IMAPS_PORT:-10993}
SMTP_PORT=${E2E_SMTP_PORT:-10025}
DOMAIN=example.test
USERS="ada bob carol sink corpus"
PACKAGES="dovecot-imapd dovecot-lmtpd postfix isync tmux openssl opendkim opendkim-tools opendmarc dbconfig-no-thanks dnsmasq-base radicale openssh-server"
START_TIMEOUT=${E2E_START_TIMEOUT:-30} # seconds

# Sender authentication (see the header). The DNS server needs port 53:
# resolv.conf, which OpenDMARC reads, cannot name another port. Each stack
# gets its own loopback address, so stacks on other ports do not collide.
AUTHSERV_ID=mx.$DOMAIN
# The local domain signs too, so tests can deliver authenticated mail from
# the local users (bob@example.test) as if it came from their own server.
DKIM_DOMAINS="partner.test other.test $DOMAIN"
DKIM_SELECTOR=e2e
DKIM_ONLY_DOMAIN=dkimonly.test # OpenDMARC skips mail From this domain
DNS_ADDR=${E2E_DNS_ADDR:-127.53.$((SMTP_PORT / 256 % 256)).$((SMTP_PORT % 256))}
DKIM_DIR=$DIR/dkim
DNS_DIR=$DIR/dns
OPENDKIM_DIR=$DIR/opendkim
OPENDMARC_DIR=$DIR/opendmarc

DOVECOT_CONF=$DIR/dovecot/dovecot.conf
DOVECOT_RUN=$DIR/dovecot/run
POSTFIX_DIR=$DIR/postfix
POSTFIX_QUEUE=$DIR/postfix-queue

LOG_TAG=e2e-stack
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

# ---------------------------------------------------------------------------
# install

missing_packages() {
	local p missing=()
	for p in $PACKAGES; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	echo "${missing[*]:-}"
}

install_packages() {
	local missing
	missing=$(missing_packages)
	if [[ -z $missing ]]; then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		die "missing Debian packages: $missing
  install them as root, without starting the system daemons:
    echo 'postfix postfix/main_mailer_type select No configuration' | sudo debconf-set-selections
    echo 'opendmarc opendmarc/dbconfig-install boolean false' | sudo debconf-set-selections
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y $missing"
	fi
	log "installing: $missing"
	export DEBIAN_FRONTEND=noninteractive
	# Postfix must not write /etc/postfix/main.cf; we bring our own config.
	debconf-set-selections <<-EOF
		postfix postfix/main_mailer_type select No configuration
		postfix postfix/mailname string mail.$DOMAIN
	EOF
	# OpenDMARC needs no database (no reports). A debconf database that
	# saw the package before may refuse the preseed; the answer only
	# saves a question, so that is not fatal.
	echo "opendmarc opendmarc/dbconfig-install boolean false" | debconf-set-selections 2>/dev/null || true
	# policy-rc.d exiting 101 tells invoke-rc.d not to start any daemon
	# during the install. Keep whatever policy the host already had.
	local policy=/usr/sbin/policy-rc.d backup=""
	if [[ -e $policy ]]; then
		backup=$(mktemp)
		cp -p "$policy" "$backup"
	fi
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	local rc=0
	{
		# A fresh machine has no package lists, and old ones may name
		# files the mirror no longer has.
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing
	} || rc=$?
	if [[ -n $backup ]]; then
		mv "$backup" "$policy"
	else
		rm -f "$policy"
	fi
	[[ $rc -eq 0 ]] || die "apt-get install failed (exit $rc)"
}

ensure_vmail() {
	if ! getent group vmail >/dev/null; then
		groupadd --system vmail
	fi
	if ! id -u vmail >/dev/null 2>&1; then
		useradd --system --gid vmail --home-dir /nonexistent --no-create-home \
			--shell /usr/sbin/nologin vmail
	fi
}

# ---------------------------------------------------------------------------
# configuration

gen_certs() {
	# A private CA and a server certificate for 127.0.0.1/localhost, kept
	# across restarts so DIR/ca.pem stays valid for running clients.
	[[ -s $DIR/ca.pem && -s $DIR/server.pem && -s $DIR/server.key ]] && return 0
	log "generating a test CA and server certificate"
	local t
	t=$(mktemp -d)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$t/ca.key" -out "$t/ca.pem" -days 3650 \
		-subj "/CN=mailagent e2e test CA" >/dev/null 2>&1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$t/server.key" -out "$t/server.csr" \
		-subj "/CN=localhost" >/dev/null 2>&1
	printf 'subjectAltName=DNS:localhost,DNS:mail.%s,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' \
		"$DOMAIN" >"$t/ext"
	openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
		-CAcreateserial -days 3650 -extfile "$t/ext" -out "$t/server.pem" >/dev/null 2>&1
	install -m 0644 "$t/ca.pem" "$DIR/ca.pem"
	install -m 0644 "$t/server.pem" "$DIR/server.pem"
	install -m 0600 "$t/server.key" "$DIR/server.key"
	rm -rf "$t"
}

write_dovecot_conf() {
	mkdir -p "$DIR/dovecot" "$DOVECOT_RUN" "$DIR/dovecot/state" "$DIR/mail"
	chown vmail:vmail "$DIR/mail"
	dovecot_users "$DIR/dovecot/users"

	# Dovecot 2.3 syntax (Debian 12 ships 2.3.19).
	{
		cat <<-EOF
			# Generated by scripts/e2e-stack.sh; rewritten on every start.
			protocols = imap lmtp
			listen = $HOST
			base_dir = $DOVECOT_RUN
			state_dir = $DIR/dovecot/state
			log_path = $DIR/dovecot.log
			info_log_path = $DIR/dovecot.log
			debug_log_path = $DIR/dovecot.log
			instance_name = mailagent-e2e
			shutdown_clients = yes

		EOF
		dovecot_conf_auth "$DIR/dovecot/users" "$DIR/mail"
		cat <<-EOF

			namespace inbox {
			  inbox = yes
			  separator = /
			  mailbox Drafts {
			    special_use = \\Drafts
			    auto = subscribe
			  }
			  mailbox Sent {
			    special_use = \\Sent
			    auto = subscribe
			  }
			  mailbox Trash {
			    special_use = \\Trash
			    auto = subscribe
			  }
			  mailbox Junk {
			    special_use = \\Junk
			    auto = subscribe
			  }
			  mailbox Archive {
			    special_use = \\Archive
			    auto = subscribe
			  }
			}

			# IDLE, THREAD=REFERENCES, UIDPLUS, MOVE, CONDSTORE and SPECIAL-USE
			# are all on by default in Dovecot 2.3.
			protocol imap {
			  mail_max_userip_connections = 200
			}
			protocol lmtp {
			  postmaster_address = postmaster@$DOMAIN
			}

		EOF
		dovecot_conf_listeners "$IMAP_PORT" "$IMAPS_PORT"
		cat <<-EOF
			service lmtp {
			  unix_listener lmtp {
			    mode = 0666
			  }
			}
			service auth {
			  # Postfix's smtpd asks Dovecot to check AUTH PLAIN passwords.
			  unix_listener auth-postfix {
			    mode = 0666
			  }
			}
		EOF
	} >"$DOVECOT_CONF"
}

write_postfix_conf() {
	mkdir -p "$POSTFIX_DIR" "$POSTFIX_QUEUE" "$DIR/postfix-data"
	chown postfix "$DIR/postfix-data"
	# postfix-files (read by "postfix check") lives in /etc/postfix on Debian.
	local meta=/etc/postfix
	cat >"$POSTFIX_DIR/main.cf" <<-EOF
		# Generated by scripts/e2e-stack.sh; rewritten on every start.
		compatibility_level = 3.6
		config_directory = $POSTFIX_DIR
		queue_directory = $POSTFIX_QUEUE
		data_directory = $DIR/postfix-data
		meta_directory = $meta
		mail_owner = postfix
		setgid_group = postdrop
		maillog_file = $DIR/postfix.log
		maillog_file_prefixes = $DIR

		myhostname = mail.$DOMAIN
		mydomain = $DOMAIN
		myorigin = \$mydomain
		mydestination =
		inet_interfaces = $HOST
		inet_protocols = ipv4
		mynetworks = 127.0.0.0/8
		alias_maps =
		alias_database =
		local_recipient_maps =
		biff = no
		append_dot_mydomain = no
		smtp_host_lookup = native
		smtpd_banner = \$myhostname ESMTP mailagent-e2e
		# Retry quickly; nothing here should ever be deferred for long.
		queue_run_delay = 10s
		minimal_backoff_time = 10s
		maximal_backoff_time = 30s

		# Every address is delivered locally. Known users keep their address;
		# anything else (any domain) is rewritten to the sink user.
		virtual_alias_domains =
		virtual_alias_maps = regexp:$POSTFIX_DIR/virtual
		virtual_mailbox_domains = $DOMAIN
		virtual_transport = lmtp:unix:$DOVECOT_RUN/lmtp
		smtpd_reject_unlisted_recipient = no

		# Loopback may send anything; AUTH PLAIN (checked by Dovecot) is
		# offered on plaintext and after STARTTLS so the agent can log in.
		smtpd_sasl_auth_enable = yes
		smtpd_sasl_type = dovecot
		smtpd_sasl_path = $DOVECOT_RUN/auth-postfix
		smtpd_sasl_security_options = noanonymous
		smtpd_tls_auth_only = no
		smtpd_relay_restrictions = permit_mynetworks permit_sasl_authenticated reject_unauth_destination
		smtpd_recipient_restrictions = permit_mynetworks permit_sasl_authenticated reject_unauth_destination
		smtpd_tls_security_level = may
		smtpd_tls_cert_file = $DIR/server.pem
		smtpd_tls_key_file = $DIR/server.key
		smtpd_tls_received_header = yes
		smtp_tls_security_level = none
		message_size_limit = 52428800
	EOF
	auth_postfix_conf >>"$POSTFIX_DIR/main.cf"
	local known=${USERS// /|}
	cat >"$POSTFIX_DIR/virtual" <<-EOF
		!/^($known)@${DOMAIN//./\\.}\$/ sink@$DOMAIN
	EOF
	# chroot is off ("n" in column 5) everywhere: the chroot would have to
	# mirror sockets and files from DIR.
	cat >"$POSTFIX_DIR/master.cf" <<-EOF
		# service type  private unpriv  chroot  wakeup  maxproc command + args
		$HOST:$SMTP_PORT inet n - n - - smtpd
		pickup    unix  n       -       n       60      1       pickup
		cleanup   unix  n       -       n       -       0       cleanup
		qmgr      unix  n       -       n       300     1       qmgr
		tlsmgr    unix  -       -       n       1000?   1       tlsmgr
		rewrite   unix  -       -       n       -       -       trivial-rewrite
		bounce    unix  -       -       n       -       0       bounce
		defer     unix  -       -       n       -       0       bounce
		trace     unix  -       -       n       -       0       bounce
		verify    unix  -       -       n       -       1       verify
		flush     unix  n       -       n       1000?   0       flush
		proxymap  unix  -       -       n       -       -       proxymap
		proxywrite unix -       -       n       -       1       proxymap
		smtp      unix  -       -       n       -       -       smtp
		relay     unix  -       -       n       -       -       smtp
		showq     unix  n       -       n       -       -       showq
		error     unix  -       -       n       -       -       error
		retry     unix  -       -       n       -       -       error
		discard   unix  -       -       n       -       -       discard
		local     unix  -       n       n       -       -       local
		virtual   unix  -       n       n       -       -       virtual
		lmtp      unix  -       -       n       -       -       lmtp
		anvil     unix  -       -       n       -       1       anvil
		scache    unix  -       -       n       -       1       scache
		postlog   unix-dgram n  -       n       -       1       postlogd
	EOF
}

write_env() {
	local u users=""
	for u in $USERS; do
		users+="${users:+,}$u@$DOMAIN:$u-pass"
	done
	cat >"$DIR/env" <<-EOF
		export MAILAGENT_E2E=1
		export MAILAGENT_E2E_DIR=$DIR
		export MAILAGENT_E2E_IMAP_HOST=$HOST
		export MAILAGENT_E2E_IMAP_PORT=$IMAP_PORT
		export MAILAGENT_E2E_IMAPS_PORT=$IMAPS_PORT
		export MAILAGENT_E2E_SMTP_HOST=$HOST
		export MAILAGENT_E2E_SMTP_PORT=$SMTP_PORT
		export MAILAGENT_E2E_CA=$DIR/ca.pem
		export MAILAGENT_E2E_USERS=$users
		export MAILAGENT_E2E_OWNER=ada@$DOMAIN
		export MAILAGENT_E2E_OWNER_PASSWORD=ada-pass
		export MAILAGENT_E2E_SINK=sink@$DOMAIN
		export MAILAGENT_E2E_DOVECOT_CONF=$DOVECOT_CONF
		export MAILAGENT_E2E_POSTFIX_DIR=$POSTFIX_DIR
	EOF
	auth_env >>"$DIR/env"
}

# ---------------------------------------------------------------------------
# daemons

dovecot_pid() {
	pid_from "$DOVECOT_RUN/master.pid"
}

postfix_running() {
	[[ -d $POSTFIX_DIR ]] && postfix -c "$POSTFIX_DIR" status >/dev/null 2>&1
}

start_dovecot() {
	if dovecot_pid >/dev/null; then
		return 0
	fi
	dovecot -c "$DOVECOT_CONF" </dev/null >>"$DIR/dovecot.log" 2>&1 ||
		fail_start "dovecot did not start"
}

stop_dovecot() {
	local pid
	pid=$(dovecot_pid) || return 0
	stop_master "$pid" dovecot
}

start_postfix() {
	postfix -c "$POSTFIX_DIR" set-permissions </dev/null >/dev/null 2>&1 || true
	postfix -c "$POSTFIX_DIR" check </dev/null >>"$DIR/postfix.log" 2>&1 ||
		fail_start "postfix check failed"
	postfix -c "$POSTFIX_DIR" start </dev/null >>"$DIR/postfix.log" 2>&1 ||
		fail_start "postfix did not start"
}

stop_postfix() {
	postfix_running || return 0
	postfix -c "$POSTFIX_DIR" stop </dev/null >>"$DIR/postfix.log" 2>&1 || true
	local i
	for ((i = 0; i < 100; i++)); do
		postfix_running || return 0
		sleep 0.1
	done
	log "postfix did not stop in 10s"
	postfix -c "$POSTFIX_DIR" abort </dev/null >/dev/null 2>&1 || true
}

show_logs() {
	local f
	for f in "$DIR/dovecot.log" "$DIR/postfix.log" "$DIR/dnsmasq.log" "$DIR/opendkim.log" "$DIR/opendmarc.log"; do
		[[ -s $f ]] || continue
		log "--- last lines of $f"
		tail -n 25 "$f" >&2
	done
}

fail_start() {
	log "error: $*"
	show_logs
	exit 1
}

wait_for() {
	local name=$1 host=$2 port=$3 mode=${4:-greeting}
	wait_port "$host" "$port" "$mode" ||
		fail_start "$name on $host:$port did not accept connections within ${START_TIMEOUT}s"
}

# ---------------------------------------------------------------------------
# sender authentication: DNS (dnsmasq), OpenDKIM and OpenDMARC milters
#
# Kept in functions of their own (auth_*) so the rest of the stack does not
# depend on them beyond: the milter lines in main.cf, start/stop order, env.

# auth_gen_keys makes one DKIM key per sender domain, kept across restarts
# (like the certificates) so a running test's key stays valid. They are test
# keys of made-up domains, readable by everyone so tests can sign as them.
auth_gen_keys() {
	mkdir -p "$DKIM_DIR"
	chmod 0755 "$DKIM_DIR"
	local d
	for d in $DKIM_DOMAINS; do
		[[ -s $DKIM_DIR/$d.private ]] && continue
		log "generating the DKIM key of $d"
		local t
		t=$(mktemp -d)
		opendkim-genkey -b 2048 -h sha256 -d "$d" -s "$DKIM_SELECTOR" -D "$t" ||
			fail_start "opendkim-genkey for $d failed"
		install -m 0644 "$t/$DKIM_SELECTOR.private" "$DKIM_DIR/$d.private"
		rm -rf "$t"
	done
}

# auth_txt_record NAME TEXT: a dnsmasq txt-record line, TEXT cut into the
# 255-byte character-strings DNS allows (a 2048-bit key does not fit one).
auth_txt_record() {
	local name=$1 text=$2 line
	line="txt-record=$name"
	while [[ -n $text ]]; do
		line+=",\"${text:0:250}\""
		text=${text:250}
	done
	echo "$line"
}

auth_write_conf() {
	mkdir -p "$DNS_DIR" "$OPENDKIM_DIR" "$OPENDMARC_DIR"
	chown opendkim:opendkim "$OPENDKIM_DIR"
	chown opendmarc:opendmarc "$OPENDMARC_DIR"
	chmod 0755 "$DNS_DIR" "$OPENDKIM_DIR" "$OPENDMARC_DIR"

	# The zone: each sender domain's DKIM key and a strict DMARC policy.
	# Every other name under .test is answered NXDOMAIN, and nothing is
	# forwarded anywhere (no-resolv, no server lines).
	local d pub
	: >"$OPENDKIM_DIR/dns-data.new"
	{
		echo "# Generated by scripts/e2e-stack.sh; rewritten on every start."
		echo "port=53"
		echo "listen-address=$DNS_ADDR"
		echo "bind-interfaces"
		echo "no-resolv"
		echo "no-hosts"
		echo "no-poll"
		echo "local=/test/"
		echo "user=nobody"
		echo "group=nogroup"
		echo "pid-file=$DNS_DIR/dnsmasq.pid"
		echo "log-facility=$DIR/dnsmasq.log"
		echo "log-queries"
		for d in $DKIM_DOMAINS; do
			pub=$(openssl pkey -in "$DKIM_DIR/$d.private" -pubout -outform DER 2>/dev/null | base64 -w0) ||
				fail_start "cannot read the DKIM key of $d"
			auth_txt_record "$DKIM_SELECTOR._domainkey.$d" "v=DKIM1; h=sha256; k=rsa; p=$pub"
			auth_txt_record "_dmarc.$d" "v=DMARC1; p=reject"
			# The same key for the milter's own table (TestDNSData, below).
			echo "$DKIM_SELECTOR._domainkey.$d v=DKIM1;h=sha256;k=rsa;p=$pub" >>"$OPENDKIM_DIR/dns-data.new"
		done
	} >"$DNS_DIR/dnsmasq.conf"
	mv "$OPENDKIM_DIR/dns-data.new" "$OPENDKIM_DIR/dns-data"
	printf 'nameserver %s\noptions timeout:1 attempts:2\n' "$DNS_ADDR" >"$DNS_DIR/resolv.conf"
	chmod 0644 "$DNS_DIR/dnsmasq.conf" "$DNS_DIR/resolv.conf"

	# opendkim-testkey resolves through libunbound. Unbound refuses to
	# query 127.0.0.0/8 and answers the whole .test zone NXDOMAIN by
	# default; both defaults are turned off here, and every query goes to
	# dnsmasq. The milter itself does not use it (TestDNSData, below).
	cat >"$OPENDKIM_DIR/unbound.conf" <<-EOF
		server:
		  do-not-query-localhost: no
		  local-zone: "test." nodefault
		  domain-insecure: "test."
		  module-config: "iterator"
		forward-zone:
		  name: "."
		  forward-addr: $DNS_ADDR
	EOF
	# A peer list nothing matches: the default (127.0.0.1) would make
	# OpenDKIM and OpenDMARC treat the test's own SMTP client as internal.
	echo "192.0.2.1" >"$OPENDKIM_DIR/internal-hosts"
	echo "192.0.2.1" >"$OPENDMARC_DIR/ignore-hosts"
	# The milter reads the DKIM keys from a table of TXT records
	# (TestDNSData, OpenDKIM's own option for automated tests), not
	# through libunbound: under the parallel e2e suite Debian's OpenDKIM
	# 2.11 crashed (a general protection fault in libc) and, without a
	# crash, came to re-read the resolver configuration, which libunbound's
	# parser then refuses for good ("unbound.conf:1: syntax error"), so
	# every delivery was tempfailed until the stack restarted. The table
	# holds the same keys dnsmasq publishes, and opendkim-testkey checks
	# those through DNS at every start (testkey.conf). OpenDMARC still
	# resolves through dnsmasq.
	cat >"$OPENDKIM_DIR/opendkim.conf" <<-EOF
		# Generated by scripts/e2e-stack.sh; rewritten on every start.
		Mode v
		AuthservID $AUTHSERV_ID
		AlwaysAddARHeader yes
		InternalHosts $OPENDKIM_DIR/internal-hosts
		TestDNSData file:$OPENDKIM_DIR/dns-data
		Socket local:$OPENDKIM_DIR/opendkim.sock
		UMask 0000
		UserID opendkim:opendkim
		PidFile $OPENDKIM_DIR/opendkim.pid
		Background no
		Syslog no
		SoftwareHeader no
	EOF
	# opendkim-testkey's: the keys through DNS (dnsmasq), as a real
	# verifier would look them up.
	printf 'ResolverConfiguration %s\n' "$OPENDKIM_DIR/unbound.conf" >"$OPENDKIM_DIR/testkey.conf"
	local psl=""
	[[ -s /usr/share/publicsuffix/public_suffix_list.dat ]] &&
		psl="PublicSuffixList /usr/share/publicsuffix/public_suffix_list.dat"
	# RejectFailures stays off: the tests want forged mail delivered, to
	# check that the agent does not trust it. Mail From dkimonly.test is
	# left to OpenDKIM alone, like on a server that runs no DMARC check.
	cat >"$OPENDMARC_DIR/opendmarc.conf" <<-EOF
		# Generated by scripts/e2e-stack.sh; rewritten on every start.
		AuthservID $AUTHSERV_ID
		TrustedAuthservIDs $AUTHSERV_ID
		IgnoreHosts $OPENDMARC_DIR/ignore-hosts
		IgnoreMailFrom $DKIM_ONLY_DOMAIN
		RejectFailures false
		FailureReports false
		SPFSelfValidate false
		SPFIgnoreResults true
		$psl
		Socket local:$OPENDMARC_DIR/opendmarc.sock
		UMask 0000
		UserID opendmarc:opendmarc
		PidFile $OPENDMARC_DIR/opendmarc.pid
		Background true
		Syslog false
		SoftwareHeader false
	EOF
}

# auth_postfix_conf prints the main.cf lines that put both milters on every
# SMTP connection (OpenDKIM first: OpenDMARC reads its result). A milter that
# is down makes Postfix answer 4xx rather than deliver unauthenticated mail.
auth_postfix_conf() {
	cat <<-EOF

		# Sender authentication (OpenDKIM, then OpenDMARC) on SMTP.
		smtpd_milters = unix:$OPENDKIM_DIR/opendkim.sock unix:$OPENDMARC_DIR/opendmarc.sock
		non_smtpd_milters =
		milter_default_action = tempfail
	EOF
}

auth_wait_socket() {
	local name=$1 sock=$2 deadline=$((SECONDS + START_TIMEOUT))
	until [[ -S $sock ]]; do
		((SECONDS < deadline)) || fail_start "$name did not create $sock within ${START_TIMEOUT}s"
		sleep 0.05
	done
}

auth_start() {
	auth_gen_keys
	auth_write_conf
	: >"$DIR/dnsmasq.log"
	: >"$DIR/opendkim.log"
	: >"$DIR/opendmarc.log"
	rm -f "$OPENDKIM_DIR/opendkim.sock" "$OPENDMARC_DIR/opendmarc.sock"
	dnsmasq --conf-file="$DNS_DIR/dnsmasq.conf" </dev/null >>"$DIR/dnsmasq.log" 2>&1 ||
		fail_start "dnsmasq did not start on $DNS_ADDR:53 (E2E_DNS_ADDR picks another loopback address)"
	# The key each domain publishes must be the one in DIR/dkim, as seen
	# through OpenDKIM's own resolver configuration.
	local d
	for d in $DKIM_DOMAINS; do
		opendkim-testkey -x "$OPENDKIM_DIR/testkey.conf" -d "$d" -s "$DKIM_SELECTOR" \
			-k "$DKIM_DIR/$d.private" >>"$DIR/opendkim.log" 2>&1 ||
			fail_start "opendkim-testkey: the DNS key of $d does not match $DKIM_DIR/$d.private"
	done
	# OpenDKIM 2.11 has crashed under the parallel suite (a libc general
	# protection fault). Its own AutoRestart child would re-read its
	# configuration in a process that already parsed it, which failed
	# (above); a loop of our own starts a fresh process each time one
	# dies, while the run flag exists.
	: >"$OPENDKIM_DIR/supervise"
	setsid bash -c 'while [[ -e $2 ]]; do
		opendkim -f -x "$1" </dev/null
		echo "e2e-stack: opendkim exited with status $?; restarting it" >&2
		sleep 0.2
	done' _ "$OPENDKIM_DIR/opendkim.conf" "$OPENDKIM_DIR/supervise" >>"$DIR/opendkim.log" 2>&1 &
	echo $! >"$OPENDKIM_DIR/supervisor.pid"
	# OpenDMARC only knows the system resolver: give it a mount namespace
	# of its own where /etc/resolv.conf names the private DNS server. The
	# daemon it forks stays in that namespace.
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
	unshare --mount --propagation private sh -c \
		'mount --bind "$1" /etc/resolv.conf && exec opendmarc -c "$2"' \
		_ "$DNS_DIR/resolv.conf" "$OPENDMARC_DIR/opendmarc.conf" \
		</dev/null >>"$DIR/opendmarc.log" 2>&1 ||
		fail_start "opendmarc did not start"
	auth_wait_socket opendkim "$OPENDKIM_DIR/opendkim.sock"
	auth_wait_socket opendmarc "$OPENDMARC_DIR/opendmarc.sock"
}

auth_stop() {
	local name pidfile pid pids=()
	# The supervisor first, so that it does not start OpenDKIM again.
	rm -f "$OPENDKIM_DIR/supervise"
	if pid=$(pid_from "$OPENDKIM_DIR/supervisor.pid"); then
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$pid")
	fi
	for name in opendmarc opendkim dnsmasq; do
		case $name in
		dnsmasq) pidfile=$DNS_DIR/dnsmasq.pid ;;
		*) pidfile=$DIR/$name/$name.pid ;;
		esac
		pid=$(pid_from "$pidfile") || continue
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$pid")
	done
	((${#pids[@]})) || return 0
	# libmilter looks at its stop flag only every 5 seconds. The milters
	# only verify and keep no state, so after a short grace period they
	# are killed rather than waited for.
	local i
	for ((i = 0; i < 10; i++)); do
		any_alive "${pids[@]}" || return 0
		sleep 0.1
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		any_alive "${pids[@]}" || return 0
		sleep 0.1
	done
	log "milters/DNS (pids ${pids[*]}) still running after SIGKILL"
}

auth_status() {
	local rc=0 pid name
	if pid=$(pid_from "$DNS_DIR/dnsmasq.pid"); then echo "dnsmasq: running (pid $pid) on $DNS_ADDR:53"; else
		echo "dnsmasq: stopped"
		rc=1
	fi
	for name in opendkim opendmarc; do
		if pid=$(pid_from "$DIR/$name/$name.pid"); then echo "$name: running (pid $pid)"; else
			echo "$name: stopped"
			rc=1
		fi
	done
	return $rc
}

auth_env() {
	local d keys=""
	for d in $DKIM_DOMAINS; do
		keys+="${keys:+,}$d:$DKIM_DIR/$d.private"
	done
	cat <<-EOF
		export MAILAGENT_E2E_AUTHSERV_ID=$AUTHSERV_ID
		export MAILAGENT_E2E_DKIM_SELECTOR=$DKIM_SELECTOR
		export MAILAGENT_E2E_DKIM_KEYS=$keys
		export MAILAGENT_E2E_DMARC=1
		export MAILAGENT_E2E_DKIM_ONLY_DOMAIN=$DKIM_ONLY_DOMAIN
		export MAILAGENT_E2E_DNS_ADDR=$DNS_ADDR
	EOF
}

# ---------------------------------------------------------------------------
# commands

cmd_start() {
	[[ $(id -u) -eq 0 ]] || die "start must run as root (Dovecot and Postfix drop privileges themselves)"
	install_packages
	ensure_vmail
	stop_all
	mkdir -p "$DIR"
	chmod 0755 "$DIR"
	: >"$DIR/dovecot.log"
	: >"$DIR/postfix.log"
	gen_certs
	write_dovecot_conf
	write_postfix_conf
	start_dovecot
	wait_for "Dovecot IMAP" "$HOST" "$IMAP_PORT"
	wait_for "Dovecot IMAPS" "$HOST" "$IMAPS_PORT" connect
	auth_start
	start_postfix
	wait_for "Postfix SMTP" "$HOST" "$SMTP_PORT"
	write_env
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-courier.sh" start "$DIR"
	# A second Courier-style instance with a bare account (INBOX only, as
	# Courier leaves a new account): agente2e TestCourierBareAccount.
	E2E_COURIER_BARE=1 bash "$(dirname "${BASH_SOURCE[0]}")/e2e-courier.sh" start "$DIR"
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-radicale.sh" start "$DIR"
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-sshd.sh" start "$DIR"
	# The real Debian Courier-IMAP and Cyrus, unpacked beside Dovecot: a
	# package that cannot be had leaves the stack running and their tests
	# skipping (agente2e TestRealServer*).
	start_realservers
	log "running in $DIR: IMAP $HOST:$IMAP_PORT (STARTTLS), IMAPS $HOST:$IMAPS_PORT, SMTP $HOST:$SMTP_PORT"
	log "sender authentication: OpenDKIM + OpenDMARC as $AUTHSERV_ID, DNS on $DNS_ADDR:53 for: $DKIM_DOMAINS"
	log "use it with: source $DIR/env"
}

# start_realservers unpacks (once) and starts the real Courier-IMAP and
# Cyrus; it never fails the stack.
start_realservers() {
	local rs
	rs="$(dirname "${BASH_SOURCE[0]}")/e2e-realservers.sh"
	bash "$rs" install ||
		log "warning: the real Courier-IMAP and Cyrus could not be unpacked; their tests will skip"
	bash "$rs" start "$DIR" ||
		log "warning: the real Courier-IMAP and Cyrus did not start; their tests will skip"
}

stop_all() {
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-realservers.sh" stop "$DIR"
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-courier.sh" stop "$DIR"
	E2E_COURIER_BARE=1 bash "$(dirname "${BASH_SOURCE[0]}")/e2e-courier.sh" stop "$DIR"
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-radicale.sh" stop "$DIR"
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-sshd.sh" stop "$DIR"
	stop_postfix
	stop_dovecot
	auth_stop
}

cmd_restart_dovecot() {
	[[ -s $DOVECOT_CONF ]] || die "no stack in $DIR (run: $0 start $DIR)"
	# The ports the stack was started with, not this shell's defaults.
	if [[ -s $DIR/env ]]; then
		IMAP_PORT=$(sed -n 's/^export MAILAGENT_E2E_IMAP_PORT=//p' "$DIR/env")
		IMAPS_PORT=$(sed -n 's/^export MAILAGENT_E2E_IMAPS_PORT=//p' "$DIR/env")
	fi
	stop_dovecot
	start_dovecot
	wait_for "Dovecot IMAP" "$HOST" "$IMAP_PORT"
	wait_for "Dovecot IMAPS" "$HOST" "$IMAPS_PORT" connect
}

cmd_status() {
	local rc=0
	if pid=$(dovecot_pid); then echo "dovecot: running (pid $pid)"; else
		echo "dovecot: stopped"
		rc=1
	fi
	if postfix_running; then echo "postfix: running"; else
		echo "postfix: stopped"
		rc=1
	fi
	auth_status || rc=1
	# Informational: the stack works without them (their tests skip).
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-realservers.sh" status "$DIR" || true
	return $rc
}

case ${1:-} in
install)
	install_packages
	bash "$(dirname "${BASH_SOURCE[0]}")/e2e-realservers.sh" install ||
		log "warning: the real Courier-IMAP and Cyrus could not be unpacked; their tests will skip"
	;;
start) cmd_start ;;
stop)
	stop_all
	log "stopped ($DIR)"
	;;
restart-dovecot) cmd_restart_dovecot ;;
start-realservers)
	[[ -s $DIR/env ]] || die "no stack in $DIR (run: $0 start $DIR)"
	start_realservers
	;;
env)
	[[ -s $DIR/env ]] || die "no $DIR/env (run: $0 start $DIR)"
	cat "$DIR/env"
	;;
status) cmd_status ;;
*)
	sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
	;;
esac
