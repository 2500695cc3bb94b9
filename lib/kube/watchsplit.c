/*
 * watchsplit.c - split a watch body into lines, and parse one line into an event.
 *
 * Complete lines are handed out straight from the caller's bytes; only a partial line (or, after
 * a callback stopped a feed, the undelivered rest) is copied into @pending.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "kube/watchsplit.h"

/* A pending buffer whose capacity grew past this is freed rather than kept once it empties. */
#define KEEP_CAPACITY (64u << 10)

typedef int (*line_fn)(const char *line, size_t len, void *ud);

void watchsplit_init(struct watchsplit *ws, size_t max_line)
{
	ws->max_line = max_line ? max_line : WATCHSPLIT_DEFAULT_MAX_LINE;
	/* Line length is checked against max_line; the buffer's own cap only guards arithmetic. */
	buf_init(&ws->pending, SIZE_MAX / 4);
	ws->scan_from = 0;
	ws->failed = 0;
}

void watchsplit_release(struct watchsplit *ws)
{
	buf_release(&ws->pending);
	ws->scan_from = 0;
}

size_t watchsplit_pending(const struct watchsplit *ws)
{
	return ws->pending.len;
}

static int fail(struct watchsplit *ws)
{
	ws->failed = -EMSGSIZE;
	buf_release(&ws->pending);
	ws->scan_from = 0;
	return ws->failed;
}

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	}
	return true;
}

static void reset_pending(struct watchsplit *ws)
{
	if (ws->pending.cap > KEEP_CAPACITY)
		buf_release(&ws->pending);
	else
		buf_reset(&ws->pending);
	ws->scan_from = 0;
}

/* Keep bytes a stopped feed did not look at; the next feed delivers them first. */
static int keep(struct watchsplit *ws, const char *data, size_t len, int rc)
{
	if (buf_append(&ws->pending, data, len))
		return fail(ws);
	ws->scan_from = 0;
	return rc;
}

/*
 * Deliver the complete lines of p[0..n). *used: bytes up to and including the last newline
 * handled. An over-long line fails the splitter (then p may be freed: do not touch it).
 */
static int split(struct watchsplit *ws, const char *p, size_t n, size_t *used, line_fn on_line,
                 void *ud)
{
	size_t off = 0;
	int rc = 0;

	while (off < n && rc == 0) {
		const char *line = p + off, *nl = memchr(line, '\n', n - off);
		size_t len;

		if (nl == NULL)
			break;
		len = (size_t)(nl - line);
		if (len > ws->max_line)
			return fail(ws);
		off += len + 1;
		if (!blank(line, len))
			rc = on_line(line, len, ud);
	}
	*used = off;
	return rc;
}

/* Lines left in @pending by a stopped feed. */
static int drain_pending(struct watchsplit *ws, line_fn on_line, void *ud, size_t *used)
{
	int rc = split(ws, ws->pending.p, ws->pending.len, used, on_line, ud);

	if (ws->failed)
		return ws->failed;
	buf_consume(&ws->pending, *used);
	ws->scan_from = rc ? 0 : ws->pending.len;
	if (rc == 0 && ws->pending.len > ws->max_line)
		return fail(ws);
	return rc;
}

int watchsplit_feed(struct watchsplit *ws, const char *data, size_t len, line_fn on_line, void *ud)
{
	size_t used = 0;
	int rc;

	if (ws->failed)
		return ws->failed;
	if (len == 0)
		data = ""; /* a drain-only feed may pass NULL */
	if (ws->scan_from < ws->pending.len) {
		rc = drain_pending(ws, on_line, ud, &used);
		if (rc)
			return ws->failed ? ws->failed : keep(ws, data, len, rc);
	}
	if (ws->pending.len > 0) {
		/* Complete the partial line with the head of @data. */
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;

		if (take > ws->max_line - ws->pending.len || buf_append(&ws->pending, data, take))
			return fail(ws);
		if (nl == NULL) {
			ws->scan_from = ws->pending.len;
			return 0;
		}
		data += take + 1;
		len -= take + 1;
		rc = blank(ws->pending.p, ws->pending.len)
		             ? 0
		             : on_line(ws->pending.p, ws->pending.len, ud);
		reset_pending(ws);
		if (rc)
			return keep(ws, data, len, rc);
	}
	rc = split(ws, data, len, &used, on_line, ud);
	if (ws->failed)
		return ws->failed;
	if (rc)
		return keep(ws, data + used, len - used, rc);
	if (len - used > ws->max_line || buf_append(&ws->pending, data + used, len - used))
		return fail(ws);
	ws->scan_from = ws->pending.len;
	return 0;
}

static const char *const event_names[] = {
        [WATCH_ADDED] = "ADDED",       [WATCH_MODIFIED] = "MODIFIED", [WATCH_DELETED] = "DELETED",
        [WATCH_BOOKMARK] = "BOOKMARK", [WATCH_ERROR] = "ERROR",
};

static int event_type(const char *name, enum watch_event_type *type)
{
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++) {
		if (strcmp(name, event_names[i]) == 0) {
			*type = (enum watch_event_type)i;
			return 0;
		}
	}
	return -EPROTO;
}

int watch_event_parse(const char *line, size_t len, enum watch_event_type *type, json_t **obj,
                      struct ll_err *err)
{
	json_t *ev, *o;
	const char *name;
	int rc = -EPROTO;

	*obj = NULL;
	ev = jx_loads(line, len, err);
	if (ev == NULL)
		return -EPROTO;
	name = jx_str(ev, "type", NULL);
	o = json_object_get(ev, "object");
	if (!json_is_object(ev) || name == NULL)
		ll_err_set(err, rc, "watch event without a type");
	else if (event_type(name, type))
		ll_err_set(err, rc, "unknown watch event type \"%.40s\"", name);
	else if (!json_is_object(o))
		ll_err_set(err, rc, "watch event %s without an object", name);
	else
		rc = 0;
	if (rc == 0)
		*obj = json_incref(o);
	json_decref(ev);
	return rc;
}

struct event_object {
	struct jdoc *obj;
	int count;
};

static int take_object(void *ctx, struct jdoc *take_item)
{
	struct event_object *eo = ctx;

	if (eo->count++ == 0)
		eo->obj = take_item;
	else
		jdoc_unref(take_item); /* "object" was an array: refused below */
	return 0;
}

/* The event's object and type from @line; the object is built with @opts. */
static int split_event(const char *line, size_t len, const struct jdoc_opts *opts,
                       struct event_object *eo, enum watch_event_type *type, struct ll_err *err)
{
	struct jdoc *rest = NULL;
	const char *name;
	int rc = jdoc_parse_items(line, len, "object", opts, take_object, eo, &rest, err);

	if (rc)
		return -EPROTO;
	name = jd_str(rest, "type", NULL);
	rc = -EPROTO;
	if (jval_type(jdoc_root(rest)) != JT_OBJECT || name == NULL)
		ll_err_set(err, rc, "watch event without a type");
	else if (event_type(name, type))
		ll_err_set(err, rc, "unknown watch event type \"%.40s\"", name);
	else if (eo->count != 1 || jval_type(jdoc_root(eo->obj)) != JT_OBJECT)
		ll_err_set(err, rc, "watch event %s without an object", name);
	else
		rc = 0;
	jdoc_unref(rest);
	return rc;
}

int watch_event_parse_doc(const char *line, size_t len, const struct jdoc_opts *opts,
                          enum watch_event_type *type, struct jdoc **obj, struct ll_err *err)
{
	struct event_object eo = {NULL, 0};
	int rc = split_event(line, len, opts, &eo, type, err);

	if (rc == 0 && *type == WATCH_ERROR && opts) {
		/* a Status: whole, whatever the projection of the watched kind */
		jdoc_unref(eo.obj);
		eo = (struct event_object){NULL, 0};
		rc = split_event(line, len, NULL, &eo, type, err);
	}
	if (rc) {
		jdoc_unref(eo.obj);
		eo.obj = NULL;
	}
	*obj = eo.obj;
	return rc;
}
