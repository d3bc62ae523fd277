/* SPDX-License-Identifier: MIT */
/* libFuzzer target: wg_receive() and the split data path on forged, sealed and mutated datagrams. */
#include "fuzz.h"
#include "peer.h"

#include <errno.h>

/*
 * Input: one flags octet, then records [op][len hi][len lo][len bytes]:
 *   op & 3 == 0  the bytes as a raw UDP payload
 *   op & 3 == 1  the bytes as the inner packet of a data message that the
 *                real peer seals with its live session (op & 0x10: then flip
 *                one byte, chosen by the first byte); op & 0x20 takes the
 *                two-step wg_receive_data_open/finish path a device uses
 *   op & 3 == 2  a genuine handshake initiation from the peer, XORed with
 *                the bytes when op & 0x10 (replies are fed back to the peer)
 *   op & 3 == 3  the clock moves on by bytes[0..1] * 100 ms and both sides tick
 * Flags: bit 0 run a handshake first (so data has a session), bit 1 use a
 * preshared key, bit 2 put the receiver under load (cookie replies).
 * Keys are fixed so a crash input replays the same way.
 */
struct side {
	struct wg_identity id;
	struct wg_peer peer;
	struct sockaddr_in addr;
};

static time_t wall;

static void fake_realtime(struct timespec *ts)
{
	ts->tv_sec = 1700000000 + wall++;
	ts->tv_nsec = 0;
}

static void side_init(struct side *s, uint8_t seed, const char *ip, uint16_t port)
{
	uint8_t priv[WG_KEY_LEN];

	memset(s, 0, sizeof(*s));
	CHECK(wg_identity_init(&s->id) == 0);
	s->id.realtime = fake_realtime;
	memset(priv, seed, sizeof(priv));
	CHECK(wg_identity_set_private_key(&s->id, priv) == 0);
	s->addr.sin_family = AF_INET;
	s->addr.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->addr.sin_addr);
}

static void allow(struct side *s, const char *ip)
{
	uint8_t a[4];

	inet_pton(AF_INET, ip, a);
	CHECK(wg_allowedips_insert(&s->id.allowedips, AF_INET, a, 32, &s->peer) == 0);
}

/* What every wg_rx must look like, whatever the input. */
static void check_rx(int ret, const struct wg_rx *rx, const uint8_t *pkt, size_t len,
                     const struct wg_peer *peer)
{
	CHECK(ret <= 0);
	CHECK((ret < 0) == (rx->action == WG_RX_DROP));
	if (ret < 0)
		CHECK(rx->err == ret);
	CHECK(rx->peer == NULL || rx->peer == peer);
	if (rx->action == WG_RX_DATA) {
		CHECK(rx->peer == peer);
		CHECK(rx->data >= pkt + WG_MSG_DATA_HEADER_LEN);
		CHECK(rx->data + rx->len <= pkt + len);
		CHECK(rx->len >= 20);
	}
	if (rx->action == WG_RX_REPLY) {
		CHECK(rx->data == rx->reply);
		CHECK(rx->len == WG_MSG_RESPONSE_LEN || rx->len == WG_MSG_COOKIE_LEN);
	}
}

static void deliver(struct side *to, struct side *from, const uint8_t *bytes, size_t len,
                    uint64_t now)
{
	/* an exact-size heap copy, so ASan sees any overread */
	uint8_t *pkt = malloc(len ? len : 1);
	struct wg_rx rx;
	int ret;

	CHECK(pkt);
	memcpy(pkt, bytes, len);
	ret = wg_receive(&to->id, pkt, len, (const struct sockaddr *)&from->addr, now, &rx);
	check_rx(ret, &rx, pkt, len, &to->peer);
	if (rx.action == WG_RX_REPLY) {
		/* a handshake response or cookie back to the initiator */
		uint8_t reply[WG_MSG_MAX_HANDSHAKE_LEN];
		struct wg_rx rx2;
		size_t n = rx.len;

		memcpy(reply, rx.data, n);
		ret = wg_receive(&from->id, reply, n, (const struct sockaddr *)&to->addr, now,
		                 &rx2);
		check_rx(ret, &rx2, reply, n, &from->peer);
	}
	free(pkt);
}

/* Seal bytes as an inner packet from a to b; optionally corrupt; receive via the split API. */
static void sealed(struct side *a, struct side *b, const uint8_t *bytes, size_t len, uint8_t op,
                   uint64_t now)
{
	size_t cap = WG_MSG_DATA_HEADER_LEN + len + WG_MSG_PADDING + WG_AEAD_TAG_LEN;
	uint8_t *buf = malloc(cap);
	struct wg_rx_open o;
	struct wg_rx rx;
	uint64_t failed = b->id.stats.rx_decrypt_failed;
	long n;
	int ret;

	CHECK(buf);
	memcpy(buf + WG_MSG_DATA_HEADER_LEN, bytes, len);
	n = wg_peer_encrypt(&a->peer, buf, len, cap, now);
	if (n < 0) {
		CHECK(n == -ENOKEY || n == -EMSGSIZE);
		free(buf);
		return;
	}
	CHECK((size_t)n <= cap);
	if ((op & 0x10) && len)
		buf[bytes[0] % (size_t)n] ^= (uint8_t)(1u << (bytes[len - 1] & 7));
	if (op & 0x20) {
		ret = wg_receive_data_open(&b->id, buf, (size_t)n, now, &o, &rx);
		if (ret == 0) {
			ret = wg_receive_data_finish(&b->id, buf, (size_t)n, &o, false, now, &rx);
			if (ret == -EWOULDBLOCK)
				ret = wg_receive_data_finish(&b->id, buf, (size_t)n, &o, true, now,
				                             &rx);
		}
	} else {
		ret = wg_receive(&b->id, buf, (size_t)n, (const struct sockaddr *)&a->addr, now,
		                 &rx);
	}
	check_rx(ret, &rx, buf, (size_t)n, &b->peer);
	/* what the sender sealed untouched always authenticates */
	if (!(op & 0x10))
		CHECK(b->id.stats.rx_decrypt_failed == failed);
	free(buf);
}

static void tick(struct side *s, uint64_t now)
{
	uint8_t init[WG_MSG_INITIATION_LEN];
	unsigned act = wg_peer_tick(&s->peer, now);

	if (act & WG_ACT_SEND_INITIATION)
		(void)wg_peer_create_initiation(&s->peer, init, now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t psk[WG_KEY_LEN] = {7, 7, 7};
	struct side *a, *b;
	uint64_t now = 1000 * 1000000000ull;
	size_t off = 1;

	if (size < 1)
		return 0;
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	CHECK(a && b);
	wall = 0;
	side_init(a, 0x11, "192.0.2.1", 40001);
	side_init(b, 0x22, "192.0.2.2", 40002);
	CHECK(wg_peer_init(&a->peer, &a->id, b->id.static_public) == 0);
	CHECK(wg_peer_init(&b->peer, &b->id, a->id.static_public) == 0);
	if (data[0] & 2) {
		wg_peer_set_preshared_key(&a->peer, psk);
		wg_peer_set_preshared_key(&b->peer, psk);
	}
	allow(a, "10.0.0.2");
	allow(b, "10.0.0.1");
	if (data[0] & 1) {
		uint8_t init[WG_MSG_INITIATION_LEN];

		CHECK(wg_peer_create_initiation(&a->peer, init, now) == 0);
		deliver(b, a, init, sizeof(init), now);
		CHECK(wg_peer_has_session(&a->peer, now));
	}
	b->id.force_under_load = (data[0] & 4) != 0;

	while (off + 3 <= size) {
		uint8_t op = data[off];
		size_t len = (size_t)data[off + 1] << 8 | data[off + 2];
		const uint8_t *bytes = data + off + 3;

		off += 3;
		if (len > size - off)
			len = size - off;
		off += len;
		switch (op & 3) {
		case 0:
			deliver(b, a, bytes, len, now);
			break;
		case 1:
			sealed(a, b, bytes, len, op, now);
			break;
		case 2: {
			uint8_t init[WG_MSG_INITIATION_LEN];

			/* one initiation per REKEY_TIMEOUT: step past it */
			now += 6 * 1000000000ull;
			if (wg_peer_create_initiation(&a->peer, init, now) != 0)
				break;
			if (op & 0x10)
				for (size_t i = 0; i < len && i < sizeof(init); i++)
					init[i] ^= bytes[i];
			deliver(b, a, init, sizeof(init), now);
			break;
		}
		case 3:
			now += (uint64_t)(len >= 2 ? (bytes[0] << 8 | bytes[1]) : 1) * 100000000ull;
			tick(a, now);
			tick(b, now);
			break;
		}
	}
	wg_identity_destroy(&a->id);
	wg_identity_destroy(&b->id);
	free(a);
	free(b);
	return 0;
}
