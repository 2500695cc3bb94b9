/*
 * fuzz_proxy.c - the tenant proxy's router, namespace table and JSON converter on any input.
 * Input: a path line, then a JSON document. Checks: a route's parts are segments of the path
 * and never hold a '/' outside a subresource; a table built from any names is one to one; a
 * document converted to upstream and back is what it was, or refused; message text converted
 * by whole names grows by the table's prefixes only.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "proxy/convert.h"
#include "proxy/nsmap.h"
#include "proxy/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_route(const char *path)
{
	static struct px_route r;
	const char *parts[5];

	if (px_route_parse(path, &r) == PX_BAD) {
		if (!r.why || !*r.why)
			abort();
		return;
	}
	parts[0] = r.tenant, parts[1] = r.ns, parts[2] = r.resource, parts[3] = r.name,
	parts[4] = r.group;
	for (size_t i = 0; i < 5; i++)
		if (parts[i] && (strchr(parts[i], '/') || strcmp(parts[i], "..") == 0))
			abort();
	if (r.ns && (strlen(r.ns) > 63 || !*r.ns))
		abort();
}

static void check_map(const struct px_nsmap *m)
{
	for (size_t i = 0; i < px_nsmap_len(m); i++) {
		const char *shown, *full = px_nsmap_at(m, i, &shown);

		if (strcmp(px_nsmap_full(m, shown), full) != 0 ||
		    strcmp(px_nsmap_shown(m, full), shown) != 0)
			abort();
	}
}

static void check_convert(const struct px_nsmap *m, const char *text, size_t len)
{
	json_t *doc = json_loadb(text, len, 0, NULL), *orig;
	struct px_conv up = {.map = m, .dir = PX_TO_UPSTREAM};
	struct px_conv down = {.map = m, .dir = PX_TO_USER};

	if (!doc)
		return;
	orig = json_deep_copy(doc);
	if (px_convert(&up, doc) == PX_CONV_OK && px_convert(&down, doc) == PX_CONV_OK &&
	    !json_equal(doc, orig)) {
		/* upstream then back may only differ in Status text, converted one way */
		char *s = json_dumps(orig, 0);

		if (!s || !strstr(s, "Status"))
			abort();
		free(s);
	}
	json_decref(orig);
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"acme-dev", "dev",    "acme-acme-dev",
	                                    "acme-x",   "legacy", "acme-"};
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : size;
	char *path = malloc(plen + 1);
	struct px_nsmap *m = px_nsmap_new("acme", names, 6);
	struct buf out = BUF_INIT(1 << 20);

	memcpy(path, data, plen);
	path[plen] = '\0';
	if (!memchr(data, '\0', plen))
		check_route(path);
	check_map(m);
	if (nl)
		check_convert(m, (const char *)nl + 1, size - plen - 1);
	if (!memchr(data, '\0', plen) && px_nsmap_text(m, path, &out) == 0 && out.len > plen)
		abort();
	buf_release(&out);
	px_nsmap_free(m);
	free(path);
	return 0;
}
