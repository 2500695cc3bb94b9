/*
 * fuzz_metrics_labels.c - metrics_labels() always yields a well-formed label set: whole pairs
 * only, each value unescaping back to the input, stopping only where the next pair would not fit.
 * Input: byte 0 is the output size; the rest is up to three values separated by NUL bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"a", "b", "c"};

static size_t escaped_len(const char *v)
{
	size_t n = 0;

	for (; *v; v++)
		n += (*v == '\\' || *v == '"' || *v == '\n') ? 2 : 1;
	return n;
}

/* Parse one `k="v"` at *p, compare with @key/@want, advance. False on any mismatch. */
static bool parse_pair(const char **p, const char *key, const char *want)
{
	const char *s = *p;
	size_t klen = strlen(key);

	if (strncmp(s, key, klen) != 0 || strncmp(s + klen, "=\"", 2) != 0)
		return false;
	for (s += klen + 2; *s != '"'; s++, want++) {
		char c = *s;

		if (c == '\0' || c == '\n')
			return false;
		if (c == '\\') {
			s++;
			c = *s == 'n' ? '\n' : *s;
			if (*s != 'n' && *s != '\\' && *s != '"')
				return false;
		}
		if (c != *want)
			return false;
	}
	if (*want != '\0')
		return false;
	*p = s + 1;
	return true;
}

static void check(const char *out, size_t out_len, const char *const vals[3])
{
	const char *p = out;
	size_t i;

	if (strlen(out) >= out_len)
		abort();
	for (i = 0; i < 3 && *p; i++) {
		if (i > 0 && *p++ != ',')
			abort();
		if (!parse_pair(&p, keys[i], vals[i]))
			abort();
	}
	if (*p != '\0')
		abort();
	/* Stopped early: the next pair must really not have fit. */
	if (i < 3 && strlen(out) + (i > 0) + strlen(keys[i]) + 3 + escaped_len(vals[i]) < out_len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf rendered = BUF_INIT(1u << 20);
	const char *vals[3] = {"", "", ""};
	char out[256];
	size_t out_len, n = 0;
	char *copy, *s;

	if (size < 1)
		return 0;
	out_len = data[0] ? data[0] : 1;
	copy = xmalloc(size);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	for (s = copy; n < 3 && s <= copy + size - 1; s += strlen(s) + 1)
		vals[n++] = s;
	metrics_labels(out, out_len, keys[0], vals[0], keys[1], vals[1], keys[2], vals[2], NULL);
	check(out, out_len, vals);
	metrics_add("fuzz_total", out, 1);
	if (metrics_render(&rendered) != 0)
		abort();
	buf_release(&rendered);
	metrics_reset_for_tests();
	free(copy);
	return 0;
}
