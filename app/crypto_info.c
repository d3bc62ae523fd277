/* SPDX-License-Identifier: MIT */
/* Report the linked wolfSSL: version, backend and which assembly is compiled in. */
#include "crypto_info.h"

#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

/*
 * The wolfssl meson dependency defines SPLICED_WOLFSSL_LINKED and _ORIGIN, so
 * an object always describes the library its own compile flags point at: the
 * test that links the system library reports "system" even when spliced
 * itself uses the bundled build.
 */
#if __has_include(<wolfssl/options.h>) && defined(SPLICED_WOLFSSL_LINKED)
#define HAVE_WOLFSSL 1
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/version.h>
#else
#define HAVE_WOLFSSL 0
#endif

#ifndef SPLICED_WOLFSSL_ORIGIN
#define SPLICED_WOLFSSL_ORIGIN "unknown origin"
#endif

static void cpu_features(struct crypto_info *ci)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	/* wolfSSL's AES-GCM needs both: AES rounds and carry-less multiply for GHASH. */
	ci->cpu_aes = __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
	ci->cpu_avx2 = __builtin_cpu_supports("avx2");
#elif defined(__aarch64__)
	unsigned long hw = getauxval(AT_HWCAP);
	/* HWCAP_AES = bit 3, HWCAP_PMULL = bit 4 (asm/hwcap.h); spelled out for old libcs. */
	ci->cpu_aes = (hw & (1UL << 3)) && (hw & (1UL << 4));
	ci->cpu_avx2 = false;
#else
	ci->cpu_aes = ci->cpu_avx2 = false;
#endif
}

void crypto_info_get(struct crypto_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	cpu_features(ci);
#if HAVE_WOLFSSL
	ci->version = wolfSSL_lib_version();
	ci->compiled = LIBWOLFSSL_VERSION_STRING;
	ci->backend = SPLICED_WOLFSSL_LINKED;
	ci->origin = SPLICED_WOLFSSL_ORIGIN;
#if defined(WOLFSSL_AESNI)
	ci->asm_aesni = true;
#endif
#if defined(USE_INTEL_SPEEDUP)
	ci->asm_avx2 = true;
#endif
#if defined(WOLFSSL_ARMASM)
	ci->asm_armv8 = true;
#endif
#if defined(WOLFSSL_SP_X86_64_ASM) || defined(WOLFSSL_SP_ARM64_ASM)
	ci->asm_sp = true;
#endif
#else
	ci->version = ci->compiled = "none";
	ci->backend = "none";
	ci->origin = "not built with wolfSSL";
#endif
}

/* unused where no assembly is known (the portable builds: armhf, mipsel, s390x) */
__attribute__((unused)) static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

void crypto_info_print(FILE *f)
{
	struct crypto_info ci;

	crypto_info_get(&ci);
	if (!strcmp(ci.backend, "none")) {
		fprintf(f, "wolfSSL: none (%s)\n", ci.origin);
		return;
	}
	fprintf(f, "wolfSSL %s, %s (%s)", ci.version, ci.backend, ci.origin);
	/* A mismatch means headers and library come from different prefixes. */
	if (strcmp(ci.version, ci.compiled))
		fprintf(f, " [headers are %s!]", ci.compiled);
	fputc('\n', f);
#if defined(__x86_64__) || defined(__i386__)
	fprintf(f,
	        "wolfSSL asm compiled in: AES-NI %s, AVX2 %s, SP-math %s; this CPU: AES-NI %s, AVX2 %s\n",
	        yes_no(ci.asm_aesni), yes_no(ci.asm_avx2), yes_no(ci.asm_sp), yes_no(ci.cpu_aes),
	        yes_no(ci.cpu_avx2));
#elif defined(__aarch64__)
	fprintf(f, "wolfSSL asm compiled in: ARMv8 crypto %s, SP-math %s; this CPU: AES+PMULL %s\n",
	        yes_no(ci.asm_armv8), yes_no(ci.asm_sp), yes_no(ci.cpu_aes));
#else
	fprintf(f, "wolfSSL asm compiled in: none for this architecture (portable C)\n");
#endif
}
