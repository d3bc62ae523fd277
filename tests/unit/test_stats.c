/* SPDX-License-Identifier: MIT */
/* The counter registry's Prometheus rendering: families, labels, rows, counters and gauges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "t.h"

const char *t_suite = "stats";

static const struct stats_desc iface_desc[] = {
        {"rx_data", "data received", STATS_COUNTER, NULL},
        {"drops_total", "drops", STATS_COUNTER, "reason=\"mac\""},
        {"drops_total", "drops", STATS_COUNTER, "reason=\"replay\""},
        {"up", "1 while up", STATS_GAUGE, NULL},
};

static void read_iface(const struct stats_group *g, uint64_t *out)
{
	const uint64_t *base = g->ctx;

	for (size_t i = 0; i < g->n; i++)
		out[i] = base[i];
}

static const struct stats_desc peer_desc[] = {
        {"rx_bytes", "bytes from the peer", STATS_COUNTER, NULL},
};

static void read_peers(const struct stats_group *g, stats_row_fn *row, void *arg)
{
	uint64_t a = 5, b = 6;

	(void)g;
	row(arg, "peer=\"A\"", &a);
	row(arg, "peer=\"B\"", &b);
}

static const struct stats_desc info_desc[] = {
        {"build_info", "build", STATS_GAUGE, NULL},
};

static char *render(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	if (stats_render_prom(f) < 0) {
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	return text;
}

static void test_render(void)
{
	uint64_t v0[] = {1, 2, 3, 1}, v1[] = {10, 20, 30, 0}, one = 1;
	struct stats_group g0 = {.name = "w0",
	                         .family = "wg",
	                         .labels = "interface=\"wg0\"",
	                         .desc = iface_desc,
	                         .n = 4,
	                         .read = read_iface,
	                         .ctx = v0};
	struct stats_group g1 = g0, peers = {.name = "peers",
	                                     .family = "wg_peer",
	                                     .labels = "interface=\"wg0\"",
	                                     .desc = peer_desc,
	                                     .n = 1,
	                                     .rows = read_peers};
	struct stats_group info = {.name = "info",
	                           .family = "",
	                           .labels = "version=\"1\"",
	                           .desc = info_desc,
	                           .n = 1,
	                           .read = read_iface,
	                           .ctx = &one};
	struct stats_group hidden = {
	        .name = "hidden", .desc = info_desc, .n = 1, .read = read_iface, .ctx = &one};
	const char *want = "# HELP spliced_wg_rx_data_total data received\n"
	                   "# TYPE spliced_wg_rx_data_total counter\n"
	                   "spliced_wg_rx_data_total{interface=\"wg0\"} 1\n"
	                   "spliced_wg_rx_data_total{interface=\"wg1\"} 10\n"
	                   "# HELP spliced_wg_drops_total drops\n"
	                   "# TYPE spliced_wg_drops_total counter\n"
	                   "spliced_wg_drops_total{interface=\"wg0\",reason=\"mac\"} 2\n"
	                   "spliced_wg_drops_total{interface=\"wg1\",reason=\"mac\"} 20\n"
	                   "spliced_wg_drops_total{interface=\"wg0\",reason=\"replay\"} 3\n"
	                   "spliced_wg_drops_total{interface=\"wg1\",reason=\"replay\"} 30\n"
	                   "# HELP spliced_wg_up 1 while up\n"
	                   "# TYPE spliced_wg_up gauge\n"
	                   "spliced_wg_up{interface=\"wg0\"} 1\n"
	                   "spliced_wg_up{interface=\"wg1\"} 0\n"
	                   "# HELP spliced_wg_peer_rx_bytes_total bytes from the peer\n"
	                   "# TYPE spliced_wg_peer_rx_bytes_total counter\n"
	                   "spliced_wg_peer_rx_bytes_total{interface=\"wg0\",peer=\"A\"} 5\n"
	                   "spliced_wg_peer_rx_bytes_total{interface=\"wg0\",peer=\"B\"} 6\n"
	                   "# HELP spliced_build_info build\n"
	                   "# TYPE spliced_build_info gauge\n"
	                   "spliced_build_info{version=\"1\"} 1\n";
	char *got;

	g1.labels = "interface=\"wg1\"";
	g1.ctx = v1;
	/* Registration order decides the families' order; wg1 comes after the peers. */
	stats_register(&g0);
	stats_register(&hidden);
	stats_register(&peers);
	stats_register(&g1);
	stats_register(&info);
	got = render();
	T_EQ_STR(got, want);
	free(got);

	/* Unregistered: gone from the output. */
	stats_unregister(&peers);
	stats_unregister(&g1);
	got = render();
	T_ASSERT(got && !strstr(got, "wg1") && !strstr(got, "peer"));
	T_ASSERT(got && strstr(got, "spliced_wg_up{interface=\"wg0\"} 1\n"));
	free(got);
	stats_unregister(&g0);
	stats_unregister(&hidden);
	stats_unregister(&info);
	got = render();
	T_EQ_STR(got, "");
	free(got);
}

int main(void)
{
	T_RUN(test_render);
	return t_finish();
}
