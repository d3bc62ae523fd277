/* SPDX-License-Identifier: MIT */
/* xfer: TCP byte mover for the integration tests (listen or connect, optionally via SOCKS5 or HTTP CONNECT). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "toolkit.h"

/* Exit statuses scripts assert on; SOCKS5 replies map to EX_REP_BASE + REP. */
enum {
	EX_OK = 0,
	EX_USAGE = 1,
	EX_CONNECT = 2,   /* cannot reach the proxy or target */
	EX_RESET = 3,     /* data phase ended with ECONNRESET */
	EX_IO = 4,        /* other data-phase error */
	EX_PROTO = 5,     /* handshake reply short, malformed or timed out */
	EX_REP_BASE = 10, /* 11..18: SOCKS5 REP 1..8; 19: any other non-zero REP */
	EX_NOMETHOD = 20, /* SOCKS5 method 0xff */
	EX_AUTH = 21,     /* RFC 1929 status != 0 */
	EX_HTTP = 30,     /* HTTP CONNECT status != 200 */
};

enum {
	CHUNK = 1 << 20, /* per-call transfer size: big enough that syscalls do not dominate */
	HDR_MAX = 8192,  /* longest HTTP response header we accept */
	RAW_MAX = 4096,  /* bytes of a raw reply we print */
};

struct opts {
	bool listen;
	const char *host;
	const char *port;
	bool once;
	bool echo;
	const char *port_file;
	long long reset_after; /* -1: never; else reset once this many bytes arrived */
	long long expect;   /* -1: read to EOF; else the socket's stream is done after this many */
	bool no_half_close; /* stdin EOF does not shutdown(SHUT_WR); socket EOF ends us */
	bool exit_on_eof;   /* socket EOF ends us even if stdin still has data */
	bool after_eof;     /* send stdin only once the socket read EOF (strict half-close) */
	const char *socks5;
	const char *http;
	const char *user;
	const char *pass;
	const char *raw_hex;
	int timeout;     /* seconds for connect and handshake (and raw replies) */
	int raw_idle_ms; /* raw: stop once a reply started and then stayed quiet this long */
};

struct relay {
	int fd;
	const struct opts *o;
	long long sent;
	int up_err; /* errno that ended stdin→socket, 0 on clean EOF */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: xfer listen ADDR PORT [--once] [--echo] [--port-file F] [common]\n"
	        "       xfer connect [--socks5 H:P | --http H:P] [--user U --pass P]\n"
	        "                    [--raw-handshake HEX] HOST PORT [common]\n"
	        "common: [--reset-after N] [--no-half-close] [--exit-on-eof] [--after-eof]\n"
	        "        [--expect N] [--timeout S]\n"
	        "\n"
	        "Copies stdin to the socket and the socket to stdout; stdin EOF shuts down the\n"
	        "writing side (unless --no-half-close); ends when both directions are done.\n"
	        "  --once            listen: serve one connection, then exit with its status\n"
	        "  --echo            listen: send received bytes back instead of using stdio\n"
	        "  --port-file F     listen: write the bound port to F once listening (PORT 0 ok)\n"
	        "  --reset-after N   after N bytes received, close with SO_LINGER 0 (RST)\n"
	        "  --exit-on-eof     end as soon as the socket reads EOF\n"
	        "  --after-eof       start sending stdin only after the socket read EOF\n"
	        "  --expect N        the socket's stream ends after N bytes (no EOF needed); with\n"
	        "                    --after-eof --no-half-close, then send stdin and wait for\n"
	        "                    the peer to close (for peers without half-close)\n"
	        "  --socks5 H:P      connect through a SOCKS5 proxy (IPv4/IPv6/domain target)\n"
	        "  --http H:P        connect through an HTTP CONNECT proxy\n"
	        "  --user/--pass     credentials (RFC 1929 or Basic Proxy-Authorization)\n"
	        "  --raw-handshake X send hex bytes X to HOST PORT, print the reply as RECV=hex\n"
	        "                    on stdout and END=eof|reset|timeout|idle on stderr\n"
	        "  --raw-idle MS     raw: stop MS ms after the last reply bytes (default: wait\n"
	        "                    for EOF or --timeout)\n"
	        "  --timeout S       connect/handshake timeout in seconds (default 15)\n"
	        "stderr carries REP=0xNN, BND=addr:port, AUTH=0xNN, METHOD=0xNN, HTTP=NNN,\n"
	        "PEER=addr:port, LISTEN=port, END=eof|reset|error:..., SENT=n RECV=n.\n"
	        "exit: 0 ok, 1 usage, 2 connect failed, 3 reset, 4 I/O error, 5 bad handshake\n"
	        "reply, 10+REP SOCKS5 failure, 20 no method, 21 auth failed, 30 HTTP non-200.\n");
}

static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	}
}

static void strip_brackets(const char *in, char *out, size_t len)
{
	size_t n = strlen(in);

	if (n >= 2 && in[0] == '[' && in[n - 1] == ']') {
		snprintf(out, len, "%.*s", (int)(n - 2), in + 1);
		return;
	}
	snprintf(out, len, "%s", in);
}

/* Returns a connected socket or -errno (timeout: -ETIMEDOUT). */
static int tcp_connect(const char *host_in, const char *port, int secs)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	char host[256];
	int fd = -1, err = -EHOSTUNREACH, gai;

	strip_brackets(host_in, host, sizeof(host));
	gai = getaddrinfo(host, port, &hints, &res);
	if (gai) {
		fprintf(stderr, "xfer: resolve %s: %s\n", host, gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		/* SO_SNDTIMEO bounds a blocking connect(); it then fails with EINPROGRESS. */
		tk_set_timeouts(fd, secs);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

static int proto_fail(const char *what, int err)
{
	fprintf(stderr, "xfer: %s: %s\n", what, err == -EPIPE ? "EOF" : strerror(-err));
	return EX_PROTO;
}

static int socks5_handshake(int fd, const struct opts *o)
{
	unsigned char buf[600], *p = buf;
	char host[256];
	struct tk_endpoint ep;
	int err, alen;
	unsigned port = (unsigned)atoi(o->port);

	/* RFC 1928 §3: offer only user/pass when we hold credentials so the server must ask. */
	unsigned char greet[3] = {5, 1, o->user ? 2 : 0};
	if ((err = tk_write_full(fd, greet, sizeof(greet))) || (err = tk_read_full(fd, buf, 2)))
		return proto_fail("socks5 method reply", err);
	fprintf(stderr, "METHOD=0x%02x\n", buf[1]);
	if (buf[0] != 5 || buf[1] == 0xff)
		return EX_NOMETHOD;
	if (buf[1] == 2) {
		/* RFC 1929 §2: VER=1 ULEN UNAME PLEN PASSWD */
		size_t ul = o->user ? strlen(o->user) : 0, pl = o->pass ? strlen(o->pass) : 0;
		if (ul > 255 || pl > 255)
			return EX_USAGE;
		*p++ = 1;
		*p++ = (unsigned char)ul;
		memcpy(p, o->user ? o->user : "", ul);
		p += ul;
		*p++ = (unsigned char)pl;
		memcpy(p, o->pass ? o->pass : "", pl);
		p += pl;
		if ((err = tk_write_full(fd, buf, (size_t)(p - buf))) ||
		    (err = tk_read_full(fd, buf, 2)))
			return proto_fail("socks5 auth reply", err);
		fprintf(stderr, "AUTH=0x%02x\n", buf[1]);
		if (buf[1] != 0)
			return EX_AUTH;
	} else if (buf[1] != 0) {
		return EX_NOMETHOD;
	}

	/* RFC 1928 §4: VER CMD=CONNECT RSV ATYP DST.ADDR DST.PORT */
	strip_brackets(o->host, host, sizeof(host));
	if (tk_numeric_endpoint(host, (int)port, &ep) == 0) {
		p = buf + tk_socks5_request(buf, &ep.ss);
	} else {
		size_t hl = strlen(host);
		if (hl > 255)
			return EX_USAGE;
		p = buf;
		*p++ = 5;
		*p++ = 1;
		*p++ = 0;
		*p++ = 3;
		*p++ = (unsigned char)hl;
		memcpy(p, host, hl);
		p += hl;
		*p++ = (unsigned char)(port >> 8);
		*p++ = (unsigned char)port;
	}
	if ((err = tk_write_full(fd, buf, (size_t)(p - buf))))
		return proto_fail("socks5 request", err);

	/* Reply: VER REP RSV ATYP BND.ADDR BND.PORT; report REP before reading the rest. */
	if ((err = tk_read_full(fd, buf, 4)))
		return proto_fail("socks5 reply", err);
	fprintf(stderr, "REP=0x%02x\n", buf[1]);
	if (buf[0] != 5)
		return proto_fail("socks5 reply version", -EPROTO);
	if (buf[3] == 1)
		alen = 4;
	else if (buf[3] == 4)
		alen = 16;
	else if (buf[3] == 3)
		alen = -1;
	else
		return buf[1] ? EX_REP_BASE + (buf[1] <= 8 ? buf[1] : 9)
		              : proto_fail("socks5 reply atyp", -EPROTO);
	int rep = buf[1], atyp = buf[3];
	if (alen < 0) {
		if ((err = tk_read_full(fd, buf, 1)))
			goto tail;
		alen = buf[0];
	}
	if ((err = tk_read_full(fd, buf, (size_t)alen + 2)))
		goto tail;
	if (atyp == 3) {
		fprintf(stderr, "BND=%.*s:%u\n", alen, buf, buf[alen] << 8 | buf[alen + 1]);
	} else {
		char ip[INET6_ADDRSTRLEN];
		inet_ntop(atyp == 1 ? AF_INET : AF_INET6, buf, ip, sizeof(ip));
		fprintf(stderr, atyp == 1 ? "BND=%s:%u\n" : "BND=[%s]:%u\n", ip,
		        buf[alen] << 8 | buf[alen + 1]);
	}
tail:
	if (rep)
		return EX_REP_BASE + (rep <= 8 ? rep : 9);
	if (err)
		return proto_fail("socks5 reply address", err);
	return EX_OK;
}

static void base64(const unsigned char *in, size_t len, char *out)
{
	static const char tab[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = tab[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = '\0';
}

static int http_handshake(int fd, const struct opts *o)
{
	char req[2048], auth[1100] = "", cred[520], b64[700], hdr[HDR_MAX];
	char host[300];
	size_t n = 0;
	int err, status = 0, len;

	char bare[256];

	/* An IPv6 literal is written in brackets in the authority form (RFC 9110 §9.3.6). */
	strip_brackets(o->host, bare, sizeof(bare));
	snprintf(host, sizeof(host), strchr(bare, ':') ? "[%s]" : "%s", bare);
	if (o->user) {
		len = snprintf(cred, sizeof(cred), "%s:%s", o->user, o->pass ? o->pass : "");
		if (len < 0 || (size_t)len >= sizeof(cred))
			return EX_USAGE;
		base64((unsigned char *)cred, (size_t)len, b64);
		snprintf(auth, sizeof(auth), "Proxy-Authorization: Basic %s\r\n", b64);
	}
	len = snprintf(req, sizeof(req), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n%s\r\n", host,
	               o->port, host, o->port, auth);
	if ((err = tk_write_full(fd, req, (size_t)len)))
		return proto_fail("http request", err);
	/* Byte by byte so no tunnel data after the header is swallowed. */
	while (n < sizeof(hdr) - 1) {
		if ((err = tk_read_full(fd, hdr + n, 1)))
			break;
		n++;
		if (n >= 4 && !memcmp(hdr + n - 4, "\r\n\r\n", 4))
			break;
	}
	hdr[n] = '\0';
	if (sscanf(hdr, "HTTP/1.%*d %d", &status) != 1)
		return proto_fail("http response", err ? err : -EPROTO);
	fprintf(stderr, "HTTP=%d\n", status);
	if (status != 200)
		return EX_HTTP;
	if (err)
		return proto_fail("http response header", err);
	return EX_OK;
}

/* Send raw bytes, then print whatever comes back until EOF, reset or timeout. */
static int raw_exchange(int fd, const struct opts *o)
{
	unsigned char out[RAW_MAX], in[RAW_MAX];
	size_t n = 0, got = 0;
	const char *h = o->raw_hex, *end = "timeout";
	struct timespec t0, t;
	int err;

	for (; h[0]; h += 2) {
		while (*h == ' ' || *h == ':')
			h++;
		if (!h[0])
			break;
		if (tk_hexval(h[0]) < 0 || tk_hexval(h[1]) < 0 || n >= sizeof(out)) {
			fprintf(stderr, "xfer: bad --raw-handshake hex\n");
			return EX_USAGE;
		}
		out[n++] = (unsigned char)(tk_hexval(h[0]) << 4 | tk_hexval(h[1]));
	}
	if ((err = tk_write_full(fd, out, n))) {
		fprintf(stderr, "xfer: raw send: %s\n", strerror(-err));
		end = err == -ECONNRESET || err == -EPIPE ? "reset" : "error";
		goto done;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < sizeof(in)) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long ms;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = o->timeout * 1000L -
		     ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (got && o->raw_idle_ms && ms > o->raw_idle_ms)
			ms = o->raw_idle_ms;
		if (ms <= 0 || poll(&pfd, 1, (int)ms) == 0) {
			if (ms == o->raw_idle_ms)
				end = "idle";
			break;
		}
		r = read(fd, in + got, sizeof(in) - got);
		if (r == 0) {
			end = "eof";
			break;
		}
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			end = errno == ECONNRESET ? "reset" : "error";
			break;
		}
		got += (size_t)r;
	}
done:
	printf("RECV=");
	for (size_t i = 0; i < got; i++)
		printf("%02x", in[i]);
	printf("\n");
	fflush(stdout);
	fprintf(stderr, "END=%s\n", end);
	return EX_OK;
}

/* Abort the connection with RST: SO_LINGER 0, then exit so the last reference is dropped
 * even while the other thread sits in a blocking call on the socket. */
static void reset_and_exit(int fd, long long sent, long long recvd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	fprintf(stderr, "xfer: SENT=%lld RECV=%lld END=reset-sent\n", sent, recvd);
	close(fd);
	_exit(EX_OK);
}

static bool is_kind(int fd, mode_t kind)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

/* stdin → socket; sendfile for files, splice for pipes, read/write otherwise. */
static void *pump_up(void *arg)
{
	struct relay *r = arg;
	int mode = is_kind(0, S_IFREG) ? 1 : is_kind(0, S_IFIFO) ? 2 : 0;
	char *buf = NULL;
	ssize_t n;

	for (;;) {
		if (mode == 1)
			n = sendfile(r->fd, 0, NULL, CHUNK);
		else if (mode == 2)
			n = splice(0, NULL, r->fd, NULL, CHUNK, SPLICE_F_MOVE | SPLICE_F_MORE);
		else {
			if (!buf && !(buf = malloc(CHUNK))) {
				r->up_err = ENOMEM;
				break;
			}
			n = read(0, buf, CHUNK);
			if (n > 0) {
				int err = tk_write_full(r->fd, buf, (size_t)n);
				if (err) {
					r->up_err = -err;
					break;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS) && mode && r->sent == 0) {
			mode = 0; /* e.g. stdin is a file type sendfile cannot read */
			continue;
		}
		if (n < 0) {
			r->up_err = errno;
			break;
		}
		if (n == 0)
			break;
		r->sent += n;
	}
	free(buf);
	if (!r->up_err && !r->o->no_half_close)
		shutdown(r->fd, SHUT_WR);
	return NULL;
}

/* socket → stdout; returns 0 on EOF or the errno that ended it. */
static int pump_down(struct relay *r, long long *recvd)
{
	bool pipe_out = is_kind(1, S_IFIFO);
	char *buf = NULL;
	int err = 0;

	for (;;) {
		size_t want = CHUNK;
		ssize_t n;

		if (r->o->reset_after >= 0) {
			if (*recvd >= r->o->reset_after)
				reset_and_exit(r->fd, r->sent, *recvd);
			if ((long long)want > r->o->reset_after - *recvd)
				want = (size_t)(r->o->reset_after - *recvd);
		}
		if (r->o->expect >= 0) {
			if (*recvd >= r->o->expect)
				break;
			if ((long long)want > r->o->expect - *recvd)
				want = (size_t)(r->o->expect - *recvd);
		}
		if (pipe_out) {
			n = splice(r->fd, NULL, 1, NULL, want, SPLICE_F_MOVE);
			if (n < 0 && errno == EINVAL && *recvd == 0) {
				pipe_out = false;
				continue;
			}
		} else {
			if (!buf && !(buf = malloc(CHUNK))) {
				err = ENOMEM;
				break;
			}
			n = read(r->fd, buf, want);
			if (n > 0 && (err = -tk_write_full(1, buf, (size_t)n)))
				break;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		*recvd += n;
	}
	free(buf);
	return err;
}

static int relay_stdio(int fd, const struct opts *o)
{
	struct relay r = {.fd = fd, .o = o};
	pthread_t up;
	long long recvd = 0;
	int err, rc = EX_OK;

	/* The data phase has no deadline: the script's own timeout bounds it. */
	tk_set_timeouts(fd, 0);
	if (o->reset_after == 0)
		reset_and_exit(fd, 0, 0);
	if (o->after_eof) {
		/* Sequential: the peer's whole stream first, then ours; proves the peer's
		 * half-close did not tear down our direction. */
		err = pump_down(&r, &recvd);
		if (!err)
			pump_up(&r);
		if (!err && o->expect >= 0 && o->no_half_close) {
			/* The peer closes once it has everything: then nothing is lost. */
			char c;

			while (read(fd, &c, 1) > 0)
				;
		}
		goto report;
	}
	if (pthread_create(&up, NULL, pump_up, &r)) {
		fprintf(stderr, "xfer: pthread_create failed\n");
		return EX_IO;
	}
	err = pump_down(&r, &recvd);
report:
	if (err) {
		/* The socket is dead; the stdin side may block forever, so do not join it. */
		fprintf(stderr, "xfer: SENT=%lld RECV=%lld END=%s%s\n", r.sent, recvd,
		        err == ECONNRESET ? "reset" : "error:",
		        err == ECONNRESET ? "" : strerror(err));
		return err == ECONNRESET ? EX_RESET : EX_IO;
	}
	if (!o->after_eof && (o->exit_on_eof || o->no_half_close)) {
		fprintf(stderr, "xfer: SENT=%lld RECV=%lld END=eof\n", r.sent, recvd);
		return EX_OK;
	}
	if (!o->after_eof)
		pthread_join(up, NULL);
	if (r.up_err) {
		fprintf(stderr, "xfer: send: %s\n", strerror(r.up_err));
		rc = r.up_err == ECONNRESET || r.up_err == EPIPE ? EX_RESET : EX_IO;
	}
	fprintf(stderr, "xfer: SENT=%lld RECV=%lld END=%s\n", r.sent, recvd,
	        rc == EX_RESET ? "reset"
	        : rc           ? "error"
	                       : "eof");
	return rc;
}

static int echo(int fd, const struct opts *o)
{
	char *buf = malloc(CHUNK);
	long long recvd = 0;
	int rc = EX_OK;

	if (!buf)
		return EX_IO;
	for (;;) {
		size_t want = CHUNK;
		ssize_t n;

		if (o->reset_after >= 0) {
			if (recvd >= o->reset_after)
				reset_and_exit(fd, recvd, recvd);
			if ((long long)want > o->reset_after - recvd)
				want = (size_t)(o->reset_after - recvd);
		}
		n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n == 0 ? EX_OK : errno == ECONNRESET ? EX_RESET : EX_IO;
			break;
		}
		recvd += n;
		if (tk_write_full(fd, buf, (size_t)n)) {
			rc = EX_RESET;
			break;
		}
	}
	shutdown(fd, SHUT_WR);
	free(buf);
	fprintf(stderr, "xfer: SENT=%lld RECV=%lld END=%s\n", recvd, recvd,
	        rc == EX_OK ? "eof" : "reset");
	return rc;
}

static int serve(int fd, const struct opts *o)
{
	return o->echo ? echo(fd, o) : relay_stdio(fd, o);
}

static int write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *f;

	/* Write then rename, so a reader never sees a half-written file. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

static int do_listen(const struct opts *o)
{
	struct tk_endpoint ep;
	struct sockaddr_storage ss;
	socklen_t sl;
	char host[256], peer[80];
	int lfd, one = 1;

	strip_brackets(o->host, host, sizeof(host));
	if (tk_numeric_endpoint(host, (uint16_t)atoi(o->port), &ep)) {
		fprintf(stderr, "xfer: listen needs a numeric address, got %s\n", host);
		return EX_USAGE;
	}
	ss = ep.ss;
	sl = ep.len;
	struct sockaddr_in *s4 = (void *)&ss;
	struct sockaddr_in6 *s6 = (void *)&ss;
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return EX_IO;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, 64)) {
		fprintf(stderr, "xfer: bind/listen %s:%s: %s\n", host, o->port, strerror(errno));
		return EX_CONNECT;
	}
	sl = sizeof(ss);
	getsockname(lfd, (struct sockaddr *)&ss, &sl);
	unsigned port = ntohs(ss.ss_family == AF_INET6 ? s6->sin6_port : s4->sin_port);
	fprintf(stderr, "LISTEN=%u\n", port);
	if (o->port_file && write_port_file(o->port_file, port)) {
		fprintf(stderr, "xfer: cannot write %s\n", o->port_file);
		return EX_USAGE;
	}
	if (!o->once)
		signal(SIGCHLD, SIG_IGN); /* children are reaped automatically */
	for (;;) {
		struct sockaddr_storage pa;
		socklen_t pl = sizeof(pa);
		int fd = accept4(lfd, (struct sockaddr *)&pa, &pl, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "xfer: accept: %s\n", strerror(errno));
			return EX_IO;
		}
		addr_str((struct sockaddr *)&pa, peer, sizeof(peer));
		fprintf(stderr, "PEER=%s\n", peer);
		if (o->once) {
			close(lfd);
			return serve(fd, o);
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			_exit(serve(fd, o));
		}
		close(fd);
	}
}

static int do_connect(const struct opts *o)
{
	char spec[300], *ph, *pp;
	const char *via = o->socks5 ? o->socks5 : o->http;
	int fd, rc;

	if (via) {
		snprintf(spec, sizeof(spec), "%s", via);
		if (tk_split_hostport(spec, &ph, &pp)) {
			fprintf(stderr, "xfer: bad proxy address %s\n", via);
			return EX_USAGE;
		}
		fd = tcp_connect(ph, pp, o->timeout);
	} else {
		fd = tcp_connect(o->host, o->port, o->timeout);
	}
	if (fd < 0) {
		fprintf(stderr, "xfer: connect: %s\nEND=connect-failed\n", strerror(-fd));
		return EX_CONNECT;
	}
	if (o->raw_hex)
		rc = raw_exchange(fd, o);
	else if (o->socks5)
		rc = socks5_handshake(fd, o);
	else if (o->http)
		rc = http_handshake(fd, o);
	else
		rc = EX_OK;
	if (rc == EX_OK && !o->raw_hex)
		rc = relay_stdio(fd, o);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	        {"once", no_argument, NULL, 'o'},
	        {"echo", no_argument, NULL, 'e'},
	        {"port-file", required_argument, NULL, 'f'},
	        {"reset-after", required_argument, NULL, 'r'},
	        {"no-half-close", no_argument, NULL, 'n'},
	        {"exit-on-eof", no_argument, NULL, 'x'},
	        {"after-eof", no_argument, NULL, 'a'},
	        {"expect", required_argument, NULL, 'E'},
	        {"socks5", required_argument, NULL, 's'},
	        {"http", required_argument, NULL, 'H'},
	        {"user", required_argument, NULL, 'u'},
	        {"pass", required_argument, NULL, 'p'},
	        {"raw-handshake", required_argument, NULL, 'R'},
	        {"timeout", required_argument, NULL, 't'},
	        {"raw-idle", required_argument, NULL, 'I'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct opts o = {.reset_after = -1, .expect = -1, .timeout = 15};
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.once = true;
			break;
		case 'e':
			o.echo = true;
			break;
		case 'f':
			o.port_file = optarg;
			break;
		case 'r':
			o.reset_after = atoll(optarg);
			break;
		case 'n':
			o.no_half_close = true;
			break;
		case 'x':
			o.exit_on_eof = true;
			break;
		case 'a':
			o.after_eof = true;
			break;
		case 'E':
			o.expect = atoll(optarg);
			break;
		case 's':
			o.socks5 = optarg;
			break;
		case 'H':
			o.http = optarg;
			break;
		case 'u':
			o.user = optarg;
			break;
		case 'p':
			o.pass = optarg;
			break;
		case 'R':
			o.raw_hex = optarg;
			break;
		case 't':
			o.timeout = atoi(optarg);
			break;
		case 'I':
			o.raw_idle_ms = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (argc - optind != 3 ||
	    (strcmp(argv[optind], "listen") && strcmp(argv[optind], "connect")) ||
	    (o.socks5 && o.http) || o.timeout <= 0) {
		usage(stderr);
		return EX_USAGE;
	}
	o.listen = !strcmp(argv[optind], "listen");
	o.host = argv[optind + 1];
	o.port = argv[optind + 2];
	/* A peer that vanished must show up as an error code, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return o.listen ? do_listen(&o) : do_connect(&o);
}
