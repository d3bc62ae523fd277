/* SPDX-License-Identifier: MIT */
/* The transform pump: readiness from io_uring polls, bytes opened or sealed in place in pooled buffers. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "pump.h"

/*
 * One direction, src → dst, where src's leg opens (O) and/or dst's leg
 * seals (S):
 *
 *   O only   recv into xa after the bytes kept from last time; open every
 *            complete chunk in place; sendmsg the plaintext runs from xa.
 *   S only   recvmsg straight into the seal slots of xb; seal in place;
 *            send xb's wire bytes.
 *   O and S  as O into xa, then the plaintext is copied into xb's slots
 *            (the one copy: two keys cannot share one pass) and sealed.
 *
 * Order, as in the other pumps: what is pending goes out first, and nothing
 * is read while dst cannot take it (back-pressure); a short read means src
 * is (very likely) empty and ends the turn, as does the budget. A buffer
 * goes back to the pool as soon as it holds nothing, so an idle
 * direction holds none; a chunk cut by a read keeps xa until its rest comes.
 */

static struct xbuf *xbuf_get(struct buf_pool *xp)
{
	struct xbuf *b = (struct xbuf *)(void *)buf_pool_get(xp);

	if (b) {
		b->out_i = b->out_n = 0;
		b->raw_off = b->raw_len = 0;
		b->raw_fresh = false;
		b->w_off = b->w_len = 0;
	}
	return b;
}

static bool xa_empty(const struct xbuf *a)
{
	return !a || (a->out_i == a->out_n && a->raw_len == 0);
}

static void xbuf_put(struct buf_pool *xp, struct xbuf **b, bool wipe)
{
	if (!*b)
		return;
	/* Bytes left belong to a dead connection: never hand them to another. */
	if (wipe)
		explicit_bzero(*b, sizeof(**b));
	buf_pool_put(xp, (uint8_t *)*b);
	*b = NULL;
}

void xform_dir_release(struct buf_pool *xp, struct pump_dir *d)
{
	xbuf_put(xp, &d->xa, !xa_empty(d->xa));
	xbuf_put(xp, &d->xb, d->xb && d->xb->w_len);
}

/* What the direction holds for dst (relay_failed() lets it go out after a read error). */
static uint32_t pending(const struct pump_dir *d, bool sealing)
{
	uint64_t n = d->xb ? d->xb->w_len : 0;

	if (d->xa && !sealing) {
		for (unsigned i = d->xa->out_i; i < d->xa->out_n; i++)
			n += d->xa->out[i].iov_len;
	}
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Send what is pending: 0 all sent, 1 dst is full, or -errno. */
static int flush(struct pump_dir *d, int dst, bool sealing, size_t *moved)
{
	ssize_t n;

	if (sealing) {
		struct xbuf *b = d->xb;

		while (b && b->w_len) {
			n = send(dst, b->data + b->w_off, b->w_len, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 1 : -errno;
			b->w_off += (uint32_t)n;
			b->w_len -= (uint32_t)n;
			d->bytes += (uint64_t)n;
			*moved += (size_t)n;
		}
		return 0;
	}
	struct xbuf *a = d->xa;

	while (a && a->out_i < a->out_n) {
		struct msghdr mh = {.msg_iov = a->out + a->out_i,
		                    .msg_iovlen = (size_t)(a->out_n - a->out_i)};

		n = sendmsg(dst, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 1 : -errno;
		d->bytes += (uint64_t)n;
		*moved += (size_t)n;
		/* Past the runs sent whole, into the one cut short. */
		while (n > 0) {
			struct iovec *v = &a->out[a->out_i];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				a->out_i++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

/* Seal n bytes already in xb's slots (n may be 0: what is owed). */
static int seal_into(struct xform *s, const struct xform_ctx *ctx, struct xbuf *b, size_t n)
{
	size_t off = 0, len = 0;
	int ret = s->ops->seal(s, ctx, b->data, n, &off, &len);

	if (ret < 0)
		return ret;
	b->w_off = (uint32_t)off;
	b->w_len = (uint32_t)len;
	return 0;
}

/* O and S: copy the opened runs of xa into xb's seal slots, as many as fit, and seal them. */
static int stage(struct xform *s, const struct xform_ctx *ctx, struct xbuf *a, struct xbuf *b)
{
	struct iovec slot[8];
	int k = s->ops->seal_slots(s, b->data, XBUF_DATA, slot, 8), si = 0;
	size_t n = 0, soff = 0;

	while (a->out_i < a->out_n && si < k) {
		struct iovec *v = &a->out[a->out_i];
		size_t c = slot[si].iov_len - soff;

		if (c > v->iov_len)
			c = v->iov_len;
		memcpy((uint8_t *)slot[si].iov_base + soff, v->iov_base, c);
		n += c;
		soff += c;
		v->iov_base = (uint8_t *)v->iov_base + c;
		v->iov_len -= c;
		if (!v->iov_len)
			a->out_i++;
		if (soff == slot[si].iov_len) {
			si++;
			soff = 0;
		}
	}
	return seal_into(s, ctx, b, n);
}

/* Open what xa holds since the last open (xa's plaintext runs have all been passed on). */
static int open_held(struct xform *o, struct xform *s, const struct xform_ctx *ctx, struct xbuf *a)
{
	size_t used = 0, max_plain = s ? s->ops->seal_room(s, XBUF_DATA) : SIZE_MAX;
	int n = 0;
	int ret = o->ops->open(o, ctx, a->data + a->raw_off, a->raw_len, max_plain, a->out,
	                       XBUF_IOV, &n, &used);

	if (ret < 0) {
		a->raw_fresh = false;
		return ret;
	}
	a->out_i = 0;
	a->out_n = (uint16_t)n;
	a->raw_off += (uint32_t)used;
	a->raw_len -= (uint32_t)used;
	/*
	 * Chunks may be left because the runs or the room ran out: look again
	 * once these are passed on. Nothing opened means the tail is incomplete.
	 */
	a->raw_fresh = n > 0 && a->raw_len > 0;
	return 0;
}

/* One read from src: into xa behind the kept bytes (O), or into xb's slots (S only). */
static ssize_t read_src(struct buf_pool *xp, struct pump_dir *d, int src, struct xform *o,
                        struct xform *s, const struct xform_ctx *ctx, bool *drained, int *err)
{
	ssize_t n;

	if (o) {
		struct xbuf *a = d->xa ? d->xa : (d->xa = xbuf_get(xp));
		size_t room;

		if (!a) {
			*err = -ENOMEM;
			return -1;
		}
		if (a->raw_off) { /* the incomplete tail to the front: at most one chunk */
			memmove(a->data, a->data + a->raw_off, a->raw_len);
			a->raw_off = 0;
		}
		room = XBUF_DATA - a->raw_len;
		if (!room) { /* a transform that cannot use a full buffer: malformed input */
			*err = -EPROTO;
			return -1;
		}
		n = recv(src, a->data + a->raw_len, room, MSG_DONTWAIT);
		if (n > 0) {
			a->raw_len += (uint32_t)n;
			*drained = (size_t)n < room;
			if ((*err = open_held(o, s, ctx, a)) < 0)
				return -1;
		}
	} else {
		struct xbuf *b = d->xb ? d->xb : (d->xb = xbuf_get(xp));
		struct iovec slot[8];
		struct msghdr mh = {.msg_iov = slot};
		size_t room = 0;

		if (!b) {
			*err = -ENOMEM;
			return -1;
		}
		mh.msg_iovlen = (size_t)s->ops->seal_slots(s, b->data, XBUF_DATA, slot, 8);
		for (size_t i = 0; i < mh.msg_iovlen; i++)
			room += slot[i].iov_len;
		n = recvmsg(src, &mh, MSG_DONTWAIT);
		if (n > 0) {
			*drained = (size_t)n < room;
			if ((*err = seal_into(s, ctx, b, (size_t)n)) < 0)
				return -1;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		*err = -errno;
		return -1;
	}
	return n < 0 ? -2 : n; /* -2: nothing to read now */
}

enum pump_next xform_pump(struct buf_pool *xp, struct pump_dir *d, int src, int dst,
                          struct xform *o, struct xform *s, bool last, size_t budget,
                          const struct xform_ctx *ctx, int *err)
{
	size_t moved = 0;
	bool drained = false;
	int ret;

	for (;;) {
		ret = flush(d, dst, s != NULL, &moved);
		if (ret > 0) {
			d->held = pending(d, s != NULL);
			return PUMP_WAIT_DST; /* the bytes stay; nothing more is read meanwhile */
		}
		if (ret < 0) {
			*err = ret;
			d->wr_err = true;
			return PUMP_ERROR;
		}
		/* Everything made so far is out: make more from what is held. */
		if (s && d->xa && d->xa->out_i < d->xa->out_n) {
			if (!d->xb && !(d->xb = xbuf_get(xp))) {
				*err = -ENOMEM;
				return PUMP_ERROR;
			}
			ret = stage(s, ctx, d->xa, d->xb);
		} else if (o && d->xa && d->xa->raw_fresh) {
			ret = open_held(o, s, ctx, d->xa);
		} else if (s && (d->flush || d->eof) && s->ops->seal_owes(s)) {
			/* The peer must hear from us: a request header without payload. */
			if (!d->xb && !(d->xb = xbuf_get(xp))) {
				*err = -ENOMEM;
				return PUMP_ERROR;
			}
			ret = seal_into(s, ctx, d->xb, 0);
		} else if (d->eof || drained || moved >= budget) {
			break;
		} else {
			ssize_t n = read_src(xp, d, src, o, s, ctx, &drained, err);

			if (n == -2)
				break;
			if (n < 0) {
				d->held = pending(d, s != NULL);
				return PUMP_ERROR;
			}
			if (n == 0)
				d->eof = true;
			continue;
		}
		if (ret < 0) {
			*err = ret;
			d->held = pending(d, s != NULL);
			return PUMP_ERROR;
		}
	}
	d->flush = false;
	d->held = 0;
	if (d->eof && o && (!xa_empty(d->xa) || !o->ops->open_clean(o))) {
		*err = -EPROTO; /* the stream ended inside a chunk: bytes were lost */
		return PUMP_ERROR;
	}
	/* Empty buffers go back, so an idle direction holds nothing. */
	if (xa_empty(d->xa))
		xbuf_put(xp, &d->xa, false);
	if (d->xb && !d->xb->w_len)
		xbuf_put(xp, &d->xb, false);
	if (d->eof)
		return pump_finish(d, dst, last, err);
	return PUMP_WAIT_SRC;
}

int xform_seed(struct buf_pool *xp, struct pump_dir *d, const uint8_t *plain, size_t n_plain,
               const uint8_t *raw, size_t n_raw)
{
	struct xbuf *a;

	if (!n_plain && !n_raw)
		return 0;
	if (n_plain + n_raw > XBUF_DATA)
		return -ENOBUFS;
	a = d->xa ? d->xa : (d->xa = xbuf_get(xp));
	if (!a)
		return -ENOMEM;
	if (n_plain)
		memcpy(a->data, plain, n_plain);
	if (n_raw)
		memcpy(a->data + n_plain, raw, n_raw);
	a->out_i = 0;
	a->out_n = n_plain ? 1 : 0;
	a->out[0].iov_base = a->data;
	a->out[0].iov_len = n_plain;
	a->raw_off = (uint32_t)n_plain;
	a->raw_len = (uint32_t)n_raw;
	a->raw_fresh = n_raw > 0;
	return 0;
}
