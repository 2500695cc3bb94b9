/*
 * fuzz_extension.c - the AppProject and rbac key built from any Tenant spec, Extension spec and
 * LandlordConfig argocd object (hibernation/extension_internal.h). Input: a JSON object
 * {"tenant": <Tenant spec>, "argoCD": <Extension spec.argoCD>, "cfg": <integrations.argocd>}.
 * Checked: every rbac line is "g, <safe name>, proj:fz:<role>"; every role group is safe; every
 * user and group is either written or refused (never both, never dropped); the build never
 * fails and owns what it returns.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jdoc.h"
#include "hibernation/extension_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count_names(struct jval spec)
{
	static const char *const roles[] = {"owners", "editors", "viewers"};
	size_t n = 0;

	for (size_t r = 0; r < 3; r++) {
		struct jval s = jval_path(spec, "accessControl", roles[r], NULL);
		struct jval users = jval_get(s, "users"), groups = jval_get(s, "groups"), v;
		size_t i;

		jval_foreach(users, i, v)
			n++;
		jval_foreach(groups, i, v)
			n++;
	}
	return n;
}

static size_t check_csv(const char *csv)
{
	size_t lines = 0;

	for (const char *p = csv; *p; lines++) {
		const char *end = strchr(p, '\n'), *name = p + 3, *sep;
		char *line;

		if (end == NULL || strncmp(p, "g, ", 3) != 0)
			abort();
		line = strndup(name, (size_t)(end - name));
		sep = strstr(line, ", proj:fz:");
		if (sep == NULL)
			abort();
		line[sep - line] = '\0';
		if (!ext_name_safe(line) ||
		    (strcmp(sep + 10, "owner") && strcmp(sep + 10, "editor") &&
		     strcmp(sep + 10, "viewer")))
			abort();
		free(line);
		p = end + 1;
	}
	return lines;
}

static size_t check_groups(const json_t *project)
{
	const json_t *roles = json_object_get(json_object_get(project, "spec"), "roles"), *role, *g;
	size_t i, j, n = 0;

	json_array_foreach(roles, i, role)
		json_array_foreach(json_object_get(role, "groups"), j, g) {
			if (!ext_name_safe(json_string_value(g)))
				abort();
			n++;
		}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jdoc *doc = NULL;
	struct ext_want w;
	json_t *cfg = NULL;
	const char *ns[] = {"fz-a", "fz-b"};

	if (jdoc_parse((const char *)data, size, NULL, &doc, NULL) < 0)
		return 0;
	cfg = jval_to_json(jval_get(jdoc_root(doc), "cfg"));
	struct ext_in in = {.tenant = "fz",
	                    .argo_ns = "argocd",
	                    .argocd = jval_get(jdoc_root(doc), "argoCD"),
	                    .tenant_spec = jval_get(jdoc_root(doc), "tenant"),
	                    .cfg = json_is_object(cfg) ? cfg : NULL,
	                    .namespaces = ns,
	                    .n_namespaces = size % 3};
	if (ext_want_build(&in, &w) < 0)
		abort();
	if (check_csv(w.csv) + check_groups(w.project) + json_array_size(w.refused) !=
	    count_names(in.tenant_spec))
		abort();
	ext_want_release(&w);
	json_decref(cfg);
	jdoc_unref(doc);
	return 0;
}
