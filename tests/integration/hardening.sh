#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build hardening, read back from the ELF of every spliced build under test (meson.build's
# hardening block): a position-independent executable (ET_DYN), every symbol bound at start
# (BIND_NOW) under a read-only GNU_RELRO segment, a GNU_STACK without the execute bit, and the
# stack-protector and _FORTIFY_SOURCE imports (__stack_chk_fail, __*_chk). The bundled
# wolfSSL archive, linked statically, must mark every object's stack non-executable too
# (-z noexecstack would otherwise hide an assembly file without .note.GNU-stack).
. "$(dirname "$0")/../lib.sh"
need readelf

# check_elf NAME BINARY
check_elf() {
	local n=$1 bin=$2 hdr dyn seg und chk
	if [ ! -x "$bin" ]; then
		fail "$n/present" "no $bin"
		return
	fi
	hdr=$(readelf -hW "$bin")
	if grep -qE '^ *Type: +DYN' <<<"$hdr"; then pass "$n/pie"; else fail "$n/pie" "$(grep Type: <<<"$hdr")"; fi
	dyn=$(readelf -dW "$bin")
	if grep -qE '\(BIND_NOW\)|\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*\bNOW\b' <<<"$dyn"; then pass "$n/bind-now"
	else fail "$n/bind-now" "$(grep -E 'FLAGS' <<<"$dyn" | tr -s ' ')"; fi
	seg=$(readelf -lW "$bin")
	if grep -qE '^ *GNU_RELRO ' <<<"$seg"; then pass "$n/relro"; else fail "$n/relro" "no GNU_RELRO segment"; fi
	# GNU_STACK's flags are the second-to-last field: RW, never RWE
	local st
	st=$(awk '$1 == "GNU_STACK" { print $(NF-1) }' <<<"$seg")
	if [ -z "$st" ]; then fail "$n/noexec-stack" "no GNU_STACK segment (the stack defaults to executable)"
	elif [[ $st == *E* ]]; then fail "$n/noexec-stack" "GNU_STACK flags $st"
	else pass "$n/noexec-stack"; fi
	und=$(readelf --dyn-syms -W "$bin" | awk '$7 == "UND" { sub(/@.*/, "", $8); print $8 }' | sort -u)
	if grep -qx '__stack_chk_fail' <<<"$und"; then pass "$n/stack-protector"
	else fail "$n/stack-protector" "__stack_chk_fail is not imported"; fi
	chk=$(grep -E '^__.+_chk$' <<<"$und" | grep -vx '__stack_chk_fail' | tr '\n' ' ')
	if [ -n "$chk" ]; then pass "$n/fortify"; echo "# $n: fortified calls: $chk"
	else fail "$n/fortify" "no __*_chk import: _FORTIFY_SOURCE is off"; fi
}

check_elf release "$SPLICED_BIN"
if [ -n "${SPLICED_ASAN_BIN:-}" ]; then
	check_elf asan "$SPLICED_ASAN_BIN"
else
	echo "# SPLICED_ASAN_BIN not set: the ASan build is not checked"
fi

# The bundled wolfSSL (scripts/build-wolfssl's cache), when this build links it.
if grep -q 'bundled-asm' < <("$SPLICED_BIN" --version 2>/dev/null); then
	prefix=$("$T_TOP/scripts/build-wolfssl" --quiet 2>/dev/null)
	lib=$prefix/lib/libwolfssl.a
	if [ -z "$prefix" ] || [ ! -f "$lib" ]; then
		fail wolfssl/noexec-stack "spliced links the bundled wolfSSL but $lib is not there"
	else
		bad=$(readelf -SW "$lib" 2>/dev/null | awk '
			/^File:/ { f = $2; files[f] = 1 }
			/\.note\.GNU-stack/ { seen[f] = 1; if ($0 ~ / [A-Z]*X[A-Z]* /) print "executable:", f }
			END { for (f in files) if (!(f in seen)) print "no .note.GNU-stack:", f }')
		n=$(ar t "$lib" | grep -c '\.o$')
		if [ -z "$bad" ] && [ "$n" -gt 0 ]; then pass wolfssl/noexec-stack; echo "# wolfssl: $n objects, each with a non-executable .note.GNU-stack"
		else fail wolfssl/noexec-stack "$(head -n 5 <<<"$bad" | tr '\n' ';')"; fi
	fi
else
	echo "# spliced does not link the bundled wolfSSL: no archive to check"
fi
finish
