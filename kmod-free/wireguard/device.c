/* SPDX-License-Identifier: MIT */
/* A userspace WireGuard interface: create, run (worker and control threads), stop, destroy. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "device_internal.h"
#include "log.h"
#include "stats.h"
#include "thread.h"

/*
 * The worker loop: drain the TUN queue and both sockets until all are idle,
 * then poll(). Why poll + read/recvmmsg/sendmsg and not io_uring: with the
 * offloads every system call already moves up to 64 KiB (a TSO read from the
 * TUN, a GSO send of up to 64 sealed datagrams, a GRO train from recvmmsg, a
 * coalesced TUN write), so the syscalls themselves are cheap next to the
 * copies and the network stack. Measured in the wg-bench topology at about
 * 4 Gbit/s (perf trace, both processes): ~70,000 syscalls/s in all, half of
 * them immediate EAGAINs, i.e. 1-2 % of the CPU the two processes use; the
 * copies in those calls are ~15 % and the crypto ~35 %. io_uring would save at
 * most that 1-2 % (its copies are the same; SQPOLL would burn a core this
 * 2-core machine does not have), so batching stays and io_uring does not.
 */
static void *worker_main(void *arg)
{
	struct wg_worker *w = arg;
	struct wg_device *d = w->dev;
	struct pollfd pfd[5] = {{.fd = w->tun_fd, .events = POLLIN},
	                        {.fd = w->udp4, .events = POLLIN},
	                        {.fd = w->udp6, .events = POLLIN},
	                        {.fd = d->stop_fd, .events = POLLIN},
	                        {.fd = w->wake_fd, .events = POLLIN}};

	while (!atomic_load(&d->stopping)) {
		/* A source that had nothing is not asked again until the next cycle (no EAGAIN storm). */
		bool tun_idle = false, u4_idle = w->udp4 < 0, u6_idle = w->udp6 < 0;
		int busy = 0, r;

		/* Drain what is ready before sleeping: poll only when every source is idle. */
		for (int round = 0; round < 8; round++) {
			int progress = 0;

			if (!tun_idle) {
				r = wg_dev_tx_round(w);
				if (r == 0) {
					progress = 1;
				} else if (r == -EAGAIN) {
					tun_idle = true;
				} else if (r != -EINTR) {
					/* The interface was deleted (`ip link del`, `spliced wg down`). */
					atomic_store(&d->stopping, true);
					wg_device_stop(d);
					break;
				}
			}
			if (!u4_idle) {
				if (wg_dev_rx_round(w, w->udp4) == 0)
					progress = 1;
				else
					u4_idle = true;
			}
			if (!u6_idle) {
				if (wg_dev_rx_round(w, w->udp6) == 0)
					progress = 1;
				else
					u6_idle = true;
			}
			if (!progress)
				break;
			busy = 1;
		}
		if (busy)
			continue;
		if (poll(pfd, 5, -1) < 0 && errno != EINTR)
			break;
		if (pfd[4].revents & POLLIN) {
			uint64_t x;

			/* The sockets were replaced: the next poll() waits on the new ones. */
			if (read(w->wake_fd, &x, sizeof(x)) < 0)
				continue;
		}
	}
	return NULL;
}

/*
 * The counters as the lib/stats.h group "wireguard NAME": the exit report,
 * SIGUSR1 and the metrics endpoint (spliced_wireguard_*{interface="NAME"})
 * read them from there. The names
 * are the ones `stats:` lines have always carried (tests/wg-lib.sh reads
 * them); the protocol drops come from the core (struct wg_stats), the rest
 * from the device (struct dev_stats).
 */
static const struct stats_desc stats_desc[] = {
        {"rx_data", "data messages decrypted and written to the TUN", STATS_COUNTER, NULL},
        {"tx_data", "data messages sealed and sent by the workers", STATS_COUNTER, NULL},
        {"rx_handshakes", "handshake messages accepted", STATS_COUNTER, NULL},
        {"invalid_message", "datagrams of a bad type or length", STATS_COUNTER, NULL},
        {"bad_mac1", "handshakes with a wrong MAC1", STATS_COUNTER, NULL},
        {"cookie_sent", "handshakes answered with a cookie reply (under load)", STATS_COUNTER,
         NULL},
        {"ratelimited", "handshakes over the per-source rate (under load)", STATS_COUNTER, NULL},
        {"handshake_invalid", "handshakes refused: unknown peer, failed DH/AEAD, replay, flood",
         STATS_COUNTER, NULL},
        {"cookie_invalid", "cookie replies for no handshake of ours, or not decrypting",
         STATS_COUNTER, NULL},
        {"unknown_index", "data for no session we know", STATS_COUNTER, NULL},
        {"expired_key", "data on a session past its time or message limit", STATS_COUNTER, NULL},
        {"decrypt_failed", "data failing authentication", STATS_COUNTER, NULL},
        {"replay", "data with a duplicate or too old nonce", STATS_COUNTER, NULL},
        {"bad_inner", "decrypted data that is no well-formed IPv4/IPv6 packet", STATS_COUNTER,
         NULL},
        {"src_not_allowed", "decrypted packets from a source outside the peer's AllowedIPs",
         STATS_COUNTER, NULL},
        {"truncated", "datagrams longer than the buffer, or with a cut GRO cmsg", STATS_COUNTER,
         NULL},
        {"tx_no_peer", "TUN packets no peer's AllowedIPs match", STATS_COUNTER, NULL},
        {"tx_no_endpoint", "TUN packets for a peer without an endpoint yet", STATS_COUNTER, NULL},
        {"tx_queue_full", "queued packets dropped for newer ones during a handshake", STATS_COUNTER,
         NULL},
        {"tx_bad_packet", "TUN packets that could not be parsed, segmented or sealed",
         STATS_COUNTER, NULL},
        {"tx_send_errors", "datagrams sendmsg failed on", STATS_COUNTER, NULL},
        {"rx_tun_errors", "TUN writes that failed", STATS_COUNTER, NULL},
        {"gso_sends", "UDP GSO sends (each a train of datagrams)", STATS_COUNTER, NULL},
        {"gro_trains", "received UDP GRO trains", STATS_COUNTER, NULL},
        {"gro_runts", "datagrams of a GRO train cut below any message size", STATS_COUNTER, NULL},
        {"gro_overflow", "datagrams past what one receive round holds", STATS_COUNTER, NULL},
        {"rx_exclusive", "receive batches that took the device lock exclusive", STATS_COUNTER,
         NULL},
        {"offload_tun", "1 when the TUN carries virtio-net headers (TSO and GRO)", STATS_GAUGE,
         NULL},
        {"offload_gso", "1 while sends use UDP GSO (0: off, or the egress path refused it)",
         STATS_GAUGE, NULL},
};

static void read_stats(const struct stats_group *g, uint64_t *out)
{
	const struct wg_device *d = g->ctx;
	const struct wg_stats *s = &d->id.stats;
	const struct dev_stats *x = &d->stats;
	const uint64_t v[] = {
	        s->rx_data_packets,
	        atomic_load(&x->tx_packets),
	        s->rx_handshakes,
	        s->rx_invalid_message,
	        s->rx_bad_mac1,
	        s->rx_cookie_sent,
	        s->rx_ratelimited,
	        s->rx_handshake_invalid,
	        s->rx_cookie_invalid,
	        s->rx_unknown_index,
	        s->rx_expired_key,
	        s->rx_decrypt_failed,
	        s->rx_replay,
	        s->rx_bad_inner,
	        s->rx_src_not_allowed,
	        atomic_load(&x->rx_truncated),
	        atomic_load(&x->tx_no_peer),
	        atomic_load(&x->tx_no_endpoint),
	        atomic_load(&x->tx_queue_full),
	        atomic_load(&x->tx_bad_packet),
	        atomic_load(&x->tx_send_errors),
	        atomic_load(&x->rx_tun_errors),
	        atomic_load(&x->tx_gso_sends),
	        atomic_load(&x->rx_gro_trains),
	        atomic_load(&x->rx_gro_runts),
	        atomic_load(&x->rx_gro_overflow),
	        atomic_load(&x->rx_exclusive),
	        d->tun.vnet_hdr,
	        atomic_load(&d->gso),
	};

	_Static_assert(sizeof(v) / sizeof(v[0]) == sizeof(stats_desc) / sizeof(stats_desc[0]),
	               "one value per counter");
	memcpy(out, v, sizeof(v));
}

/* Per peer, what `wg show` prints (transfer, latest handshake) and the handshakes completed. */
static const struct stats_desc peer_desc[] = {
        {"rx_bytes", "UDP payload bytes received from the peer (wg show transfer)", STATS_COUNTER,
         NULL},
        {"tx_bytes", "UDP payload bytes sent to the peer (wg show transfer)", STATS_COUNTER, NULL},
        {"handshakes", "handshakes completed with the peer", STATS_COUNTER, NULL},
        {"last_handshake_seconds", "time of the latest handshake, Unix seconds (0: never)",
         STATS_GAUGE, NULL},
};

/*
 * Read under the shared device lock, as the data path runs: a peer cannot
 * go away meanwhile (removal takes the lock exclusive); the values are
 * single aligned words, read without the peer's mutex (at worst a moment
 * stale).
 */
static void read_peers(const struct stats_group *g, stats_row_fn *row, void *arg)
{
	struct wg_device *d = g->ctx;

	wg_dev_lock_shared(d);
	for (const struct dev_peer *p = d->peers; p; p = p->next) {
		const struct wg_peer *c = &p->core;
		char labels[16 + WGCONF_KEY_B64_LEN];
		char key[WGCONF_KEY_B64_LEN + 1];
		uint64_t v[] = {c->rx_bytes, c->tx_bytes, c->handshakes,
		                (uint64_t)c->last_handshake_real.tv_sec};

		_Static_assert(sizeof(v) / sizeof(v[0]) == sizeof(peer_desc) / sizeof(peer_desc[0]),
		               "one value per counter");
		wgconf_key_to_base64(key, c->public_key);
		snprintf(labels, sizeof(labels), "peer=\"%s\"", key);
		row(arg, labels, v);
	}
	wg_dev_unlock(d);
}

static void stats_group_init(struct wg_device *d)
{
	snprintf(d->stats_name, sizeof(d->stats_name), "wireguard %s", d->name);
	snprintf(d->stats_labels, sizeof(d->stats_labels), "interface=\"%s\"", d->name);
	d->stats_group = (struct stats_group){
	        .name = d->stats_name,
	        .family = "wireguard",
	        .labels = d->stats_labels,
	        .desc = stats_desc,
	        .n = sizeof(stats_desc) / sizeof(stats_desc[0]),
	        .read = read_stats,
	        .ctx = d,
	};
	d->peer_group = (struct stats_group){
	        .name = d->stats_name,
	        .family = "wireguard_peer",
	        .labels = d->stats_labels,
	        .desc = peer_desc,
	        .n = sizeof(peer_desc) / sizeof(peer_desc[0]),
	        .rows = read_peers,
	        .ctx = d,
	};
	stats_register(&d->stats_group);
	stats_register(&d->peer_group);
}

int wg_device_create(struct wg_device **out, const struct wgconf *conf,
                     const struct wg_device_opts *opts)
{
	struct wg_device *d;
	struct wg_uapi_set set;
	unsigned int nw =
	        opts->workers ? opts->workers : (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	if (nw == 0)
		nw = 1;
	if (nw > TUN_MAX_QUEUES)
		nw = TUN_MAX_QUEUES;
	*out = NULL;
	d = calloc(1, sizeof(*d) + nw * sizeof(struct wg_worker));
	if (!d)
		return -ENOMEM;
	d->nworkers = nw;
	d->stop_fd = d->kick_fd = d->uapi_fd = -1;
	d->ready_fd = opts->ready_fd;
	d->time_scale = opts->time_scale ? opts->time_scale : 1;
	d->mtu = conf->mtu ? conf->mtu : WGCONF_DEFAULT_MTU;
	d->offload = opts->offload;
	d->fwmark = conf->fwmark;
	for (unsigned int i = 0; i < TUN_MAX_QUEUES; i++)
		d->tun.fds[i] = -1;
	for (unsigned int i = 0; i < nw; i++) {
		d->workers[i].udp4 = d->workers[i].udp6 = d->workers[i].tun_fd = -1;
		d->workers[i].wake_fd = -1;
		d->workers[i].dev = d;
		d->workers[i].index = i;
	}
	snprintf(d->name, sizeof(d->name), "%s", opts->name);
	stats_group_init(d);
	{
		pthread_rwlockattr_t attr;

		pthread_rwlockattr_init(&attr);
		pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&d->lock, &attr);
		pthread_rwlockattr_destroy(&attr);
	}
	ret = wg_identity_init(&d->id);
	if (ret < 0)
		goto fail;
	d->id.mtu = d->mtu;
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0 || d->kick_fd < 0) {
		ret = -errno;
		goto fail;
	}
	/* A tunnel default route needs the fwmark that keeps our own UDP out of it. */
	if (opts->routes && conf->table == WGCONF_TABLE_AUTO && !d->fwmark &&
	    wg_dev_conf_has_default_route(conf))
		d->fwmark = DEFAULT_TABLE;

	ret = tun_open(&d->tun, d->name, nw, opts->offload ? TUN_VNET_HDR : 0);
	if (ret == -EBUSY) {
		log_error("%s: an interface of that name already exists; spliced creates its own "
		          "TUN device and does not attach to another one",
		          d->name);
		goto fail;
	}
	if (ret < 0) {
		log_error("%s: cannot create the TUN device: %s", d->name, strerror(-ret));
		goto fail;
	}
	for (unsigned int i = 0; i < nw; i++) {
		int fl = fcntl(d->tun.fds[i], F_GETFL);

		fcntl(d->tun.fds[i], F_SETFL, fl | O_NONBLOCK);
	}

	d->port = conf->listen_port;
	d->gro = opts->offload;
	atomic_store(&d->gso, opts->offload);
	for (unsigned int i = 0; i < nw; i++) {
		struct wg_worker *w = &d->workers[i];

		w->tun_fd = d->tun.fds[i];
		w->udp4 = wg_dev_udp_socket(AF_INET, &d->port, d->fwmark, d->gro);
		if (w->udp4 < 0) {
			ret = w->udp4;
			log_error("%s: cannot bind UDP port %u: %s", d->name, d->port,
			          strerror(-ret));
			goto fail;
		}
		w->udp6 = wg_dev_udp_socket(AF_INET6, &d->port, d->fwmark, d->gro);
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fd < 0) {
			ret = -errno;
			goto fail;
		}
		w->slot_size =
		        (WG_MSG_DATA_HEADER_LEN + d->mtu + WG_MSG_PADDING + WG_AEAD_TAG_LEN + 63) &
		        ~(size_t)63;
		w->slots = malloc(w->slot_size * TX_BATCH);
		w->rx_bufs = malloc((size_t)RX_BUF * RX_MSGS);
		w->tso_buf = d->tun.vnet_hdr ? malloc(OFFLOAD_MAX_PACKET) : NULL;
		w->tun_out = d->tun.vnet_hdr ? malloc(OFFLOAD_MAX_PACKET) : NULL;
		if (!w->slots || !w->rx_bufs || (d->tun.vnet_hdr && (!w->tso_buf || !w->tun_out))) {
			ret = -ENOMEM;
			goto fail;
		}
	}

	ret = wg_uapi_set_from_conf(&set, conf);
	if (ret < 0)
		goto fail;
	set.has_listen_port = false;
	set.has_fwmark = false;
	wg_dev_lock_exclusive(d);
	ret = wg_dev_apply_set(d, &set);
	wg_dev_unlock(d);
	wg_uapi_set_free(&set);
	if (ret < 0) {
		log_error("%s: applying the configuration failed: %s", d->name, strerror(-ret));
		goto fail;
	}

	ret = netlink_link_set_mtu(d->tun.ifindex, d->mtu);
	if (ret == 0)
		ret = netlink_link_set_up(d->tun.ifindex, true);
	if (ret < 0) {
		log_error("%s: cannot set MTU/up: %s", d->name, strerror(-ret));
		goto fail;
	}
	if (opts->routes) {
		ret = wg_dev_setup_routes(d, conf);
		if (ret < 0)
			goto fail;
	}
	d->uapi_fd = wg_uapi_listen(d->name, d->uapi_path, sizeof(d->uapi_path));
	if (d->uapi_fd < 0) {
		/* wg(8) will not see the device, but the tunnel itself works. */
		log_warn("%s: no UAPI socket: %s", d->name, strerror(-d->uapi_fd));
	}
	*out = d;
	return 0;
fail:
	wg_device_destroy(d);
	return ret;
}

struct tick_ctx {
	struct wg_worker *w;
	uint64_t now;
};

static void on_tick(void *ctx, struct wg_peer *peer, unsigned int actions)
{
	struct tick_ctx *t = ctx;

	wg_dev_peer_actions(t->w, peer->priv, actions, t->now);
}

int wg_device_run(struct wg_device *d)
{
	struct itimerspec its = {.it_interval = {0, CTRL_TICK_MS * 1000000L},
	                         .it_value = {0, CTRL_TICK_MS * 1000000L}};
	struct wg_uapi_ops ops = {.get = wg_dev_uapi_get, .set = wg_dev_uapi_set, .ctx = d};
	int tfd, ret = 0;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0)
		return -errno;
	timerfd_settime(tfd, 0, &its, NULL);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		ret = thread_start(&d->workers[i].thread, worker_main, &d->workers[i],
		                   "spliced-wg%u", i);
		if (ret) {
			atomic_store(&d->stopping, true);
			wg_device_stop(d);
			break;
		}
		d->workers[i].started = true;
	}
	if (ret == 0 && d->ready_fd >= 0) {
		char c = 1;

		if (write(d->ready_fd, &c, 1) < 0)
			ret = 0; /* the launcher went away; keep running */
		close(d->ready_fd);
		d->ready_fd = -1;
	}
	while (!atomic_load(&d->stopping)) {
		struct pollfd pfd[4] = {{.fd = tfd, .events = POLLIN},
		                        {.fd = d->stop_fd, .events = POLLIN},
		                        {.fd = d->kick_fd, .events = POLLIN},
		                        {.fd = d->uapi_fd, .events = POLLIN}};
		uint64_t x;

		if (poll(pfd, d->uapi_fd >= 0 ? 4 : 3, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN)
			break;
		if ((pfd[0].revents | pfd[2].revents) & POLLIN) {
			struct tick_ctx t = {.w = &d->workers[0], .now = wg_dev_now(d)};

			if ((pfd[0].revents & POLLIN) && read(tfd, &x, sizeof(x)) < 0)
				x = 0;
			if ((pfd[2].revents & POLLIN) && read(d->kick_fd, &x, sizeof(x)) < 0)
				x = 0;
			/* Cleared first: a kick raised while we tick wakes us again. */
			atomic_store(&d->kicked, false);
			wg_dev_lock_exclusive(d);
			wg_identity_tick(&d->id, t.now, on_tick, &t);
			wg_dev_unlock(d);
			if (atomic_exchange(&d->dump_stats, false))
				stats_log_group(LOG_INFO, &d->stats_group);
		}
		if (d->uapi_fd >= 0 && (pfd[3].revents & POLLIN)) {
			int c = accept4(d->uapi_fd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0) {
				wg_uapi_serve(c, &ops, UAPI_DEADLINE_MS);
				close(c);
			}
		}
	}
	atomic_store(&d->stopping, true);
	wg_device_stop(d);
	for (unsigned int i = 0; i < d->nworkers; i++)
		if (d->workers[i].started) {
			pthread_join(d->workers[i].thread, NULL);
			d->workers[i].started = false;
		}
	stats_log_group(LOG_INFO, &d->stats_group);
	close(tfd);
	return ret;
}

void wg_device_stop(struct wg_device *d)
{
	uint64_t one = 1;

	atomic_store(&d->stopping, true);
	if (write(d->stop_fd, &one, sizeof(one)) < 0)
		return; /* already signalled (counter full) */
}

void wg_device_dump_stats(struct wg_device *d)
{
	atomic_store(&d->dump_stats, true);
}

void wg_device_destroy(struct wg_device *d)
{
	if (!d)
		return;
	stats_unregister(&d->stats_group); /* first: nobody reads the counters any more */
	stats_unregister(&d->peer_group);
	wg_dev_remove_routes(d);
	if (d->uapi_fd >= 0) {
		close(d->uapi_fd);
		unlink(d->uapi_path);
	}
	for (unsigned int i = 0; i < d->nworkers; i++) {
		struct wg_worker *w = &d->workers[i];

		if (w->udp4 >= 0)
			close(w->udp4);
		if (w->udp6 >= 0)
			close(w->udp6);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		free(w->slots);
		free(w->rx_bufs);
		free(w->tso_buf);
		free(w->tun_out);
	}
	while (d->peers)
		wg_dev_remove_peer(d->peers);
	wg_identity_destroy(&d->id);
	tun_close(&d->tun);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	if (d->kick_fd >= 0)
		close(d->kick_fd);
	if (d->ready_fd >= 0)
		close(d->ready_fd);
	pthread_rwlock_destroy(&d->lock);
	wg_wipe(d, sizeof(*d));
	free(d);
}
