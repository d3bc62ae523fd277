/* SPDX-License-Identifier: MIT */
/* libFuzzer target: base64 strict decode (canonical round trip) and encode (bounds). */
#include "fuzz.h"
#include "base64.h"

#include <errno.h>

/*
 * Input: one selector octet (the output capacity for the decode, so -ENOSPC
 * paths run too), then the text. Strict decoding admits one encoding per
 * value, so whatever decodes must re-encode to exactly the input.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t dec[FUZZ_BUF_MAX];
	static char enc[FUZZ_BUF_MAX * 2];
	const char *text = (const char *)data + 1;
	size_t len, cap, n = 0, m = 0;
	uint8_t *exact;
	int err;

	if (size < 1 || size - 1 > FUZZ_BUF_MAX / 2)
		return 0;
	len = size - 1;
	cap = data[0] == 0xff ? sizeof(dec) : data[0];
	/* a heap block of exactly `cap` bytes, so ASan sees any overrun */
	exact = malloc(cap ? cap : 1);
	CHECK(exact);
	err = base64_decode(exact, cap, text, len, &n);
	CHECK(err == 0 || err == -EINVAL || err == -ENOSPC);
	if (err == 0) {
		CHECK(n <= cap && n <= base64_decoded_max(len));
		CHECK(base64_encode(enc, sizeof(enc), exact, n, &m) == 0);
		CHECK(m == len && !memcmp(enc, text, len) && enc[m] == '\0');
	} else if (err == -ENOSPC) {
		/* the same text with room enough must decode (or be malformed) */
		err = base64_decode(dec, sizeof(dec), text, len, &n);
		CHECK(err == 0 || err == -EINVAL);
		if (err == 0)
			CHECK(n > cap);
	}
	free(exact);

	/* encode the raw input into a buffer of exactly the size it needs */
	m = base64_encoded_len(len);
	char *out = malloc(m + 1);

	CHECK(out);
	CHECK(base64_encode(out, m, data + 1, len, &n) == -ENOSPC);
	CHECK(base64_encode(out, m + 1, data + 1, len, &n) == 0 && n == m && out[m] == '\0');
	CHECK(base64_decode(dec, sizeof(dec), out, n, &m) == 0 && m == len);
	CHECK(!memcmp(dec, data + 1, len));
	free(out);
	return 0;
}
