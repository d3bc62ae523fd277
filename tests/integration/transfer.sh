# SPDX-License-Identifier: MIT
# 1 GiB through every inbound (socks5, http, forward) x outbound (direct, socks5 upstream =
# a second spliced) pair, upload and download, sha256 checked at both ends.
. "$(dirname "$0")/../lib.sh"
need_spliced

SIZE=$((${TRANSFER_MIB:-1024} * 1024 * 1024))

# sha256 of stdin; openssl uses SHA-NI where present (sha256sum is ~5x slower here).
if command -v openssl >/dev/null; then
	hash_stdin() { openssl dgst -sha256 -r | cut -d' ' -f1; }
else
	hash_stdin() { sha256sum | cut -d' ' -f1; }
fi

# The data: made once in RAM (disk when /dev/shm is small), hashed once.
dir=/dev/shm
[ "$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1)" -gt $((SIZE / 1024 + 262144)) ] 2>/dev/null || dir=$T_TMP
data=$dir/spl-transfer-$$.bin
on_cleanup_file "$data"
if command -v openssl >/dev/null; then
	# AES-CTR keystream: incompressible, non-repeating, and 3x faster than /dev/urandom.
	openssl enc -aes-128-ctr -pass pass:spliced-$$ -nosalt -pbkdf2 </dev/zero 2>/dev/null |
		head -c "$SIZE" >"$data"
else
	head -c "$SIZE" /dev/urandom >"$data"
fi
want=$(hash_stdin <"$data")
[ "$(stat -c %s "$data")" -eq "$SIZE" ] || { fail setup "could not write $SIZE bytes to $data"; finish; }

TPORT=$(free_port)
UP=$(free_port)
start_spliced "
[main]
workers = 2
[inbound up]
type = socks5
listen = 127.0.0.1:$UP
" || { fail start-upstream "upstream spliced did not start"; finish; }

declare -A P
conf="[main]
workers = 2
[outbound up]
type = socks5
server = 127.0.0.1:$UP
"
for ob in direct up; do
	for inb in socks5 http forward; do
		P[$inb-$ob]=$(free_port)
		conf+="
[inbound $inb-$ob]
type = $inb
listen = 127.0.0.1:${P[$inb-$ob]}
outbound = $ob
"
		[ $inb = forward ] && conf+="target = 127.0.0.1:$TPORT
"
	done
done
start_spliced "$conf" || { fail start "spliced did not start"; finish; }

via() {
	local port=${P[$1-$2]}
	case $1 in
	socks5) echo "--socks5 127.0.0.1:$port 127.0.0.1 $TPORT" ;;
	http) echo "--http 127.0.0.1:$port 127.0.0.1 $TPORT" ;;
	forward) echo "127.0.0.1 $port" ;;
	esac
}

# rate BYTES NANOSECONDS: MB/s
rate() { echo $(($1 / ($2 / 1000 + 1))); }

fifo=$T_TMP/srv.fifo
mkfifo "$fifo"
for ob in direct up; do
	for inb in socks5 http forward; do
		# Upload: the client sends the file and half-closes; the target hashes what it got.
		name=$inb-$ob-upload
		rm -f "$T_TMP/pf"
		hash_stdin <"$fifo" >"$T_TMP/srv.sha" &
		hpid=$!
		"$XFER" listen 127.0.0.1 "$TPORT" --once --no-half-close --port-file "$T_TMP/pf" \
			</dev/null >"$fifo" 2>"$T_TMP/srv.err" &
		spid=$!
		on_cleanup_pid $hpid $spid
		if ! wait_file "$T_TMP/pf" 10; then
			fail "$name" "target did not start: $(cat "$T_TMP/srv.err")"
			continue
		fi
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		timeout 120 "$XFER" connect $(via $inb $ob) <"$data" >/dev/null 2>"$T_TMP/cli.err"
		crc=$?
		wait_pid $spid 20
		src=$?
		wait_pid $hpid 20
		ns=$(($(date +%s%N) - t0))
		got=$(cat "$T_TMP/srv.sha")
		sent=$(grep -o 'SENT=[0-9]*' "$T_TMP/cli.err")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$sent" = "SENT=$SIZE" ] && [ "$got" = "$want" ]; then
			pass "$name"
			echo "# $name: $(rate "$SIZE" "$ns") MB/s (hashing included)"
		else
			fail "$name" "client exit $crc ($sent), target exit $src, sha ${got:0:16} want ${want:0:16}; client: $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$T_TMP/srv.err")"
		fi

		# Download: the target sends the file and half-closes; the client hashes.
		name=$inb-$ob-download
		rm -f "$T_TMP/pf"
		"$XFER" listen 127.0.0.1 "$TPORT" --once --port-file "$T_TMP/pf" \
			<"$data" >/dev/null 2>"$T_TMP/srv.err" &
		spid=$!
		on_cleanup_pid $spid
		if ! wait_file "$T_TMP/pf" 10; then
			fail "$name" "target did not start: $(cat "$T_TMP/srv.err")"
			continue
		fi
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		got=$({
			timeout 120 "$XFER" connect --no-half-close $(via $inb $ob) </dev/null 2>"$T_TMP/cli.err"
			echo $? >"$T_TMP/crc"
		} | hash_stdin)
		crc=$(cat "$T_TMP/crc")
		wait_pid $spid 20
		src=$?
		ns=$(($(date +%s%N) - t0))
		sent=$(grep -o 'SENT=[0-9]*' "$T_TMP/srv.err")
		recvd=$(grep -o 'RECV=[0-9]*' "$T_TMP/cli.err")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$sent" = "SENT=$SIZE" ] && [ "$got" = "$want" ]; then
			pass "$name"
			echo "# $name: $(rate "$SIZE" "$ns") MB/s (hashing included)"
		else
			fail "$name" "client exit $crc ($recvd), target exit $src ($sent), sha ${got:0:16} want ${want:0:16}; client: $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$T_TMP/srv.err")"
		fi
	done
done
finish
