# SPDX-License-Identifier: MIT
# The man pages hold together with the code: both pages format without a warning (man-db and
# groff -ww) and have the sections a reader looks for; spliced.ini.5 lists exactly the keys the
# parser's tables (relay/config*.c) accept, section by section; spliced.8 names exactly the long
# options of `spliced --help` and `spliced wg --help`, which between them cover every option the
# getopt tables of app/ accept, plus every `spliced wg` command and every signal the code
# handles; spliced.ini.5's example files load with --check; their .TH version is the binary's;
# meson installs them under share/man.
. "$(dirname "$0")/../lib.sh"
need man groff lexgrog col mandoc
if [ ! -x "$SPLICED_BIN" ]; then
	skip all "$SPLICED_BIN not built"
	exit 0
fi

page8=$T_TOP/man/spliced.8
page5=$T_TOP/man/spliced.ini.5
for p in "$page8" "$page5"; do
	[ -f "$p" ] || { fail present "no $p"; finish; }
done

# --- formatting ---------------------------------------------------------------

# lint PAGE: every warning man-db's pipeline and groff -ww print for it (empty when clean).
lint() {
	{ LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$1" >/dev/null; } 2>&1
	LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$1" 2>&1
}

# render PAGE: the page as a reader sees it, plain text.
render() { LC_ALL=C.UTF-8 MANWIDTH=80 man -E UTF-8 -l "$1" 2>/dev/null | col -bx; }

for p in "$page8" "$page5"; do
	n=$(basename "$p")
	out=$(lint "$p")
	if [ -z "$out" ]; then pass "$n/no-warnings"; else
		fail "$n/no-warnings" "$(echo "$out" | wc -l) warning lines"
		echo "$out" | head -n 10 | sed 's/^/#   /'
	fi
	# mandoc's own linter too (style level: every message fails, long lines included).
	if out=$(mandoc -T lint -W style "$p" 2>&1) && [ -z "$out" ]; then pass "$n/mandoc-lint"
	else fail "$n/mandoc-lint" "$(head -n 5 <<<"$out" | tr '\n' '|')"; fi
	# lexgrog reads NAME the way mandb does for whatis(1) and apropos(1).
	if out=$(lexgrog "$p" 2>&1) && grep -qE ': "spliced(\.ini)? - .+"$' <<<"$out"; then pass "$n/whatis"
	else fail "$n/whatis" "lexgrog: $out"; fi
done

# The linter itself: an undefined macro must be reported.
printf '.TH PROBE 8\n.SH NAME\nprobe \\- a page with a mistake\n.SH DESCRIPTION\n.XYZZY\n' >"$T_TMP/probe.8"
if lint "$T_TMP/probe.8" | grep -q XYZZY; then pass lint-finds-warning; else fail lint-finds-warning "no warning for an undefined macro"; fi

text8=$(render "$page8")
text5=$(render "$page5")
expect_lines spliced.8/sections "$text8" NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS SIGNALS FILES \
	'EXIT STATUS' EXAMPLES 'SEE ALSO'
expect_lines spliced.ini.5/sections "$text5" NAME SYNOPSIS DESCRIPTION SYNTAX SECTIONS EXAMPLES 'SEE ALSO' \
	'   \[main\]' '   \[inbound name\]' '   \[outbound name\]' '   \[route\]' '   \[wireguard name\]'

# .TH NAME SECTION DATE "spliced VERSION" ...: the version `spliced --version` prints.
version=$("$SPLICED_BIN" --version 2>/dev/null | sed -n '1s/^spliced //p')
for p in "$page8" "$page5"; do
	th=$(sed -n 's/^\.TH [^ ]* [0-9] [^ ]* "spliced \([^"]*\)".*/\1/p' "$p")
	expect_eq "$(basename "$p")/version" "$th" "$version" ".TH version (the binary says 'spliced $version')"
done

# --- configuration keys: the parser's tables against spliced.ini.5 ---------------

# code_keys: "SECTION KEY" for every entry of the key tables, config_SECTION_keys[] in relay/config*.c.
code_keys() {
	awk '
		match($0, /^const struct key config_[a-z]+_keys\[\] = \{/) {
			sec = $0; sub(/^const struct key config_/, "", sec); sub(/_keys.*/, "", sec); next
		}
		sec != "" && /^\};/ { sec = ""; next }
		sec != "" && match($0, /\{"[a-z0-9-]+",/) { print sec, substr($0, RSTART + 2, RLENGTH - 4) }
	' "$T_TOP"/relay/config*.c | sort
}

# page_keys PAGE: "SECTION KEY" for every key paragraph of the page: a .TP whose tag reads
# "\fBkey\fR = ...", under a .SS "[section ...]" heading (a key outside one is "? key").
page_keys() {
	awk '
		/^\.S[HS] / { sec = "?" }
		/^\.SS "?\[/ { sec = $0; sub(/^\.SS "?\[/, "", sec); sub(/[] \\].*/, "", sec) }
		prev == ".TP" && /^\\fB[a-z0-9\\-]+\\fR = / {
			k = $0; sub(/^\\fB/, "", k); sub(/\\fR = .*/, "", k); gsub(/\\-/, "-", k); print sec, k
		}
		{ prev = $0 }
	' "$1" | sort
}

# missing NAME WHAT HAVE WANT: FAIL listing the lines of WANT that HAVE lacks.
missing() {
	local gone
	gone=$(comm -13 <(sort -u <<<"$3") <(sort -u <<<"$4") | tr '\n' ',' | sed 's/,$//; s/,/, /g')
	if [ -z "$gone" ]; then pass "$1"; else fail "$1" "$2: $gone"; fi
}

code=$(code_keys)
page=$(page_keys "$page5")
# The extraction must see the tables at all, or an empty list would pass everything below.
if [ "$(wc -l <<<"$code")" -ge 40 ] && grep -qx 'main workers' <<<"$code" && grep -qx 'inbound listen' <<<"$code" &&
	grep -qx 'outbound server' <<<"$code" && grep -qx 'route rule' <<<"$code" && grep -qx 'wireguard config' <<<"$code"; then
	pass keys/parser-tables-read
else
	fail keys/parser-tables-read "read $(wc -l <<<"$code") keys from relay/config*.c: $(tr '\n' ',' <<<"$code")"
fi
missing keys/parser-keys-in-page "keys the parser accepts that spliced.ini.5 does not document" "$page" "$code"
missing keys/page-keys-in-parser "keys spliced.ini.5 documents that the parser does not accept (SECTION KEY)" "$code" "$page"
dups=$(uniq -d <<<"$page" | tr '\n' ',')
if [ -z "$dups" ]; then pass keys/page-no-duplicates; else fail keys/page-no-duplicates "documented twice: $dups"; fi

# The values of each type key: the parser's name tables against the page's "type = a | b" lines.
code_types() { # KIND (inbound|outbound)
	awk -v t="$1_types" '
		index($0, "static const char *const " t "[]") { on = 1 }
		on { while (match($0, /\] = "[a-z0-9]+"/)) { v = substr($0, RSTART + 5, RLENGTH - 6); print v; $0 = substr($0, RSTART + RLENGTH) } }
		on && /;/ { exit }
	' "$T_TOP/relay/config_$1.c" | sort
}
page_types() { # N: the Nth "type =" paragraph (1 inbound, 2 outbound)
	grep -E '^\\fBtype\\fR = ' "$page5" | sed -n "$1p" | sed -E 's/^\\fBtype\\fR = //; s/\\f[BRIP]//g; s/ \| /\n/g' | tr -d ' ' | sort
}
for k in inbound:1 outbound:2; do
	ct=$(code_types "${k%:*}") pt=$(page_types "${k#*:}")
	if [ "$(wc -l <<<"$ct")" -ge 4 ] && [ "$ct" = "$pt" ]; then
		pass "keys/${k%:*}-types"
	else
		fail "keys/${k%:*}-types" "parser: $(tr '\n' ' ' <<<"$ct")| page: $(tr '\n' ' ' <<<"$pt")"
	fi
done

# The comparison itself: a page that drops one key and adds an unknown one must fail both ways.
sed -e '/^\\fBworkers\\fR = /s/workers/no\\-such\\-key/' "$page5" >"$T_TMP/probe.5"
probe=$(page_keys "$T_TMP/probe.5")
expect_eq keys/checker-finds-drift "$(comm -3 <(echo "$page") <(echo "$probe") | tr -d '\t' | tr '\n' ',')" \
	"main no-such-key,main workers," "what the comparison reports for a page with workers renamed"

# Every example file of spliced.ini.5 (its .EX blocks) loads with --check, beside the users
# file and the wg-quick file it names.
mkdir -p "$T_TMP/ex"
awk '/^\.EX/ { n++; on = 1; next } /^\.EE/ { on = 0 } on { print > (dir "/ex" n ".ini") }' dir="$T_TMP/ex" "$page5"
sed -i -e 's/\\-/-/g' -e 's/\\(dq/"/g' -e 's/\\e/\\/g' "$T_TMP"/ex/*.ini
echo 'alice secret' >"$T_TMP/ex/users.txt"
printf '[Interface]\nPrivateKey = %s\nAddress = 10.8.0.1/24\n' "$("$SPLICED_BIN" wg genkey 2>/dev/null)" >"$T_TMP/ex/wg0.conf"
chmod 600 "$T_TMP"/ex/*
n=0 bad=
for f in "$T_TMP"/ex/ex*.ini; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	out=$("$SPLICED_BIN" --check -c "$f" 2>&1) || bad+="$(basename "$f"): $(tr '\n' ' ' <<<"$out")"
done
if [ "$n" -ge 2 ] && [ -z "$bad" ]; then pass spliced.ini.5/examples-load
else fail spliced.ini.5/examples-load "$n examples; ${bad:-want at least 2}"; fi

# --- command line: --help, the getopt tables and spliced.8 ------------------------

# long_opts: the distinct --options in stdin.
long_opts() { grep -oE -- '--[a-z][a-z0-9-]+' | sort -u; }
# roff_text PAGE: the source without font escapes and with \- as -, EXAMPLES left out (they show
# other programs' options, curl's --socks5-hostname).
roff_text() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1" | awk '/^\.SH /{ skip = ($2 == "EXAMPLES") } !skip'
}

help=$("$SPLICED_BIN" --help 2>&1; "$SPLICED_BIN" wg --help 2>&1)
help_long=$(long_opts <<<"$help")
man_long=$(roff_text "$page8" | long_opts)
# Every option the getopt tables of app/ accept: {"name", no_argument|required_argument, ...}.
src_long=$(grep -hoE '\{"[a-z][a-z0-9-]+", *(no|required|optional)_argument' "$T_TOP"/app/*.c |
	sed -E 's/^\{"([^"]+)".*/--\1/' | sort -u)
# Accepted on purpose without a word in --help or the man page, with the reason.
hidden='--unsafe-test-time-scale' # wg up: tests only; refused without SPLICED_WG_ALLOW_TEST_KNOBS=1

if [ "$(wc -l <<<"$help_long")" -ge 5 ] && grep -qx -- '--config' <<<"$help_long" && grep -qx -- '--no-routes' <<<"$help_long"; then
	pass options/help-read
else
	fail options/help-read "long options found in spliced --help and spliced wg --help: $(tr '\n' ' ' <<<"$help_long")"
fi
missing options/help-in-page "long options of --help that spliced.8 does not name" "$man_long" "$help_long"
missing options/page-in-help "long options spliced.8 names that --help does not" "$help_long" "$man_long"
missing options/accepted-in-help "options the getopt tables of app/*.c accept that --help does not name" \
	"$help_long"$'\n'"$hidden" "$src_long"
missing options/hidden-still-accepted "options listed here as hidden that no getopt table has" "$src_long" "$hidden"

# Short options: each "-x, --long" pair of --help shows up as one tag in the rendered page.
bad=
while read -r s l; do
	grep -qE -- "^ +$s( [a-z.]+)?, $l( |\$)" <<<"$text8" || bad+="$s/$l "
done < <(grep -oE -- '-[a-zA-Z], --[a-z][a-z0-9-]+' <<<"$help" | sed 's/,//' | sort -u)
if [ -z "$bad" ]; then pass options/short-forms; else fail options/short-forms "no \"-x, --long\" tag in spliced.8 for: $bad"; fi

# `spliced wg` commands: those its usage lists, those wg_main() compares, and spliced.8's.
wg_help=$(sed -nE 's/^  ([a-z]+)( .*)?$/\1/p' <<<"$("$SPLICED_BIN" wg --help 2>&1)" | sort -u)
wg_src=$(grep -oE 'strcmp\(cmd, "[a-z]+"\)' "$T_TOP/app/wg_cli.c" | sed -E 's/.*"(.*)".*/\1/' | grep -vx help | sort -u)
wg_page=$(sed -nE 's/^ {7}wg ([a-z]+)( .*)?$/\1/p' <<<"$text8" | grep -vx help | sort -u)
if [ "$(wc -l <<<"$wg_src")" -ge 6 ]; then pass wg/commands-read; else fail wg/commands-read "wg_main() compares: $(tr '\n' ' ' <<<"$wg_src")"; fi
missing wg/accepted-in-help "commands wg_main() takes that spliced wg --help does not list" "$wg_help" "$wg_src"
missing wg/help-in-page "spliced wg commands without a paragraph in spliced.8" "$wg_page" "$wg_help"
missing wg/page-in-code "spliced wg commands spliced.8 describes that wg_main() does not take" "$wg_src" "$wg_page"

# --- signals: what main() waits for or ignores, and spliced wg up's handlers ----------

sig_src=$(grep -hoE '(sigaddset\(&sigs|signal\(|sigaction\()SIG[A-Z0-9]+' "$T_TOP/app/main.c" "$T_TOP/app/wg_cli.c" |
	grep -oE 'SIG[A-Z0-9]+$' | sort -u)
sig_page=$(awk '/^\.SH /{ on = ($2 == "SIGNALS"); next } on' "$page8" | grep -oE '\bSIG[A-Z0-9]+\b' | sort -u)
if grep -qx SIGHUP <<<"$sig_src" && grep -qx SIGTERM <<<"$sig_src"; then pass signals/code-read; else fail signals/code-read "found: $(tr '\n' ' ' <<<"$sig_src")"; fi
missing signals/handled-in-page "signals app/ handles that the SIGNALS section does not name" "$sig_page" "$sig_src"
missing signals/page-in-code "signals the SIGNALS section names that app/ does not handle" "$sig_src" "$sig_page"

# --- installation ---------------------------------------------------------------------

# The meson build the binary comes from installs both pages where man(1) finds them.
build=$(cd "$(dirname "$SPLICED_BIN")/.." && pwd)
if [ ! -f "$build/meson-private/install.dat" ] || ! command -v meson >/dev/null; then
	skip install "$SPLICED_BIN is not in a meson build directory, or meson is missing"
elif ! out=$(meson install -C "$build" --no-rebuild --destdir "$T_TMP/dest" 2>&1); then
	fail install "meson install --destdir failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
else
	i8=$(find "$T_TMP/dest" -path '*/share/man/man8/spliced.8' | head -n 1)
	i5=$(find "$T_TMP/dest" -path '*/share/man/man5/spliced.ini.5' | head -n 1)
	if [ -z "$i8" ] || [ -z "$i5" ]; then
		fail install "want share/man/man8/spliced.8 and share/man/man5/spliced.ini.5; installed: $(cd "$T_TMP/dest" && find . -type f | tr '\n' ' ')"
	elif ! cmp -s "$i8" "$page8" || ! cmp -s "$i5" "$page5"; then
		fail install "the installed pages differ from man/ (a build directory of another checkout?)"
	else
		pass install
	fi
fi

finish
