/*
 * watchsplit.h - split a watch response body into events.
 *
 * The API server streams one JSON object per line ({"type":"ADDED","object":{...}}\n) over a
 * chunked HTTP body whose chunk boundaries are arbitrary. The splitter accepts bytes as they
 * arrive and yields complete lines. A line longer than @max_line (default 16 MiB, above the API
 * server's ~3 MiB object limit so a large object can never wedge a relist) is an error: the
 * splitter then refuses further input (-EMSGSIZE) and the caller must drop the stream.
 * Blank lines are skipped. Not thread-safe: one splitter per stream.
 */
#ifndef LANDLORD_WATCHSPLIT_H
#define LANDLORD_WATCHSPLIT_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"

#define WATCHSPLIT_DEFAULT_MAX_LINE (16u << 20)

struct watchsplit {
	struct buf pending;
	size_t scan_from; /* bytes of pending already searched for '\n' */
	int failed;       /* sticky error */
	size_t max_line;  /* longest accepted line */
};

void watchsplit_init(struct watchsplit *ws, size_t max_line /* 0: default */);
void watchsplit_release(struct watchsplit *ws);
/**
 * watchsplit_feed() - add bytes, calling @on_line for every complete non-empty line (without
 * its '\n'; not NUL-terminated). If @on_line returns non-zero, feeding stops and that value is
 * returned (the unconsumed rest stays pending). Return: 0, the callback's value, or -EMSGSIZE.
 */
int watchsplit_feed(struct watchsplit *ws, const char *data, size_t len,
                    int (*on_line)(const char *line, size_t len, void *ud), void *ud);
/**
 * watchsplit_pending() - bytes held: a partial line, plus, after @on_line stopped a feed, the
 * complete lines not yet delivered (the next feed, even of 0 bytes, delivers them first).
 */
size_t watchsplit_pending(const struct watchsplit *ws);

/** Event types of a watch stream. */
enum watch_event_type {
	WATCH_ADDED,
	WATCH_MODIFIED,
	WATCH_DELETED,
	WATCH_BOOKMARK,
	WATCH_ERROR,
};

/**
 * watch_event_parse() - parse one line into its type and object.
 * Return: 0 with *obj a new reference; -EPROTO for malformed JSON, an unknown type or a
 * missing object (detail in @err).
 */
struct ll_err;
int watch_event_parse(const char *line, size_t len, enum watch_event_type *type /* OUT */,
                      json_t **obj /* OUT */, struct ll_err *err);
/**
 * watch_event_parse_doc() - the same, parsed straight into a document: the object is built
 * with @opts (a projection; an ERROR event's Status is always whole), with no jansson tree.
 * Return: 0 with *obj a new reference, or -EPROTO as watch_event_parse() (*obj NULL).
 */
struct jdoc;
struct jdoc_opts;
int watch_event_parse_doc(const char *line, size_t len, const struct jdoc_opts *opts,
                          enum watch_event_type *type /* OUT */, struct jdoc **obj /* OUT */,
                          struct ll_err *err);

#endif
