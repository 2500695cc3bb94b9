/*
 * fuzz_tplstatus.c - any namespaces, objects, reasons and messages (any bytes) give a status
 * that is valid JSON within the CRDs' bounds: at most 20 failing entries and their strings
 * within their byte limits, rows not ready first and then by name, the omitted counts adding
 * up; and the same status whatever the order of the calls.
 * Input: lines; a line "ns\tobject\treason\tmessage" is a failing entry, any other line a row
 * whose namespace is the line and whose first byte sets ready and the counts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "tenancy/tplstatus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Line @line (NUL-terminated; left as it was) into @s. */
static void feed(struct tpl_status *s, char *line)
{
	char *f[4] = {line, NULL, NULL, NULL};

	for (int k = 1; k < 4; k++) {
		f[k] = f[k - 1] != NULL ? strchr(f[k - 1], '\t') : NULL;
		if (f[k] != NULL)
			*f[k]++ = '\0';
	}
	if (f[3] != NULL)
		tpl_status_failing(s, f[0], f[1], f[2], f[3]);
	for (int k = 1; k < 4; k++)
		if (f[k] != NULL)
			f[k][-1] = '\t';
	if (f[3] == NULL)
		tpl_status_row(
		        s, &(struct tpl_row){.ns = line,
		                             .ready = line[0] & 1,
		                             .applied = (long long)line[0] - 100,
		                             .rendered = (long long)(unsigned char)line[0] << 30,
		                             .deployments = {line[0] & 2, line[0] & 4},
		                             .pods = {.pending = line[0] & 8,
		                                      .unknown = -(long long)line[0]}});
}

static void check_strings(const json_t *f)
{
	static const char *const keys[] = {"namespace", "object", "reason", "message"};
	static const size_t max[] = {TPL_NAMESPACE_MAX, TPL_OBJECT_MAX, TPL_REASON_MAX,
	                             TPL_MESSAGE_MAX};

	for (int k = 0; k < 4; k++)
		if (!json_is_string(json_object_get(f, keys[k])) ||
		    json_string_length(json_object_get(f, keys[k])) > max[k])
			abort();
}

static void check(const json_t *st, size_t lines)
{
	const json_t *rows = json_object_get(st, "rows"), *failing = json_object_get(st, "failing");
	const json_t *row, *prev = NULL, *f;
	size_t i;

	if (json_array_size(rows) > TPL_ROWS_MAX || json_array_size(failing) > TPL_FAILING_MAX)
		abort();
	if ((size_t)(json_integer_value(json_object_get(st, "rowsOmitted")) +
	             json_integer_value(json_object_get(st, "failingOmitted"))) +
	            json_array_size(rows) + json_array_size(failing) !=
	    lines)
		abort();
	json_array_foreach(rows, i, row) {
		const char *ns = json_string_value(json_object_get(row, "namespace"));
		bool ready = json_is_true(json_object_get(row, "ready"));

		if (ns == NULL || strlen(ns) > TPL_NAMESPACE_MAX)
			abort();
		if (prev != NULL) {
			bool was = json_is_true(json_object_get(prev, "ready"));
			const char *pns = json_string_value(json_object_get(prev, "namespace"));

			if (was > ready || (was == ready && strcmp(pns, ns) > 0))
				abort();
		}
		prev = row;
	}
	json_array_foreach(failing, i, f)
		check_strings(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size), **lines = NULL;
	struct tpl_status *a = tpl_status_new(), *b = tpl_status_new();
	size_t n = 0;
	json_t *x, *y;
	char *dump;

	for (char *p = text, *nl; p != NULL; p = nl != NULL ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl != NULL)
			*nl = '\0';
		lines = xreallocarray(lines, n + 1, sizeof(*lines));
		lines[n++] = p;
	}
	for (size_t i = 0; i < n; i++)
		feed(a, lines[i]);
	for (size_t i = n; i-- > 0;)
		feed(b, lines[i]);
	x = tpl_status_json(a);
	y = tpl_status_json(b);
	dump = json_dumps(x, JSON_COMPACT);
	if (dump == NULL || strlen(dump) > TPL_STATUS_BYTES_MAX || !json_equal(x, y))
		abort();
	check(x, n);
	free(dump);
	json_decref(x);
	json_decref(y);
	tpl_status_free(a);
	tpl_status_free(b);
	free(lines);
	free(text);
	return 0;
}
