/* SPDX-License-Identifier: MIT */
/* HTTP proxy forwarding: one request and its response over a connection's legs, then the next request. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access_log.h"
#include "conn_internal.h"
#include "http_forward.h"
#include "log.h"
#include "splice.h"
#include "user_acct.h"

/*
 * An absolute-form request ("GET http://host/path HTTP/1.1") on an http or
 * mixed inbound is routed and connected like a CONNECT; then, instead of a
 * tunnel, this file runs one exchange on the two legs:
 *
 *   FWD_REQ        the rewritten head (http_fwd_rewrite(): origin-form, no
 *                  hop-by-hop fields, "Connection: close") and the request
 *                  body go to the origin: exactly Content-Length octets, or
 *                  a chunked body up to its last chunk and trailers (peeked,
 *                  then read, so no octet of the next request is taken);
 *   FWD_RESP_HEAD  the origin's response head is read and rewritten for the
 *                  client (interim 1xx heads are passed on as they come);
 *   FWD_RESP_BODY  the rest goes to the client with the splice pump, until
 *                  the origin closes: it was asked to, so its close is the
 *                  end of the response, and the body is never parsed.
 *
 * Then, if the client may send another request (it did not ask to close,
 * and the response did not run to the origin's close), the outbound leg is
 * closed and the connection is a handshake again: the next request is read,
 * routed on its own, and may go anywhere. Its first octets, if the client
 * sent them already, were kept (`left`). Else the client's connection is
 * closed after the response.
 */

enum fwd_phase { FWD_REQ = 1, FWD_RESP_HEAD, FWD_RESP_OUT, FWD_RESP_BODY };

enum { FWD_BUF = 32 << 10 };

struct conn_fwd {
	enum fwd_phase phase;
	struct http_fwd_req req;
	uint64_t body_left; /* Content-Length octets still to come from the client */
	bool chunked, body_done;
	struct http_chunked ch;
	uint8_t *obuf; /* to the origin: olen octets, ooff of them sent */
	size_t olen, ooff;
	uint8_t *rbuf; /* from the origin: the response head being read */
	size_t rlen;
	struct http_resp resp;
	uint8_t *cbuf; /* to the client: the rewritten head and the body octets behind it */
	size_t clen, coff, ccap;
	bool keep_alive; /* the client's connection outlives this exchange */
	bool answered;   /* a response head went to the client */
	uint8_t *left;   /* the client's octets past this request (its next one) */
	size_t left_len;
};

void conn_fwd_free(struct conn *c)
{
	struct conn_fwd *f = c->fwd;

	if (!f)
		return;
	free(f->obuf);
	free(f->rbuf);
	free(f->cbuf);
	free(f->left);
	free(f);
	c->fwd = NULL;
}

static void wait_for(struct conn *c, int fd, unsigned mask)
{
	conn_arm_poll(c, OPS_DIR0, OP_DIR0_POLL, fd, mask);
}

/* Tell the client the origin failed (if nothing went to it yet) and close. */
static void origin_failed(struct conn *c, const char *why)
{
	static const char resp_502[] =
	        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	struct conn_fwd *f = c->fwd;

	log_debug_rl("inbound %s: forwarding: %s", conn_inbound(c)->name, why);
	if (!f->answered)
		(void)!send(c->leg[LEG_IN].fd, resp_502, sizeof(resp_502) - 1,
		            MSG_NOSIGNAL | MSG_DONTWAIT);
	alog_result(c, "origin-failed");
	conn_worker(c)->stats.resets++;
	conn_close(c, f->answered); /* a response cut short must not look complete */
}

static void client_failed(struct conn *c, const char *why)
{
	log_debug_rl("inbound %s: forwarding: %s", conn_inbound(c)->name, why);
	alog_result(c, "client-failed");
	conn_worker(c)->stats.resets++;
	conn_close(c, true);
}

/*
 * Send buf[*off, len) towards direction d's destination (0: the origin, 1:
 * the client), counting what went. 1: some went, or nothing was left; 0: a
 * poll is armed; -1: the peer is gone.
 */
static int send_rest(struct conn *c, int d, const uint8_t *buf, size_t *off, size_t len)
{
	struct worker *w = conn_worker(c);
	int fd = c->leg[!d].fd;
	ssize_t n;

	if (*off >= len)
		return 1;
	n = send(fd, buf + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		wait_for(c, fd, POLLOUT);
		return 0;
	}
	if (n <= 0)
		return -1;
	*off += (size_t)n;
	c->dir[d].bytes += (uint64_t)n;
	conn_count(c, d, (uint64_t)n, (uint64_t)n);
	loop_timer_touch(&w->loop, &w->idle_tq, &c->timer);
	return 1;
}

/* Take body octets from d[0, n) into obuf; returns how many were body. */
static size_t take_body(struct conn_fwd *f, const uint8_t *d, size_t n)
{
	size_t k;

	if (f->chunked) {
		k = http_chunked_feed(&f->ch, d, n);
		if (f->ch.st == CH_DONE)
			f->body_done = true;
	} else {
		k = n < f->body_left ? n : (size_t)f->body_left;
		f->body_left -= k;
		if (!f->body_left)
			f->body_done = true;
	}
	memcpy(f->obuf + f->olen, d, k);
	f->olen += k;
	return k;
}

/*
 * Read the next body octets from the client: a Content-Length body never
 * past its end; a chunked one peeked first, so only its own octets are read.
 * 1: some arrived; 0: wait; -1: failed (EOF, error, a malformed chunk).
 */
static int read_body(struct conn *c)
{
	struct conn_fwd *f = c->fwd;
	int fd = c->leg[LEG_IN].fd;
	size_t room = FWD_BUF - f->olen, want;
	ssize_t n;

	if (f->chunked) {
		uint8_t *tmp = f->obuf + f->olen;
		size_t k;

		n = recv(fd, tmp, room, MSG_PEEK | MSG_DONTWAIT);
		if (n <= 0)
			return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
		k = http_chunked_feed(&f->ch, tmp, (size_t)n);
		if (f->ch.st == CH_ERROR)
			return -1;
		if (f->ch.st == CH_DONE)
			f->body_done = true;
		n = recv(fd, tmp, k, MSG_DONTWAIT); /* the same octets, now taken */
		if (n != (ssize_t)k)
			return -1;
		f->olen += k;
		return 1;
	}
	want = room < f->body_left ? room : (size_t)f->body_left;
	n = recv(fd, f->obuf + f->olen, want, MSG_DONTWAIT);
	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	f->olen += (size_t)n;
	f->body_left -= (uint64_t)n;
	if (!f->body_left)
		f->body_done = true;
	return 1;
}

/*
 * A Content-Length body between two plain legs: client -> pipe -> origin
 * with splice(2), never more than the body's own octets. 1: moved some (or
 * the body is done); 0: armed a poll; -1: failed (dst: the origin's side);
 * -2: no pipe to be had (the caller copies instead).
 */
static int splice_body(struct conn *c, bool *dst)
{
	struct worker *w = conn_worker(c);
	struct conn_fwd *f = c->fwd;
	struct pump_dir *d = &c->dir[0];
	int cl = c->leg[LEG_IN].fd, org = c->leg[LEG_OUT].fd;
	ssize_t n;

	if (!d->held) {
		size_t want = f->body_left < w->pipes.pipe_size ? (size_t)f->body_left
		                                                : w->pipes.pipe_size;
		if (d->pipe[0] < 0 && pipe_pool_get(&w->pipes, d->pipe) < 0)
			return -2;
		n = splice(cl, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			wait_for(c, cl, POLLIN);
			return 0;
		}
		if (n <= 0) {
			*dst = false;
			return -1;
		}
		d->held = (uint32_t)n;
		f->body_left -= (uint64_t)n;
	}
	n = splice(d->pipe[0], NULL, org, NULL, d->held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		wait_for(c, org, POLLOUT);
		return 0;
	}
	if (n <= 0) {
		*dst = true;
		return -1;
	}
	d->held -= (uint32_t)n;
	d->bytes += (uint64_t)n;
	conn_count(c, 0, (uint64_t)n, 0);
	if (!d->held) {
		pipe_pool_put(&w->pipes, d->pipe, true);
		d->pipe[0] = d->pipe[1] = -1;
		if (!f->body_left)
			f->body_done = true;
	}
	return 1;
}

/* The response head is in rbuf: pass it on rewritten, with what followed it. */
static int answer(struct conn *c)
{
	struct conn_fwd *f = c->fwd;
	int r = http_resp_parse(f->rbuf, f->rlen, f->req.head, &f->resp);
	size_t rest, n;

	if (r <= 0)
		return r;
	if (!f->resp.interim)
		f->keep_alive = !f->req.client_close && !http_resp_close_delimited(&f->resp) &&
		                f->resp.status != 101;
	rest = f->rlen - f->resp.head_len;
	n = http_resp_rewrite(&f->resp, f->rbuf, f->resp.interim || f->keep_alive, f->cbuf,
	                      f->ccap);
	if (!n)
		return -1;
	/* An interim head goes alone, and the final one is read next; else the body follows. */
	if (!f->resp.interim) {
		memcpy(f->cbuf + n, f->rbuf + f->resp.head_len, rest);
		n += rest;
		f->rlen = 0;
	} else {
		memmove(f->rbuf, f->rbuf + f->resp.head_len, rest);
		f->rlen = rest;
	}
	f->clen = n;
	f->coff = 0;
	f->answered = true;
	return 1;
}

/* The exchange is over and the client may go on: back to reading a request. */
static void next_request(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_fwd *f = c->fwd;
	uint8_t *left = f->left;
	size_t left_len = f->left_len;

	f->left = NULL;
	if (c->user && c->user_open)
		user_acct_bytes(c->user, c->dir[0].bytes, c->dir[1].bytes);
	alog_end(c); /* one line per request */
	alog_begin(c);
	close(c->leg[LEG_OUT].fd);
	c->leg[LEG_OUT] = (struct leg){.fd = -1, .spliceable = false};
	splice_dir_release(&w->pipes, &w->bufs, &c->dir[0]);
	splice_dir_release(&w->pipes, &w->bufs, &c->dir[1]);
	pump_dir_init(&c->dir[0]);
	pump_dir_init(&c->dir[1]);
	conn_fwd_free(c);
	c->outbound = -1;
	if (c->orow) {
		c->orow->closed++;
		c->orow = NULL;
	}
	w->stats.completed++;
	conn_restart(c, left, left_len);
	free(left);
}

void conn_fwd_ready(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_fwd *f = c->fwd;
	int cl = c->leg[LEG_IN].fd, org = c->leg[LEG_OUT].fd;

	for (;;) {
		switch (f->phase) {
		case FWD_REQ: {
			if (f->ooff < f->olen) {
				int r = send_rest(c, 0, f->obuf, &f->ooff, f->olen);
				if (r < 0)
					origin_failed(c, "the request could not be sent");
				if (r <= 0)
					return;
				continue;
			}
			f->olen = f->ooff = 0;
			if (f->body_done) {
				/* Each buffer is held only in its phase: the request's goes, the response's come. */
				free(f->obuf);
				f->obuf = NULL;
				f->ccap = 2 * HTTP_RESP_HEAD_MAX + HTTP_FWD_EXTRA;
				f->rbuf = malloc(HTTP_RESP_HEAD_MAX);
				f->cbuf = malloc(f->ccap);
				if (!f->rbuf || !f->cbuf) {
					origin_failed(c, "no memory for the response head");
					return;
				}
				f->phase = FWD_RESP_HEAD;
				continue;
			}
			int r;
			if (c->spliced && !f->chunked) {
				bool dst = false;
				r = splice_body(c, &dst);
				if (r == 0)
					return;
				if (r == -1) {
					if (dst)
						origin_failed(c,
						              "the request body could not be sent");
					else
						client_failed(c, "the request body ended early");
					return;
				}
				if (r == 1)
					continue;
				/* -2: no pipe: copy this part */
			}
			r = read_body(c);
			if (r < 0) {
				client_failed(c, "the request body ended early or was malformed");
				return;
			}
			if (r == 0) {
				wait_for(c, cl, POLLIN);
				return;
			}
			continue;
		}
		case FWD_RESP_HEAD: {
			ssize_t n = recv(org, f->rbuf + f->rlen, HTTP_RESP_HEAD_MAX - f->rlen,
			                 MSG_DONTWAIT);
			int r;

			if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
				wait_for(c, org, POLLIN);
				return;
			}
			if (n <= 0) {
				origin_failed(c, "the origin closed before its response");
				return;
			}
			f->rlen += (size_t)n;
			loop_timer_touch(&w->loop, &w->idle_tq, &c->timer);
			r = answer(c);
			if (r < 0) {
				origin_failed(
				        c, "the origin's response head is malformed or too large");
				return;
			}
			if (r > 0)
				f->phase = FWD_RESP_OUT;
			continue;
		}
		case FWD_RESP_OUT: {
			if (f->coff < f->clen) {
				int r = send_rest(c, 1, f->cbuf, &f->coff, f->clen);
				if (r < 0)
					client_failed(c, "the client left during the response");
				if (r <= 0)
					return;
				continue;
			}
			if (f->resp.interim) { /* the final head is still to come */
				f->phase = FWD_RESP_HEAD;
				if (f->rlen && answer(c) > 0)
					f->phase = FWD_RESP_OUT;
				continue;
			}
			/* The body is spliced: the head's buffers can go (a long download holds none). */
			free(f->rbuf);
			free(f->cbuf);
			f->rbuf = f->cbuf = NULL;
			f->phase = FWD_RESP_BODY;
			continue;
		}
		case FWD_RESP_BODY: {
			uint64_t before = c->dir[1].bytes, copied = c->dir[1].copied;
			int err = 0;
			/* last: at the origin's EOF the client's side is not shut down */
			enum pump_next next = c->spliced
			                              ? splice_pump(&w->pipes, &w->bufs, &c->dir[1],
			                                            org, cl, true, &err)
			                              : buf_pump(&w->bufs, &c->dir[1], org, cl,
			                                         true, PUMP_BUDGET, &err);

			conn_count(c, 1, c->dir[1].bytes - before, c->dir[1].copied - copied);
			if (c->dir[1].bytes != before)
				loop_timer_touch(&w->loop, &w->idle_tq, &c->timer);
			switch (next) {
			case PUMP_WAIT_SRC:
				wait_for(c, org, POLLIN);
				return;
			case PUMP_WAIT_DST:
				wait_for(c, cl, POLLOUT);
				return;
			case PUMP_ERROR:
				if (c->dir[1].wr_err)
					client_failed(c, "the client left during the response");
				else
					origin_failed(c, "the origin reset during the response");
				return;
			case PUMP_DONE:
				if (f->keep_alive) {
					next_request(c);
					return;
				}
				w->stats.completed++;
				conn_close(c, false);
				return;
			}
			return;
		}
		}
	}
}

bool conn_fwd_start(struct conn *c, const struct http_fwd_req *req)
{
	static const char resp_100[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct conn_hs *hs = c->hs;
	struct conn_fwd *f = calloc(1, sizeof(*f));
	const struct outbound *ob;
	struct http_fwd_via via;
	size_t n, used;

	if (!f)
		return false;
	c->fwd = f;
	f->req = *req;
	f->obuf = malloc(FWD_BUF > req->head_len + HTTP_FWD_EXTRA ? FWD_BUF
	                                                          : req->head_len + HTTP_FWD_EXTRA);
	if (!f->obuf)
		return false;
	/* An http upstream gets the request as a proxy does (absolute-form, its credentials). */
	ob = &conn_cfg(c)->outbounds[c->outbound];
	via = (struct http_fwd_via){
	        .proxy = ob->type == OUTBOUND_HTTP, .user = ob->username, .pass = ob->password};
	n = http_fwd_rewrite(req, hs->buf, &via, f->obuf, req->head_len + HTTP_FWD_EXTRA);
	if (!n)
		return false;
	f->olen = n;
	f->chunked = req->chunked;
	http_chunked_init(&f->ch);
	f->body_left = req->has_length ? req->length : 0;
	f->body_done = !req->chunked && !f->body_left;
	/* What the client sent behind the head: body first, then the next request. */
	used = req->head_len;
	if (!f->body_done && used < hs->len) {
		size_t room = FWD_BUF - f->olen, avail = hs->len - used;
		used += take_body(f, hs->buf + used, avail < room ? avail : room);
		if (f->chunked && f->ch.st == CH_ERROR) {
			alog_result(c, "bad-request");
			return false;
		}
	}
	if (f->body_done && used < hs->len) {
		f->left_len = hs->len - used;
		f->left = malloc(f->left_len);
		if (!f->left)
			return false;
		memcpy(f->left, hs->buf + used, f->left_len);
	}
	if (req->expect_continue && !f->body_done && req->minor > 0)
		(void)!send(c->leg[LEG_IN].fd, resp_100, sizeof(resp_100) - 1,
		            MSG_NOSIGNAL | MSG_DONTWAIT);
	f->phase = FWD_REQ;
	return true;
}
