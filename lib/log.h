/* SPDX-License-Identifier: MIT */
/* One-line log messages to stderr, with a rate limit for attacker-triggerable events; every layer logs here. */
#ifndef SPLICED_LOG_H
#define SPLICED_LOG_H

#include <time.h>

/* Messages at or below log_level are written; [main] log-level sets it. */
enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_level;

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                   \
	do {                                             \
		if (log_level >= LOG_DEBUG)              \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)

/*
 * Debug message at most once per second per call site (racy counter by design:
 * an occasional extra line across threads is harmless). For events a peer can
 * trigger at will: bad handshakes, refused connections.
 */
#define log_debug_rl(...)                                        \
	do {                                                     \
		static time_t log_rl_last_;                      \
		if (log_level >= LOG_DEBUG) {                    \
			time_t log_rl_now_ = time(NULL);         \
			if (log_rl_now_ != log_rl_last_) {       \
				log_rl_last_ = log_rl_now_;      \
				log_msg(LOG_DEBUG, __VA_ARGS__); \
			}                                        \
		}                                                \
	} while (0)

#endif
