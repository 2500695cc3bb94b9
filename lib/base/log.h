/*
 * log.h - structured logging as JSON lines on stderr.
 *
 * One line per record: {"ts":"2026-11-22T05:00:00.123Z","level":"info","msg":"...",...fields}.
 * Fields are given as a jansson json_pack() format and its arguments, so values are escaped by
 * jansson. Levels follow klog: error and warn always print; info is verbosity 0, debug needs
 * verbosity >= 4 (set with --v). Thread-safe: each record is written with one write(2).
 */
#ifndef LANDLORD_LOG_H
#define LANDLORD_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

/** log_set_verbosity() - 0 (default) prints error/warn/info; >= 4 adds debug. */
void log_set_verbosity(int v);
/** log_set_fd() - where records go (default 2). */
void log_set_fd(int fd);
bool log_enabled(enum log_level level);

/**
 * log_kv() - write a record with fields built by json_pack(@fmt, ...).
 * @fmt may be NULL for no fields, e.g. log_kv(LOG_INFO, "started", "{s:s,s:i}", "k", v, "n", 3).
 * A malformed @fmt still logs @msg, with a "log_error" field.
 */
void log_kv(enum log_level level, const char *msg, const char *fmt, ...);

#define log_error(msg, ...) log_kv(LOG_ERROR, (msg), __VA_ARGS__)
#define log_warn(msg, ...)  log_kv(LOG_WARN, (msg), __VA_ARGS__)
#define log_info(msg, ...)  log_kv(LOG_INFO, (msg), __VA_ARGS__)
#define log_debug(msg, ...)                                    \
	do {                                                   \
		if (log_enabled(LOG_DEBUG))                    \
			log_kv(LOG_DEBUG, (msg), __VA_ARGS__); \
	} while (0)

#endif
