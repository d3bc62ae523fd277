#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [main] access-log, under ASan when it is built: one line per finished connection with its
# inbound, client, user, target, the address connected to, outbound, bytes each way, duration
# and result (ok, auth-failed, blocked, refused, bad-request, udp-associate), written within a
# second; reopened by name on SIGUSR1 and SIGHUP (logrotate's postrotate), the last lines
# written at stop; access-log = stderr; a file that cannot be opened stops the start.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 head
UA=$T_TOP/tests/tools/udpassoc.py

www_blob 1000000 || { fail setup "http server"; finish; }
CLOSED=$(free_port) BLOCKED=$(free_port)
LOG=$T_TMP/access.log
PS=$(free_port) PH=$(free_port)
use_asan_spliced
start_spliced "
[main]
access-log = $LOG
resolve-timeout = 1s
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
user = alice:secret
udp = on
[inbound web]
type = http
listen = 127.0.0.1:$PH
[outbound nope]
type = block
[route]
rule = port $BLOCKED -> nope
default = direct
" || { fail start "spliced did not start"; finish; }
URL=http://127.0.0.1:$H_PORT/blob

curl_cmp relay-socks5-with-user "$www/blob" "$URL" -x "socks5h://alice:secret@127.0.0.1:$PS"
curl_cmp relay-http-connect "$www/blob" "$URL" -p -x "http://127.0.0.1:$PH"
curl -s -o /dev/null --max-time 10 -x "socks5h://alice:wrong@127.0.0.1:$PS" "$URL"
curl -s -o /dev/null --max-time 10 -x "socks5h://alice:secret@127.0.0.1:$PS" "http://127.0.0.1:$BLOCKED/"
curl -s -o /dev/null --max-time 10 -x "socks5h://alice:secret@127.0.0.1:$PS" "http://127.0.0.1:$CLOSED/"
curl -s -o /dev/null --max-time 10 -x "socks5h://alice:secret@127.0.0.1:$PS" "http://localhost:$H_PORT/blob"
printf 'GARBAGE\r\n\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.stdin.buffer.read())
s.recv(100)' "$PS" 2>/dev/null
timeout 20 python3 "$UA" 127.0.0.1 "$PS" --user alice --pass secret quiet 0.1 >/dev/null 2>&1
# A SOCKS5 name may hold any octet but NUL: a blank and a line break must not reach the log.
timeout 10 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=8)
name = b"evil host\nresult=ok"
s.sendall(b"\x05\x01\x02" + b"\x01\x05alice\x06secret" + b"\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x00\x50")
s.recv(100); s.recv(100)' "$PS" 2>/dev/null

# Written within a second of the end (the worker's buffer goes once a second).
for _ in $(seq 50); do [ "$(wc -l <"$LOG" 2>/dev/null)" -ge 11 ] && break; sleep 0.1; done
sleep 1.2
c='client=127\.0\.0\.1:[0-9]+'
ts='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
o=$(cat "$LOG" 2>/dev/null)
expect_lines lines/socks5-ok "$o" \
	"$ts inbound=s $c user=alice target=127\.0\.0\.1:$H_PORT remote=127\.0\.0\.1:$H_PORT outbound=direct up=[0-9]+ down=10[0-9]{5} ms=[0-9]+ result=ok"
expect_lines lines/http-ok "$o" \
	"$ts inbound=web $c user=- target=127\.0\.0\.1:$H_PORT remote=127\.0\.0\.1:$H_PORT outbound=direct up=[0-9]+ down=10[0-9]{5} ms=[0-9]+ result=ok"
expect_lines lines/auth-failed "$o" "$ts inbound=s $c user=- target=- remote=- outbound=- up=0 down=0 ms=[0-9]+ result=auth-failed"
expect_lines lines/blocked "$o" "$ts inbound=s $c user=alice target=127\.0\.0\.1:$BLOCKED remote=- outbound=nope up=0 down=0 ms=[0-9]+ result=blocked"
expect_lines lines/refused "$o" "$ts inbound=s $c user=alice target=127\.0\.0\.1:$CLOSED remote=- outbound=direct up=0 down=0 ms=[0-9]+ result=refused"
expect_lines lines/name-target "$o" "$ts inbound=s $c user=alice target=localhost:$H_PORT remote=(127\.0\.0\.1|\[::1\]):$H_PORT outbound=direct .* result=ok"
expect_lines lines/bad-request "$o" "$ts inbound=s $c user=- target=- remote=- outbound=- up=0 down=0 ms=[0-9]+ result=bad-request"
expect_lines lines/udp-associate "$o" "$ts inbound=s $c user=alice target=0\.0\.0\.0:0 remote=- outbound=- up=0 down=0 ms=[0-9]+ result=udp-associate"
expect_lines lines/name-sanitized "$o" "$ts inbound=s $c user=alice target=evil\?host\?result=ok:80 remote=- outbound=direct up=0 down=0 ms=[0-9]+ result=[a-z-]+"
# start_spliced's readiness probe connected once to each listener and left: 2 lines more.
expect_lines lines/probe-closed "$o" "$ts inbound=web $c user=- target=- remote=- outbound=- up=0 down=0 ms=[0-9]+ result=closed"
n=$(wc -l <"$LOG")
expect_eq lines/one-per-connection "$n" 11 "lines"

# Rotation: the file moved away, SIGUSR1, and the next line goes to a new file by the name.
for sig in USR1 HUP; do
	mv "$LOG" "$LOG.$sig"
	kill -"$sig" "$SPLICED_PID"
	sleep 0.3
	curl -s -o /dev/null --max-time 10 -p -x "http://127.0.0.1:$PH" "$URL"
	sleep 1.5
	expect_eq "reopen/$sig-new-file" "$(grep -c 'inbound=web' "$LOG" 2>/dev/null)" 1 "lines in the new file"
done
expect_eq reopen/old-file-untouched "$(wc -l <"$LOG.USR1")" 11 "lines in the moved file"

# At stop the last lines are written at once, not a second later.
curl -s -o /dev/null --max-time 10 -p -x "http://127.0.0.1:$PH" "$URL"
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
expect_eq stop/last-line-written "$(grep -c 'inbound=web' "$LOG")" 2 "lines after the stop"
expect_clean_log sanitizers

# access-log = stderr: the lines go with the log.
P2=$(free_port)
start_spliced "
[main]
access-log = stderr
[inbound f]
type = http
listen = 127.0.0.1:$P2
" || { fail start-stderr "spliced did not start"; finish; }
curl -s -o /dev/null --max-time 10 -p -x "http://127.0.0.1:$P2" "$URL"
sleep 1.5
if grep -qE "inbound=f .* result=ok" "$SPLICED_LOG"; then pass stderr/line; else fail stderr/line "$(tail -n 3 "$SPLICED_LOG")"; fi
stop_spliced

# A file that cannot be opened: the start fails, saying why.
printf '[main]\naccess-log = %s/no/such/dir/a.log\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:%s\n' \
	"$T_TMP" "$(free_port)" >"$T_TMP/bad.ini"
timeout 10 "$SPLICED_BIN" -c "$T_TMP/bad.ini" 2>"$T_TMP/bad.err"
expect_eq cannot-open/exit-1 "$?" 1 "exit status"
if grep -q "access-log: cannot open $T_TMP/no/such/dir/a.log: No such file or directory" "$T_TMP/bad.err"; then
	pass cannot-open/message
else
	fail cannot-open/message "$(cat "$T_TMP/bad.err")"
fi
finish
