/* SPDX-License-Identifier: MIT */
/* Which wolfSSL spliced links and which of its assembly paths are compiled in. */
#ifndef SPLICED_CRYPTO_INFO_H
#define SPLICED_CRYPTO_INFO_H

#include <stdbool.h>
#include <stdio.h>

/*
 * Facts about the linked wolfSSL. "asm_*" are what was compiled in (from the
 * options.h of the prefix this file was compiled against, which must be the
 * prefix it links); "cpu_*" are what this CPU offers, because wolfSSL picks
 * the assembly path at run time and falls back to C without it.
 */
struct crypto_info {
	const char *version;  /* wolfSSL_lib_version() of the linked library */
	const char *compiled; /* LIBWOLFSSL_VERSION_STRING of the headers used */
	const char *backend;  /* "bundled-asm", "system" or "none" */
	const char *origin;   /* e.g. "Debian source 5.5.4-2+deb12u3, AES-NI/AVX2" */
	bool asm_aesni;       /* AES-NI + PCLMULQDQ for AES and GCM (WOLFSSL_AESNI) */
	bool asm_avx2;        /* AVX1/AVX2 ChaCha, Poly1305, SHA-2, X25519 (USE_INTEL_SPEEDUP) */
	bool asm_armv8;       /* ARMv8 crypto extensions (WOLFSSL_ARMASM) */
	bool asm_sp;          /* assembly big-number code for RSA/ECC (SP x86-64/arm64) */
	bool cpu_aes;         /* this CPU has AES-NI + PCLMULQDQ (x86) or AES + PMULL (arm64) */
	bool cpu_avx2;        /* this CPU has AVX2 */
};

void crypto_info_get(struct crypto_info *ci);

/* Two lines for `spliced --version`: the library and its assembly paths. */
void crypto_info_print(FILE *f);

#endif
