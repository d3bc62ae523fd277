/* SPDX-License-Identifier: MIT */
/* AEAD ciphers, one AES block, HKDF-SHA1 and EVP_BytesToKey over wolfSSL. */
#include <errno.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/md5.h>

#include "aead.h"
#include "aesgcm.h"
#include "chacha.h"
#include "chacha_core.h"

_Static_assert(sizeof(Aes) <= AEAD_CTX_BYTES, "AEAD_CTX_BYTES holds wolfSSL's Aes");
_Static_assert(sizeof(struct aesgcm_key) <= AEAD_CTX_BYTES,
               "AEAD_CTX_BYTES holds lib/aesgcm's key");

/* wolfSSL takes a non-NULL pointer even for zero bytes. */
static const uint8_t empty[1];

size_t aead_key_len(enum aead_alg alg)
{
	return alg == AEAD_AES_128_GCM                                     ? 16
	       : alg >= AEAD_AES_256_GCM && alg <= AEAD_XCHACHA20_POLY1305 ? 32
	                                                                   : 0;
}

size_t aead_nonce_len(enum aead_alg alg)
{
	return alg == AEAD_XCHACHA20_POLY1305                             ? 24
	       : alg >= AEAD_AES_128_GCM && alg <= AEAD_CHACHA20_POLY1305 ? 12
	                                                                  : 0;
}

static Aes *aes_of(struct aead_key *k)
{
	return (Aes *)(void *)k->ctx;
}

static struct aesgcm_key *gcm_of(struct aead_key *k)
{
	return (struct aesgcm_key *)(void *)k->ctx;
}

int aead_key_init(struct aead_key *k, enum aead_alg alg, const uint8_t *key)
{
	size_t len = aead_key_len(alg);

	memset(k, 0, sizeof(*k));
	if (!len)
		return -EINVAL;
	k->alg = alg;
	k->key_len = (uint8_t)len;
	k->nonce_len = (uint8_t)aead_nonce_len(alg);
	if ((alg == AEAD_AES_128_GCM || alg == AEAD_AES_256_GCM) && aesgcm_fast()) {
		/* lib/aesgcm's VAES-512 routines: key schedule and powers of H once per key */
		if (aesgcm_init(gcm_of(k), key, len) != 0) {
			aead_key_wipe(k);
			return -EINVAL;
		}
		k->own_gcm = true;
	} else if (alg == AEAD_AES_128_GCM || alg == AEAD_AES_256_GCM) {
		if (wc_AesInit(aes_of(k), NULL, INVALID_DEVID) != 0)
			return -EINVAL;
		k->live = true;
		if (wc_AesGcmSetKey(aes_of(k), key, (word32)len) != 0) {
			aead_key_wipe(k);
			return -EINVAL;
		}
	} else {
		memcpy(k->ctx, key, len);
	}
	return 0;
}

void aead_key_wipe(struct aead_key *k)
{
	if (k->live)
		wc_AesFree(aes_of(k));
	explicit_bzero(k, sizeof(*k));
}

/* XChaCha20 (draft-irtf-cfrg-xchacha-03 section 2.3): a subkey and a 96-bit nonce per 192-bit nonce. */
static void xchacha_derive(const struct aead_key *k, const uint8_t *nonce, uint8_t subkey[32],
                           uint8_t iv[12])
{
	hchacha20(subkey, k->ctx, nonce);
	memset(iv, 0, 4);
	memcpy(iv + 4, nonce + 16, 8);
}

/*
 * ChaCha20-Poly1305 in place: lib/chacha's vector routines where the CPU
 * has them (3x wolfSSL's one-shot call on 16 KiB chunks with lib/poly1305's
 * IFMA Poly1305, twice as fast on the 2-byte length chunks: docs/crypto.md,
 * bench/crypto/bench_chacha), else wolfSSL's. 0 or -1.
 */
static int chacha_seal(const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                       uint8_t *p, size_t len, uint8_t *tag)
{
	if (chacha_fast()) {
		chacha_aead_seal(p, p, len, ad, adlen, nonce, key, tag);
		return 0;
	}
	return wc_ChaCha20Poly1305_Encrypt(key, nonce, ad, (word32)adlen, p, (word32)len, p, tag);
}

static int chacha_open(const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                       uint8_t *p, size_t len, const uint8_t *tag)
{
	if (chacha_fast())
		return chacha_aead_open(p, p, len, ad, adlen, nonce, key, tag) ? 0 : -1;
	return wc_ChaCha20Poly1305_Decrypt(key, nonce, ad, (word32)adlen, p, (word32)len, tag, p);
}

int aead_seal(struct aead_key *k, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
              uint8_t *buf, size_t len, uint8_t tag[AEAD_TAG_LEN])
{
	uint8_t *p = len ? buf : (uint8_t *)empty;
	const uint8_t *a = adlen ? ad : empty;
	uint8_t subkey[32], iv[12];
	int ret;

	switch (k->alg) {
	case AEAD_AES_128_GCM:
	case AEAD_AES_256_GCM:
		if (k->own_gcm) {
			aesgcm_seal(gcm_of(k), nonce, a, adlen, p, p, len, tag);
			ret = 0;
			break;
		}
		ret = wc_AesGcmEncrypt(aes_of(k), p, p, (word32)len, nonce, 12, tag, AEAD_TAG_LEN,
		                       a, (word32)adlen);
		break;
	case AEAD_CHACHA20_POLY1305:
		ret = chacha_seal(k->ctx, nonce, a, adlen, p, len, tag);
		break;
	case AEAD_XCHACHA20_POLY1305:
		xchacha_derive(k, nonce, subkey, iv);
		ret = chacha_seal(subkey, iv, a, adlen, p, len, tag);
		explicit_bzero(subkey, sizeof(subkey));
		break;
	default:
		ret = -1;
	}
	return ret == 0 ? 0 : -EINVAL;
}

bool aead_open(struct aead_key *k, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
               uint8_t *buf, size_t len, const uint8_t tag[AEAD_TAG_LEN])
{
	uint8_t *p = len ? buf : (uint8_t *)empty;
	const uint8_t *a = adlen ? ad : empty;
	uint8_t subkey[32], iv[12];
	int ret;

	switch (k->alg) {
	case AEAD_AES_128_GCM:
	case AEAD_AES_256_GCM:
		if (k->own_gcm) {
			ret = aesgcm_open(gcm_of(k), nonce, a, adlen, p, p, len, tag) ? 0 : -1;
			break;
		}
		ret = wc_AesGcmDecrypt(aes_of(k), p, p, (word32)len, nonce, 12, tag, AEAD_TAG_LEN,
		                       a, (word32)adlen);
		break;
	case AEAD_CHACHA20_POLY1305:
		ret = chacha_open(k->ctx, nonce, a, adlen, p, len, tag);
		break;
	case AEAD_XCHACHA20_POLY1305:
		xchacha_derive(k, nonce, subkey, iv);
		ret = chacha_open(subkey, iv, a, adlen, p, len, tag);
		explicit_bzero(subkey, sizeof(subkey));
		break;
	default:
		ret = -1;
	}
	return ret == 0;
}

static int aes_block(const uint8_t *key, size_t key_len, const uint8_t in[16], uint8_t out[16],
                     int dir)
{
	Aes aes;
	int ret;

	if ((key_len != 16 && key_len != 32) || wc_AesInit(&aes, NULL, INVALID_DEVID) != 0)
		return -EINVAL;
	ret = wc_AesSetKeyDirect(&aes, key, (word32)key_len, NULL, dir);
	if (ret == 0)
		ret = dir == AES_ENCRYPTION ? wc_AesEncryptDirect(&aes, out, in)
		                            : wc_AesDecryptDirect(&aes, out, in);
	wc_AesFree(&aes);
	explicit_bzero(&aes, sizeof(aes));
	return ret == 0 ? 0 : -EINVAL;
}

int aes_block_encrypt(const uint8_t *key, size_t key_len, const uint8_t in[16], uint8_t out[16])
{
	return aes_block(key, key_len, in, out, AES_ENCRYPTION);
}

int aes_block_decrypt(const uint8_t *key, size_t key_len, const uint8_t in[16], uint8_t out[16])
{
	return aes_block(key, key_len, in, out, AES_DECRYPTION);
}

int hkdf_sha1(uint8_t *out, size_t out_len, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
              size_t salt_len, const uint8_t *info, size_t info_len)
{
	return wc_HKDF(WC_SHA, ikm, (word32)ikm_len, salt, (word32)salt_len, info, (word32)info_len,
	               out, (word32)out_len) == 0
	               ? 0
	               : -EINVAL;
}

int evp_bytes_to_key_md5(uint8_t *key, size_t key_len, const char *pw, size_t pw_len)
{
	uint8_t d[WC_MD5_DIGEST_SIZE];
	size_t off = 0;
	wc_Md5 md5;
	int ret = 0;

	while (off < key_len && ret == 0) {
		size_t n = key_len - off < sizeof(d) ? key_len - off : sizeof(d);

		ret = wc_InitMd5(&md5);
		if (ret == 0 && off)
			ret = wc_Md5Update(&md5, d, sizeof(d));
		if (ret == 0)
			ret = wc_Md5Update(&md5, (const uint8_t *)pw, (word32)pw_len);
		if (ret == 0)
			ret = wc_Md5Final(&md5, d);
		wc_Md5Free(&md5);
		memcpy(key + off, d, n);
		off += n;
	}
	explicit_bzero(d, sizeof(d));
	explicit_bzero(&md5, sizeof(md5));
	return ret == 0 ? 0 : -EINVAL;
}
