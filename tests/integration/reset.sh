# SPDX-License-Identifier: MIT
# Resets cross spliced: a target RST reaches the client as ECONNRESET (not a clean EOF), and a
# client RST makes spliced drop the target leg promptly (socks5 and forward inbounds).
. "$(dirname "$0")/../lib.sh"
need_spliced

TPORT=$(free_port)
PS=$(free_port)
PF=$(free_port)
start_spliced "
[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
[inbound f]
type = forward
listen = 127.0.0.1:$PF
target = 127.0.0.1:$TPORT
" || { fail start "spliced did not start"; finish; }

via() {
	case $1 in
	socks5) echo "--socks5 127.0.0.1:$PS 127.0.0.1 $TPORT" ;;
	forward) echo "127.0.0.1 $PF" ;;
	esac
}

hello=$T_TMP/hello
printf 'hello' >"$hello"
big=$T_TMP/big
head -c $((4 * 1024 * 1024)) /dev/urandom >"$big"

# A control run without spliced: the same tools must see the reset directly, otherwise the
# checks below would prove nothing.
XFER_IN=/dev/null
if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
	o=$(timeout 10 "$XFER" connect --no-half-close 127.0.0.1 "$TPORT" <"$hello" 2>&1)
	rc=$?
	if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then pass control-direct-reset
	else fail control-direct-reset "exit $rc: $(tr '\n' ' ' <<<"$o")"; fi
fi

for inb in socks5 forward; do
	# 1. The target reads 5 bytes and aborts (SO_LINGER 0): the client must get ECONNRESET.
	# Neither side half-closes, so a FIN cannot be mistaken for the reset.
	XFER_IN=/dev/null
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
		# shellcheck disable=SC2046
		o=$(timeout 10 "$XFER" connect --no-half-close $(via $inb) <"$hello" 2>&1)
		rc=$?
		if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then
			pass "$inb-target-reset-reaches-client"
		else
			fail "$inb-target-reset-reaches-client" "client exit $rc (want 3, END=reset): $(tr '\n' ' ' <<<"$o")"
		fi
		wait_pid "$S_PID" 5
	fi

	# 2. The same while the target streams 4 MiB at the client, so bytes are in flight in
	# spliced's pipes and socket buffers when the reset arrives: still a reset, not an EOF.
	XFER_IN=$big
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
		# shellcheck disable=SC2046
		o=$(timeout 10 "$XFER" connect --no-half-close $(via $inb) <"$hello" 2>&1 >/dev/null)
		rc=$?
		if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then
			pass "$inb-target-reset-while-streaming"
		else
			fail "$inb-target-reset-while-streaming" "client exit $rc (want 3, END=reset): $(tr '\n' ' ' <<<"$o")"
		fi
		wait_pid "$S_PID" 5
	fi

	# 3. The client reads 5 bytes and aborts: the target (which never half-closes and has
	# more to say) must see a reset or EOF within 3 s.
	XFER_IN=$hello
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close; then
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		o=$(timeout 10 "$XFER" connect --no-half-close --reset-after 5 $(via $inb) </dev/null 2>&1)
		rc=$?
		wait_pid "$S_PID" 5
		src=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ $rc -ne 0 ] || ! grep -q 'END=reset-sent' <<<"$o"; then
			fail "$inb-client-reset-closes-target" "client did not get to reset: exit $rc: $(tr '\n' ' ' <<<"$o")"
		elif [ $src -eq 124 ]; then
			fail "$inb-client-reset-closes-target" "target still connected 5 s after the client reset"
		elif grep -q 'END=reset\|END=eof' "$S_ERR"; then
			pass "$inb-client-reset-closes-target"
			echo "# $inb: target leg closed ${ms} ms after the client connected ($(grep -o 'END=[a-z-]*' "$S_ERR"))"
		else
			fail "$inb-client-reset-closes-target" "target exit $src: $(tr '\n' ' ' <"$S_ERR")"
		fi
	fi
done
XFER_IN=/dev/null
finish
