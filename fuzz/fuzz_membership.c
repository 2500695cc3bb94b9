/*
 * fuzz_membership.c - tm_subject_verdict() on any subject agrees with an independent reading of
 * the membership rule (docs/tenants.md, "Only members are bound"). Input: one byte picks the
 * kind (User, Group, ServiceAccount, or another), then the name, then after a NUL the
 * ServiceAccount's namespace.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tenancy/landlordconfig.h"
#include "tenancy/membership.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const KINDS[] = {"User", "Group", "ServiceAccount", "Robot"};

/* "system:serviceaccount:<ns>:<name>" with non-empty parts and no further colon. */
static bool sa_user(const char *user, const char *ns, const char *name)
{
	static const char prefix[] = "system:serviceaccount:";
	size_t nl = strlen(ns);

	return strncmp(user, prefix, sizeof(prefix) - 1) == 0 &&
	       strncmp(user + sizeof(prefix) - 1, ns, nl) == 0 &&
	       user[sizeof(prefix) - 1 + nl] == ':' &&
	       (name ? strcmp(user + sizeof(prefix) + nl, name) == 0
	             : user[sizeof(prefix) + nl] != '\0' &&
	                        !strchr(user + sizeof(prefix) + nl, ':'));
}

static enum tm_verdict expected(int kind, const char *name, const char *ns)
{
	if (*name == '\0')
		return TM_OUTSIDER;
	if (kind == 0) {
		if (!strcmp(name, "alice") || sa_user(name, "acme-dev", NULL) ||
		    sa_user(name, "ci", "bot"))
			return TM_MEMBER;
		return !strcmp(name, "ops") || sa_user(name, "monitoring", "prometheus")
		               ? TM_EXCEPTION
		               : TM_OUTSIDER;
	}
	if (kind == 1) {
		if (!strcmp(name, "team-a") || !strcmp(name, "system:serviceaccounts:acme-dev"))
			return TM_MEMBER;
		return !strcmp(name, "platform") ? TM_EXCEPTION : TM_OUTSIDER;
	}
	if (kind == 2) {
		ns = *ns ? ns : "acme-dev";
		if (!strcmp(ns, "acme-dev") || (!strcmp(ns, "ci") && !strcmp(name, "bot")))
			return TM_MEMBER;
		return !strcmp(ns, "monitoring") && !strcmp(name, "prometheus") ? TM_EXCEPTION
		                                                                : TM_OUTSIDER;
	}
	return TM_OUTSIDER;
}

static struct lcfg *config(void)
{
	static struct lcfg *cfg;
	json_t *obj;

	if (cfg == NULL) {
		obj = json_loads(
		        "{\"spec\":{\"privileged\":{\"users\":[\"ops\"],\"groups\":"
		        "[\"platform\"],\"serviceAccounts\":[\"monitoring:prometheus\"]}}}",
		        0, NULL);
		if (lcfg_parse(obj, &cfg, NULL) != 0)
			abort();
		json_decref(obj);
	}
	return cfg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char tenant_json[] =
	        "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"accessControl\":{"
	        "\"owners\":{\"users\":[\"alice\"],\"groups\":[\"team-a\"]},"
	        "\"viewers\":{\"serviceAccounts\":[{\"namespace\":\"ci\",\"name\":\"bot\"}]}}}}";
	static struct jdoc *tenant;
	static json_t *namespaces;
	char buf[1024] = "", *name = buf, *ns;
	struct jdoc *subject = NULL;
	json_t *obj;
	int kind;

	if (tenant == NULL) {
		/* the Tenant and the subject are read in place from documents, as cached */
		if (jdoc_parse(tenant_json, sizeof(tenant_json) - 1, NULL, &tenant, NULL) != 0)
			abort();
		namespaces = json_loads("{\"acme-dev\":true}", 0, NULL);
	}
	if (size < 1 || size > sizeof(buf) - 2)
		return 0;
	kind = data[0] % 4;
	memcpy(buf, data + 1, size - 1); /* buf ends in two NULs: name, then namespace */
	ns = name + strlen(name) + 1;
	obj = json_pack("{s:s,s:s?,s:s?}", "kind", KINDS[kind], "name", name, "namespace",
	                *ns ? ns : NULL);
	if (obj == NULL) /* not UTF-8: the API server would not store it */
		return 0;
	if (jdoc_from_json(obj, NULL, &subject, NULL) != 0)
		abort();
	if (tm_subject_verdict(jdoc_root(tenant), config(), namespaces, "acme-dev",
	                       jdoc_root(subject)) != expected(kind, name, ns))
		abort();
	jdoc_unref(subject);
	json_decref(obj);
	return 0;
}
