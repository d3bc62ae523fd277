/* SPDX-License-Identifier: MIT */
/* AEAD ciphers (AES-GCM from lib/aesgcm where the CPU has VAES-512, else wolfSSL; ChaCha20 from lib/chacha where it has AVX2), in place, with the key schedule kept. */
#ifndef SPLICED_AEAD_H
#define SPLICED_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum aead_alg {
	AEAD_AES_128_GCM = 1,
	AEAD_AES_256_GCM,
	AEAD_CHACHA20_POLY1305,  /* RFC 8439 */
	AEAD_XCHACHA20_POLY1305, /* draft-irtf-cfrg-xchacha-03: HChaCha20 subkey per nonce */
};

enum aead_limits {
	AEAD_TAG_LEN = 16,
	AEAD_KEY_MAX = 32,
	AEAD_NONCE_MAX = 24,
	/*
	 * Room for wolfSSL's Aes (the expanded key and GHASH table: 880 bytes
	 * in the assembly build, 1104 in Debian's); aead.c asserts it fits, so
	 * the header needs no wolfSSL include.
	 */
	AEAD_CTX_BYTES = 1152,
};

/*
 * A key ready to use: for AES-GCM the expanded key schedule and GHASH
 * table (set up once per key, not per chunk), for the ChaCha family the
 * raw key (its set-up is a few words per call). Owned by one thread.
 */
struct aead_key {
	_Alignas(16) unsigned char ctx[AEAD_CTX_BYTES];
	enum aead_alg alg;
	uint8_t key_len, nonce_len;
	bool live;    /* ctx holds a wolfSSL object to free */
	bool own_gcm; /* ctx holds lib/aesgcm's key (VAES-512), not wolfSSL's Aes */
};

size_t aead_key_len(enum aead_alg alg);
size_t aead_nonce_len(enum aead_alg alg);

/* 0, or -EINVAL (unknown algorithm, wolfSSL refused the key). */
int aead_key_init(struct aead_key *k, enum aead_alg alg, const uint8_t *key);
/* Free and wipe (safe on a zeroed or already wiped key). */
void aead_key_wipe(struct aead_key *k);

/*
 * Encrypt buf[0..len) in place under nonce (aead_nonce_len() bytes) with
 * the additional data ad[0..adlen) (may be NULL, 0), writing the 16-byte
 * tag to tag (which must not overlap buf). 0 or -EINVAL.
 */
int aead_seal(struct aead_key *k, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
              uint8_t *buf, size_t len, uint8_t tag[AEAD_TAG_LEN]);
/*
 * Check tag and decrypt buf[0..len) in place. False when the tag does not
 * match (buf then holds garbage: never use it). The comparison is constant
 * time (wolfSSL's or lib/aesgcm's).
 */
bool aead_open(struct aead_key *k, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
               uint8_t *buf, size_t len, const uint8_t tag[AEAD_TAG_LEN]);

/* The nonce as a little-endian counter over all its len bytes, plus one (SIP004, SIP022). */
static inline void aead_nonce_inc(uint8_t *nonce, size_t len)
{
	for (size_t i = 0; i < len && ++nonce[i] == 0; i++)
		;
}

/* One AES block (ECB) with a 16- or 32-byte key: SIP023 identity headers. 0 or -EINVAL. */
int aes_block_encrypt(const uint8_t *key, size_t key_len, const uint8_t in[16], uint8_t out[16]);
int aes_block_decrypt(const uint8_t *key, size_t key_len, const uint8_t in[16], uint8_t out[16]);

/* HKDF-SHA1 (RFC 5869): out_len bytes into out. 0 or -EINVAL. */
int hkdf_sha1(uint8_t *out, size_t out_len, const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
              size_t salt_len, const uint8_t *info, size_t info_len);
/*
 * OpenSSL's EVP_BytesToKey with MD5, no salt, one iteration: D1 = MD5(pw),
 * Di = MD5(Di-1 | pw), key = the first key_len bytes of D1 | D2 | ...
 * (how Shadowsocks turns a password into a key). 0 or -EINVAL.
 */
int evp_bytes_to_key_md5(uint8_t *key, size_t key_len, const char *pw, size_t pw_len);

#endif
