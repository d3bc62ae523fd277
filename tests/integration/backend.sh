# SPDX-License-Identifier: MIT
# Backends and kernel profiles: where io_uring_setup is refused (a seccomp filter, as Docker's default profile) spliced says so and runs on epoll; backend = epoll / io_uring; SPLICED_BACKEND and SPLICED_KERNEL_PROFILE, their bad values; byte-exact transfers on each.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 sha256sum
NOIOURING=${NOIOURING:-$T_BUILD/tests/tools/noiouring}
need "$NOIOURING"
unset SPLICED_BACKEND SPLICED_KERNEL_PROFILE # this script sets them itself
REAL_BIN=$SPLICED_BIN

www=$T_TMP/www
mkdir -p "$www"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$www/blob"
want=$(sha "$www/blob")
http_server H "$www" 127.0.0.1 || { fail setup "http server"; finish; }

# Is io_uring refused under the filter at all? (It is, unless seccomp is unavailable.)
if ! "$NOIOURING" true 2>"$T_TMP/noiouring.err"; then
	skip all "cannot install a seccomp filter here: $(cat "$T_TMP/noiouring.err")"
	finish
fi

# through CASE PORT: fetch the blob through the SOCKS5 inbound, compare its hash.
through() {
	local got
	got=$(curl -sS --max-time 20 --socks5-hostname 127.0.0.1:"$2" "http://localhost:$H_PORT/blob" | sha256sum | cut -d' ' -f1)
	expect_eq "$1" "$got" "$want" "sha256 through spliced"
}

# --- io_uring refused: --version says so, auto falls back with one warning ---
v=$("$NOIOURING" "$REAL_BIN" --version 2>&1)
expect_lines version-refused "$v" 'io_uring: unavailable \(Operation not permitted\): the epoll backend runs' \
	'backends: io_uring, epoll .*' 'features: socks5 http .*'
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$NOIOURING" "$REAL_BIN" >"$T_TMP/spliced-noiouring"
chmod +x "$T_TMP/spliced-noiouring"
SPLICED_BIN=$T_TMP/spliced-noiouring
P=$(free_port)
if start_spliced "[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$P"; then
	expect_lines fallback-start-line "$(cat "$SPLICED_LOG")" \
		'spliced: info: started 2 workers \(backend epoll: io_uring_setup: Operation not permitted\)' \
		'spliced: warn: io_uring is unavailable \(io_uring_setup: Operation not permitted\): running on epoll; check the sysctl kernel.io_uring_disabled and the container.s seccomp profile'
	through fallback-transfer "$P"
	through fallback-transfer-again "$P"
	stop_spliced
	expect_eq fallback-exit "$?" 0 "exit status"
	expect_clean_log fallback-clean-log
else
	fail fallback-start "spliced did not start without io_uring"
fi

# backend = io_uring where it is refused: exit 1, one line naming the causes.
printf '[main]\nbackend = io_uring\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:%s\n' "$(free_port)" >"$T_TMP/uring.ini"
out=$(timeout 10 "$NOIOURING" "$REAL_BIN" -c "$T_TMP/uring.ini" 2>&1)
rc=$?
expect_eq io_uring-required-exit "$rc" 1 "exit status"
expect_lines io_uring-required-message "$out" \
	'spliced: error: io_uring is unavailable \(Operation not permitted\) and \[main\] backend = io_uring: check the sysctl kernel.io_uring_disabled and the container.s seccomp profile, or set backend = auto'
SPLICED_BIN=$REAL_BIN

# --- backend = epoll where io_uring works ---
P=$(free_port)
if start_spliced "[main]
workers = 1
backend = epoll
[inbound s]
type = socks5
listen = 127.0.0.1:$P"; then
	expect_lines epoll-start-line "$(cat "$SPLICED_LOG")" \
		'spliced: info: started 1 workers \(backend epoll: \[main\] backend = epoll\)'
	through epoll-transfer "$P"
	stop_spliced
	expect_eq epoll-exit "$?" 0 "exit status"
else
	fail epoll-start "spliced did not start with backend = epoll"
fi

# --- SPLICED_BACKEND overrides the key; SPLICED_KERNEL_PROFILE ---
P=$(free_port)
export SPLICED_BACKEND=io_uring
if start_spliced "[main]
workers = 1
backend = epoll
[inbound s]
type = socks5
listen = 127.0.0.1:$P"; then
	expect_lines env-overrides-key "$(cat "$SPLICED_LOG")" 'spliced: info: started 1 workers \(backend io_uring: .*\)'
	stop_spliced >/dev/null
else
	fail env-overrides-key "spliced did not start"
fi
unset SPLICED_BACKEND
export SPLICED_KERNEL_PROFILE=5.10
v=$("$REAL_BIN" --version 2>&1)
expect_lines profile-version "$v" 'kernel profile: 5.10 \(SPLICED_KERNEL_PROFILE\): only what that kernel offers' \
	'io_uring: available; setup basic; ext-arg no; fast-poll yes; cqe-skip no; multishot accept no'
P=$(free_port)
if start_spliced "[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$P"; then
	expect_lines profile-start-line "$(cat "$SPLICED_LOG")" \
		'spliced: info: started 2 workers \(backend io_uring: basic, kernel profile 5.10\)'
	through profile-5.10-transfer "$P"
	stop_spliced
	expect_eq profile-exit "$?" 0 "exit status (no refused operation: an abort would be 134)"
else
	fail profile-start "spliced did not start under the 5.10 profile"
fi
unset SPLICED_KERNEL_PROFILE

# --- bad values: a usage error (2) with one line, before anything starts ---
out=$(SPLICED_BACKEND=kqueue "$REAL_BIN" --check 2>&1)
expect_eq bad-backend-env-exit "$?" 2 "exit status"
expect_lines bad-backend-env-message "$out" 'spliced: SPLICED_BACKEND=kqueue: not one of auto, io_uring, epoll'
out=$(SPLICED_KERNEL_PROFILE=4.19 "$REAL_BIN" --version 2>&1)
expect_eq bad-profile-exit "$?" 2 "exit status"
expect_lines bad-profile-message "$out" 'spliced: SPLICED_KERNEL_PROFILE=4.19: not one of 5.10, 5.15, 6.1'
printf '[main]\nbackend = kqueue\n' >"$T_TMP/bad.ini"
out=$("$REAL_BIN" --check -c "$T_TMP/bad.ini" 2>&1)
expect_eq bad-backend-key-exit "$?" 2 "exit status"
expect_lines bad-backend-key-message "$out" ".*bad.ini:2: \\[main\\] backend: \"kqueue\" is not one of auto, io_uring, epoll"
finish
