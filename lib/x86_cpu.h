/* SPDX-License-Identifier: MIT */
/* x86-64 CPU features for the AVX-512 routines of lib/aesgcm and lib/poly1305. */
#ifndef SPLICED_X86_CPU_H
#define SPLICED_X86_CPU_H

#include <cpuid.h>
#include <stdbool.h>

/*
 * CPUID, not __builtin_cpu_supports: older clang knows no "vaes" there.
 * True when the OS saves the SSE, AVX and AVX-512 state (OSXSAVE, then
 * XCR0 bits 1, 2, 5, 6, 7) and the CPU has AVX-512F, BW and VL (leaf 7
 * ebx bits 16, 30, 31), which both callers' routines use; leaf 1's ecx and
 * leaf 7's ebx and ecx are handed back for the caller's own feature bits.
 */
static inline bool x86_cpu_avx512(unsigned *leaf1_ecx, unsigned *leaf7_ebx, unsigned *leaf7_ecx)
{
	const unsigned f_bw_vl = (1u << 16) | (1u << 30) | (1u << 31);
	unsigned a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return false;
	*leaf1_ecx = c;
	__asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	(void)hi;
	if ((lo & 0xe6) != 0xe6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	*leaf7_ebx = b;
	*leaf7_ecx = c;
	return (b & f_bw_vl) == f_bw_vl;
}

#endif
