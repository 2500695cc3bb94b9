/* log.c - structured JSON-lines logging (see log.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/log.h"

static atomic_int verbosity;
static atomic_int out_fd = 2;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_verbosity(int v)
{
	atomic_store(&verbosity, v);
}

void log_set_fd(int fd)
{
	atomic_store(&out_fd, fd);
}

bool log_enabled(enum log_level level)
{
	return level != LOG_DEBUG || atomic_load(&verbosity) >= 4;
}

void log_kv(enum log_level level, const char *msg, const char *fmt, ...)
{
	char ts[CLOCK_UTC_MAX];
	struct timespec now = clock_wall_now();
	json_t *rec = NULL, *fields = NULL;
	json_error_t je;
	va_list ap;
	char *line = NULL;
	size_t len;

	if (!log_enabled(level))
		return;
	clock_format_utc(&now, 3, ts);
	rec = json_pack("{s:s,s:s,s:s}", "ts", ts, "level", level_names[level], "msg",
	                msg ? msg : "");
	if (rec == NULL)
		return;
	if (fmt) {
		va_start(ap, fmt);
		fields = json_vpack_ex(&je, 0, fmt, ap);
		va_end(ap);
		if (json_is_object(fields))
			json_object_update(rec, fields);
		else
			json_object_set_new(rec, "log_error", json_string(je.text));
	}
	line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (line) {
		len = strlen(line);
		line[len] = '\n'; /* json_dumps leaves room only for NUL: rewrite in place */
		if (write(atomic_load(&out_fd), line, len + 1) < 0) {
			/* nowhere left to report it */
		}
		free(line);
	}
	json_decref(fields);
	json_decref(rec);
}
