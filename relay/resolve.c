/* SPDX-License-Identifier: MIT */
/* Name resolution off the loop: getaddrinfo in a few threads, results to the worker's inbox. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"
#include "worker.h"

struct resolver {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct resolve_req *head, *tail;
	bool stop;
	unsigned n_threads;
	pthread_t threads[];
};

static int gai_to_errno(int rc)
{
	switch (rc) {
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
	case EAI_FAIL:
		return -EHOSTUNREACH; /* SOCKS5 REP 04, HTTP 502 */
	case EAI_AGAIN:
		/*
		 * "Temporary failure" is also what a resolver with no reachable
		 * server says: to the client the host is unreachable (REP 04),
		 * not a connect that timed out (REP 06).
		 */
		return -EHOSTUNREACH;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	default:
		return -EHOSTUNREACH;
	}
}

static void resolve_one(struct resolve_req *r)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL, *ai;
	char port[8];
	int rc;

	snprintf(port, sizeof(port), "%u", r->port);
	rc = getaddrinfo(r->host, port, &hints, &res);
	r->n = 0;
	if (rc != 0) {
		r->err = gai_to_errno(rc);
		return;
	}
	for (ai = res; ai && r->n < RESOLVE_MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		memcpy(&r->addrs[r->n++], ai->ai_addr, ai->ai_addrlen);
	}
	freeaddrinfo(res);
	r->err = r->n ? 0 : -EHOSTUNREACH;
}

static void *resolver_thread(void *arg)
{
	struct resolver *rs = arg;

	pthread_mutex_lock(&rs->lock);
	for (;;) {
		while (!rs->head && !rs->stop)
			pthread_cond_wait(&rs->cond, &rs->lock);
		if (rs->stop)
			break;
		struct resolve_req *r = rs->head;
		rs->head = r->next;
		if (!rs->head)
			rs->tail = NULL;
		pthread_mutex_unlock(&rs->lock);
		resolve_one(r);
		worker_inbox_push(r->w, r);
		pthread_mutex_lock(&rs->lock);
	}
	pthread_mutex_unlock(&rs->lock);
	return NULL;
}

int resolver_start(struct resolver **out, unsigned threads)
{
	struct resolver *rs;
	int ret;

	if (threads == 0)
		threads = 1;
	rs = calloc(1, sizeof(*rs) + threads * sizeof(pthread_t));
	if (!rs)
		return -ENOMEM;
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->cond, NULL);
	for (unsigned i = 0; i < threads; i++) {
		ret = pthread_create(&rs->threads[i], NULL, resolver_thread, rs);
		if (ret) {
			rs->n_threads = i;
			resolver_stop(rs);
			return -ret;
		}
		rs->n_threads = i + 1;
		pthread_setname_np(rs->threads[i], "spliced-dns");
	}
	*out = rs;
	return 0;
}

int resolver_submit(struct resolver *rs, struct resolve_req *req)
{
	req->next = NULL;
	pthread_mutex_lock(&rs->lock);
	if (rs->tail)
		rs->tail->next = req;
	else
		rs->head = req;
	rs->tail = req;
	pthread_cond_signal(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

/* Called after the workers have stopped: queued requests are freed unanswered. */
void resolver_stop(struct resolver *rs)
{
	if (!rs)
		return;
	pthread_mutex_lock(&rs->lock);
	rs->stop = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
	for (unsigned i = 0; i < rs->n_threads; i++)
		pthread_join(rs->threads[i], NULL);
	while (rs->head) {
		struct resolve_req *r = rs->head;
		rs->head = r->next;
		free(r);
	}
	pthread_mutex_destroy(&rs->lock);
	pthread_cond_destroy(&rs->cond);
	free(rs);
}
