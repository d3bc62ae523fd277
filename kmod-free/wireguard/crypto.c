/* SPDX-License-Identifier: MIT */
/* WireGuard's primitives (BLAKE2s, HMAC, KDF, X25519, (X)ChaCha20-Poly1305, TAI64N) over wolfSSL. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/blake2.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>

#include "chacha.h"
#include "chacha_core.h"
#include "crypto.h"

enum {
	BLAKE2S_BLOCK_LEN = 64,
	HMAC_IPAD = 0x36,
	HMAC_OPAD = 0x5c,
	/* TAI64 labels count from 2^62; +10 is the TAI-UTC offset of 1970 (as wireguard does). */
	TAI64_EPOCH_HI = 0x40000000,
	TAI64_EPOCH_LO = 10,
	/* 2^24 ns: largest power of two under 1 s / 50 initiations, the kernel's whitening. */
	TAI64N_NSEC_MASK = ~((1u << 24) - 1),
};

/*
 * wolfSSL's BLAKE2s functions only fail on bad arguments (NULL, digest size
 * outside 1..32, key over 32 bytes), which our fixed sizes never produce.
 */
void wg_hash(uint8_t out[WG_HASH_LEN], const void *in, size_t len)
{
	Blake2s s;

	wc_InitBlake2s(&s, WG_HASH_LEN);
	wc_Blake2sUpdate(&s, in, (word32)len);
	wc_Blake2sFinal(&s, out, WG_HASH_LEN);
	wg_wipe(&s, sizeof(s));
}

void wg_hash2(uint8_t out[WG_HASH_LEN], const void *a, size_t alen, const void *b, size_t blen)
{
	Blake2s s;

	wc_InitBlake2s(&s, WG_HASH_LEN);
	wc_Blake2sUpdate(&s, a, (word32)alen);
	wc_Blake2sUpdate(&s, b, (word32)blen);
	wc_Blake2sFinal(&s, out, WG_HASH_LEN);
	wg_wipe(&s, sizeof(s));
}

void wg_mac(uint8_t *out, size_t outlen, const uint8_t *key, size_t keylen, const void *in,
            size_t len)
{
	Blake2s s;

	wc_InitBlake2s_WithKey(&s, (word32)outlen, key, (word32)keylen);
	wc_Blake2sUpdate(&s, in, (word32)len);
	wc_Blake2sFinal(&s, out, (word32)outlen);
	wg_wipe(&s, sizeof(s));
}

/* RFC 2104 over BLAKE2s-256; keys longer than a block are hashed first. */
void wg_hmac(uint8_t out[WG_HASH_LEN], const uint8_t *key, size_t keylen, const void *in,
             size_t len)
{
	uint8_t k[BLAKE2S_BLOCK_LEN] = {0}, inner[WG_HASH_LEN];
	Blake2s s;
	size_t i;

	if (keylen > BLAKE2S_BLOCK_LEN)
		wg_hash(k, key, keylen);
	else
		memcpy(k, key, keylen);
	for (i = 0; i < sizeof(k); i++)
		k[i] ^= HMAC_IPAD;
	wc_InitBlake2s(&s, WG_HASH_LEN);
	wc_Blake2sUpdate(&s, k, sizeof(k));
	wc_Blake2sUpdate(&s, in, (word32)len);
	wc_Blake2sFinal(&s, inner, WG_HASH_LEN);
	for (i = 0; i < sizeof(k); i++)
		k[i] ^= HMAC_IPAD ^ HMAC_OPAD;
	wc_InitBlake2s(&s, WG_HASH_LEN);
	wc_Blake2sUpdate(&s, k, sizeof(k));
	wc_Blake2sUpdate(&s, inner, sizeof(inner));
	wc_Blake2sFinal(&s, out, WG_HASH_LEN);
	wg_wipe(k, sizeof(k));
	wg_wipe(inner, sizeof(inner));
	wg_wipe(&s, sizeof(s));
}

void wg_kdf(uint8_t *t1, uint8_t *t2, uint8_t *t3, const uint8_t key[WG_HASH_LEN], const void *in,
            size_t len)
{
	uint8_t t0[WG_HASH_LEN], buf[WG_HASH_LEN + 1], out[WG_HASH_LEN];

	/* t0 = HMAC(key, in): the PRK of HKDF-extract. */
	wg_hmac(t0, key, WG_HASH_LEN, in, len);
	/* t1 = HMAC(t0, 0x1) */
	buf[0] = 1;
	wg_hmac(out, t0, WG_HASH_LEN, buf, 1);
	if (t1)
		memcpy(t1, out, WG_HASH_LEN);
	if (!t2 && !t3)
		goto out;
	/* t2 = HMAC(t0, t1 || 0x2) */
	memcpy(buf, out, WG_HASH_LEN);
	buf[WG_HASH_LEN] = 2;
	wg_hmac(out, t0, WG_HASH_LEN, buf, sizeof(buf));
	if (t2)
		memcpy(t2, out, WG_HASH_LEN);
	if (!t3)
		goto out;
	/* t3 = HMAC(t0, t2 || 0x3) */
	memcpy(buf, out, WG_HASH_LEN);
	buf[WG_HASH_LEN] = 3;
	wg_hmac(t3, t0, WG_HASH_LEN, buf, sizeof(buf));
out:
	wg_wipe(t0, sizeof(t0));
	wg_wipe(buf, sizeof(buf));
	wg_wipe(out, sizeof(out));
}

void wg_x25519_clamp(uint8_t key[WG_KEY_LEN])
{
	key[0] &= 248;
	key[31] = (uint8_t)((key[31] & 127) | 64);
}

/*
 * wolfSSL's raw-byte API takes RFC 7748 little-endian strings but refuses
 * unclamped scalars, so we clamp a copy (X25519 clamps by definition anyway).
 * RFC 7748 also says to ignore the top bit of u; wolfSSL's field decode does.
 */
int wg_x25519(uint8_t out[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN],
              const uint8_t pub[WG_KEY_LEN])
{
	uint8_t k[WG_KEY_LEN], u[WG_KEY_LEN];
	int ret = 0;

	memcpy(k, priv, WG_KEY_LEN);
	wg_x25519_clamp(k);
	memcpy(u, pub, WG_KEY_LEN);
	u[31] &= 127;
	if (wc_curve25519_generic(WG_KEY_LEN, out, WG_KEY_LEN, k, WG_KEY_LEN, u) != 0) {
		memset(out, 0, WG_KEY_LEN);
		ret = -EINVAL;
		goto out;
	}
	/* A low-order point gives zero: the DH contributes nothing, refuse it. */
	if (wg_ct_is_zero(out, WG_KEY_LEN))
		ret = -EINVAL;
out:
	wg_wipe(k, sizeof(k));
	return ret;
}

int wg_x25519_public(uint8_t pub[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN])
{
	uint8_t k[WG_KEY_LEN];
	int ret;

	memcpy(k, priv, WG_KEY_LEN);
	wg_x25519_clamp(k);
	ret = wc_curve25519_make_pub(WG_KEY_LEN, pub, WG_KEY_LEN, k) == 0 ? 0 : -EINVAL;
	wg_wipe(k, sizeof(k));
	return ret;
}

int wg_x25519_generate(uint8_t priv[WG_KEY_LEN])
{
	int ret = wg_random(priv, WG_KEY_LEN);

	if (ret == 0)
		wg_x25519_clamp(priv);
	return ret;
}

static void nonce96(uint8_t iv[CHACHA20_POLY1305_AEAD_IV_SIZE], uint64_t nonce)
{
	memset(iv, 0, 4);
	wg_put_le64(iv + 4, nonce);
}

/*
 * wolfSSL rejects NULL buffers even for zero lengths (the empty AEAD of the
 * handshake response and keepalives), so point those at a dummy byte.
 */
static uint8_t empty_buf[1];

void wg_aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                  uint64_t nonce, const uint8_t key[WG_KEY_LEN])
{
	uint8_t iv[CHACHA20_POLY1305_AEAD_IV_SIZE];

	nonce96(iv, nonce);
	/* The vector ChaCha20 where the CPU has it (lib/chacha.h says why). */
	if (chacha_fast()) {
		chacha_aead_seal(dst, src, len, ad, adlen, iv, key, dst + len);
		return;
	}
	wc_ChaCha20Poly1305_Encrypt(key, iv, ad ? ad : empty_buf, (word32)adlen,
	                            len ? src : empty_buf, (word32)len, len ? dst : empty_buf,
	                            dst + len);
}

bool wg_aead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                  uint64_t nonce, const uint8_t key[WG_KEY_LEN])
{
	uint8_t iv[CHACHA20_POLY1305_AEAD_IV_SIZE], tag[WG_AEAD_TAG_LEN];
	size_t plen;

	if (len < WG_AEAD_TAG_LEN)
		return false;
	plen = len - WG_AEAD_TAG_LEN;
	nonce96(iv, nonce);
	/* (authenticates before it writes a byte: the tag is read before dst is touched) */
	if (chacha_fast())
		return chacha_aead_open(dst, src, plen, ad, adlen, iv, key, src + plen);
	/* Copy the tag out first: an in-place decrypt may overwrite it when dst < src. */
	memcpy(tag, src + plen, WG_AEAD_TAG_LEN);
	return wc_ChaCha20Poly1305_Decrypt(key, iv, ad ? ad : empty_buf, (word32)adlen,
	                                   plen ? src : empty_buf, (word32)plen, tag,
	                                   plen ? dst : empty_buf) == 0;
}

/*
 * XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03 section 2.3) built here from
 * HChaCha20 and the 96-bit AEAD: subkey = HChaCha20(key, nonce[0..16)), then
 * ChaCha20-Poly1305 under the subkey with nonce 0^32 || nonce[16..24). Not
 * wolfSSL's wc_XChaCha20Poly1305_*: wolfSSL 5.5.4 leaves XChaCha out of a
 * build with its ARMv8 assembly (settings.h undefines HAVE_XCHACHA), and this
 * way the cookie code is the same on every architecture (and may run in place).
 */
static void xchacha_subkey(uint8_t subkey[WG_KEY_LEN], uint8_t iv[CHACHA20_POLY1305_AEAD_IV_SIZE],
                           const uint8_t nonce[WG_COOKIE_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
	hchacha20(subkey, key, nonce);
	memset(iv, 0, 4);
	memcpy(iv + 4, nonce + 16, 8);
}

void wg_xaead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                   const uint8_t nonce[WG_COOKIE_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
	uint8_t subkey[WG_KEY_LEN], iv[CHACHA20_POLY1305_AEAD_IV_SIZE];

	xchacha_subkey(subkey, iv, nonce, key);
	wc_ChaCha20Poly1305_Encrypt(subkey, iv, ad ? ad : empty_buf, (word32)adlen,
	                            len ? src : empty_buf, (word32)len, len ? dst : empty_buf,
	                            dst + len);
	wg_wipe(subkey, sizeof(subkey));
}

bool wg_xaead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                   const uint8_t nonce[WG_COOKIE_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
	uint8_t subkey[WG_KEY_LEN], iv[CHACHA20_POLY1305_AEAD_IV_SIZE], tag[WG_AEAD_TAG_LEN];
	size_t plen;
	bool ok;

	if (len < WG_AEAD_TAG_LEN)
		return false;
	plen = len - WG_AEAD_TAG_LEN;
	/* Copy the tag out first: an in-place decrypt may overwrite it when dst < src. */
	memcpy(tag, src + plen, WG_AEAD_TAG_LEN);
	xchacha_subkey(subkey, iv, nonce, key);
	ok = wc_ChaCha20Poly1305_Decrypt(subkey, iv, ad ? ad : empty_buf, (word32)adlen,
	                                 plen ? src : empty_buf, (word32)plen, tag,
	                                 plen ? dst : empty_buf) == 0;
	wg_wipe(subkey, sizeof(subkey));
	return ok;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void wg_tai64n(uint8_t out[WG_TAI64N_LEN], const struct timespec *realtime)
{
	uint64_t sec =
	        ((uint64_t)TAI64_EPOCH_HI << 32) + TAI64_EPOCH_LO + (uint64_t)realtime->tv_sec;

	put_be32(out, (uint32_t)(sec >> 32));
	put_be32(out + 4, (uint32_t)sec);
	put_be32(out + 8, (uint32_t)realtime->tv_nsec & TAI64N_NSEC_MASK);
}

bool wg_ct_eq(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

bool wg_ct_is_zero(const void *a, size_t n)
{
	const volatile uint8_t *x = a;
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d |= x[i];
	return d == 0;
}

void wg_wipe(void *p, size_t n)
{
	explicit_bzero(p, n);
}

int wg_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = getrandom(p, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}
