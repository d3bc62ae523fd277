/* SPDX-License-Identifier: MIT */
/* The wolfSSL primitives spliced uses, checked against published vectors in the build it links. */
/*
 * Built twice (tests/unit/meson.build): test_crypto against the wolfssl
 * dependency spliced uses (the bundled assembly build by default) and
 * test_crypto_system against the distribution's library, so a mis-built
 * assembly path fails here instead of corrupting traffic. Short vectors come
 * from the RFCs and NIST; the long-message digests (which reach the unrolled
 * AES-NI/AVX2 loops the short ones never enter) come from OpenSSL through
 * gen_crypto_bulk.py.
 */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/blake2.h>
#include <wolfssl/wolfcrypt/chacha.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ed25519.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/poly1305.h>
#include <wolfssl/wolfcrypt/sha3.h>

#include <stdint.h>

#include "crypto_info.h"
#include "gcm_vectors.h"
#include "t.h"

#ifndef SPLICED_WOLFSSL_LINKED
#define SPLICED_WOLFSSL_LINKED "unknown"
#endif
T_SUITE("crypto-" SPLICED_WOLFSSL_LINKED);

enum {
	MAX_VEC = 512,    /* largest short vector, bytes */
	BULK_MAX = 16399, /* largest long message (16 KiB + 15: odd tail after the 8-block loops) */
	TAG_LEN = 16,     /* Poly1305 and GCM tags */
	X25519_ITERS = 1000, /* RFC 7748 section 5.2 iteration count */
};

static const char sunscreen[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
                                "only one tip for the future, sunscreen would be it.";

/* Compare out[0..n) with the hex string want; a mismatch names the case. */
#define T_EQ_HEX(out, n, want)                                                                   \
	do {                                                                                     \
		uint8_t t_w_[MAX_VEC];                                                           \
		size_t t_wn_ = t_unhex(t_w_, sizeof(t_w_), (want));                              \
		if (t_wn_ != (size_t)(n) || memcmp((out), t_w_, t_wn_) != 0)                     \
			T_FAILF("%s differs from the published value (%zu bytes)", #out, t_wn_); \
	} while (0)

static void test_linked_library(void)
{
	struct crypto_info ci;

	crypto_info_get(&ci);
	crypto_info_print(stdout);
	/* Headers of one prefix with the library of another is the classic mis-build. */
	T_EQ_STR(ci.version, ci.compiled);
	if (!strcmp(SPLICED_WOLFSSL_LINKED, "bundled-asm")) {
#if defined(__x86_64__)
		T_ASSERT(ci.asm_aesni);
		T_ASSERT(ci.asm_avx2);
#elif defined(__aarch64__)
		if (ci.cpu_aes)
			T_ASSERT(ci.asm_armv8);
#endif
	}
}

#if defined(WOLFSSL_AESNI)
/* The asm is compiled in; make sure wolfSSL also chose it on this CPU. */
static void test_aesni_in_use(void)
{
	Aes aes;
	uint8_t key[16] = {0};

	T_EQ_INT(wc_AesInit(&aes, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_AesGcmSetKey(&aes, key, sizeof(key)), 0);
	T_EQ_INT(aes.use_aesni, 1);
	wc_AesFree(&aes);
}
#endif

static void test_aes_gcm_nist(void)
{
	for (size_t i = 0; i < sizeof(gcm_vecs) / sizeof(gcm_vecs[0]); i++) {
		const struct gcm_vec *v = &gcm_vecs[i];
		uint8_t k[32], iv[12], p[64], a[20], c[64], t[TAG_LEN], back[64];
		size_t kn = t_unhex(k, sizeof(k), v->k), ivn = t_unhex(iv, sizeof(iv), v->iv);
		size_t pn = t_unhex(p, sizeof(p), v->p), an = t_unhex(a, sizeof(a), v->a);
		Aes aes;

		T_EQ_INT(wc_AesInit(&aes, NULL, INVALID_DEVID), 0);
		T_EQ_INT(wc_AesGcmSetKey(&aes, k, (word32)kn), 0);
		T_EQ_INT(wc_AesGcmEncrypt(&aes, c, p, (word32)pn, iv, (word32)ivn, t, TAG_LEN, a,
		                          (word32)an),
		         0);
		T_EQ_HEX(c, pn, v->c);
		T_EQ_HEX(t, TAG_LEN, v->t);
		T_EQ_INT(wc_AesGcmDecrypt(&aes, back, c, (word32)pn, iv, (word32)ivn, t, TAG_LEN, a,
		                          (word32)an),
		         0);
		T_EQ_MEM(back, p, pn);
		t[0] ^= 1;
		T_EQ_INT(wc_AesGcmDecrypt(&aes, back, c, (word32)pn, iv, (word32)ivn, t, TAG_LEN, a,
		                          (word32)an),
		         AES_GCM_AUTH_E);
		wc_AesFree(&aes);
		if (t_failed_case) {
			printf("  in GCM %s\n", v->name);
			return;
		}
	}
}

/* FIPS-197 appendix C.1: one AES-128 block (VMess encrypts its AuthID this way). */
static void test_aes_block_fips197(void)
{
	uint8_t k[16], in[16], out[16];
	Aes aes;

	t_unhex(k, sizeof(k), "000102030405060708090a0b0c0d0e0f");
	t_unhex(in, sizeof(in), "00112233445566778899aabbccddeeff");
	T_EQ_INT(wc_AesInit(&aes, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_AesSetKeyDirect(&aes, k, sizeof(k), NULL, AES_ENCRYPTION), 0);
	T_EQ_INT(wc_AesEncryptDirect(&aes, out, in), 0);
	T_EQ_HEX(out, sizeof(out), "69c4e0d86a7b0430d8cdb78070b4c55a");
	wc_AesFree(&aes);
}

/* RFC 8439 section 2.4.2: ChaCha20 with counter 1. */
static void test_chacha20_rfc8439(void)
{
	uint8_t key[32], nonce[12], out[sizeof(sunscreen) - 1];
	ChaCha c;

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	t_unhex(nonce, sizeof(nonce), "000000000000004a00000000");
	T_EQ_INT(wc_Chacha_SetKey(&c, key, sizeof(key)), 0);
	T_EQ_INT(wc_Chacha_SetIV(&c, nonce, 1), 0);
	T_EQ_INT(wc_Chacha_Process(&c, out, (const byte *)sunscreen, sizeof(out)), 0);
	T_EQ_HEX(out, sizeof(out),
	         "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
	         "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
	         "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
	         "5af90bbf74a35be6b40b8eedf2785e42874d");
}

/* RFC 8439 section 2.5.2: Poly1305. */
static void test_poly1305_rfc8439(void)
{
	static const char msg[] = "Cryptographic Forum Research Group";
	uint8_t key[32], tag[TAG_LEN];
	Poly1305 p;

	t_unhex(key, sizeof(key),
	        "85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b");
	T_EQ_INT(wc_Poly1305SetKey(&p, key, sizeof(key)), 0);
	T_EQ_INT(wc_Poly1305Update(&p, (const byte *)msg, sizeof(msg) - 1), 0);
	T_EQ_INT(wc_Poly1305Final(&p, tag), 0);
	T_EQ_HEX(tag, sizeof(tag), "a8061dc1305136c6c22b8baf0c0127a9");
}

static const char rfc8439_aead_ct[] =
        "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
        "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
        "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
        "3ff4def08e4b7a9de576d26586cec64b6116";

/* RFC 8439 section 2.8.2: AEAD_CHACHA20_POLY1305 seal, open, open in place, forgery. */
static void test_chacha20_poly1305_rfc8439(void)
{
	uint8_t key[32], nonce[12], aad[12], ct[sizeof(sunscreen) - 1], tag[TAG_LEN];
	uint8_t back[sizeof(ct)];
	const word32 n = sizeof(ct);

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	t_unhex(nonce, sizeof(nonce), "070000004041424344454647");
	t_unhex(aad, sizeof(aad), "50515253c0c1c2c3c4c5c6c7");
	T_EQ_INT(wc_ChaCha20Poly1305_Encrypt(key, nonce, aad, sizeof(aad), (const byte *)sunscreen,
	                                     n, ct, tag),
	         0);
	T_EQ_HEX(ct, n, rfc8439_aead_ct);
	T_EQ_HEX(tag, sizeof(tag), "1ae10b594f09e26a7e902ecbd0600691");
	T_EQ_INT(wc_ChaCha20Poly1305_Decrypt(key, nonce, aad, sizeof(aad), ct, n, tag, back), 0);
	T_EQ_MEM(back, sunscreen, n);
	memcpy(back, ct, n);
	T_EQ_INT(wc_ChaCha20Poly1305_Decrypt(key, nonce, aad, sizeof(aad), back, n, tag, back), 0);
	T_EQ_MEM(back, sunscreen, n);
	ct[n - 1] ^= 0x80;
	T_EQ_INT(wc_ChaCha20Poly1305_Decrypt(key, nonce, aad, sizeof(aad), ct, n, tag, back),
	         MAC_CMP_FAILED_E);
}

/*
 * wolfSSL 5.5.4 leaves XChaCha out of a build with its ARMv8 assembly
 * (settings.h undefines HAVE_XCHACHA under WOLFSSL_ARMASM); the XChaCha
 * cases are then SKIPs. WireGuard's cookies do not depend on it: they use
 * spliced's own HChaCha20 construction (test_wg_crypto, test_chacha).
 */
#ifdef HAVE_XCHACHA
/* draft-irtf-cfrg-xchacha-03 appendix A.3.1: AEAD_XChaCha20_Poly1305. */
static void test_xchacha20_poly1305_draft(void)
{
	uint8_t key[32], nonce[24], aad[12], out[sizeof(sunscreen) - 1 + TAG_LEN];
	uint8_t back[sizeof(sunscreen) - 1];
	const size_t n = sizeof(sunscreen) - 1;

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(0x40 + i);
	t_unhex(aad, sizeof(aad), "50515253c0c1c2c3c4c5c6c7");
	T_EQ_INT(wc_XChaCha20Poly1305_Encrypt(out, sizeof(out), (const byte *)sunscreen, n, aad,
	                                      sizeof(aad), nonce, sizeof(nonce), key, sizeof(key)),
	         0);
	T_EQ_HEX(out, n,
	         "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
	         "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
	         "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
	         "21f9664c97637da9768812f615c68b13b52e");
	T_EQ_HEX(out + n, TAG_LEN, "c0875924c1c7987947deafd8780acf49");
	T_EQ_INT(wc_XChaCha20Poly1305_Decrypt(back, sizeof(back), out, sizeof(out), aad,
	                                      sizeof(aad), nonce, sizeof(nonce), key, sizeof(key)),
	         0);
	T_EQ_MEM(back, sunscreen, n);
	out[n] ^= 1;
	T_ASSERT(wc_XChaCha20Poly1305_Decrypt(back, sizeof(back), out, sizeof(out), aad,
	                                      sizeof(aad), nonce, sizeof(nonce), key,
	                                      sizeof(key)) != 0);
}
#endif

/*
 * RFC 7748 decodes scalars by clamping and u-coordinates by clearing bit 255;
 * wolfSSL instead rejects unclamped scalars and high-bit points, so the
 * caller (kmod-free/wireguard) does the decoding, as here.
 */
static int x25519_rfc(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32])
{
	uint8_t k[32], v[32];
	int ret;

	memcpy(k, scalar, 32);
	memcpy(v, u, 32);
	k[0] &= 248;
	k[31] = (uint8_t)((k[31] & 127) | 64);
	v[31] &= 127;
	ret = wc_curve25519_generic(32, out, 32, k, 32, v);
	explicit_bzero(k, sizeof(k));
	return ret;
}

/* RFC 7748 section 5.2: the two single vectors and 1 and 1000 iterations. */
static void test_x25519_rfc7748(void)
{
	uint8_t s[32], u[32], out[32], k[32], prev[32];

	t_unhex(s, 32, "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
	t_unhex(u, 32, "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
	T_EQ_INT(x25519_rfc(out, s, u), 0);
	T_EQ_HEX(out, 32, "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
	t_unhex(s, 32, "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d");
	t_unhex(u, 32, "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493");
	T_EQ_INT(x25519_rfc(out, s, u), 0);
	T_EQ_HEX(out, 32, "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");

	memset(k, 0, 32);
	k[0] = 9;
	memcpy(u, k, 32);
	for (int i = 1; i <= X25519_ITERS; i++) {
		memcpy(prev, k, 32);
		if (x25519_rfc(k, prev, u) != 0) {
			T_FAILF("X25519 failed at iteration %d", i);
			return;
		}
		memcpy(u, prev, 32);
		if (i == 1)
			T_EQ_HEX(
			        k, 32,
			        "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
	}
	T_EQ_HEX(k, 32, "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
}

/* RFC 7748 section 6.1: Diffie-Hellman through wolfSSL's key objects (little endian). */
static void test_x25519_dh_rfc7748(void)
{
	static const char *priv_hex[2] = {
	        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
	        "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"};
	static const char *pub_hex[2] = {
	        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
	        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"};
	curve25519_key priv[2], pub[2];
	uint8_t raw[32], shared[32];

	for (int i = 0; i < 2; i++) {
		word32 len = sizeof(raw);

		T_EQ_INT(wc_curve25519_init(&priv[i]), 0);
		T_EQ_INT(wc_curve25519_init(&pub[i]), 0);
		t_unhex(raw, 32, priv_hex[i]);
		T_EQ_INT(wc_curve25519_import_private_ex(raw, 32, &priv[i], EC25519_LITTLE_ENDIAN),
		         0);
		T_EQ_INT(wc_curve25519_make_pub(32, raw, 32, priv[i].k), 0);
		T_EQ_HEX(raw, 32, pub_hex[i]);
		T_EQ_INT(wc_curve25519_import_public_ex(raw, 32, &pub[i], EC25519_LITTLE_ENDIAN),
		         0);
		T_EQ_INT(wc_curve25519_export_public_ex(&pub[i], raw, &len, EC25519_LITTLE_ENDIAN),
		         0);
		T_EQ_HEX(raw, len, pub_hex[i]);
	}
	for (int i = 0; i < 2; i++) {
		word32 len = sizeof(shared);

		T_EQ_INT(wc_curve25519_shared_secret_ex(&priv[i], &pub[1 - i], shared, &len,
		                                        EC25519_LITTLE_ENDIAN),
		         0);
		T_EQ_HEX(shared, len,
		         "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
	}
	for (int i = 0; i < 2; i++) {
		wc_curve25519_free(&priv[i]);
		wc_curve25519_free(&pub[i]);
	}
}

static int b2s(uint8_t *out, size_t outlen, const uint8_t *key, size_t keylen, const uint8_t *in,
               size_t len)
{
	Blake2s b;
	int ret;

	ret = key ? wc_InitBlake2s_WithKey(&b, (word32)outlen, key, (word32)keylen)
	          : wc_InitBlake2s(&b, (word32)outlen);
	if (ret == 0)
		ret = wc_Blake2sUpdate(&b, in, (word32)len);
	if (ret == 0)
		ret = wc_Blake2sFinal(&b, out, (word32)outlen);
	return ret;
}

/*
 * RFC 7693 appendix B ("abc"), the empty-input digest, and blake2s-kat.txt of
 * the BLAKE2 reference code (key 00..1f, input 00..len-1) across the 64-byte
 * block boundary; then the 16-byte keyed digest shape WireGuard's MACs use.
 */
static void test_blake2s_reference(void)
{
	static const struct {
		size_t len;
		const char *want;
	} kat[] = {
	        {0, "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49"},
	        {1, "40d15fee7c328830166ac3f918650f807e7e01e177258cdc0a39b11f598066f1"},
	        {2, "6bb71300644cd3991b26ccd4d274acd1adeab8b1d7914546c1198bbe9fc9d803"},
	        {63, "c65382513f07460da39833cb666c5ed82e61b9e998f4b0c4287cee56c3cc9bcd"},
	        {64, "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4"},
	        {65, "21fe0ceb0052be7fb0f004187cacd7de67fa6eb0938d927677f2398c132317a8"},
	        {255, "3fb735061abc519dfe979e54c1ee5bfad0a9d858b3315bad34bde999efd724dd"},
	};
	uint8_t key[32], in[255], out[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 255; i++)
		in[i] = (uint8_t)i;
	T_EQ_INT(b2s(out, 32, NULL, 0, (const uint8_t *)"abc", 3), 0);
	T_EQ_HEX(out, 32, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
	T_EQ_INT(b2s(out, 32, NULL, 0, in, 0), 0);
	T_EQ_HEX(out, 32, "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9");
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		T_EQ_INT(b2s(out, 32, key, 32, in, kat[i].len), 0);
		T_EQ_HEX(out, 32, kat[i].want);
	}
	T_EQ_INT(b2s(out, 16, key, 32, (const uint8_t *)"abc", 3), 0);
	T_EQ_HEX(out, 16, "61ba5f165c194692e09d12520cc4c74a");
}

/* MD5 (RFC 1321), SHA-1/224/256 (FIPS 180 "abc" and the million-'a' message). */
static void test_hashes_abc(void)
{
	static uint8_t million[1000000];
	const byte *abc = (const byte *)"abc";
	uint8_t out[32];

	T_EQ_INT(wc_Md5Hash(abc, 3, out), 0);
	T_EQ_HEX(out, 16, "900150983cd24fb0d6963f7d28e17f72");
	T_EQ_INT(wc_ShaHash(abc, 3, out), 0);
	T_EQ_HEX(out, 20, "a9993e364706816aba3e25717850c26c9cd0d89d");
	T_EQ_INT(wc_Sha224Hash(abc, 3, out), 0);
	T_EQ_HEX(out, 28, "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7");
	T_EQ_INT(wc_Sha256Hash(abc, 3, out), 0);
	T_EQ_HEX(out, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	memset(million, 'a', sizeof(million));
	T_EQ_INT(wc_Sha256Hash(million, sizeof(million), out), 0);
	T_EQ_HEX(out, 32, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* RFC 5869 A.1 (HKDF-SHA256) and A.4 (HKDF-SHA1, Shadowsocks' subkey KDF). */
static void test_hkdf_rfc5869(void)
{
	uint8_t ikm[22], salt[13], info[10], okm[42];

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	T_EQ_INT(wc_HKDF(WC_SHA256, ikm, 22, salt, 13, info, 10, okm, 42), 0);
	T_EQ_HEX(okm, 42,
	         "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
	         "34007208d5b887185865");
	T_EQ_INT(wc_HKDF(WC_SHA, ikm, 11, salt, 13, info, 10, okm, 42), 0);
	T_EQ_HEX(okm, 42,
	         "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2"
	         "c22e422478d305f3f896");
}

#ifdef WOLFSSL_SHAKE128
/*
 * SHAKE128 (VMess's AEAD header length mask): FIPS 202's empty-message
 * output, "abc", and a million 'a' squeezed for 64 bytes (two rate-sized
 * absorbs' worth of output from one Final), from Python's hashlib.
 */
static void test_shake128(void)
{
	static uint8_t million[1000000];
	uint8_t out[64];
	wc_Shake s;

	T_EQ_INT(wc_InitShake128(&s, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_Shake128_Final(&s, out, 32), 0);
	T_EQ_HEX(out, 32, "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26");
	T_EQ_INT(wc_InitShake128(&s, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_Shake128_Update(&s, (const byte *)"abc", 3), 0);
	T_EQ_INT(wc_Shake128_Final(&s, out, 32), 0);
	T_EQ_HEX(out, 32, "5881092dd818bf5cf8a3ddb793fbcba74097d5c526a6d35f97b83351940f2cc8");
	memset(million, 'a', sizeof(million));
	T_EQ_INT(wc_InitShake128(&s, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_Shake128_Update(&s, million, sizeof(million)), 0);
	T_EQ_INT(wc_Shake128_Final(&s, out, 64), 0);
	T_EQ_HEX(out, 64,
	         "9d222c79c4ff9d092cf6ca86143aa411e369973808ef97093255826c5572ef58"
	         "424c4b5c28475ffdcf981663867fec6321c1262e387bccf8ca676884c4a9d0c1");
	wc_Shake128_Free(&s);
}
#endif

#ifdef HAVE_ED25519
/* RFC 8032 section 7.1 TEST 1: Ed25519 key derivation, signature, verification. */
static void test_ed25519_rfc8032(void)
{
	uint8_t priv[32], pub[32], sig[64];
	word32 siglen = sizeof(sig);
	int ok = 0;
	ed25519_key key;

	t_unhex(priv, 32, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
	T_EQ_INT(wc_ed25519_init(&key), 0);
	T_EQ_INT(wc_ed25519_import_private_only(priv, 32, &key), 0);
	T_EQ_INT(wc_ed25519_make_public(&key, pub, 32), 0);
	T_EQ_HEX(pub, 32, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
	T_EQ_INT(wc_ed25519_import_private_key(priv, 32, pub, 32, &key), 0);
	T_EQ_INT(wc_ed25519_sign_msg((const byte *)"", 0, sig, &siglen, &key), 0);
	T_EQ_HEX(sig, siglen,
	         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
	         "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
	T_EQ_INT(wc_ed25519_verify_msg(sig, siglen, (const byte *)"", 0, &ok, &key), 0);
	T_EQ_INT(ok, 1);
	sig[0] ^= 1;
	ok = 1;
	wc_ed25519_verify_msg(sig, siglen, (const byte *)"", 0, &ok, &key);
	T_EQ_INT(ok, 0);
	wc_ed25519_free(&key);
	explicit_bzero(priv, sizeof(priv));
}
#endif

/*
 * SHA-256 of ciphertext || tag for long messages, from gen_crypto_bulk.py
 * (OpenSSL): key 01..20, nonce a0.. (12) / b0.. (24), AAD c0..cc,
 * message[i] = i * 31 + 7. Order: AES-128-GCM, AES-256-GCM,
 * ChaCha20-Poly1305, XChaCha20-Poly1305.
 */
enum { ALG_AES128, ALG_AES256, ALG_CHACHA, ALG_XCHACHA, ALG_N };
static const struct bulk_vec {
	size_t len;
	const char *sha256[ALG_N];
} bulk_vecs[] = {
        {65,
         {
                 "97a926f2ece1efc8bd26a208ff28726aae12a4bc24cd9c8e4a5d2182c5545839",
                 "66b7d469588ee3ba72ec65d238bfb12a89e2045c1998b789f000dad310bb9004",
                 "d9cdcef86af3f545cb6af4bfcfd37223a344d13493cf15b6dda52d0fcada0aed",
                 "b65ff511b6030a65fffd92e9b4c8ef38ec743d0f9b5f3eb7158884a78bc7ba95",
         }},
        {1400,
         {
                 "6970e3b070d360e78374b9a20d31c1ec73f80103903a295b9b466dee5b068f86",
                 "c0ea3fe59b505afec5243792888c9f311a1a81641515d9dc401ccdb97c3bb4f1",
                 "84ce3e35cee40efac28b15be2aac0d3c7ec4f175b5a39e87da2e54408521eb3e",
                 "c97670fa0ff175360e9c7d1e4dbec2006868be982dbebb5c775f2e0c5b996379",
         }},
        {16384,
         {
                 "d591d61f92e11a77c3dda211cc2d0bb2672d58e79ada3f679a3c9bd05c8c9444",
                 "6b4eb3348f9ea1fd46899e914c0b75a4b89f6eb01f731f0d7e110e78833dbdfd",
                 "e5edb38cb3eaf950a6cb2d5f77d66a44d726f0ae559ec4c14db5bae428327705",
                 "78b67cb9ea5eeae35a6f298768cc0ea1976a6ca6709e14bde2256c3af6c3cfc1",
         }},
        {16399,
         {
                 "f99438f72933567ac6b519abe9ccf951a7daf747a281d63e91fd3394fed2b93e",
                 "04990043c4ea3cc0e4070d0177ddf3ae92f6fc80a4af96f54c83adfa8899bc20",
                 "d64ff80458304de4e6aa5ddb2d833b5c9e48165ec9f6b5cc61e5411b0d1d4378",
                 "f7b7651e67034f4317875acf8fd81c63b0b4e4410314b17d77b3206750c92051",
         }},
};

/* Seal msg into out (ciphertext then tag) with alg; 0 or a wolfSSL error. */
static int bulk_seal(int alg, uint8_t *out, const uint8_t *msg, size_t len, const uint8_t key[32],
                     const uint8_t n12[12], const uint8_t n24[24], const uint8_t aad[13])
{
	Aes aes;
	int ret;

	switch (alg) {
	case ALG_AES128:
	case ALG_AES256:
		ret = wc_AesInit(&aes, NULL, INVALID_DEVID);
		if (ret == 0)
			ret = wc_AesGcmSetKey(&aes, key, alg == ALG_AES128 ? 16 : 32);
		if (ret == 0)
			ret = wc_AesGcmEncrypt(&aes, out, msg, (word32)len, n12, 12, out + len,
			                       TAG_LEN, aad, 13);
		wc_AesFree(&aes);
		return ret;
	case ALG_CHACHA:
		return wc_ChaCha20Poly1305_Encrypt(key, n12, aad, 13, msg, (word32)len, out,
		                                   out + len);
	default:
#ifdef HAVE_XCHACHA
		return wc_XChaCha20Poly1305_Encrypt(out, len + TAG_LEN, msg, len, aad, 13, n24, 24,
		                                    key, 32);
#else
		(void)n24;
		return NOT_COMPILED_IN;
#endif
	}
}

/* Open buf (ciphertext then tag) in place; 0 when authentic. */
static int bulk_open(int alg, uint8_t *buf, size_t len, const uint8_t key[32],
                     const uint8_t n12[12], const uint8_t n24[24], const uint8_t aad[13])
{
	static uint8_t plain[BULK_MAX];
	Aes aes;
	int ret;

	switch (alg) {
	case ALG_AES128:
	case ALG_AES256:
		ret = wc_AesInit(&aes, NULL, INVALID_DEVID);
		if (ret == 0)
			ret = wc_AesGcmSetKey(&aes, key, alg == ALG_AES128 ? 16 : 32);
		if (ret == 0)
			ret = wc_AesGcmDecrypt(&aes, buf, buf, (word32)len, n12, 12, buf + len,
			                       TAG_LEN, aad, 13);
		wc_AesFree(&aes);
		return ret;
	case ALG_CHACHA:
		return wc_ChaCha20Poly1305_Decrypt(key, n12, aad, 13, buf, (word32)len, buf + len,
		                                   buf);
	default:
#ifdef HAVE_XCHACHA
		/* wolfSSL's XChaCha open cannot work in place; WireGuard's cookie is 16 bytes. */
		ret = wc_XChaCha20Poly1305_Decrypt(plain, len, buf, len + TAG_LEN, aad, 13, n24, 24,
		                                   key, 32);
		if (ret == 0)
			memcpy(buf, plain, len);
		return ret;
#else
		(void)plain;
		(void)n24;
		return NOT_COMPILED_IN;
#endif
	}
}

/* Long messages through the unrolled assembly loops, against OpenSSL's answers. */
static void test_bulk_aead_vs_openssl(void)
{
	static const char *names[ALG_N] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305",
	                                   "XChaCha20-Poly1305"};
	static uint8_t msg[BULK_MAX], buf[BULK_MAX + TAG_LEN];
	uint8_t key[32], n12[12], n24[24], aad[13], digest[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(i + 1);
	for (int i = 0; i < 12; i++)
		n12[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 24; i++)
		n24[i] = (uint8_t)(0xb0 + i);
	for (int i = 0; i < 13; i++)
		aad[i] = (uint8_t)(0xc0 + i);
	for (size_t i = 0; i < BULK_MAX; i++)
		msg[i] = (uint8_t)(i * 31 + 7);

	for (size_t v = 0; v < sizeof(bulk_vecs) / sizeof(bulk_vecs[0]); v++) {
		size_t len = bulk_vecs[v].len;

		for (int alg = 0; alg < ALG_N; alg++) {
			int before = t_failed_case;

#ifndef HAVE_XCHACHA
			if (alg == ALG_XCHACHA)
				continue; /* reported as a SKIP in main() */
#endif

			t_failed_case = 0;
			T_EQ_INT(bulk_seal(alg, buf, msg, len, key, n12, n24, aad), 0);
			T_EQ_INT(wc_Sha256Hash(buf, (word32)(len + TAG_LEN), digest), 0);
			T_EQ_HEX(digest, 32, bulk_vecs[v].sha256[alg]);
			T_EQ_INT(bulk_open(alg, buf, len, key, n12, n24, aad), 0);
			T_EQ_MEM(buf, msg, len);
			/* a flipped bit deep in the message must be caught */
			T_EQ_INT(bulk_seal(alg, buf, msg, len, key, n12, n24, aad), 0);
			buf[len / 2] ^= 4;
			T_ASSERT(bulk_open(alg, buf, len, key, n12, n24, aad) != 0);
			if (t_failed_case)
				printf("  in %s, %zu bytes\n", names[alg], len);
			t_failed_case |= before;
		}
	}
}

int main(void)
{
	T_ASSERT(wolfCrypt_Init() == 0);
	T_RUN(test_linked_library);
#if defined(WOLFSSL_AESNI)
	{
		struct crypto_info ci;

		crypto_info_get(&ci);
		if (ci.cpu_aes)
			T_RUN(test_aesni_in_use);
		else
			printf("SKIP: %s/test_aesni_in_use (CPU has no AES-NI)\n", t_suite);
	}
#endif
	T_RUN(test_aes_gcm_nist);
	T_RUN(test_aes_block_fips197);
	T_RUN(test_chacha20_rfc8439);
	T_RUN(test_poly1305_rfc8439);
	T_RUN(test_chacha20_poly1305_rfc8439);
#ifdef HAVE_XCHACHA
	T_RUN(test_xchacha20_poly1305_draft);
#else
	printf("SKIP: %s/test_xchacha20_poly1305_draft (this wolfSSL has no XChaCha: 5.5.4 drops "
	       "it with WOLFSSL_ARMASM)\n",
	       t_suite);
	printf("SKIP: %s/test_bulk_aead_vs_openssl XChaCha20-Poly1305 (the same; the other three "
	       "AEADs run)\n",
	       t_suite);
#endif
	T_RUN(test_x25519_rfc7748);
	T_RUN(test_x25519_dh_rfc7748);
	T_RUN(test_blake2s_reference);
	T_RUN(test_hashes_abc);
	T_RUN(test_hkdf_rfc5869);
#ifdef WOLFSSL_SHAKE128
	T_RUN(test_shake128);
#else
	/* Debian's library is built without it; the bundled one must have it (VMess) */
	if (strcmp(SPLICED_WOLFSSL_LINKED, "system")) {
		printf("FAIL: %s/test_shake128 (this wolfSSL has no SHAKE128)\n", t_suite);
		t_fail++;
	}
#endif
#ifdef HAVE_ED25519
	/* Debian's library has it; spliced uses none, and the bundled build leaves it out */
	T_RUN(test_ed25519_rfc8032);
#endif
	T_RUN(test_bulk_aead_vs_openssl);
	wolfCrypt_Cleanup();
	return t_finish();
}
