#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the proto/ fuzz targets with clang (libFuzzer + ASan + UBSan) into
# build-fuzz/ and run each for FUZZ_SECONDS (default 20); prints
# "PASS: fuzz/<target>" or "FAIL: fuzz/<target>" per target.
#
#   tests/fuzz/run.sh                    all targets, 20 s each
#   FUZZ_SECONDS=600 tests/fuzz/run.sh http_connect   one target, longer
#
# The corpus grows across runs in build-fuzz/corpus/<target>; crash inputs land
# in build-fuzz/artifacts/ and replay with: build-fuzz/fuzz_<target> FILE.
# Without the libFuzzer runtime (libclang-rt-14-dev) the same targets run under
# tests/fuzz/standalone.c, a random + mutation driver, for the same time
# (FUZZ_STANDALONE=1 forces that mode).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here="$top/tests/fuzz"
out=${FUZZ_BUILD:-$top/build-fuzz}
secs=${FUZZ_SECONDS:-20}
all=(socks5_server socks5_client http_connect base64)
[ $# -gt 0 ] && all=("$@")
proto_src=("$top/proto/proto.c" "$top/proto/socks5.c" "$top/proto/http_connect.c" "$top/proto/base64.c")
cflags=(-g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
	-I"$top/proto" -I"$here" -fsanitize=address,undefined -fno-sanitize-recover=undefined)

if ! command -v clang >/dev/null; then
	for t in "${all[@]}"; do echo "SKIP: fuzz/$t (clang not installed)"; done
	exit 0
fi
mkdir -p "$out/artifacts" "$out/seeds"

# libFuzzer's runtime is in libclang-rt-14-dev, which clang only recommends.
mode=libfuzzer
[ -n "${FUZZ_STANDALONE:-}" ] && mode=standalone
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' >"$out/probe.c"
if [ "$mode" = libfuzzer ] && ! clang -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
	mode=standalone
	echo "# fuzz: clang -fsanitize=fuzzer does not link ($(head -n 1 "$out/probe.log")); using tests/fuzz/standalone.c"
fi
rm -f "$out/probe" "$out/probe.c" "$out/probe.log"

# seed NAME TARGET BYTES: one seed input (printf escapes); the first octet is
# the target's selector (see each fuzz_*.c).
seed() { mkdir -p "$out/seeds/$2"; printf "$3" >"$out/seeds/$2/$1"; }
make_seeds() {
	local v6='\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01'
	seed ipv4 socks5_server '\x00\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50GET'
	seed auth socks5_server '\xc3\x05\x02\x00\x02\x01\x05alice\x06secret\x05\x01\x00\x03\x0bexample.com\x01\xbbhello'
	seed authfail socks5_server '\x81\x05\x01\x02\x01\x01u\x01p'
	seed ipv6 socks5_server "\\x05\\x05\\x01\\x00\\x05\\x01\\x00\\x04$v6\\x00\\x16"
	seed bind socks5_server '\x02\x05\x01\x00\x05\x02\x00\x01\x0a\x00\x00\x01\x00\x15'
	seed plain socks5_client '\x00\x05\x00\x05\x00\x00\x01\x0a\x00\x00\x01\x30\x39data'
	seed auth6 socks5_client "\\xb1\\x05\\x02\\x01\\x00\\x05\\x00\\x00\\x04$v6\\x01\\xbb"
	seed refused socks5_client '\x20\x05\x00\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00'
	seed bnddomain socks5_client '\x10\x05\x00\x05\x00\x00\x03\x04host\x00\x50'
	seed domain http_connect '\x00CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'
	seed auth http_connect '\xc4CONNECT [::1]:8080 HTTP/1.1\r\nProxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n\x16\x03'
	seed lf http_connect '\x83\nCONNECT 10.0.0.1:22 HTTP/1.0\nproxy-authorization: basic dTpw\n\n'
	seed get http_connect '\x00GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n'
	seed rfc7617 base64 '\xffQWxhZGRpbjpvcGVuIHNlc2FtZQ=='
	seed pad1 base64 '\x03Zm9vYmE='
	seed pad2 base64 '\x10Zg=='
}
make_seeds

max_len() { case $1 in http_connect) echo 12000 ;; *) echo 2048 ;; esac; }
dict() { case $1 in http_connect) echo "$here/http_connect.dict" ;; socks5_*) echo "$here/socks5.dict" ;; esac; }

rc_all=0
for t in "${all[@]}"; do
	src="$here/fuzz_$t.c"
	bin="$out/fuzz_$t"
	log="$out/fuzz_$t.log"
	if [ ! -f "$src" ]; then echo "FAIL: fuzz/$t (no $src)"; rc_all=1; continue; fi
	if [ "$mode" = libfuzzer ]; then
		build=(clang "${cflags[@]}" -fsanitize=fuzzer "$src" "${proto_src[@]}" -o "$bin")
	else
		build=(clang "${cflags[@]}" "$src" "$here/standalone.c" "${proto_src[@]}" -o "$bin")
	fi
	if ! "${build[@]}" >"$log" 2>&1; then
		echo "FAIL: fuzz/$t (build)"; sed 's/^/    /' "$log" | head -n 20; rc_all=1; continue
	fi
	corpus="$out/corpus/$t"
	mkdir -p "$corpus"
	cp -n "$out/seeds/$t"/* "$corpus"/ 2>/dev/null
	if [ "$mode" = libfuzzer ]; then
		d=$(dict "$t")
		"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
			-print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" ${d:+-dict="$d"} \
			"$corpus" >"$log" 2>&1
	else
		"$bin" -seconds "$secs" -max_len "$(max_len "$t")" "$corpus" >"$log" 2>&1
	fi
	rc=$?
	if [ "$rc" -eq 0 ]; then
		stats=$(grep -E '^stat::number_of_executed_units|^standalone:' "$log" | tail -n 1)
		cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
		echo "PASS: fuzz/$t (${secs}s $mode; ${stats#stat::}${cov:+, $cov})"
	else
		echo "FAIL: fuzz/$t (exit $rc; log $log)"
		grep -E 'invariant failed|ERROR:|runtime error|SUMMARY|Test unit written|^Base64:' "$log" |
			head -n 12 | sed 's/^/    /'
		rc_all=1
	fi
done
exit "$rc_all"
