/*
 * fuzz_k8sname.c - the name rules agree with apimachinery's regular expressions and lengths on
 * any input (compiled with POSIX regex here, so the check shares no code with k8sname.c), and
 * every problem is a non-empty sentence. Input: the bytes to check, NULs included.
 */
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/k8sname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { RX_LABEL, RX_SUBDOMAIN, RX_NAME, RX_COUNT };

static bool matches(int which, const char *s)
{
	static const char *const src[RX_COUNT] = {
	        "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
	        "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
	        "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
	};
	static regex_t rx[RX_COUNT];
	static bool ready;

	if (!ready) {
		for (int i = 0; i < RX_COUNT; i++)
			if (regcomp(&rx[i], src[i], REG_EXTENDED | REG_NOSUB))
				abort();
		ready = true;
	}
	return regexec(&rx[which], s, 0, NULL, 0) == 0;
}

static void agree(const char *problem, bool want_valid)
{
	if ((problem == NULL) != want_valid || (problem != NULL && problem[0] == '\0'))
		abort();
}

static bool key_valid(const char *s, size_t len)
{
	const char *slash = strchr(s, '/');
	char prefix[300];

	if (slash == NULL)
		return len <= 63 && matches(RX_NAME, s);
	if (strchr(slash + 1, '/') || (size_t)(slash - s) > 253)
		return false;
	memcpy(prefix, s, (size_t)(slash - s));
	prefix[slash - s] = '\0';
	return matches(RX_SUBDOMAIN, prefix) && strlen(slash + 1) <= 63 &&
	       matches(RX_NAME, slash + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[512];
	bool has_nul;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	has_nul = strlen(s) != size; /* a NUL inside is never valid: no expression admits it */
	agree(k8s_dns_label_problem(s, size), !has_nul && size <= 63 && matches(RX_LABEL, s));
	agree(k8s_dns_subdomain_problem(s, size),
	      !has_nul && size <= 253 && matches(RX_SUBDOMAIN, s));
	agree(k8s_label_value_problem(s, size),
	      !has_nul && size <= 63 && (size == 0 || matches(RX_NAME, s)));
	agree(k8s_label_key_problem(s, size), !has_nul && key_valid(s, size));
	return 0;
}
