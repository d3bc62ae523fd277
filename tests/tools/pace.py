#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Copy FILE to stdout at RATE bytes a second (suffixes K M): a transfer that lasts.

pace.py FILE RATE
"""
import sys, time


def size(s):
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1:].upper(), 1)
    return int(s[:-1] if mult > 1 else s) * mult


def main():
    rate = size(sys.argv[2])
    chunk = max(4096, rate // 50)
    out = sys.stdout.buffer
    start, sent = time.monotonic(), 0
    with open(sys.argv[1], "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            out.write(b)
            out.flush()
            sent += len(b)
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)


main()
