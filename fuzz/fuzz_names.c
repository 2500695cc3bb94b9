/*
 * fuzz_names.c - every names output is valid, deterministic, unchanged exactly when the input
 * was already valid, and names_claims_check() reports exactly the clashing claims.
 * Input: one byte choosing @max, then up to three NUL-separated parts.
 */
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenancy/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* apimachinery's own expressions, so the check does not share code with names.c. */
static bool matches(const char *re, const char *s)
{
	static regex_t dns, value;
	static bool ready;

	if (!ready) {
		if (regcomp(&dns, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", REG_EXTENDED | REG_NOSUB) ||
		    regcomp(&value, "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
		            REG_EXTENDED | REG_NOSUB))
			abort();
		ready = true;
	}
	return regexec(re[0] == 'd' ? &dns : &value, s, 0, NULL, 0) == 0;
}

static bool is_dns(const char *s, size_t max)
{
	return strlen(s) <= max && matches("dns", s);
}

static bool is_value(const char *s)
{
	return strlen(s) <= NAMES_MAX && matches("value", s);
}

static void check_dns_label(const char *raw, size_t max)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	if (names_dns_label(raw, max, out) != 0 || names_dns_label(raw, max, again) != 0)
		abort();
	if (!is_dns(out, max) || strcmp(out, again) != 0)
		abort();
	if (is_dns(raw, max) != (strcmp(out, raw) == 0))
		abort();
}

static void check_label_value(const char *raw)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	if (names_label_value(raw, out) != 0 || names_label_value(raw, again) != 0)
		abort();
	if (!is_value(out) || strcmp(out, again) != 0 || (out[0] == '\0') != (raw[0] == '\0'))
		abort();
	if (is_value(raw) != (strcmp(out, raw) == 0))
		abort();
}

static void check_join(const char *a, const char *b, const char *suffix)
{
	char out[NAMES_BUF], again[NAMES_BUF];

	if (names_join(a, b, suffix, out) != 0 || names_join(a, b, suffix, again) != 0)
		abort();
	if (!is_dns(out, NAMES_MAX) || strcmp(out, again) != 0)
		abort();
}

static bool same_request(const struct names_claim *x, const struct names_claim *y)
{
	return strcmp(x->owner, y->owner) == 0 && strcmp(x->prefix, y->prefix) == 0 &&
	       strcmp(x->name, y->name) == 0 && strcmp(x->suffix, y->suffix) == 0;
}

/* Brute force: a claim is marked exactly when another claim shares its name, not its request. */
static void check_claims(const char *p[3])
{
	struct names_claim c[6] = {
	        {.owner = p[0], .prefix = p[0], .name = p[1], .suffix = p[2]},
	        {.owner = p[0], .prefix = p[0], .name = p[1], .suffix = ""},
	        {.owner = p[1], .prefix = "", .name = p[2], .suffix = ""},
	        {.owner = p[2], .prefix = p[1], .name = p[0], .suffix = ""},
	        {.owner = p[0], .prefix = p[0], .name = p[1], .suffix = p[2]},
	        {.owner = "", .prefix = "", .name = p[0], .suffix = ""},
	};
	size_t n = sizeof(c) / sizeof(c[0]), i, j, ncolliding, marked = 0;
	bool clash;

	if (names_claims_check(c, n, &ncolliding, NULL) != 0)
		abort();
	for (i = 0; i < n; i++) {
		if (!is_dns(c[i].final, NAMES_MAX))
			abort();
		clash = false;
		for (j = 0; j < n; j++)
			clash |= strcmp(c[i].final, c[j].final) == 0 && !same_request(&c[i], &c[j]);
		if (clash != (c[i].collides_with != NAMES_NO_COLLISION))
			abort();
		if (!clash)
			continue;
		marked++;
		j = c[i].collides_with;
		if (j >= n || strcmp(c[i].final, c[j].final) != 0 || same_request(&c[i], &c[j]))
			abort();
	}
	if (marked != ncolliding)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p[3] = {"", "", ""};
	size_t max, n = 0, i;
	char *s;

	if (size == 0)
		return 0;
	max = NAMES_MIN_MAX + data[0] % (NAMES_MAX - NAMES_MIN_MAX + 1);
	s = malloc(size);
	if (s == NULL)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	/* Parts are NUL-separated; the copy's final NUL ends the last one. */
	p[n++] = s;
	for (i = 0; i + 1 < size && n < 3; i++)
		if (s[i] == '\0')
			p[n++] = s + i + 1;
	for (i = 0; i < 3; i++) {
		check_dns_label(p[i], max);
		check_label_value(p[i]);
	}
	check_join(p[0], p[1], NULL);
	check_join(p[0], p[1], p[2]);
	check_claims(p);
	free(s);
	return 0;
}
