/* SPDX-License-Identifier: MIT */
/* Building, sharing and freeing configuration snapshots. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

static void destroy(struct snapshot *s)
{
	for (size_t i = 0; i < CONFIG_MAX_INBOUNDS; i++) {
		if (s->users[i]) {
			users_free(s->users[i]);
			free(s->users[i]);
		}
		sec_stats_put(s->in_stats[i]);
	}
	for (size_t i = 0; i < CONFIG_MAX_OUTBOUNDS; i++)
		sec_stats_put(s->out_stats[i]);
	config_free(s->cfg);
	free(s);
}

struct snapshot *snapshot_new(struct config *cfg, int n_workers, unsigned gen, FILE *err,
                              int *err_out)
{
	struct snapshot *s;

	*err_out = -ENOMEM;
	s = aligned_alloc(64, sizeof(*s) + (size_t)n_workers * sizeof(s->holds[0]));
	if (!s) {
		config_free(cfg);
		return NULL;
	}
	memset(s, 0, sizeof(*s) + (size_t)n_workers * sizeof(s->holds[0]));
	atomic_init(&s->refs, 1);
	s->gen = gen;
	s->cfg = cfg;
	s->n_workers = n_workers;
	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		const struct inbound *in = &cfg->inbounds[i];

		s->in_stats[i] = sec_stats_get(SEC_STATS_INBOUND, in->name, n_workers);
		if (!s->in_stats[i])
			goto fail;
		if (!inbound_requires_auth(in))
			continue;
		s->users[i] = inbound_users_build(in, err, err_out);
		if (!s->users[i])
			goto fail;
	}
	for (size_t i = 0; i < cfg->n_outbounds; i++) {
		s->out_stats[i] =
		        sec_stats_get(SEC_STATS_OUTBOUND, cfg->outbounds[i].name, n_workers);
		if (!s->out_stats[i]) {
			*err_out = -ENOMEM;
			goto fail;
		}
	}
	*err_out = 0;
	return s;
fail:
	if (*err_out == 0)
		*err_out = -ENOMEM;
	destroy(s);
	return NULL;
}

void snapshot_ref(struct snapshot *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void snapshot_unref(struct snapshot *s)
{
	if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		destroy(s);
}

int snapshot_inbound(const struct snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->cfg->n_inbounds; i++)
		if (strcmp(s->cfg->inbounds[i].name, name) == 0)
			return (int)i;
	return -1;
}
