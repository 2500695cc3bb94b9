/*
 * fuzz_tenant_model.c - the desired state of any Tenant, however malformed, is computed without
 * crashing, and is valid where Kubernetes would check it: every claimed namespace name is a DNS
 * label, every label value landlord sets is a valid label value, and applying the metadata patch
 * to a namespace that already carries the desired metadata yields no patch (steady state).
 * Input: a Tenant object as JSON. Its name must be what the CRD admits; the spec need not
 * satisfy the schema.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/json.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/tenant_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool dns_label(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NAMES_MAX || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return true;
}

static bool label_value(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return true;
	if (n > NAMES_MAX || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

static void check_namespace(struct jval tenant, const struct lcfg *cfg, const struct tm_ns *claim)
{
	json_t *meta = tm_namespace_metadata(tenant, cfg, "plan", claim->name, claim, NULL);
	json_t *ns, *patch, *v;
	struct jdoc *nsd = NULL;
	const char *k;

	json_object_foreach(json_object_get(meta, "labels"), k, v)
		if (!label_value(json_string_value(v)))
			abort();
	ns = json_pack("{s:{s:s,s:s,s:O,s:O}}", "metadata", "name", claim->name, "resourceVersion",
	               "1", "labels", json_object_get(meta, "labels"), "annotations",
	               json_object_get(meta, "annotations"));
	/* the namespace as the informer would cache it */
	if (jdoc_from_json(ns, NULL, &nsd, NULL) != 0)
		abort();
	patch = tm_metadata_patch(jdoc_root(nsd), meta);
	if (patch != NULL)
		abort();
	json_decref(tm_rolebindings(tenant, cfg, claim->name, json_object_get(meta, "labels"),
	                            claim, true));
	json_decref(tm_rolebindings(tenant, cfg, claim->name, NULL, claim, false));
	json_decref(tm_release_patch(jdoc_root(nsd), jval_name(tenant)));
	jdoc_unref(nsd);
	json_decref(ns);
	json_decref(meta);
}

/* A tenant's ClusterRole never lets anyone delete every namespace: a delete rule names them. */
static void check_role(const json_t *role)
{
	const json_t *rule;
	size_t i;

	json_array_foreach(json_object_get(role, "rules"), i, rule) {
		const json_t *verbs = json_object_get(rule, "verbs");

		if (json_array_size(verbs) == 1 &&
		    strcmp(json_string_value(json_array_get(verbs, 0)), "delete") == 0 &&
		    json_array_size(json_object_get(rule, "resourceNames")) == 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *tenant = jx_loads((const char *)data, size, NULL);
	struct lcfg *cfg = lcfg_defaults();
	struct tm_claims claims;
	struct jdoc *doc = NULL;

	/* the model reads the cached document, as the controller does */
	if (tenant && jdoc_from_json(tenant, NULL, &doc, NULL) < 0)
		doc = NULL;
	/* the CRD admits only DNS-label names of at most 40 characters */
	if (json_is_object(tenant) && jx_name(tenant) && dns_label(jx_name(tenant)) &&
	    strlen(jx_name(tenant)) <= 40 && doc && tm_claims_build(jdoc_root(doc), &claims) == 0) {
		json_t *names = json_object();

		for (size_t i = 0; i < claims.n; i++) {
			if (!dns_label(claims.ns[i].name) || !label_value(claims.ns[i].kind))
				abort();
			check_namespace(jdoc_root(doc), cfg, &claims.ns[i]);
			json_object_set_new(names, claims.ns[i].name, json_true());
		}
		tm_claims_release(&claims);
		for (int which = 0; which < TM_TENANT_ROLES; which++) {
			json_t *role = tm_clusterrole(jdoc_root(doc), which, names);

			check_role(role);
			json_decref(role);
			json_decref(tm_clusterrolebinding(jdoc_root(doc), which));
		}
		json_decref(names);
		json_decref(tm_networkpolicy(jdoc_root(doc), "ns", NULL));
		json_decref(tm_limitrange(jdoc_root(doc), jdoc_root(doc), "ns"));
		json_decref(tm_canonical_quantities(jd_get(doc, "spec", NULL)));
		json_decref(tm_resourcequota(jdoc_root(doc), "ns", jx_get(tenant, "spec", NULL)));
	}
	lcfg_unref(cfg);
	jdoc_unref(doc);
	json_decref(tenant);
	return 0;
}
