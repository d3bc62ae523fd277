/* SPDX-License-Identifier: MIT */
/* Configuring a device: set=1 requests (and the config file), get=1 snapshots, peers, routes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_internal.h"
#include "log.h"

static struct dev_peer *find_peer(struct wg_device *d, const uint8_t *pub)
{
	struct wg_peer *p = wg_identity_lookup_peer(&d->id, pub);

	return p ? p->priv : NULL;
}

void wg_dev_remove_peer(struct dev_peer *p)
{
	*p->pprev = p->next;
	if (p->next)
		p->next->pprev = p->pprev;
	wg_dev_queue_free(p);
	wg_peer_destroy(&p->core);
	pthread_mutex_destroy(&p->lock);
	wg_wipe(p, sizeof(*p));
	free(p);
}

/* Applies a set=1 request (also used for the config file). Device lock exclusive. */
int wg_dev_apply_set(struct wg_device *d, const struct wg_uapi_set *s)
{
	int ret;

	/* First, so that a port already in use fails the request before anything changed. */
	if (s->has_listen_port && s->listen_port != d->port) {
		ret = wg_dev_rebind(d, s->listen_port, s->has_fwmark ? s->fwmark : d->fwmark);
		if (ret < 0)
			return ret;
	}
	if (s->has_private_key) {
		ret = wg_identity_set_private_key(&d->id, s->private_key);
		if (ret < 0)
			return ret;
		/* A peer whose key is now ours cannot exist: the core refuses it. */
	}
	if (s->has_fwmark && s->fwmark != d->fwmark)
		wg_dev_set_fwmark(d, s->fwmark);
	if (s->replace_peers)
		while (d->peers)
			wg_dev_remove_peer(d->peers);
	for (size_t i = 0; i < s->n_peers; i++) {
		const struct wg_uapi_peer_set *ps = &s->peers[i];
		struct dev_peer *p = find_peer(d, ps->public_key);

		if (ps->remove) {
			if (p)
				wg_dev_remove_peer(p);
			continue;
		}
		if (!p) {
			if (ps->update_only)
				continue;
			p = calloc(1, sizeof(*p));
			if (!p)
				return -ENOMEM;
			ret = wg_peer_init(&p->core, &d->id, ps->public_key);
			if (ret < 0) {
				free(p);
				return ret;
			}
			pthread_mutex_init(&p->lock, NULL);
			p->core.priv = p;
			p->next = d->peers;
			if (p->next)
				p->next->pprev = &p->next;
			p->pprev = &d->peers;
			d->peers = p;
		}
		if (ps->has_preshared_key)
			wg_peer_set_preshared_key(&p->core, ps->preshared_key);
		if (ps->has_endpoint) {
			p->endpoint = ps->endpoint;
			p->has_endpoint = true;
		}
		if (ps->has_keepalive) {
			bool was_off = p->core.timers.persistent_keepalive_interval == 0;

			p->core.timers.persistent_keepalive_interval = ps->keepalive;
			/* Turning keepalives on sends one now, as wg(8) users expect. */
			if (was_off && ps->keepalive && p->has_endpoint)
				p->core.pending_actions |= WG_ACT_SEND_KEEPALIVE;
		}
		if (ps->replace_allowed_ips)
			wg_allowedips_remove_by_peer(&d->id.allowedips, &p->core);
		for (size_t j = 0; j < ps->n_allowed_ips; j++) {
			const struct netlink_prefix *a = &ps->allowed_ips[j];

			ret = wg_allowedips_insert(&d->id.allowedips, a->family, a->addr.bytes,
			                           a->prefixlen, &p->core);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int wg_dev_uapi_set(void *ctx, const struct wg_uapi_set *req)
{
	struct wg_device *d = ctx;
	int ret;

	wg_dev_lock_exclusive(d);
	ret = wg_dev_apply_set(d, req);
	wg_dev_unlock(d);
	return ret;
}

struct aip_collect {
	struct wg_uapi_peer_info *pi;
	size_t cap;
	int err;
};

static int collect_aip(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct aip_collect *c = ctx;
	struct netlink_prefix *a = c->pi->allowed_ips;

	if (c->pi->n_allowed_ips == c->cap) {
		/* doubling: a peer with many prefixes costs no quadratic copying */
		c->cap = c->cap ? 2 * c->cap : 4;
		a = realloc(a, c->cap * sizeof(*a));
		if (!a) {
			c->err = -ENOMEM;
			return -ENOMEM;
		}
		c->pi->allowed_ips = a;
	}
	a = &a[c->pi->n_allowed_ips++];
	memset(a, 0, sizeof(*a));
	a->family = family;
	a->prefixlen = cidr;
	memcpy(a->addr.bytes, addr, family == AF_INET ? 4 : 16);
	return 0;
}

int wg_dev_uapi_get(void *ctx, struct wg_uapi_info *out)
{
	struct wg_device *d = ctx;
	size_t n = 0;
	int ret = 0;

	wg_dev_lock_exclusive(d);
	out->has_private_key = d->id.has_private_key;
	memcpy(out->private_key, d->id.static_private, WG_KEY_LEN);
	out->listen_port = d->port;
	out->fwmark = d->fwmark;
	for (struct dev_peer *p = d->peers; p; p = p->next)
		n++;
	out->peers = calloc(n ? n : 1, sizeof(*out->peers));
	if (!out->peers) {
		ret = -ENOMEM;
		goto out;
	}
	for (struct dev_peer *p = d->peers; p; p = p->next) {
		struct wg_uapi_peer_info *pi = &out->peers[out->n_peers++];
		struct aip_collect c = {.pi = pi};

		memcpy(pi->public_key, p->core.public_key, WG_KEY_LEN);
		pi->has_preshared_key = !wg_ct_is_zero(p->core.handshake.preshared_key, WG_KEY_LEN);
		memcpy(pi->preshared_key, p->core.handshake.preshared_key, WG_KEY_LEN);
		pi->has_endpoint = p->has_endpoint;
		pi->endpoint = p->endpoint;
		pi->last_handshake = p->core.last_handshake_real;
		pi->rx_bytes = p->core.rx_bytes;
		pi->tx_bytes = p->core.tx_bytes;
		pi->keepalive = p->core.timers.persistent_keepalive_interval;
		wg_allowedips_walk(&d->id.allowedips, &p->core, collect_aip, &c);
		if (c.err) {
			ret = c.err;
			goto out;
		}
	}
out:
	wg_dev_unlock(d);
	return ret;
}

/*
 * Installs what wg-quick would: addresses, MTU, link up, one route per
 * allowed prefix; a /0 goes into table 51820 with the two rules wg-quick
 * uses (tun/route.c), so the tunnel's own UDP packets (fwmark) still
 * reach the real default route. Routes and rules carry spliced's tag.
 */
int wg_dev_setup_routes(struct wg_device *d, const struct wgconf *conf)
{
	uint32_t table;
	int ret;

	for (size_t i = 0; i < conf->n_addresses; i++) {
		ret = netlink_addr_add(d->tun.ifindex, &conf->addresses[i]);
		if (ret < 0) {
			log_error("%s: adding an address failed: %s", d->name, strerror(-ret));
			return ret;
		}
	}
	routing_init(&d->routes, d->tun.ifindex, NETLINK_PROTO_SPLICED);
	if (conf->table == WGCONF_TABLE_OFF)
		return 0;
	table = conf->table == WGCONF_TABLE_ID ? conf->table_id : 0;
	for (size_t i = 0; i < conf->n_peers; i++) {
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++) {
			const struct netlink_prefix *p = &conf->peers[i].allowed_ips[j];

			if (p->prefixlen == 0 && conf->table == WGCONF_TABLE_AUTO)
				ret = routing_default_pair(&d->routes, p->family, DEFAULT_TABLE,
				                           d->fwmark, 0);
			else
				ret = routing_add(&d->routes, p, table);
			if (ret < 0 && ret != -EEXIST) {
				log_error("%s: adding a route failed: %s", d->name, strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

static bool prefix_eq(const struct netlink_prefix *a, const struct netlink_prefix *b)
{
	return a->family == b->family && a->prefixlen == b->prefixlen &&
	       !memcmp(a->addr.bytes, b->addr.bytes, a->family == AF_INET ? 4 : 16);
}

static bool conf_has_prefix(const struct wgconf *conf, const struct netlink_prefix *p)
{
	for (size_t i = 0; i < conf->n_peers; i++)
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++)
			if (prefix_eq(&conf->peers[i].allowed_ips[j], p))
				return true;
	return false;
}

/* The routes of prefixes that came and went; a /0 stays as installed (its rules with it). */
static void sync_routes(struct wg_device *d, const struct wgconf *conf, struct wg_sync_report *rep)
{
	struct routing_set *rs = &d->routes;
	uint32_t table = conf->table == WGCONF_TABLE_ID ? conf->table_id : 0;

	if (conf->table == WGCONF_TABLE_OFF)
		return;
	for (size_t i = 0; i < rs->n_routes;) {
		if (rs->routes[i].dst.prefixlen == 0 || conf_has_prefix(conf, &rs->routes[i].dst)) {
			i++;
			continue;
		}
		netlink_route_del_r(&rs->routes[i]);
		rs->routes[i] = rs->routes[--rs->n_routes];
		rep->routes_removed++;
	}
	for (size_t i = 0; i < conf->n_peers; i++) {
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++) {
			const struct netlink_prefix *p = &conf->peers[i].allowed_ips[j];
			bool have = p->prefixlen == 0;
			int ret;

			for (size_t k = 0; !have && k < rs->n_routes; k++)
				have = prefix_eq(&rs->routes[k].dst, p);
			if (have)
				continue;
			ret = routing_add(rs, p, table);
			if (ret < 0)
				log_warn("%s: adding a route failed: %s", d->name, strerror(-ret));
			else
				rep->routes_added++;
		}
	}
}

int wg_device_sync(struct wg_device *d, const struct wgconf *conf, bool routes,
                   struct wg_sync_report *rep)
{
	struct wg_uapi_set set;
	uint8_t clamped[WG_KEY_LEN];
	size_t n_conf;
	int ret;

	memset(rep, 0, sizeof(*rep));
	ret = wg_uapi_set_from_conf(&set, conf);
	if (ret < 0)
		return ret;
	n_conf = set.n_peers;
	set.replace_peers = false;
	set.has_listen_port = conf->listen_port && conf->listen_port != d->port;
	set.has_fwmark = conf->fwmark && conf->fwmark != d->fwmark;
	memcpy(clamped, conf->private_key, WG_KEY_LEN);
	wg_x25519_clamp(clamped);
	wg_dev_lock_exclusive(d);
	set.has_private_key =
	        conf->has_private_key != d->id.has_private_key ||
	        (conf->has_private_key && !wg_ct_eq(clamped, d->id.static_private, WG_KEY_LEN));
	/* Peers the file no longer names: a removal each. */
	for (struct dev_peer *p = d->peers; p; p = p->next) {
		bool named = false;

		for (size_t i = 0; i < n_conf && !named; i++)
			named = !memcmp(set.peers[i].public_key, p->core.public_key, WG_KEY_LEN);
		if (named) {
			rep->kept++;
			continue;
		}
		struct wg_uapi_peer_set *grown =
		        realloc(set.peers, (set.n_peers + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
			goto out;
		}
		set.peers = grown;
		memset(&set.peers[set.n_peers], 0, sizeof(set.peers[0]));
		memcpy(set.peers[set.n_peers].public_key, p->core.public_key, WG_KEY_LEN);
		set.peers[set.n_peers++].remove = true;
		rep->removed++;
	}
	rep->added = (unsigned)n_conf - rep->kept;
	rep->updated = rep->kept;
	rep->key_changed = set.has_private_key;
	rep->port_changed = set.has_listen_port;
	ret = wg_dev_apply_set(d, &set);
	if (ret == 0 && routes)
		sync_routes(d, conf, rep);
out:
	wg_dev_unlock(d);
	wg_wipe(clamped, sizeof(clamped));
	wg_uapi_set_free(&set);
	if (ret < 0)
		log_error("%s: applying the configuration failed: %s", d->name, strerror(-ret));
	return ret;
}

int wg_device_port_free(uint16_t port)
{
	uint16_t p4 = port, p6 = port;
	int a, b;

	if (!port)
		return 0;
	a = wg_dev_udp_socket(AF_INET, &p4, 0, false);
	if (a < 0)
		return a;
	b = wg_dev_udp_socket(AF_INET6, &p6, 0, false);
	close(a);
	if (b >= 0)
		close(b);
	return b == -EADDRINUSE ? b : 0; /* no IPv6 at all is fine, as at start */
}

uint16_t wg_device_port(const struct wg_device *d)
{
	return d->port;
}

bool wg_dev_conf_has_default_route(const struct wgconf *conf)
{
	for (size_t i = 0; i < conf->n_peers; i++)
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++)
			if (conf->peers[i].allowed_ips[j].prefixlen == 0)
				return true;
	return false;
}

/* Removes the rules and routes wg_dev_setup_routes() installed (while the interface exists). */
void wg_dev_remove_routes(struct wg_device *d)
{
	routing_undo(&d->routes, !d->tun.nqueues);
}
