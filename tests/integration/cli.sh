# SPDX-License-Identifier: MIT
# spliced command line: --help, --version, --check on good and bad configs, unknown options.
. "$(dirname "$0")/../lib.sh"
need_spliced

out=$T_TMP/out
err=$T_TMP/err

# run ARGS...: run spliced with a 10 s bound; sets rc, stdout in $out, stderr in $err.
run() {
	timeout 10 "$SPLICED_BIN" "$@" >"$out" 2>"$err"
	rc=$?
}

run --help
if [ $rc -eq 0 ] && grep -q -- '-c' "$out" && grep -q -- '--check' "$out" && grep -q -- '--version' "$out"; then
	pass help
else
	fail help "exit $rc; want 0 and a usage mentioning -c, --check, --version; got: $(head -c 300 "$out")"
fi

run -h
if [ $rc -eq 0 ] && grep -q -- '--check' "$out"; then pass help-short; else fail help-short "exit $rc"; fi

run --version
if [ $rc -eq 0 ] && grep -qiE 'spliced' "$out" && grep -qE '[0-9]+\.[0-9]+' "$out"; then
	pass version
else
	fail version "exit $rc; want 0 and 'spliced X.Y'; got: $(head -c 300 "$out")$(head -c 300 "$err")"
fi

run --bogus-option
if [ $rc -eq 2 ] && grep -qiE 'usage' "$out" "$err"; then
	pass unknown-option
else
	fail unknown-option "exit $rc (want 2 and a usage text); stderr: $(head -c 300 "$err")"
fi

run -c "$T_TMP/does-not-exist.ini" --check
if [ $rc -eq 2 ] && grep -q 'does-not-exist.ini' "$err"; then
	pass check-missing-file
else
	fail check-missing-file "exit $rc (want 2 naming the file); stderr: $(head -c 300 "$err")"
fi

good=$T_TMP/good.ini
users=$T_TMP/users
printf 'alice secret\n' >"$users"
cat >"$good" <<CONF
# a config using every section
[main]
workers = 2
log-level = info
connect-timeout = 5s
idle-timeout = 5m

[inbound s5]
type = socks5
listen = 127.0.0.1:$(free_port)
user = bob:pw
users = $users

[inbound web]
type = http
listen = [::1]:$(free_port)

[inbound fwd]
type = forward
listen = 127.0.0.1:$(free_port)
target = 127.0.0.1:9
outbound = direct

[outbound up]
type = socks5
server = 127.0.0.1:1080
username = u
password = p

[outbound nope]
type = block

[route]
default = direct
rule = cidr 10.0.0.0/8 -> nope
rule = port 25 -> nope
rule = port 6000-6063 -> up
rule = domain example.com -> up
CONF
run -c "$good" --check
if [ $rc -eq 0 ]; then pass check-good; else fail check-good "exit $rc; stderr: $(head -c 400 "$err")"; fi

# bad_config CASE LINE: the config on stdin is bad at LINE; --check must exit 2 and print
# "FILE:LINE:" on stderr.
bad_config() {
	local name=$1 line=$2 f=$T_TMP/$1.ini
	cat >"$f"
	run -c "$f" --check
	local want=$f:$line:
	[ "$line" = any ] && want=$f:
	if [ $rc -eq 2 ] && grep -qF "$want" "$err"; then
		pass "check-$name"
	else
		fail "check-$name" "exit $rc (want 2 and '$f:$line:' on stderr); stderr: $(head -c 400 "$err")"
	fi
}
P=$(free_port)

bad_config unknown-key 4 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:$P
frobnicate = yes
CONF

bad_config unknown-main-key 2 <<CONF
[main]
frobnicate = yes
[inbound s5]
type = socks5
listen = 127.0.0.1:$P
CONF

bad_config unknown-section 5 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:$P

[frobnicator]
a = b
CONF

bad_config bad-listen-port 3 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:99999
CONF

bad_config bad-listen-addr 3 <<CONF
[inbound s5]
type = socks5
listen = not-an-address
CONF

bad_config bad-inbound-type 2 <<CONF
[inbound s5]
type = gopher
listen = 127.0.0.1:$P
CONF

bad_config bad-timeout 2 <<CONF
[main]
connect-timeout = soon
[inbound s5]
type = socks5
listen = 127.0.0.1:$P
CONF

bad_config route-unknown-outbound 7 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:$P

[route]
default = direct
rule = cidr 10.0.0.0/8 -> nosuch
CONF

bad_config route-default-unknown 6 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:$P

[route]
default = nosuch
CONF

bad_config inbound-unknown-outbound 4 <<CONF
[inbound s5]
type = socks5
listen = 127.0.0.1:$P
outbound = nosuch
CONF

# A missing key has no line of its own: any file:line: will do.
bad_config forward-without-target any <<CONF
[inbound f]
type = forward
listen = 127.0.0.1:$P
CONF

# A bad config without --check must also refuse to start, with status 2.
run -c "$T_TMP/unknown-key.ini"
if [ $rc -eq 2 ]; then pass start-bad-config; else fail start-bad-config "exit $rc, want 2"; fi

finish
