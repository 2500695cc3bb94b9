/*
 * fuzz_scan_continue.c - kc__scan_continue(), which reads a list page's continue token from the
 * raw bytes of an answer before they are parsed.
 *
 * Input: the page's bytes. Whenever the scan is sure (LAST or NEXT) and the page parses with
 * duplicate keys rejected, the scan must agree with the parsed metadata.continue; a token is set
 * for NEXT only.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "kube/kube_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly @size bytes, so reading past the end is caught */
	char *raw = malloc(size ? size : 1);
	char *token = NULL;
	enum kc_scan got;
	json_t *page;
	const char *want;

	memcpy(raw, data, size);
	got = kc__scan_continue(raw, size, &token);
	if ((got == KC_SCAN_NEXT) != (token != NULL))
		abort();
	if (got != KC_SCAN_UNSURE && (page = jx_loads(raw, size, NULL)) != NULL) {
		want = jx_str(page, "metadata", "continue", NULL);
		if (got == KC_SCAN_LAST && want && *want)
			abort();
		if (got == KC_SCAN_NEXT && (want == NULL || strcmp(want, token) != 0))
			abort();
		json_decref(page);
	}
	free(token);
	free(raw);
	return 0;
}
