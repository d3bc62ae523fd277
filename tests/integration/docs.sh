# SPDX-License-Identifier: MIT
# The documentation holds together: every relative link in README.md and docs/*.md points at a
# file of the repository (and, with #anchor into a Markdown file, at one of its headings);
# README.md stays under 15 KiB and shows the two commands a user needs.
. "$(dirname "$0")/../lib.sh"
need python3

readme=$T_TOP/README.md
limit=15360

size=$(wc -c <"$readme")
if [ "$size" -lt "$limit" ]; then
	pass readme-size
else
	fail readme-size "README.md is $size bytes; keep it under $limit: move detail to docs/"
fi

for cmd in ./scripts/run ./scripts/test; do
	if grep -qF -- "$cmd" "$readme"; then pass "readme-mentions-${cmd##*/}"; else fail "readme-mentions-${cmd##*/}" "no '$cmd' in README.md"; fi
done

# Prints one line per broken link: FILE:LINE: LINK: why.
check_links() {
	python3 - "$T_TOP" "$@" <<'PY'
import os, re, sys

top, files = sys.argv[1], sys.argv[2:]
link_re = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
fence_re = re.compile(r'^\s*(```|~~~)')


def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, blanks to '-'."""
    s = re.sub(r'`', '', heading.strip().lower())
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


anchors = {}


def anchors_of(path):
    if path not in anchors:
        seen, out, fenced = {}, set(), False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if fence_re.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
                if m:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    out.add(base if n == 0 else '%s-%d' % (base, n))
        anchors[path] = out
    return anchors[path]


bad = 0
for name in files:
    path = os.path.join(top, name)
    fenced = False
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    for no, line in enumerate(lines, 1):
        if fence_re.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in link_re.findall(re.sub(r'`[^`]*`', '', line)):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # http:, https:, mailto:
                continue
            file_part, _, frag = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            why = None
            if not dest.startswith(top + os.sep) and dest != top:
                why = 'points outside the repository'
            elif not os.path.exists(dest):
                why = 'no such file'
            elif frag and dest.endswith('.md') and frag not in anchors_of(dest):
                why = 'no heading with anchor #%s in %s' % (frag, os.path.relpath(dest, top))
            if why:
                print('%s:%d: %s: %s' % (name, no, target, why))
                bad += 1
sys.exit(1 if bad else 0)
PY
}

mapfile -t docs < <(cd "$T_TOP" && ls README.md docs/*.md 2>/dev/null)
if [ "${#docs[@]}" -lt 2 ]; then
	fail docs-present "want README.md and docs/*.md; found: ${docs[*]}"
else
	pass docs-present
fi
if out=$(check_links "${docs[@]}"); then
	pass links
else
	fail links "$(echo "$out" | wc -l) broken"
	echo "$out" | sed 's/^/#   /'
fi

# The checker itself: a broken file link and a broken anchor must both be reported.
mkdir -p "$T_TMP/probe/docs"
printf '# Top\n\n## A `b` — c; d\n[ok](docs/x.md#x) [gone](nope.md) [frag](#missing) [sec](#top)\n' >"$T_TMP/probe/README.md"
printf '# X\n```\n[in a fence](ignored.md)\n```\n[back](../README.md#a-b--c-d)\n' >"$T_TMP/probe/docs/x.md"
probe=$(T_TOP=$T_TMP/probe; check_links README.md docs/x.md)
expect_eq checker-finds-broken "$(echo "$probe" | sed 's/: [^:]*$//' | tr '\n' ' ')" "README.md:4: nope.md README.md:4: #missing " "broken links reported"

finish
