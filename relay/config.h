/* SPDX-License-Identifier: MIT */
/* The immutable configuration object: INI (inih) → struct config. */
#ifndef SPLICED_CONFIG_H
#define SPLICED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "log.h" /* enum log_level */
#include "users.h"

enum config_limits {
	CONFIG_NAME_MAX = 63,
	CONFIG_PATH_MAX = 4095,
	CONFIG_MAX_INBOUNDS = 64,
	CONFIG_MAX_OUTBOUNDS = 64,
	CONFIG_MAX_RULES = 1024,
	CONFIG_MAX_WIREGUARD = 16,
	CONFIG_IFNAME_MAX = 15, /* IFNAMSIZ - 1 */
	USERS_FIELD_MAX = 255,  /* RFC 1929: ULEN and PLEN are one octet */
};

/* Which worker's listener takes a new connection (see worker_listen()). */
enum accept_steering { STEER_HASH = 0, STEER_CPU };
/* [main] backend; the values of enum loop_backend (loop.h) */
enum config_backend { CONFIG_BACKEND_AUTO = 0, CONFIG_BACKEND_IO_URING, CONFIG_BACKEND_EPOLL };

enum inbound_type {
	INBOUND_SOCKS5 = 1,
	INBOUND_HTTP,
	INBOUND_FORWARD,
	INBOUND_MIXED,
	INBOUND_REDIRECT, /* nftables REDIRECT/DNAT: the target is SO_ORIGINAL_DST */
	INBOUND_TPROXY,   /* nftables TPROXY: the target is the accepted socket's own address */
	INBOUND_TUN, /* a TUN device: every app's TCP through it (tun2socks; relay/tun_dev.c) */
	INBOUND_SHADOWSOCKS,
};
enum outbound_type {
	OUTBOUND_DIRECT = 1,
	OUTBOUND_SOCKS5,
	OUTBOUND_BLOCK,
	OUTBOUND_HTTP,
	OUTBOUND_SHADOWSOCKS,
};

struct ss_key;

/* An address prefix: family AF_INET or AF_INET6, the first `prefix` bits of addr. */
struct cidr {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
};

/* type = tun: the device, its addresses and routes (docs/tun.md). */
enum { TUN_CONF_MAX_ROUTES = 64 };
struct inbound_tun {
	char ifname[CONFIG_IFNAME_MAX + 1]; /* name (default tun0) */
	unsigned mtu;                       /* mtu (default 8500) */
	struct cidr addr[2];                /* address: [0] IPv4, [1] IPv6 (family 0: none) */
	bool addr_given;                    /* address was set (else the defaults) */
	struct cidr *routes;                /* routes: prefixes sent into the TUN */
	size_t n_routes;
	bool auto_route;    /* a default route through the TUN (wg-quick's rule pair) */
	uint32_t table;     /* auto-route's table */
	uint32_t priority;  /* its rules' priorities: this and the next */
	uint32_t fwmark;    /* the mark every socket of spliced carries with auto-route */
	unsigned queues;    /* 0: one per worker */
	bool offload;       /* IFF_VNET_HDR with checksum and TSO offloads */
	unsigned max_flows; /* TCP flows at once (NAT entries) */
	unsigned linger_ms; /* a NAT entry's life after its connection closed */
	unsigned txqlen;    /* the device's transmit queue (packets) */
	char *netns;        /* netns: the namespace the device goes to (a path), or NULL */
	struct sockaddr_storage dns_server; /* dns-server: queries to the DNS address go here */
	bool dns_hijack;                    /* dns-hijack: every UDP :53 goes to dns_server */
	bool mapped_dns; /* mapped-dns: A/AAAA answered from the prefix's upper half */
};

struct inbound {
	char name[CONFIG_NAME_MAX + 1];
	enum inbound_type type;
	struct sockaddr_storage listen; /* address + port */
	socklen_t listen_len;
	/* socks5 / http: inline users (user = a:b), plus a users file path. */
	struct users inline_users;
	char *users_file; /* NULL if none */
	int users_line;   /* of the users key, for messages */
	/* forward: the fixed target, "host:port" (host may be a name). */
	char *target_host;
	uint16_t target_port;
	int outbound; /* -1: use [route]; else forced outbound index */
	/* allow: client addresses that may connect (none: every address) */
	struct cidr *allow;
	size_t n_allow;
	/* socks5: UDP ASSOCIATE (off: REP 07), the address its reply gives (AF_UNSPEC: the one
	 * the client reached), and the relay ports (0-0: any) */
	bool udp;
	struct sockaddr_storage udp_advertise;
	uint16_t udp_port_lo, udp_port_hi;
	/* TCP options of accepted sockets: keepalive (keepalive_set: else [main]'s), TCP_USER_TIMEOUT */
	bool keepalive_set;
	unsigned keepalive_ms, user_timeout_ms;
	struct inbound_tun tun; /* type = tun */
	/* shadowsocks: method and key (from password); the password itself is not kept */
	struct ss_key *ss;
	int ss_method;     /* enum ss_method, while the section is read */
	char *ss_password; /* while the section is read, then wiped */
	int line;          /* where the section starts, for messages */
};

enum outbound_udp {
	OUTBOUND_UDP_ASSOCIATE = 0, /* RFC 1928 UDP ASSOCIATE: datagrams to the upstream's relay */
	OUTBOUND_UDP_TCP,           /* hev-socks5's FWD UDP: framed on a TCP connection */
	OUTBOUND_UDP_OFF,           /* not at all: dropped (udp_unsupported) */
};

struct outbound {
	char name[CONFIG_NAME_MAX + 1];
	enum outbound_type type;
	/* every outbound that connects: the socket's source, interface and mark */
	struct sockaddr_storage bind_addr;    /* ss_family == AF_UNSPEC when unset */
	struct sockaddr_storage bind4, bind6; /* bind-address-v4 / -v6 (AF_UNSPEC: unset) */
	char bind_interface[16];              /* IFNAMSIZ; empty when unset */
	uint32_t fwmark;                      /* 0 = unset */
	bool deny_private; /* refuse loopback, private, link-local and host addresses (egress.c) */
	/* socks5 and http upstreams */
	char *server_host;
	uint16_t server_port;
	char *username; /* NULL if no auth */
	char *password;
	/* socks5: how UDP goes to the upstream (udp = udp | tcp | off) */
	enum outbound_udp udp_mode;
	/* TCP options of its connections: keepalive (keepalive_set: else [main]'s), TCP_USER_TIMEOUT */
	bool keepalive_set;
	unsigned keepalive_ms, user_timeout_ms;
	/* shadowsocks: method and key (from password, then wiped) */
	struct ss_key *ss;
	int ss_method; /* enum ss_method, while the section is read */
	int line;
};

/*
 * The source address a connection of `family` takes through ob: bind-address
 * when it is of that family, else bind-address-v4 / -v6, else none (NULL).
 */
static inline const struct sockaddr_storage *outbound_source(const struct outbound *ob, int family)
{
	if (ob->bind_addr.ss_family == family)
		return &ob->bind_addr;
	if (family == AF_INET && ob->bind4.ss_family == AF_INET)
		return &ob->bind4;
	if (family == AF_INET6 && ob->bind6.ss_family == AF_INET6)
		return &ob->bind6;
	return NULL;
}

enum rule_kind { RULE_CIDR = 1, RULE_PORT, RULE_DOMAIN, RULE_USER };

struct rule {
	enum rule_kind kind;
	int outbound; /* index into config.outbounds */
	/* RULE_CIDR */
	int family; /* AF_INET / AF_INET6 */
	uint8_t addr[16];
	uint8_t prefix;
	/* RULE_PORT: inclusive range */
	uint16_t port_lo, port_hi;
	/* RULE_DOMAIN: lowercase suffix without a leading dot; matches the name itself
	 * and every name below it (example.com matches a.example.com, not badexample.com) */
	char *domain;
	/* RULE_USER: the names, each NUL-terminated, then an empty one (names hold no blank) */
	char *users;
	int line;
};

/* [user NAME]: options of one user, whichever inbound it logs in on. */
struct user_sec {
	char *name;
	unsigned max_conns; /* max-connections (0: [main] max-connections-per-user) */
	int line;
};

/* [wireguard NAME]: a userspace WireGuard interface NAME from a wg-quick file. */
struct wireguard_sec {
	char name[CONFIG_IFNAME_MAX + 1];
	char *conf; /* wg-quick file; relative paths start at the INI's directory */
	int line;
};

struct config {
	char *file; /* "(built-in)" for the embedded default */
	/* [main] */
	int workers; /* 0 = auto: one per online CPU */
	enum log_level log_level;
	unsigned max_connections; /* whole process */
	unsigned handshake_timeout_ms;
	unsigned connect_timeout_ms;
	unsigned idle_timeout_ms;    /* 0 = none */
	unsigned udp_timeout_ms;     /* a UDP association without a datagram this long ends */
	unsigned udp_dns_timeout_ms; /* the same for one whose datagrams all went to port 53 */
	unsigned udp_max_sessions;   /* UDP associations per worker; past it the idlest goes */
	unsigned udp_buffer;         /* SO_RCVBUF of their UDP sockets (0: the kernel's default) */
	char *access_log;            /* a path, "stderr", or NULL (off) */
	unsigned drain_timeout_ms;   /* graceful stop deadline */
	unsigned pipe_size;          /* bytes per pipe (F_SETPIPE_SZ) */
	unsigned max_pipes;          /* idle pipes each worker's pool keeps (0 = 64) */
	unsigned resolve_timeout_ms; /* a name not resolved by then fails (REP 04, HTTP 502) */
	unsigned max_resolving;      /* lookups in flight at once, whole process */
	unsigned max_auth_failures;  /* failed logins per source and minute (0: no limit) */
	unsigned max_per_source;     /* connections open per source, whole process (0: no limit) */
	unsigned max_per_user;       /* connections open per user, whole process (0: no limit) */
	unsigned keepalive_ms;       /* TCP keepalive on both legs after this idle time (0: off) */
	uint64_t pipe_memory; /* pipes (and as much in buffers) held at once; 0: a quarter of RAM */
	enum accept_steering accept_steering;
	bool splice; /* relay plain legs with splice(2); no: through user-space buffers */
	enum config_backend backend; /* io_uring, epoll, or auto (epoll where io_uring fails) */
	/*
	 * SO_MARK on every socket spliced opens (outbound legs, UDP, the
	 * resolver's): a tun inbound's fwmark with auto-route, so nothing of
	 * spliced's own loops into its TUN. 0: none.
	 */
	uint32_t auto_mark;
	/* user / group: whom to run as once set up (privdrop.c); run_as false = stay root */
	bool run_as;
	uid_t run_uid;
	gid_t run_gid; /* (gid_t)-1 until known */
	char run_user[CONFIG_NAME_MAX + 1];
	int user_line;
	int main_line; /* where [main] starts (0: no [main]), for a reload's messages */
	/* sections */
	/* grown a section at a time (at most CONFIG_MAX_*): sized for the maximum,
	 * the two tables were 81 KiB of every configuration, zeroed and resident */
	struct inbound *inbounds;
	size_t n_inbounds;
	struct outbound *outbounds;
	size_t n_outbounds;
	struct rule *rules;
	size_t n_rules;
	int route_default; /* outbound index */
	struct wireguard_sec wireguards[CONFIG_MAX_WIREGUARD];
	size_t n_wireguards;
	struct user_sec *users; /* [user NAME] sections */
	size_t n_users;
	/* [stats]: the metrics endpoint (stats_listen_len 0: off) and who may scrape it */
	struct sockaddr_storage stats_listen;
	socklen_t stats_listen_len;
	struct cidr *stats_allow;
	size_t n_stats_allow;
	int stats_line;
};

/* The configuration used when spliced runs without -c. */
extern const char config_default_ini[];

/*
 * Parse `path` (or, when path is NULL, config_default_ini). On bad content
 * writes one "file:line: message" line per problem to `err` (a FILE*, usually
 * stderr; NULL = silent) and returns -EINVAL. When the file cannot be opened
 * or read it writes nothing and returns -errno. The caller owns *out.
 */
int config_load(const char *path, struct config **out, FILE *err);
/* The same from memory; `name` is the file name used in messages. */
int config_load_string(const char *name, const char *text, struct config **out, FILE *err);
void config_free(struct config *c);
/* Index of the outbound called `name`, or -1. */
int config_outbound_index(const struct config *c, const char *name);

/*
 * The users of an inbound: its inline `user =` keys plus its users file (read
 * now). NULL with *err_out set (-errno / -EINVAL, messages to err) on failure.
 * An inbound requires authentication when inline_users.n > 0 or users_file.
 */
struct users *inbound_users_build(const struct inbound *in, FILE *err, int *err_out);
bool inbound_requires_auth(const struct inbound *in);

/* "1.2.3.4:80", "[::1]:80" → sockaddr; 0 or -EINVAL. Port 0 is refused. */
int config_parse_sockaddr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* "host:port" / "[v6]:port" → strdup'd host (brackets stripped) and port. */
int config_parse_hostport(const char *s, char **host, uint16_t *port);
/* "500ms", "10s", "5m", "1h", "30" (seconds) → ms; -EINVAL (syntax), -ERANGE. */
int config_parse_duration(const char *s, unsigned *ms);
/* "65536", "64k", "1m" (k = 1024) → bytes; -EINVAL (syntax), -ERANGE. */
int config_parse_size(const char *s, unsigned *bytes);
/* The same, 64 bits wide, with a g suffix too. */
int config_parse_size64(const char *s, uint64_t *bytes);

#endif
