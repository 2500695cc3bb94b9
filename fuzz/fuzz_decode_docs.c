/*
 * fuzz_decode_docs.c - the informer's decoding path: LIST pages and watch events parsed straight
 * into documents (jdoc_parse_items() with a projection and root defaults, and
 * watch_event_parse_doc()), checked against the jansson path on the same bytes.
 *
 * Input: byte 0 picks the projection (bit 0: keep metadata and data only; bit 1: drop
 * metadata.labels); the rest is one watch line and, at the same time, one LIST page. Whenever both
 * paths accept an event they agree on its type and (without \u escapes, where yajl and jansson
 * differ on lone surrogates) on the object; an unprojected page yields one document per element
 * of the "items" array jansson sees, and every object item has a kind (its own or the default).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/json.h"
#include "kube/watchsplit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keep[] = {"metadata", "data", NULL};
static const char *const drop[] = {"metadata.labels", "metadata.managedFields", NULL};
static const char *const defaults[] = {"apiVersion", "v1", "kind", "ConfigMap", NULL};

struct items {
	size_t n;
	bool bad_kind;
};

static int count_item(void *ctx, struct jdoc *take_item)
{
	struct items *it = ctx;

	if (jval_type(jdoc_root(take_item)) == JT_OBJECT &&
	    jval_type(jd_get(take_item, "kind", NULL)) == JT_NONE)
		it->bad_kind = true; /* the default fills a missing kind */
	it->n++;
	jdoc_unref(take_item);
	return 0;
}

static void check_event(const char *p, size_t len, const struct jdoc_opts *o, bool escapes)
{
	enum watch_event_type tj, td, tp;
	json_t *oj = NULL;
	struct jdoc *od = NULL, *op = NULL;
	int rj = watch_event_parse(p, len, &tj, &oj, NULL);
	int rd = watch_event_parse_doc(p, len, NULL, &td, &od, NULL);
	int rp = watch_event_parse_doc(p, len, o, &tp, &op, NULL);

	if ((rd == 0) != (od != NULL) || (rp == 0) != (op != NULL))
		abort();
	if (rd == 0 && rj == 0 && (td != tj || (!escapes && !jval_equal_json(jdoc_root(od), oj))))
		abort();
	/* a projection never makes an event unreadable, nor changes its type */
	if (rd == 0 && (rp != 0 || tp != td))
		abort();
	json_decref(oj);
	jdoc_unref(od);
	jdoc_unref(op);
}

static void check_page(const char *p, size_t len, const struct jdoc_opts *o)
{
	struct jdoc_opts plain = {.defaults = defaults};
	struct items a = {0, false}, b = {0, false};
	json_t *page = jx_loads(p, len, NULL);
	const json_t *items = json_object_get(page, "items");
	int ra = jdoc_parse_items(p, len, "items", &plain, count_item, &a, NULL, NULL);
	int rb = jdoc_parse_items(p, len, "items", o, count_item, &b, NULL, NULL);

	if (ra == 0 && (rb != 0 || a.n != b.n || a.bad_kind))
		abort();
	if (ra == 0 && json_is_array(items) && a.n != json_array_size(items))
		abort();
	json_decref(page);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jdoc_opts o = {.defaults = defaults};
	const char *p = (const char *)data + 1;
	size_t len;

	if (size < 1)
		return 0;
	len = size - 1;
	if (data[0] & 1)
		o.keep = keep;
	if (data[0] & 2)
		o.drop = drop;
	check_event(p, len, &o, memmem(p, len, "\\u", 2) != NULL);
	check_page(p, len, &o);
	return 0;
}
