/*
 * fuzz_selector.c - sel_parse() and sel_from_json() never crash, and sel_to_string() output
 * parses back to a selector with the same string and the same matches.
 * The first byte picks the input form: even = string, odd = LabelSelector JSON (seeds use
 * "0" and "1").
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "kube/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const label_sets[] = {
        "{}",
        "{\"a\":\"v\"}",
        "{\"a\":\"\"}",
        "{\"a\":\"w\",\"b\":\"v\"}",
        "{\"b\":\"1\",\"in\":\"notin\"}",
        "{\"a\":\"5\",\"x.io/k\":\"in\"}",
        "{\"x.io/k\":\"\",\"a\":\"-3\"}",
};

static void check_round_trip(const struct sel *s)
{
	struct buf first = BUF_INIT(BUF_MAX_INTERNAL), second = BUF_INIT(BUF_MAX_INTERNAL);
	struct sel *t = NULL;
	json_t *labels;
	size_t i;

	if (sel_to_string(s, &first) != 0)
		abort();
	if (sel_parse(buf_cstr(&first), &t, NULL) != 0 || sel_to_string(t, &second) != 0)
		abort();
	if (strcmp(buf_cstr(&first), buf_cstr(&second)) != 0 || sel_is_empty(s) != sel_is_empty(t))
		abort();
	for (i = 0; i < sizeof(label_sets) / sizeof(label_sets[0]); i++) {
		labels = json_loads(label_sets[i], 0, NULL);
		if (sel_matches(s, labels) != sel_matches(t, labels))
			abort();
		json_decref(labels);
	}
	sel_free(t);
	buf_release(&first);
	buf_release(&second);
}

static struct sel *from_json(const uint8_t *data, size_t size)
{
	struct sel *s = NULL;
	json_t *ls = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	if (ls && sel_from_json(ls, &s, NULL) != 0)
		s = NULL;
	json_decref(ls);
	return s;
}

static struct sel *from_string(const uint8_t *data, size_t size)
{
	char *str = xstrndup((const char *)data, size);
	struct sel *s = NULL;

	if (sel_parse(str, &s, NULL) != 0)
		s = NULL;
	free(str);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sel *s;

	if (size == 0)
		return 0;
	s = (data[0] & 1) ? from_json(data + 1, size - 1) : from_string(data + 1, size - 1);
	if (s == NULL)
		return 0;
	if (sel_matches_nothing(s)) {
		if (sel_matches(s, NULL))
			abort();
	} else {
		check_round_trip(s);
	}
	sel_free(s);
	return 0;
}
