#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Regenerates the long-message digests in test_crypto.c with OpenSSL (python3-cryptography),
# an implementation independent of wolfSSL, so wolfSSL's unrolled assembly loops are
# checked against someone else's answer. Not run by the test suite; the output is pasted
# into test_crypto.c's bulk_vectors[].
import hashlib
import struct

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305


def rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 7)


def hchacha20(key, n16):
    """draft-irtf-cfrg-xchacha section 2.2 (OpenSSL has no XChaCha)."""
    s = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    s += list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", n16))
    for _ in range(10):
        quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13); quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15)
        quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12); quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))


def xseal(key, n24, m, aad):
    return ChaCha20Poly1305(hchacha20(key, n24[:16])).encrypt(b"\0" * 4 + n24[16:], m, aad)


# The draft's own HChaCha20 vector (section 2.2.1) guards the helper above.
assert hchacha20(bytes(range(32)), bytes.fromhex("000000090000004a0000000031415927")).hex() == \
    "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"

key = bytes(i + 1 for i in range(32))
n12 = bytes(0xA0 + i for i in range(12))
n24 = bytes(0xB0 + i for i in range(24))
aad = bytes(0xC0 + i for i in range(13))
for size in (65, 1400, 16384, 16399):
    m = bytes((i * 31 + 7) & 0xFF for i in range(size))
    outs = (AESGCM(key[:16]).encrypt(n12, m, aad), AESGCM(key).encrypt(n12, m, aad),
            ChaCha20Poly1305(key).encrypt(n12, m, aad), xseal(key, n24, m, aad))
    print("\t{%d, {" % size)
    for o in outs:
        print('\t\t"%s",' % hashlib.sha256(o).hexdigest())
    print("\t}},")
