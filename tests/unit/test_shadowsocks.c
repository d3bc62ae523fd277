/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/aead.c, blake3.c, shadowsocks.c and shadowsocks_2022.c: vectors, both framings, cuts at every byte. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/hash.h>

#include "aead.h"
#include "base64.h"
#include "blake3.h"
#include "shadowsocks.h"
#include "ss_vectors.h"
#include "t.h"

T_SUITE("shadowsocks");

enum { BIG = 256 << 10, CAP = 70 << 10, TS = 1700000000, XFORM_TEST_IOV = 64 };

static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = strlen(hex) / 2;

	if (n > cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

/* buf equals the vector: its hex, or "sha256:HEX" of it. */
static int same_as(const uint8_t *buf, size_t len, const char *want)
{
	static uint8_t tmp[BIG];
	uint8_t h[WC_SHA256_DIGEST_SIZE], w[WC_SHA256_DIGEST_SIZE];

	if (strncmp(want, "sha256:", 7) == 0) {
		wc_Sha256Hash(buf, (word32)len, h);
		unhex(w, sizeof(w), want + 7);
		return memcmp(h, w, sizeof(h)) == 0;
	}
	return unhex(tmp, sizeof(tmp), want) == len && memcmp(tmp, buf, len) == 0;
}

static void pattern(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + 3);
}

/* --- primitives ----------------------------------------------------------------- */

static const char vec_pt[] = "spliced shadowsocks test vector: ";

/* From python3-cryptography (OpenSSL) and python3-nacl (libsodium): another library's answer. */
static void check_aead(enum aead_alg alg, const char *want_hex)
{
	uint8_t key[32], nonce[24], pt[80], buf[80], tag[16], want[96];
	struct aead_key k;
	size_t n = sizeof(vec_pt) - 1 + 47, wl = unhex(want, sizeof(want), want_hex);

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(100 + i);
	memcpy(pt, vec_pt, sizeof(vec_pt) - 1);
	for (int i = 0; i < 47; i++)
		pt[sizeof(vec_pt) - 1 + i] = (uint8_t)i;
	T_ASSERT(wl == n + 16);
	T_EQ_INT(aead_key_init(&k, alg, key), 0);
	memcpy(buf, pt, n);
	T_EQ_INT(aead_seal(&k, nonce, (const uint8_t *)"ad", 2, buf, n, tag), 0);
	T_EQ_MEM(buf, want, n);
	T_EQ_MEM(tag, want + n, 16);
	T_ASSERT(aead_open(&k, nonce, (const uint8_t *)"ad", 2, buf, n, tag));
	T_EQ_MEM(buf, pt, n);
	/* a flipped bit anywhere is refused: tag, ciphertext, additional data */
	memcpy(buf, want, n);
	tag[5] ^= 1;
	T_ASSERT(!aead_open(&k, nonce, (const uint8_t *)"ad", 2, buf, n, tag));
	tag[5] ^= 1;
	memcpy(buf, want, n);
	buf[n - 1] ^= 0x80;
	T_ASSERT(!aead_open(&k, nonce, (const uint8_t *)"ad", 2, buf, n, tag));
	memcpy(buf, want, n);
	T_ASSERT(!aead_open(&k, nonce, (const uint8_t *)"ae", 2, buf, n, tag));
	aead_key_wipe(&k);
}

static void test_aead_vectors(void)
{
	check_aead(AEAD_AES_128_GCM,
	           "691222ccb867dcdae8563674e9bd588353e30bdfe6ccae2ed419d4f4c89d85c9"
	           "9afc5326881c22978d502e4c868e4909d48d0c618e12543ed4961847d782787e"
	           "7bba332f8f93b7ac008f17f819c71c5cdc23b3cad19f6a829e778746a731162f");
	check_aead(AEAD_AES_256_GCM,
	           "3b6bb20f1a8c32be4d0a3e8cb512199221a9752aff09800687a7c92b8fccd772"
	           "b4e941c24f169e02fafb7135f64ec7c1144b89f5335e543eede9b5ccf49db894"
	           "17acfa2cf56f1e23ac47c4693aa61cc84b187e4a06b75c2ece7bb2f0c7441dc1");
	check_aead(AEAD_CHACHA20_POLY1305,
	           "4761d7a3fbc0127288b6741b9dfeabfc13ade114eb3598d9e64993d18e5dbec9"
	           "eab9b3e2ac3e4f7598e7c3e7e3afe5c6cbcb9e0f0c7f23ff49a7f28c1faa4cef"
	           "0d6c1446bc91454ecc6e4591fff33ee1f790561f393581041befd1b3a9499d1c");
	check_aead(AEAD_XCHACHA20_POLY1305,
	           "0f0395d99c4beda2f458fc5bc918cea638d021519049b9c4ac2301c45f310a2a"
	           "8b06427c2fb2f2c1ed0e6c165f5a055f61f5c10d8ca621b0d8171252e094a372"
	           "49f3e5c7f34a810bc92595bee6d6a3658dc30f590aaf5250554d77098bd1a114");
}

static void test_aead_empty_and_lengths(void)
{
	uint8_t key[16] = {0}, nonce[12], tag[16], want[16];
	struct aead_key k;

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 12; i++)
		nonce[i] = (uint8_t)(100 + i);
	T_EQ_INT(aead_key_init(&k, AEAD_AES_128_GCM, key), 0);
	T_EQ_INT(aead_seal(&k, nonce, NULL, 0, NULL, 0, tag), 0);
	unhex(want, sizeof(want), "6582ac05e04711a826bdfe2e144440ab");
	T_EQ_MEM(tag, want, 16);
	T_ASSERT(aead_open(&k, nonce, NULL, 0, NULL, 0, tag));
	aead_key_wipe(&k);
	T_EQ_INT(aead_key_len(AEAD_AES_128_GCM), 16);
	T_EQ_INT(aead_key_len(AEAD_XCHACHA20_POLY1305), 32);
	T_EQ_INT(aead_nonce_len(AEAD_XCHACHA20_POLY1305), 24);
	T_EQ_INT(aead_nonce_len(AEAD_CHACHA20_POLY1305), 12);
	T_EQ_INT(aead_key_init(&k, (enum aead_alg)99, key), -EINVAL);
}

/* SIP004: the nonce is a little-endian counter over all its bytes. */
static void test_nonce_counter(void)
{
	uint8_t n[12] = {0xff, 0xff, 0x00}, m[24] = {0};

	aead_nonce_inc(n, 12);
	T_EQ_INT(n[0], 0);
	T_EQ_INT(n[1], 0);
	T_EQ_INT(n[2], 1);
	memset(n, 0xff, sizeof(n));
	aead_nonce_inc(n, 12); /* wraps to zero */
	for (int i = 0; i < 12; i++)
		T_EQ_INT(n[i], 0);
	memset(m, 0xff, 16);
	aead_nonce_inc(m, 24); /* XChaCha: the carry reaches byte 16 */
	T_EQ_INT(m[15], 0);
	T_EQ_INT(m[16], 1);
}

static void test_kdfs(void)
{
	uint8_t ikm[11], salt[13], info[10], out[42], want[42], k[32];

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	/* RFC 5869 A.4, HKDF-SHA1 */
	T_EQ_INT(hkdf_sha1(out, sizeof(out), ikm, sizeof(ikm), salt, sizeof(salt), info,
	                   sizeof(info)),
	         0);
	unhex(want, sizeof(want),
	      "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2c22e422478d305f3f896");
	T_EQ_MEM(out, want, 42);
	/* EVP_BytesToKey(MD5): python hashlib's chain */
	T_EQ_INT(evp_bytes_to_key_md5(k, 32, "secret", 6), 0);
	unhex(want, sizeof(want),
	      "5ebe2294ecd0e0f08eab7690d2a6ee6926ae5cc854e36b6bdfca366848dea6bb");
	T_EQ_MEM(k, want, 32);
	T_EQ_INT(evp_bytes_to_key_md5(k, 16, "secret", 6), 0);
	T_EQ_MEM(k, want, 16);
}

static void test_aes_block(void)
{
	uint8_t key[32], in[16], out[16], want[16], back[16];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	unhex(in, sizeof(in), "00112233445566778899aabbccddeeff");
	/* FIPS-197 appendix C.1 and C.3 */
	T_EQ_INT(aes_block_encrypt(key, 16, in, out), 0);
	unhex(want, sizeof(want), "69c4e0d86a7b0430d8cdb78070b4c55a");
	T_EQ_MEM(out, want, 16);
	T_EQ_INT(aes_block_decrypt(key, 16, out, back), 0);
	T_EQ_MEM(back, in, 16);
	T_EQ_INT(aes_block_encrypt(key, 32, in, out), 0);
	unhex(want, sizeof(want), "8ea2b7ca516745bfeafc49904b496089");
	T_EQ_MEM(out, want, 16);
	T_EQ_INT(aes_block_encrypt(key, 24, in, out), -EINVAL);
}

/* --- BLAKE3 against Debian's b3sum ----------------------------------------------------- */

/*
 * b3sum's answers for the inputs in[0..n) for every n in 0..max, one line per
 * file: one b3sum run for all of them (-l out_len, --derive-key context if
 * given). Returns the lines read.
 */
static size_t b3sum_all(uint8_t (*out)[64], size_t out_len, const uint8_t *in, size_t max,
                        const char *context)
{
	char dir[] = "/tmp/test_b3.XXXXXX", path[64], line[300];
	char *cmd = malloc(64 + (max + 1) * 40);
	size_t off, got = 0;
	FILE *p;

	if (!cmd || !mkdtemp(dir)) {
		free(cmd);
		return 0;
	}
	off = (size_t)sprintf(cmd, "cd %s && b3sum --no-names -l %zu", dir, out_len);
	if (context)
		off += (size_t)sprintf(cmd + off, " --derive-key '%s'", context);
	for (size_t n = 0; n <= max; n++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%zu", dir, n);
		f = fopen(path, "w");
		if (f) {
			fwrite(in, 1, n, f);
			fclose(f);
		}
		off += (size_t)sprintf(cmd + off, " %zu", n);
	}
	p = popen(cmd, "r");
	while (p && got <= max && fgets(line, sizeof(line), p) && strlen(line) >= 2 * out_len) {
		line[2 * out_len] = '\0';
		unhex(out[got++], out_len, line);
	}
	if (p)
		pclose(p);
	for (size_t n = 0; n <= max; n++) {
		snprintf(path, sizeof(path), "%s/%zu", dir, n);
		unlink(path);
	}
	rmdir(dir);
	free(cmd);
	return got;
}

static void test_blake3_known(void)
{
	uint8_t out[32], want[32];

	/* the published BLAKE3("") */
	T_EQ_INT(blake3_hash(out, 32, "", 0), 0);
	unhex(want, sizeof(want),
	      "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
	T_EQ_MEM(out, want, 32);
	T_EQ_INT(blake3_hash(out, 65, "", 0), -EINVAL);
	T_EQ_INT(blake3_hash(out, 32, out, BLAKE3_CHUNK_LEN + 1), -EINVAL);
}

/*
 * Every input length a chunk holds (0..1024): hash with 64 bytes of output
 * (32 is its prefix), and derive_key under both SIP022 contexts with 32
 * bytes, against Debian's b3sum and b3sum --derive-key.
 */
static void test_blake3_vs_b3sum(void)
{
	static const char *const ctx[] = {"shadowsocks 2022 session subkey",
	                                  "shadowsocks 2022 identity subkey"};
	static uint8_t want[BLAKE3_CHUNK_LEN + 1][64];
	uint8_t in[BLAKE3_CHUNK_LEN], a[64];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 131 + 17);
	if (b3sum_all(want, 64, in, BLAKE3_CHUNK_LEN, NULL) != BLAKE3_CHUNK_LEN + 1) {
		T_FAILF("b3sum did not run (scripts/deps installs it)");
		return;
	}
	for (size_t n = 0; n <= BLAKE3_CHUNK_LEN; n++) {
		T_EQ_INT(blake3_hash(a, 64, in, n), 0);
		if (memcmp(a, want[n], 64) != 0) {
			T_FAILF("BLAKE3 of %zu bytes differs from b3sum", n);
			break;
		}
	}
	for (int c = 0; c < 2; c++) {
		if (b3sum_all(want, 32, in, BLAKE3_CHUNK_LEN, ctx[c]) != BLAKE3_CHUNK_LEN + 1) {
			T_FAILF("b3sum --derive-key did not run");
			return;
		}
		for (size_t n = 0; n <= BLAKE3_CHUNK_LEN; n++) {
			T_EQ_INT(blake3_derive_key(a, 32, ctx[c], in, n), 0);
			if (memcmp(a, want[n], 32) != 0) {
				T_FAILF("derive_key(\"%s\") of %zu bytes differs from b3sum",
				        ctx[c], n);
				break;
			}
		}
	}
}

/* --- methods and keys ------------------------------------------------------------- */

static void test_methods_and_keys(void)
{
	struct ss_key k;

	T_EQ_INT(ss_method_by_name("aes-128-gcm"), SS_AES_128_GCM);
	T_EQ_INT(ss_method_by_name("2022-blake3-chacha20-poly1305"), SS22_CHACHA20_POLY1305);
	T_EQ_INT(ss_method_by_name("chacha20-poly1305"), 0);
	T_EQ_INT(ss_method_by_name("aes-192-gcm"), 0);
	T_ASSERT(ss_method_info(SS22_AES_128_GCM)->v2022);
	T_EQ_INT(ss_method_info(SS22_AES_128_GCM)->key_len, 16);
	T_ASSERT(ss_key_init(&k, SS_AES_256_GCM, "secret", false) == NULL);
	T_ASSERT(ss_key_init(&k, SS_AES_256_GCM, "", false) != NULL);
	/* 2022: base64 of exactly the key length, nothing else */
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM, "AAECAwQFBgcICQoLDA0ODw==", false) == NULL);
	T_EQ_INT(k.key[15], 15);
	T_ASSERT(ss_key_init(&k, SS22_AES_256_GCM, "AAECAwQFBgcICQoLDA0ODw==", false) != NULL);
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM, "secret", false) != NULL);
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM, "AAECAwQFBgcICQoLDA0ODw", false) != NULL);
	/* identity lists: clients only, AES only, four at most */
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM,
	                     "AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==", false) != NULL);
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM,
	                     "AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==", true) == NULL);
	T_EQ_INT(k.n_ipsk, 1);
	T_ASSERT(ss_key_init(&k, SS22_CHACHA20_POLY1305,
	                     "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=:"
	                     "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
	                     true) != NULL);
	T_ASSERT(
	        ss_key_init(
	                &k, SS22_AES_128_GCM,
	                "AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==:"
	                "AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==:AAECAwQFBgcICQoLDA0ODw==",
	                true) != NULL);
	T_ASSERT(ss_key_init(&k, SS22_AES_128_GCM, "AAECAwQFBgcICQoLDA0ODw==:", true) != NULL);
}

/* --- the framings, against the vectors -------------------------------------------- */

struct vec {
	const struct ss_vector *v;
	enum ss_method m;
	struct ss_key ck, sk; /* client key (the whole list), server key */
	struct ss_users users;
	uint8_t rnd[SS_RAND_LEN], rrnd[SS_RAND_LEN];
	struct proto_target t;
	uint8_t *payload;
};

static int vec_setup(struct vec *x, const struct ss_vector *v)
{
	const char *colon = strchr(v->key, ':');
	char ipsk[64];

	memset(x, 0, sizeof(*x));
	x->v = v;
	x->m = ss_method_by_name(v->method);
	if (ss_key_init(&x->ck, x->m, v->key, true))
		return -1;
	if (colon) { /* the server: the identity key, and the user's key in its table */
		snprintf(ipsk, sizeof(ipsk), "%.*s", (int)(colon - v->key), v->key);
		if (ss_key_init(&x->sk, x->m, ipsk, false) ||
		    ss_users_add(&x->users, "alice", colon + 1, ss_method_info(x->m)->key_len) ||
		    ss_users_finish(&x->users))
			return -1;
	} else if (ss_key_init(&x->sk, x->m, v->key, false)) {
		return -1;
	}
	unhex(x->rnd, SS_SALT_MAX, v->salt);
	unhex(x->rrnd, SS_SALT_MAX, v->resp_salt);
	x->rnd[SS_SALT_MAX] = 36; /* padding 1 + 36 = 37, as the vectors have it */
	x->t.kind = TARGET_DOMAIN;
	x->t.port = 443;
	strcpy(x->t.host, "example.com");
	x->payload = malloc(v->payload);
	pattern(x->payload, v->payload);
	return 0;
}

static void vec_free(struct vec *x)
{
	ss_users_free(&x->users);
	free(x->payload);
}

/* Seal n plaintext bytes the way the pump does: slots of a cap-byte buffer, then seal. */
static size_t seal_all(struct ss_leg *l, const uint8_t *in, size_t n, uint8_t *out)
{
	static uint8_t buf[CAP];
	struct xform_ctx ctx = {.unix_s = TS};
	const struct xform_ops *ops = l->x.ops;
	size_t total = 0, done = 0;

	do {
		struct iovec iov[8];
		int k = ops->seal_slots(l, buf, CAP, iov, 8);
		size_t take = 0, off, len;

		for (int i = 0; i < k && done + take < n; i++) {
			size_t c =
			        n - done - take < iov[i].iov_len ? n - done - take : iov[i].iov_len;
			memcpy(iov[i].iov_base, in + done + take, c);
			take += c;
		}
		if (ops->seal(l, &ctx, buf, take, &off, &len) < 0)
			return 0;
		memcpy(out + total, buf + off, len);
		total += len;
		done += take;
	} while (done < n);
	return total;
}

static uint8_t wire[BIG], plain[BIG], work[BIG];

/* Which vectors a check runs on. */
enum vec_only {
	V_ALL = 0,
	V_HEX = 1,   /* the request is spelled out (not a long one's sha256) */
	V_2022 = 2,  /* a 2022 method */
	V_SMALL = 4, /* payload of at most 1000 bytes */
};

/* Run one check per vector of tests/tools/ss_vectors.sh's table that passes the filter. */
static void for_vectors(unsigned only, void (*check)(size_t i, struct vec *x))
{
	for (size_t i = 0; i < sizeof(ss_vectors) / sizeof(ss_vectors[0]); i++) {
		const struct ss_vector *v = &ss_vectors[i];
		struct vec x;

		if (((only & V_HEX) && strncmp(v->request, "sha256:", 7) == 0) ||
		    ((only & V_2022) && strncmp(v->method, "2022", 4) != 0) ||
		    ((only & V_SMALL) && v->payload > 1000))
			continue;
		if (vec_setup(&x, v) < 0) {
			T_FAILF("vector %zu (%s): keys", i, v->method);
			continue;
		}
		check(i, &x);
		vec_free(&x);
	}
}

static void client_request(size_t i, struct vec *x)
{
	struct ss_leg l;
	size_t n;

	T_EQ_INT(ss_client_init(&l, &x->ck, &x->t, x->rnd), 0);
	T_ASSERT(l.x.ops->seal_owes(&l));
	n = seal_all(&l, x->payload, x->v->payload, wire);
	if (!same_as(wire, n, x->v->request))
		T_FAILF("vector %zu (%s, %u bytes): the request differs from sstool.py's", i,
		        x->v->method, x->v->payload);
	T_ASSERT(!l.x.ops->seal_owes(&l));
	l.x.ops->destroy(&l);
}

static void test_client_request_vectors(void)
{
	for_vectors(V_ALL, client_request);
}

/*
 * The server's side of a request: the handshake parser fed in pieces as
 * conn.c feeds it (cut: the first piece's length; 0: all at once; SIZE_MAX:
 * a byte at a time), then the leg's opener for the rest. Returns the
 * plaintext length (target checked), or -1 with the error in *err.
 */
static long serve(struct vec *x, const uint8_t *req, size_t len, size_t cut, uint64_t now,
                  struct ss_leg *leg, enum ss_error *err)
{
	struct ss_server s;
	struct xform_ctx ctx = {.unix_s = now};
	size_t have = 0, fed = 0, got = 0, used;
	enum proto_res r = PROTO_NEED_MORE;

	ss_server_init(&s, &x->sk);
	*err = SS_OK;
	while (r == PROTO_NEED_MORE || r == PROTO_REPLY) {
		size_t step = cut == SIZE_MAX ? 1 : fed == 0 && cut ? cut : len - fed;

		if (r == PROTO_NEED_MORE) {
			if (fed == len)
				break;
			step = step > len - fed ? len - fed : step;
			memcpy(work + have, req + fed, step);
			have += step;
			fed += step;
		}
		s.users = x->users.n ? &x->users : NULL;
		s.now = now;
		r = ss_server_feed(&s, work, have, &used);
		if (r == PROTO_AUTH)
			r = ss_server_auth_result(&s, s.user != NULL);
		if (r == PROTO_FAIL)
			break;
		if (r == PROTO_NEED_MORE && ss_server_want(&s) > ss_server_buf_max(x->m) + 64) {
			T_FAILF("the parser asks for %zu bytes", ss_server_want(&s));
			break;
		}
		memmove(work, work + used, have - used);
		have -= used;
	}
	if (r != PROTO_REQUEST) {
		*err = s.error ? s.error : SS_ERR_FORMAT;
		ss_server_wipe(&s);
		return -1;
	}
	if (strcmp(s.target.host, "example.com") || s.target.port != 443) {
		T_FAILF("target %s:%u", s.target.host, s.target.port);
		ss_server_wipe(&s);
		return -1;
	}
	/* [early plaintext][wire bytes], then whatever had not been fed */
	memcpy(plain, work, s.early);
	got = s.early;
	memmove(work, work + s.early, have - s.early);
	have -= s.early;
	memcpy(work + have, req + fed, len - fed);
	have += len - fed;
	if (ss_server_leg(leg, &s, x->rrnd) < 0)
		return -1;
	/* the opener, fed in pieces too */
	size_t start = 0, end = 0;
	while (end < have) {
		struct iovec iov[XFORM_TEST_IOV];
		int n_iov = 0;
		size_t step = cut == SIZE_MAX ? 1 : cut ? cut : have;

		end = end + step > have ? have : end + step;
		if (leg->x.ops->open(leg, &ctx, work + start, end - start, SIZE_MAX, iov,
		                     XFORM_TEST_IOV, &n_iov, &used) < 0) {
			*err = leg->open.error;
			leg->x.ops->destroy(leg);
			return -1;
		}
		for (int i = 0; i < n_iov; i++) {
			memcpy(plain + got, iov[i].iov_base, iov[i].iov_len);
			got += iov[i].iov_len;
		}
		start += used;
	}
	if (start != have || !leg->x.ops->open_clean(leg)) {
		*err = SS_ERR_FORMAT; /* a stream that ends inside a chunk */
		leg->x.ops->destroy(leg);
		return -1;
	}
	return (long)got;
}

/* The request vectors parse to the target and the payload, however they are cut. */
static void server_parses(size_t i, struct vec *x)
{
	static uint8_t req[BIG];
	const struct ss_vector *v = x->v;
	struct ss_leg leg;
	enum ss_error err;
	size_t len = unhex(req, sizeof(req), v->request);
	long got;

	/* every cut: two pieces at each byte, and a byte at a time */
	for (size_t cut = 0; cut <= len; cut++) {
		got = serve(x, req, len, cut, TS, &leg, &err);
		if (got != (long)v->payload || memcmp(plain, x->payload, v->payload)) {
			T_FAILF("vector %zu (%s) cut at %zu: %ld bytes, error %d", i, v->method,
			        cut, got, err);
			break;
		}
		leg.x.ops->destroy(&leg);
	}
	got = serve(x, req, len, SIZE_MAX, TS, &leg, &err);
	T_EQ_INT(got, v->payload);
	if (got >= 0)
		leg.x.ops->destroy(&leg);
}

static void test_server_parses_vectors(void)
{
	for_vectors(V_HEX, server_parses); /* the long ones: the response and pump tests */
}

/* Any flipped bit of a request is refused: by the handshake, or by the opener after it. */
static void server_refuses_flips(size_t i, struct vec *x)
{
	static uint8_t req[BIG];
	size_t len = unhex(req, sizeof(req), x->v->request), salt = ss_method_info(x->m)->key_len;
	struct ss_leg leg;
	enum ss_error err;

	for (size_t at = 0; at < len; at++) {
		req[at] ^= 0x10;
		if (serve(x, req, len, 0, TS, &leg, &err) >= 0) {
			T_FAILF("vector %zu (%s): a flipped byte %zu was accepted", i, x->v->method,
			        at);
			leg.x.ops->destroy(&leg);
		} else if (at >= salt && err != SS_ERR_AUTH && !(x->users.n && at < salt + 16u)) {
			T_FAILF("vector %zu: byte %zu flipped: error %d, want authentication", i,
			        at, err);
		}
		req[at] ^= 0x10;
	}
}

static void test_server_refuses_every_flip(void)
{
	for_vectors(V_HEX, server_refuses_flips);
}

/* The response: sealed by the server's leg as sstool.py makes it, opened by the client's. */
static void response(size_t i, struct vec *x)
{
	static uint8_t req[BIG], resp[BIG], resp0[BIG];
	const struct ss_vector *v = x->v;
	struct xform_ctx ctx = {.unix_s = TS};
	struct ss_leg sleg, cleg;
	enum ss_error err;
	size_t rl, n;
	long got;

	ss_client_init(&cleg, &x->ck, &x->t, x->rnd);
	n = seal_all(&cleg, x->payload, v->payload, req);
	got = serve(x, req, n, 0, TS, &sleg, &err);
	T_EQ_INT(got, v->payload);
	if (got < 0) {
		cleg.x.ops->destroy(&cleg);
		return;
	}
	rl = seal_all(&sleg, x->payload, v->payload, resp0);
	if (!same_as(resp0, rl, v->response))
		T_FAILF("vector %zu (%s, %u bytes): the response differs from sstool.py's", i,
		        v->method, v->payload);
	/* the client opens it, cut at every byte (the short ones) or in 1000-byte steps */
	for (size_t cut = 1; cut <= rl; cut += v->payload > 1000 ? 1000 : 1) {
		struct ss_leg c2;
		size_t start = 0, end = 0, have = 0, used;

		ss_client_init(&c2, &x->ck, &x->t, x->rnd);
		memcpy(resp, resp0, rl); /* opened in place: each cut starts from the vector */
		while (end < rl) {
			struct iovec iov[XFORM_TEST_IOV];
			int k = 0;

			end = end + cut > rl ? rl : end + cut;
			if (c2.x.ops->open(&c2, &ctx, resp + start, end - start, SIZE_MAX, iov,
			                   XFORM_TEST_IOV, &k, &used) < 0)
				break;
			for (int j = 0; j < k; j++) {
				memcpy(plain + have, iov[j].iov_base, iov[j].iov_len);
				have += iov[j].iov_len;
			}
			start += used;
		}
		c2.x.ops->destroy(&c2);
		if (have != v->payload || memcmp(plain, x->payload, have) || start != rl) {
			T_FAILF("vector %zu (%s): the response cut every %zu bytes opened to %zu",
			        i, v->method, cut, have);
			break;
		}
	}
	sleg.x.ops->destroy(&sleg);
	cleg.x.ops->destroy(&cleg);
}

static void test_response_vectors(void)
{
	for_vectors(V_ALL, response);
}

/* SIP022 3.1.3: a timestamp more than 30 s off is a replay; 30 s is not. */
static void timestamps(size_t i, struct vec *x)
{
	static uint8_t req[BIG];
	const struct ss_vector *v = x->v;
	size_t len = unhex(req, sizeof(req), v->request);
	struct ss_leg leg;
	enum ss_error err;

	(void)i;
	for (int off = -31; off <= 31; off += 1) {
		long got = serve(x, req, len, 0, (uint64_t)(TS - off), &leg, &err);
		bool ok = off >= -30 && off <= 30;

		if (ok && got != (long)v->payload)
			T_FAILF("%s: %d s off refused", v->method, off);
		if (!ok && (got >= 0 || err != SS_ERR_TIME))
			T_FAILF("%s: %d s off: got %ld, error %d", v->method, off, got, err);
		if (got >= 0)
			leg.x.ops->destroy(&leg);
		if (off == -29)
			off = 28;
	}
}

static void test_2022_timestamps(void)
{
	for_vectors(V_2022 | V_HEX, timestamps);
}

/* SIP022 3.1.4: a request with neither payload nor padding is refused; padding alone is fine. */
static void payload_or_padding(size_t i, struct vec *x)
{
	struct xform_ctx ctx = {.unix_s = TS};
	struct ss_leg c, sl;
	enum ss_error err;
	size_t off, len;
	long got;

	(void)i;
	for (int pad = 0; pad <= 1; pad++) {
		static uint8_t buf[CAP];
		struct iovec iov[8];

		ss_client_init(&c, &x->ck, &x->t, x->rnd);
		c.seal.pad = (uint16_t)pad; /* what a broken client would send */
		c.x.ops->seal_slots(&c, buf, CAP, iov, 8);
		T_EQ_INT(c.x.ops->seal(&c, &ctx, buf, 0, &off, &len), 0);
		T_ASSERT(len > 0); /* a client owes its header even without payload */
		got = serve(x, buf + off, len, 0, TS, &sl, &err);
		if (pad) {
			T_EQ_INT(got, 0);
			if (got == 0)
				sl.x.ops->destroy(&sl);
		} else {
			T_EQ_INT(got, -1);
			T_EQ_INT(err, SS_ERR_FORMAT);
		}
		c.x.ops->destroy(&c);
	}
}

static void test_2022_needs_payload_or_padding(void)
{
	for_vectors(V_2022 | V_SMALL, payload_or_padding);
}

/* A 2022 response played back at the server (type 1) is refused; an unknown identity too. */
static void reflection_and_users(size_t i, struct vec *x)
{
	static uint8_t buf[BIG];
	size_t len = unhex(buf, sizeof(buf), x->v->response);
	struct ss_leg leg;
	enum ss_error err;

	(void)i;
	T_EQ_INT(serve(x, buf, len, 0, TS, &leg, &err), -1);
	if (x->users.n) {
		/* the same request to a server that does not know the user */
		struct ss_users other = {0};

		len = unhex(buf, sizeof(buf), x->v->request);
		T_EQ_INT(ss_users_add(&other, "bob",
		                      "EBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8=", 32),
		         0);
		ss_users_finish(&other);
		ss_users_free(&x->users);
		x->users = other;
		T_EQ_INT(serve(x, buf, len, 0, TS, &leg, &err), -1);
		T_EQ_INT(err, SS_ERR_USER);
	}
}

static void test_2022_reflection_and_users(void)
{
	for_vectors(V_2022 | V_SMALL, reflection_and_users);
}

/* SIP004: length 0 and lengths over 0x3FFF are refused by the server and by the opener. */
static void test_aead_bad_lengths(void)
{
	static const uint16_t bad[] = {0, 0x4000, 0xffff};
	struct vec x;

	if (vec_setup(&x, &ss_vectors[0]) < 0) { /* aes-128-gcm, 100 bytes */
		T_FAILF("keys");
		return;
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t req[64], sk[16];
		struct aead_key a;
		uint8_t nonce[12] = {0};
		struct ss_leg leg;
		enum ss_error err;

		memcpy(req, x.rnd, 16);
		hkdf_sha1(sk, 16, x.sk.key, 16, req, 16, (const uint8_t *)"ss-subkey", 9);
		aead_key_init(&a, AEAD_AES_128_GCM, sk);
		req[16] = (uint8_t)(bad[i] >> 8);
		req[17] = (uint8_t)bad[i];
		aead_seal(&a, nonce, NULL, 0, req + 16, 2, req + 18);
		aead_key_wipe(&a);
		T_EQ_INT(serve(&x, req, 34, 0, TS, &leg, &err), -1);
		T_EQ_INT(err, SS_ERR_FORMAT);
	}
	vec_free(&x);
}

/*
 * SIP004 leaves the address free to span chunks (v2ray's client writes what
 * it has): every split of "example.com:443" plus a payload, 1 to 20 bytes a
 * chunk, parses to the same target and early payload.
 */
static void test_aead_address_split(void)
{
	static const uint8_t addr[] = "\x03\x0b"
	                              "example.com\x01\xbb"
	                              "payload";
	struct vec x;

	if (vec_setup(&x, &ss_vectors[2]) < 0) { /* aes-256-gcm */
		T_FAILF("keys");
		return;
	}
	for (size_t step = 1; step <= 20; step++) {
		uint8_t req[1024], sk[32], nonce[12] = {0}, len2[2];
		struct aead_key a;
		struct ss_leg leg;
		enum ss_error err;
		size_t n = 32, total = sizeof(addr) - 1;

		memcpy(req, x.rnd, 32);
		hkdf_sha1(sk, 32, x.sk.key, 32, req, 32, (const uint8_t *)"ss-subkey", 9);
		aead_key_init(&a, AEAD_AES_256_GCM, sk);
		for (size_t i = 0; i < total; i += step) {
			size_t c = total - i < step ? total - i : step;

			len2[0] = 0;
			len2[1] = (uint8_t)c;
			memcpy(req + n, len2, 2);
			aead_seal(&a, nonce, NULL, 0, req + n, 2, req + n + 2);
			aead_nonce_inc(nonce, 12);
			n += 18;
			memcpy(req + n, addr + i, c);
			aead_seal(&a, nonce, NULL, 0, req + n, c, req + n + c);
			aead_nonce_inc(nonce, 12);
			n += c + 16;
		}
		aead_key_wipe(&a);
		for (size_t cut = 0; cut <= n; cut += 7) {
			long got = serve(&x, req, n, cut, TS, &leg, &err);

			if (got != 7 || memcmp(plain, "payload", 7)) {
				T_FAILF("address in %zu-byte chunks, cut at %zu: %ld bytes, error %d",
				        step, cut, got, err);
				break;
			}
			leg.x.ops->destroy(&leg);
		}
	}
	vec_free(&x);
}

/*
 * The xform contract's limits: at most max_iov runs and (past the first
 * run) max_plain bytes per open; what is left is opened by the next call.
 */
static void test_open_limits(void)
{
	static uint8_t req[BIG];
	struct xform_ctx ctx = {.unix_s = TS};
	struct vec x;
	struct ss_leg c, s;
	enum ss_error err;
	size_t n, off = 0, have = 0;
	int calls = 0;

	if (vec_setup(&x, &ss_vectors[2]) < 0) /* aes-256-gcm, 100 bytes: our client's own */
		return;
	ss_client_init(&c, &x.ck, &x.t, x.rnd);
	n = seal_all(&c, x.payload, x.v->payload, req);
	T_EQ_INT(serve(&x, req, n, 0, TS, &s, &err), (long)x.v->payload);
	/* 40 chunks of 10 bytes from the server's leg, opened by the client's leg */
	for (int i = 0; i < 40; i++)
		n = i == 0 ? seal_all(&s, x.payload, 10, wire)
		           : n + seal_all(&s, x.payload, 10, wire + n);
	while (off < n) {
		struct iovec iov[3];
		int k = 0;
		size_t used = 0;

		T_EQ_INT(c.x.ops->open(&c, &ctx, wire + off, n - off, 25, iov, 3, &k, &used), 0);
		T_ASSERT(k >= 1 && k <= 3);
		for (int j = 0; j < k; j++)
			have += iov[j].iov_len;
		off += used;
		if (++calls > 100)
			break;
	}
	T_EQ_INT(have, 400);
	T_ASSERT(calls >= 14); /* 25 bytes: two 10-byte runs a call, the first one always */
	c.x.ops->destroy(&c);
	s.x.ops->destroy(&s);
	vec_free(&x);
}

int main(void)
{
	T_RUN(test_aead_vectors);
	T_RUN(test_aead_empty_and_lengths);
	T_RUN(test_nonce_counter);
	T_RUN(test_kdfs);
	T_RUN(test_aes_block);
	T_RUN(test_blake3_known);
	T_RUN(test_blake3_vs_b3sum);
	T_RUN(test_methods_and_keys);
	T_RUN(test_client_request_vectors);
	T_RUN(test_server_parses_vectors);
	T_RUN(test_server_refuses_every_flip);
	T_RUN(test_response_vectors);
	T_RUN(test_2022_timestamps);
	T_RUN(test_2022_needs_payload_or_padding);
	T_RUN(test_2022_reflection_and_users);
	T_RUN(test_aead_bad_lengths);
	T_RUN(test_aead_address_split);
	T_RUN(test_open_limits);
	return t_finish();
}
