/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/siphash.c: the reference vectors of the SipHash paper (key 00..0f, message 00..len-1). */
#include "t.h"

#include "siphash.h"

T_SUITE("siphash");

static void test_vectors(void)
{
	static const struct {
		size_t len;
		uint64_t want;
	} v[] = {
	        {0, 0x726fdb47dd0e0e31ull},  {1, 0x74f839c593dc67fdull},
	        {7, 0xab0200f58b01d137ull},  {8, 0x93f5f5799a932462ull},
	        {15, 0xa129ca6149be45e5ull}, {16, 0x3f2acc7f57c29bdbull},
	        {63, 0x958a324ceb064572ull},
	};
	uint8_t key[SIPHASH_KEY_LEN], msg[64];

	for (int i = 0; i < SIPHASH_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t got = siphash24(key, msg, v[i].len);
		if (got != v[i].want)
			T_FAILF("len %zu: %016llx, want %016llx", v[i].len, (unsigned long long)got,
			        (unsigned long long)v[i].want);
	}
	/* another key, another hash */
	key[0] ^= 1;
	T_ASSERT(siphash24(key, msg, 15) != 0xa129ca6149be45e5ull);
}

int main(void)
{
	T_RUN(test_vectors);
	return t_finish();
}
