/*
 * fuzz_parse_status.c - kc__parse_status(), the metav1.Status of an answer, from a parsed body
 * or from the raw bytes of one that is not a Status.
 *
 * Input: bytes 0-1 pick the HTTP status (100..599); the rest is the body. The body is parsed as
 * the client parses answers (jx_loads) and handed over both parsed (or NULL) and raw. Reason and
 * message must stay terminated inside their fields; an error answer that is not a Status gets
 * its code and a non-empty message; a success that is not a Status leaves everything zero.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "kube/kube_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_status(const json_t *body)
{
	const char *kind = jx_str(body, "kind", NULL);

	return kind && strcmp(kind, "Status") == 0;
}

static void check(const json_t *body, long http, const struct kc_status *st)
{
	size_t msg = strnlen(st->message, sizeof(st->message));

	if (strnlen(st->reason, sizeof(st->reason)) == sizeof(st->reason) ||
	    msg == sizeof(st->message))
		abort();
	if (is_status(body))
		return;
	if (http < 400) {
		if (st->code || st->reason[0] || st->message[0])
			abort();
		return;
	}
	if (st->code != http || msg == 0)
		abort();
	if (strchr(" \t\r\n", st->message[msg - 1]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_status st;
	char *raw;
	json_t *body;
	long http;

	if (size < 2)
		return 0;
	http = 100 + (long)((data[0] << 8 | data[1]) % 500);
	data += 2;
	size -= 2;
	raw = malloc(size ? size : 1);
	memcpy(raw, data, size);
	body = jx_loads(raw, size, NULL);
	kc__parse_status(body, http, raw, size, &st);
	check(body, http, &st);
	kc__parse_status(NULL, http, raw, size, &st);
	check(NULL, http, &st);
	json_decref(body);
	free(raw);
	return 0;
}
