/* hostmatch.c - hosts against allowed.hosts, and overlapping hosts (see hostmatch.h). */
#include "tenancy/hostmatch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "kube/k8sname.h"
#include "tenancy/denial.h"
#include "tenancy/regexset.h"

struct hm_policy {
	bool restricted; /* names or regex given (A3) */
	bool deny_wildcards;
	char **names; /* a NULL name allows nothing */
	size_t n_names;
	struct rxs *rx; /* NULL without patterns */
};

bool hm_is_wildcard(const char *host, size_t len)
{
	return len >= 2 && host[0] == '*' && host[1] == '.';
}

const char *hm_host_problem(const char *host, size_t len)
{
	const char *name = host, *problem;
	size_t label = 0;

	if (len == 0)
		return "it is empty";
	if (len > HM_HOST_MAX)
		return "it is longer than 253 bytes";
	if (hm_is_wildcard(host, len)) {
		name += 2;
		len -= 2;
	}
	if (memchr(name, '*', len) != NULL)
		return "'*' may only be a whole first label, as in *.example.com";
	problem = k8s_dns_subdomain_problem(name, len);
	if (problem != NULL)
		return problem;
	for (size_t i = 0; i < len; i++) {
		label = name[i] == '.' ? 0 : label + 1;
		if (label > HM_LABEL_MAX)
			return "each label must be no more than 63 characters";
	}
	return NULL;
}

void hm_policy_free(struct hm_policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_names; i++)
		free(p->names[i]);
	free(p->names);
	rxs_free(p->rx);
	free(p);
}

static int add_patterns(struct hm_policy *p, const struct hm_allowed *spec, struct ll_err *err)
{
	struct ll_err e = {{0}};
	int rc;

	if (spec->n_regex == 0)
		return 0;
	p->rx = rxs_new();
	for (size_t i = 0; i < spec->n_regex; i++) {
		if (spec->regex[i] == NULL)
			return ll_err_set(err, -EINVAL, "allowed.hosts.regex[%zu] is not a string",
			                  i);
		rc = rxs_add(p->rx, spec->regex[i], strlen(spec->regex[i]), &e);
		if (rc != 0)
			return ll_err_set(err, rc, "allowed.hosts.regex: %s", e.msg);
	}
	return 0;
}

int hm_policy_new(const struct hm_allowed *spec, struct hm_policy **out, struct ll_err *err)
{
	struct hm_policy *p = xcalloc(1, sizeof(*p));
	int rc = 0;

	*out = NULL;
	if (spec == NULL)
		goto out;
	if (spec->n_names > HM_NAMES_MAX) {
		rc = ll_err_set(err, -E2BIG, "allowed.hosts.names has more than %d names",
		                HM_NAMES_MAX);
		goto out;
	}
	p->restricted = spec->names != NULL || spec->regex != NULL;
	p->deny_wildcards = spec->deny_wildcards;
	p->n_names = spec->names != NULL ? spec->n_names : 0;
	p->names = xcalloc(p->n_names + 1, sizeof(*p->names));
	for (size_t i = 0; i < p->n_names; i++)
		p->names[i] = xstrdup(spec->names[i]);
	rc = add_patterns(p, spec, err);
out:
	if (rc != 0)
		hm_policy_free(p);
	else
		*out = p;
	return rc;
}

/* names: absent, or an array of strings; a string holding a NUL becomes NULL (allows nothing). */
static int read_names(const json_t *arr, struct hm_allowed *spec, const char ***names,
                      struct ll_err *err)
{
	const json_t *v;
	size_t i;

	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return ll_err_set(err, -EINVAL, "allowed.hosts.names must be an array");
	if (json_array_size(arr) > HM_NAMES_MAX)
		return ll_err_set(err, -E2BIG, "allowed.hosts.names has more than %d names",
		                  HM_NAMES_MAX);
	*names = xcalloc(json_array_size(arr) + 1, sizeof(**names));
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			return ll_err_set(err, -EINVAL, "allowed.hosts.names[%zu] is not a string",
			                  i);
		if (strlen(json_string_value(v)) == json_string_length(v))
			(*names)[i] = json_string_value(v);
	}
	spec->names = *names;
	spec->n_names = json_array_size(arr);
	return 0;
}

static int read_pattern(const json_t *v, const char **out, struct ll_err *err)
{
	if (!json_is_string(v))
		return ll_err_set(err, -EINVAL, "allowed.hosts.regex must be a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return ll_err_set(err, -EINVAL, "allowed.hosts.regex holds a NUL character");
	*out = json_string_value(v);
	return 0;
}

/* regex: absent, one string, or an array of strings. */
static int read_regex(const json_t *re, struct hm_allowed *spec, const char ***regex,
                      struct ll_err *err)
{
	size_t n = json_is_array(re) ? json_array_size(re) : 1;
	int rc = 0;

	if (re == NULL || json_is_null(re))
		return 0;
	if (n > RXS_SET_MAX)
		return ll_err_set(err, -E2BIG, "allowed.hosts.regex has more than %d patterns",
		                  RXS_SET_MAX);
	*regex = xcalloc(n + 1, sizeof(**regex));
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = read_pattern(json_is_array(re) ? json_array_get(re, i) : re, &(*regex)[i],
		                  err);
	spec->regex = *regex;
	spec->n_regex = n;
	return rc;
}

int hm_policy_from_json(const json_t *hosts, struct hm_policy **out, struct ll_err *err)
{
	struct hm_allowed spec = {0};
	const char **names = NULL, **regex = NULL;
	const json_t *dw;
	int rc;

	*out = NULL;
	if (hosts == NULL || json_is_null(hosts))
		return hm_policy_new(NULL, out, err);
	if (!json_is_object(hosts))
		return ll_err_set(err, -EINVAL, "allowed.hosts must be an object");
	dw = json_object_get(hosts, "denyWildcards");
	rc = read_names(json_object_get(hosts, "names"), &spec, &names, err);
	if (rc == 0)
		rc = read_regex(json_object_get(hosts, "regex"), &spec, &regex, err);
	if (rc == 0 && dw != NULL && !json_is_null(dw) && !json_is_boolean(dw))
		rc = ll_err_set(err, -EINVAL, "allowed.hosts.denyWildcards must be a boolean");
	spec.deny_wildcards = json_is_true(dw);
	if (rc == 0)
		rc = hm_policy_new(&spec, out, err);
	free(names);
	free(regex);
	return rc;
}

enum hm_verdict hm_check(const struct hm_policy *p, const char *host, size_t len, bool *limited)
{
	if (limited != NULL)
		*limited = false;
	if (hm_host_problem(host, len) != NULL)
		return HM_INVALID;
	if (p != NULL && p->deny_wildcards && hm_is_wildcard(host, len))
		return HM_WILDCARD_DENIED;
	if (p == NULL || !p->restricted)
		return HM_ALLOWED;
	for (size_t i = 0; i < p->n_names; i++)
		if (p->names[i] != NULL && strlen(p->names[i]) == len &&
		    memcmp(p->names[i], host, len) == 0)
			return HM_ALLOWED;
	if (p->rx != NULL && rxs_match(p->rx, host, len, limited) >= 0)
		return HM_ALLOWED;
	return HM_NOT_ALLOWED;
}

static void list_allowed(struct denial *d, const struct hm_policy *p)
{
	size_t shown = 0, n_rx = p != NULL && p->rx != NULL ? rxs_count(p->rx) : 0;

	for (size_t i = 0; p != NULL && i < p->n_names; i++)
		if (p->names[i] != NULL)
			denial_item(d, shown++, p->names[i], strlen(p->names[i]), false);
	if (shown > 0 || n_rx == 0)
		denial_list_end(d, shown);
	if (n_rx == 0)
		return;
	denial_text(d, "%shosts matching ", shown > 0 ? "; " : "");
	for (size_t i = 0; i < n_rx; i++)
		denial_item(d, i, rxs_pattern(p->rx, i), strlen(rxs_pattern(p->rx, i)), true);
	denial_list_end(d, n_rx);
}

void hm_denial(const struct hm_policy *p, enum hm_verdict v, const char *tenant, const char *host,
               size_t len, char *msg, size_t size)
{
	struct denial d;

	denial_init(&d, msg, size);
	if (v == HM_ALLOWED)
		return;
	denial_text(&d, v == HM_WILDCARD_DENIED ? "wildcard host " : "host ");
	denial_quote(&d, host, len);
	if (v == HM_INVALID) {
		denial_text(&d, " is not a valid host name: %s",
		            hm_host_problem(host, len) ?: "it is not");
		return;
	}
	denial_text(&d, " is not allowed for tenant ");
	denial_quote(&d, tenant, strlen(tenant));
	if (v == HM_WILDCARD_DENIED) {
		denial_text(&d, " (wildcard hosts are denied)");
		return;
	}
	denial_text(&d, " (allowed: ");
	list_allowed(&d, p);
	denial_text(&d, ")");
}

/* Does wildcard @w ("*.S") serve @h (H3)? @h ends in ".S" after at least one byte; with
 * HM_ONE_LABEL what comes before is one label. */
static bool serves(const char *w, size_t wlen, const char *h, size_t hlen, enum hm_wildcard mode)
{
	size_t slen = wlen - 2, plen;

	if (hlen < slen + 2 || memcmp(h + hlen - slen, w + 2, slen) != 0 ||
	    h[hlen - slen - 1] != '.')
		return false;
	plen = hlen - slen - 1;
	return mode == HM_ANY_LABELS || memchr(h, '.', plen) == NULL;
}

bool hm_overlap(const char *a, size_t alen, const char *b, size_t blen, enum hm_wildcard mode)
{
	if (hm_host_problem(a, alen) != NULL || hm_host_problem(b, blen) != NULL)
		return false;
	if (alen == blen && memcmp(a, b, alen) == 0)
		return true;
	return (hm_is_wildcard(a, alen) && serves(a, alen, b, blen, mode)) ||
	       (hm_is_wildcard(b, blen) && serves(b, blen, a, alen, mode));
}

void hm_conflict(const char *host, size_t len, const char *other, size_t other_len,
                 const char *other_tenant, char *msg, size_t size)
{
	struct denial d;

	denial_init(&d, msg, size);
	denial_text(&d, "host ");
	denial_quote(&d, host, len);
	denial_text(&d, " overlaps ");
	denial_quote(&d, other, other_len);
	denial_text(&d, ", a host of tenant ");
	denial_quote(&d, other_tenant, strlen(other_tenant));
}

const char *hm_find_overlap(const struct hm_index_ops *ops, const void *ud, const char *host,
                            const char **other)
{
	char wildcard[HM_HOST_MAX + 2];
	const char *t, *p;

	if ((t = ops->exact(ud, host, other)) != NULL)
		return t;
	for (p = strchr(host, '.'); p; p = strchr(p + 1, '.')) {
		snprintf(wildcard, sizeof(wildcard), "*%s", p);
		if ((t = ops->exact(ud, wildcard, other)) != NULL)
			return t;
	}
	return hm_is_wildcard(host, strlen(host)) ? ops->below(ud, host, other) : NULL;
}
