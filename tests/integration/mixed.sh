#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# type = mixed: SOCKS5 and HTTP CONNECT on one port, under ASan when it is built. curl through
# it both ways (socks5h:// and an http:// proxy with a CONNECT tunnel), byte-exact; the same
# users for both (RFC 1929 and Basic; a wrong password refused by each protocol's own reply);
# UDP ASSOCIATE on the SOCKS5 side with udp = on; a first byte that is neither (SOCKS4's 4,
# a TLS record's 0x16) answered 400 by the HTTP side and closed, and nothing leaks.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 head
UA=$T_TOP/tests/tools/udpassoc.py

www_blob 3000000 || { fail setup "http server"; finish; }
EP=$(free_port)
udp_echo "" 127.0.0.1 "$EP" || { fail setup/echo; finish; }

P=$(free_port) PA=$(free_port)
use_asan_spliced
start_spliced "
[main]
log-level = debug
[inbound open]
type = mixed
listen = 127.0.0.1:$P
[inbound auth]
type = mixed
listen = 127.0.0.1:$PA
user = alice:secret
udp = on
" || { fail start "spliced did not start"; finish; }
URL=http://127.0.0.1:$H_PORT/blob

curl_cmp socks5-side "$www/blob" "$URL" -x "socks5h://127.0.0.1:$P"
curl_cmp http-side-connect "$www/blob" "$URL" -p -x "http://127.0.0.1:$P"
curl_cmp socks5-side-auth "$www/blob" "$URL" -x "socks5h://alice:secret@127.0.0.1:$PA"
curl_cmp http-side-auth "$www/blob" "$URL" -p -x "http://127.0.0.1:$PA" -U alice:secret

code=$(curl -s -o /dev/null -w '%{http_connect}' --max-time 10 -p -x "http://127.0.0.1:$PA" -U alice:wrong "$URL")
expect_eq http-side/wrong-password-407 "$code" 407 "CONNECT status"
curl -s -o /dev/null --max-time 10 -x "socks5h://alice:wrong@127.0.0.1:$PA" "$URL"
e=$?
if [ "$e" -ne 0 ]; then pass socks5-side/wrong-password-refused; else fail socks5-side/wrong-password-refused "curl succeeded"; fi

o=$(timeout 30 python3 "$UA" 127.0.0.1 "$PA" --user alice --pass secret echo 127.0.0.1 "$EP" 1400 2>&1)
expect_lines socks5-side/udp-associate "$o" "echo 1400 ok 127\.0\.0\.1:$EP"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P" echo 127.0.0.1 "$EP" 1 2>&1)
expect_lines socks5-side/udp-off-rep-07 "$o" "rep 7"

# Neither protocol: the HTTP side answers 400 and closes.
for b in 'SOCKS4 04 01 00 50 7f 00 00 01 00' 'TLS 16 03 01 00 05 01 00 00 01 00'; do
	name=${b%% *}
	r=$(python3 - "$P" "${b#* }" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(bytes.fromhex(sys.argv[2].replace(" ", "")) + b"\r\n\r\n")
d = b""
try:
    while True:
        c = s.recv(4096)
        if not c:
            break
        d += c
except socket.timeout:
    print("timeout"); sys.exit()
print(d.split(b"\r\n")[0].decode(errors="replace"), "closed")
PY
)
	expect_eq "neither/$name-400" "$r" "HTTP/1.1 400 Bad Request closed" "first line"
done

stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
expect_clean_log sanitizers
finish
