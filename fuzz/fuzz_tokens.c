/*
 * fuzz_tokens.c - the tenant proxy's token helpers (src/proxy/tokens.h) on any input:
 *  - px_token_jwt_exp() on the bytes as a token: true only for exactly three segments, with an
 *    exp in 0..2^32, the same answer twice;
 *  - the bytes as a JWT payload (base64url-encoded here, between a header and a signature):
 *    the exp read agrees with jansson reading the bytes themselves (duplicates rejected, an
 *    integer or real exp in 0..2^32, a fraction dropped);
 *  - px_token_sa_namespace() on the bytes as a user name: true only for
 *    "system:serviceaccount:" NS ":" NAME with NS a DNS label and NAME a DNS subdomain (checked
 *    with k8sname.h), NS copied whole, and false with a buffer one byte short.
 * Input: any bytes, NULs included.
 */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/k8sname.h"
#include "proxy/tokens.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXP_MAX (1LL << 32)
#define PREFIX  "system:serviceaccount:"

static void check_token(const char *s, size_t size)
{
	int64_t exp = -1, again = -2;
	bool ok = px_token_jwt_exp(s, size, &exp);
	size_t dots = 0;

	for (size_t i = 0; i < size; i++)
		dots += s[i] == '.';
	if (ok && (dots != 2 || exp < 0 || exp > EXP_MAX))
		abort();
	if (px_token_jwt_exp(s, size, &again) != ok || (ok && again != exp))
		abort();
}

/* jansson's reading of @data as claims: the exp px_token_jwt_exp() must find, or false. */
static bool oracle_exp(const uint8_t *data, size_t size, int64_t *exp)
{
	json_t *claims = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *v = json_object_get(claims, "exp");
	bool ok = false;

	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= EXP_MAX) {
		*exp = json_integer_value(v);
		ok = true;
	} else if (json_is_real(v) && isfinite(json_real_value(v)) && json_real_value(v) >= 0 &&
	           json_real_value(v) <= (double)EXP_MAX) {
		*exp = (int64_t)json_real_value(v);
		ok = true;
	}
	json_decref(claims);
	return ok;
}

static void check_payload(const uint8_t *data, size_t size)
{
	static const char abc[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char tok[PX_TOKEN_MAX];
	size_t n = 0;
	uint32_t acc = 0;
	int bits = 0;
	int64_t want = -1, got = -2;
	bool want_ok, ok;

	if (size > (PX_TOKEN_MAX - 16) / 4 * 3)
		return;
	memcpy(tok, "eyJ.", 4);
	n = 4;
	for (size_t i = 0; i < size; i++) {
		acc = (acc << 8) | data[i];
		for (bits += 8; bits >= 6; bits -= 6)
			tok[n++] = abc[(acc >> (bits - 6)) & 63];
	}
	if (bits > 0)
		tok[n++] = abc[(acc << (6 - bits)) & 63];
	memcpy(tok + n, ".sig", 4);
	n += 4;
	want_ok = oracle_exp(data, size, &want);
	ok = px_token_jwt_exp(tok, n, &got);
	if (ok != want_ok || (ok && got != want))
		abort();
}

static void check_sa(const char *s)
{
	char ns[80];
	bool ok = px_token_sa_namespace(s, ns, sizeof(ns));
	size_t plen = sizeof(PREFIX) - 1, nslen;
	const char *rest;

	if (!ok) {
		if (ns[0] != '\0')
			abort();
		return;
	}
	nslen = strlen(ns);
	rest = s + plen + nslen;
	if (strncmp(s, PREFIX, plen) != 0 || strncmp(s + plen, ns, nslen) != 0 || *rest != ':' ||
	    strchr(rest + 1, ':') != NULL || k8s_dns_label_problem(ns, nslen) != NULL ||
	    k8s_dns_subdomain_problem(rest + 1, strlen(rest + 1)) != NULL)
		abort();
	if (px_token_sa_namespace(s, ns, nslen) || !px_token_sa_namespace(s, ns, nslen + 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size > PX_TOKEN_MAX + 1)
		return 0;
	s = malloc(size + 1);
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_token(s, size);
	check_payload(data, size);
	check_sa(s);
	free(s);
	return 0;
}
