/*
 * fuzz_json.c - JSON from the network: jx_loads(), watch_event_parse() and jx_equal_subset() on
 * arbitrary bytes. A parsed value must survive a dump and reload unchanged, and must be a subset
 * of itself.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "kube/watchsplit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(json_t *v)
{
	char *s = jx_dumps(v);
	json_t *again = jx_loads(s, strlen(s), NULL);

	if (again == NULL || !json_equal(v, again) || !jx_equal_subset(v, again))
		abort();
	json_decref(again);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	enum watch_event_type type;
	json_t *v, *obj = NULL, *half;
	size_t mid = size / 2;

	v = jx_loads(p, size, NULL);
	if (v) {
		if (!jx_equal_subset(v, v))
			abort();
		roundtrip(v);
	}
	if (watch_event_parse(p, size, &type, &obj, NULL) == 0) {
		if (!json_is_object(obj) || v == NULL)
			abort();
		json_decref(obj);
	}
	/* two documents compared against each other must not crash whatever they are */
	half = jx_loads(p, mid, NULL);
	if (half && v) {
		jx_equal_subset(half, v);
		jx_equal_subset(v, half);
	}
	json_decref(half);
	json_decref(v);
	return 0;
}
