/* SPDX-License-Identifier: MIT */
/* WireGuard primitives against published vectors (RFC 7748, RFC 8439, XChaCha draft, BLAKE2). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include "crypto.h"
#include "t.h"

T_SUITE("wg_crypto");

static size_t unhex(uint8_t *out, const char *hex)
{
	size_t n = 0;
	unsigned v;

	while (hex[0] && hex[1]) {
		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

static void test_blake2s_abc(void)
{
	uint8_t out[32], want[32];

	unhex(want, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
	wg_hash(out, "abc", 3);
	T_EQ_MEM(out, want, 32);
	/* HASH(a || b) equals the hash of the concatenation. */
	wg_hash2(out, "a", 1, "bc", 2);
	T_EQ_MEM(out, want, 32);
}

static void test_blake2s_keyed(void)
{
	uint8_t key[32], in[255], out[32], want[32];
	size_t i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	/* blake2s-kat.txt keyed entries: in = "" , "00", 00..3f, 00..fe */
	unhex(want, "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49");
	wg_mac(out, 32, key, 32, in, 0);
	T_EQ_MEM(out, want, 32);
	unhex(want, "40d15fee7c328830166ac3f918650f807e7e01e177258cdc0a39b11f598066f1");
	wg_mac(out, 32, key, 32, in, 1);
	T_EQ_MEM(out, want, 32);
	unhex(want, "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4");
	wg_mac(out, 32, key, 32, in, 64);
	T_EQ_MEM(out, want, 32);
	unhex(want, "3fb735061abc519dfe979e54c1ee5bfad0a9d858b3315bad34bde999efd724dd");
	wg_mac(out, 32, key, 32, in, 255);
	T_EQ_MEM(out, want, 32);
	/* WireGuard's MAC is a 16-byte digest (a different parameter block, not a truncation). */
	unhex(want, "1f946dc212a39570bc06fd378517a91e");
	wg_mac(out, 16, key, 32, "hello", 5);
	T_EQ_MEM(out, want, 16);
}

/* Expected values from Python's hmac.new(key, msg, hashlib.blake2s). */
static void test_hmac_blake2s(void)
{
	uint8_t out[32], want[32], key[100], msg[200];
	size_t i;

	unhex(want, "8717096fc5e7ac53d11d990acd4380c9ddd7bd8da5d8b5bc29855e6c98a866a4");
	wg_hmac(out, (const uint8_t *)"key", 3, "The quick brown fox", 19);
	T_EQ_MEM(out, want, 32);
	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	memset(msg, 'x', sizeof(msg));
	unhex(want, "834cd67f8ca0de35dfcdfff1510ae170f5850f5455aba1c085196c441d7ca7d9");
	wg_hmac(out, key, sizeof(key), msg, sizeof(msg)); /* key longer than a block */
	T_EQ_MEM(out, want, 32);
}

/* KDF_n is HKDF with HMAC-BLAKE2s: t1 = HMAC(prk, 1), t2 = HMAC(prk, t1 || 2), ... */
static void test_kdf(void)
{
	uint8_t key[32], prk[32], t1[32], t2[32], t3[32], w[33], want[32], only1[32], only2[32];

	memset(key, 7, sizeof(key));
	wg_kdf(t1, t2, t3, key, "input", 5);
	wg_hmac(prk, key, 32, "input", 5);
	w[0] = 1;
	wg_hmac(want, prk, 32, w, 1);
	T_EQ_MEM(t1, want, 32);
	memcpy(w, want, 32);
	w[32] = 2;
	wg_hmac(want, prk, 32, w, 33);
	T_EQ_MEM(t2, want, 32);
	memcpy(w, want, 32);
	w[32] = 3;
	wg_hmac(want, prk, 32, w, 33);
	T_EQ_MEM(t3, want, 32);
	wg_kdf(only1, NULL, NULL, key, "input", 5);
	T_EQ_MEM(only1, t1, 32);
	wg_kdf(NULL, only2, NULL, key, "input", 5);
	T_EQ_MEM(only2, t2, 32);
	/* Output aliasing the key (ck = KDF1(ck, x)) must work. */
	wg_kdf(key, NULL, NULL, key, "input", 5);
	T_EQ_MEM(key, t1, 32);
}

static void test_x25519_rfc7748(void)
{
	static const char *v[][3] = {
	        {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
	         "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
	         "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
	        /* u with its top bit set: must be masked, per RFC 7748 section 5 */
	        {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
	         "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
	         "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
	};
	uint8_t k[32], u[32], want[32], out[32];
	size_t i;

	for (i = 0; i < 2; i++) {
		unhex(k, v[i][0]);
		unhex(u, v[i][1]);
		unhex(want, v[i][2]);
		T_EQ_INT(wg_x25519(out, k, u), 0);
		T_EQ_MEM(out, want, 32);
	}
}

static void test_x25519_iterated(void)
{
	uint8_t k[32] = {9}, u[32] = {9}, r[32], want1[32], want1000[32];
	int i;

	unhex(want1, "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
	unhex(want1000, "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
	for (i = 1; i <= 1000; i++) {
		T_ASSERT(wg_x25519(r, k, u) == 0);
		memcpy(u, k, 32);
		memcpy(k, r, 32);
		if (i == 1)
			T_EQ_MEM(k, want1, 32);
	}
	T_EQ_MEM(k, want1000, 32);
}

static void test_x25519_dh(void)
{
	uint8_t a[32], b[32], apub[32], bpub[32], want[32], s1[32], s2[32];

	unhex(a, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
	unhex(b, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
	T_EQ_INT(wg_x25519_public(apub, a), 0);
	T_EQ_INT(wg_x25519_public(bpub, b), 0);
	unhex(want, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	T_EQ_MEM(apub, want, 32);
	unhex(want, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	T_EQ_MEM(bpub, want, 32);
	unhex(want, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
	T_EQ_INT(wg_x25519(s1, a, bpub), 0);
	T_EQ_INT(wg_x25519(s2, b, apub), 0);
	T_EQ_MEM(s1, want, 32);
	T_EQ_MEM(s2, want, 32);
}

/* Low-order points (0, 1, and an order-8 point) give an all-zero secret: rejected. */
static void test_x25519_zero_rejected(void)
{
	uint8_t k[32], out[32], u[32] = {0};

	memset(k, 0x42, sizeof(k));
	T_EQ_INT(wg_x25519(out, k, u), -EINVAL);
	T_ASSERT(wg_ct_is_zero(out, 32));
	u[0] = 1;
	T_EQ_INT(wg_x25519(out, k, u), -EINVAL);
	unhex(u, "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800");
	T_EQ_INT(wg_x25519(out, k, u), -EINVAL);
}

static void test_x25519_clamp_generate(void)
{
	uint8_t k[32];

	memset(k, 0xff, sizeof(k));
	wg_x25519_clamp(k);
	T_EQ_INT(k[0], 0xf8);
	T_EQ_INT(k[31], 0x7f);
	memset(k, 0, sizeof(k));
	wg_x25519_clamp(k);
	T_EQ_INT(k[31], 0x40);
	T_EQ_INT(wg_x25519_generate(k), 0);
	T_EQ_INT(k[0] & 7, 0);
	T_EQ_INT(k[31] & 0xc0, 0x40);
}

static const char sunscreen[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
                                "only one tip for the future, sunscreen would be it.";

/* RFC 8439 section 2.8.2, through wolfSSL directly (its nonce has a non-zero prefix). */
static void test_chacha20poly1305_rfc8439(void)
{
	uint8_t key[32], iv[12], aad[12], want[114], tag[16], ct[114], wtag[16], pt[114];
	size_t n = sizeof(sunscreen) - 1;

	T_EQ_INT(n, 114);
	unhex(key, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
	unhex(iv, "070000004041424344454647");
	unhex(aad, "50515253c0c1c2c3c4c5c6c7");
	unhex(want, "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
	            "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
	            "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
	            "3ff4def08e4b7a9de576d26586cec64b6116");
	unhex(wtag, "1ae10b594f09e26a7e902ecbd0600691");
	T_EQ_INT(wc_ChaCha20Poly1305_Encrypt(key, iv, aad, 12, (const uint8_t *)sunscreen,
	                                     (word32)n, ct, tag),
	         0);
	T_EQ_MEM(ct, want, n);
	T_EQ_MEM(tag, wtag, 16);
	T_EQ_INT(wc_ChaCha20Poly1305_Decrypt(key, iv, aad, 12, ct, (word32)n, tag, pt), 0);
	T_EQ_MEM(pt, sunscreen, n);
}

/* Our wrapper: nonce = 32 zero bits || le64(counter), tag appended, in place allowed. */
static void test_aead_wrapper(void)
{
	uint8_t key[32], iv[12] = {0}, aad[12], ref[114], reftag[16], buf[114 + 16];
	uint64_t counter = 0x0706050403020100ULL;
	size_t n = 114;

	unhex(key, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
	unhex(aad, "50515253c0c1c2c3c4c5c6c7");
	unhex(iv + 4, "0001020304050607");
	wc_ChaCha20Poly1305_Encrypt(key, iv, aad, 12, (const uint8_t *)sunscreen, (word32)n, ref,
	                            reftag);
	memcpy(buf, sunscreen, n);
	wg_aead_seal(buf, buf, n, aad, 12, counter, key);
	T_EQ_MEM(buf, ref, n);
	T_EQ_MEM(buf + n, reftag, 16);
	T_ASSERT(wg_aead_open(buf, buf, n + 16, aad, 12, counter, key));
	T_EQ_MEM(buf, sunscreen, n);
	/* Wrong nonce, flipped bit, wrong AD, truncated: all rejected. */
	wg_aead_seal(buf, buf, n, aad, 12, counter, key);
	T_ASSERT(!wg_aead_open(ref, buf, n + 16, aad, 12, counter + 1, key));
	buf[3] ^= 1;
	T_ASSERT(!wg_aead_open(ref, buf, n + 16, aad, 12, counter, key));
	buf[3] ^= 1;
	T_ASSERT(!wg_aead_open(ref, buf, n + 16, aad, 11, counter, key));
	T_ASSERT(!wg_aead_open(ref, buf, 15, aad, 12, counter, key));
	/* Empty plaintext (keepalives, the response's {}) round-trips. */
	wg_aead_seal(buf, NULL, 0, NULL, 0, 5, key);
	T_ASSERT(wg_aead_open(NULL, buf, 16, NULL, 0, 5, key));
	T_ASSERT(!wg_aead_open(NULL, buf, 16, NULL, 0, 6, key));
}

/* draft-irtf-cfrg-xchacha-03 appendix A.3.1 */
static void test_xchacha20poly1305(void)
{
	uint8_t key[32], nonce[24], aad[12], want[114 + 16], out[114 + 16], pt[114];
	size_t n = 114;

	unhex(key, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
	unhex(nonce, "404142434445464748494a4b4c4d4e4f5051525354555657");
	unhex(aad, "50515253c0c1c2c3c4c5c6c7");
	unhex(want, "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
	            "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
	            "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
	            "21f9664c97637da9768812f615c68b13b52e"
	            "c0875924c1c7987947deafd8780acf49");
	wg_xaead_seal(out, (const uint8_t *)sunscreen, n, aad, 12, nonce, key);
	T_EQ_MEM(out, want, n + 16);
	T_ASSERT(wg_xaead_open(pt, out, n + 16, aad, 12, nonce, key));
	T_EQ_MEM(pt, sunscreen, n);
	out[n] ^= 0x80;
	T_ASSERT(!wg_xaead_open(pt, out, n + 16, aad, 12, nonce, key));
}

/* The cookie AEAD in place, empty, and (where this wolfSSL has XChaCha) byte for byte as wolfSSL's. */
static void test_xchacha20poly1305_shapes(void)
{
	uint8_t key[32], nonce[24], aad[32], buf[300 + 16], ref[300 + 16], plain[300];

	for (int i = 0; i < 32; i++)
		key[i] = aad[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(0xe0 - i);
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 13 + 5);
	/* WireGuard's cookie (16 bytes) and lengths around the 64-byte ChaCha block */
	static const size_t lens[] = {0, 1, 16, 63, 64, 65, 300};
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t n = lens[k];

		memcpy(buf, plain, n);
		wg_xaead_seal(buf, buf, n, aad, 32, nonce, key);
#ifdef HAVE_XCHACHA
		T_EQ_INT(wc_XChaCha20Poly1305_Encrypt(ref, n + 16, n ? plain : aad, n, aad, 32,
		                                      nonce, 24, key, 32),
		         0);
		T_EQ_MEM(buf, ref, n + 16);
#else
		(void)ref;
#endif
		T_ASSERT(wg_xaead_open(buf, buf, n + 16, aad, 32, nonce, key));
		T_EQ_MEM(buf, plain, n);
		if (t_failed_case) {
			printf("  at %zu bytes\n", n);
			return;
		}
	}
	wg_xaead_seal(buf, NULL, 0, NULL, 0, nonce, key);
	T_ASSERT(wg_xaead_open(NULL, buf, 16, NULL, 0, nonce, key));
	nonce[23] ^= 1; /* the last nonce byte is in the 96-bit nonce, not the subkey */
	T_ASSERT(!wg_xaead_open(NULL, buf, 16, NULL, 0, nonce, key));
	nonce[23] ^= 1;
	nonce[0] ^= 1; /* the first is in the subkey */
	T_ASSERT(!wg_xaead_open(NULL, buf, 16, NULL, 0, nonce, key));
	T_ASSERT(!wg_xaead_open(NULL, buf, 15, NULL, 0, nonce, key));
}

static void test_tai64n(void)
{
	struct timespec ts = {.tv_sec = 1700000000, .tv_nsec = 123456789};
	uint8_t a[12], b[12], want[12];

	wg_tai64n(a, &ts);
	/* 2^62 + 10 + 1700000000 = 0x400000006553f10a; ns rounded down to 2^24 multiple */
	unhex(want, "400000006553f10a07000000");
	T_EQ_MEM(a, want, 12);
	ts.tv_nsec += 1 << 24;
	wg_tai64n(b, &ts);
	T_ASSERT(memcmp(b, a, 12) > 0);
	ts.tv_sec++;
	ts.tv_nsec = 0;
	wg_tai64n(a, &ts);
	T_ASSERT(memcmp(a, b, 12) > 0);
}

static void test_ct_helpers(void)
{
	uint8_t a[32] = {0}, b[32] = {0};

	T_ASSERT(wg_ct_eq(a, b, 32));
	T_ASSERT(wg_ct_is_zero(a, 32));
	b[31] = 1;
	T_ASSERT(!wg_ct_eq(a, b, 32));
	T_ASSERT(!wg_ct_is_zero(b, 32));
	wg_wipe(b, 32);
	T_ASSERT(wg_ct_is_zero(b, 32));
	T_EQ_INT(wg_random(a, 32), 0);
	T_ASSERT(!wg_ct_is_zero(a, 32)); /* 2^-256 */
}

int main(void)
{
	T_RUN(test_blake2s_abc);
	T_RUN(test_blake2s_keyed);
	T_RUN(test_hmac_blake2s);
	T_RUN(test_kdf);
	T_RUN(test_x25519_rfc7748);
	T_RUN(test_x25519_iterated);
	T_RUN(test_x25519_dh);
	T_RUN(test_x25519_zero_rejected);
	T_RUN(test_x25519_clamp_generate);
	T_RUN(test_chacha20poly1305_rfc8439);
	T_RUN(test_aead_wrapper);
	T_RUN(test_xchacha20poly1305);
	T_RUN(test_xchacha20poly1305_shapes);
	T_RUN(test_tai64n);
	T_RUN(test_ct_helpers);
	return t_finish();
}
