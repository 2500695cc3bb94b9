/*
 * admit_pods.c - the pod rules (issue 12, point 8): images from allowed.registries, pull
 * policies from allowed.imagePullPolicies, priority and runtime classes, and
 * denied.serviceAccounts, on Pods (CREATE, UPDATE, pods/ephemeralcontainers) and on the pod
 * templates of workloads, with the same messages.
 *
 * Only what a request changes is checked: on UPDATE, a container whose image (or pull policy)
 * is what the old object had for the same container, and a pod-level field equal to the old
 * one, pass. So tightening a rule never blocks a label change on an old Deployment, while a new
 * image, a new ephemeral container and every pod a controller creates are checked.
 */
#include <string.h>

#include "tenancy/admit_internal.h"
#include "tenancy/imageref.h"

static const char *const CONTAINER_KINDS[] = {"initContainers", "containers",
                                              "ephemeralContainers"};

static const char *const TEMPLATE_OWNERS[][2] = {
        {"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "daemonsets"},
        {"apps", "replicasets"}, {"batch", "jobs"},        {"", "replicationcontrollers"},
        {"batch", "cronjobs"},
};

bool adm__is_template_owner(const struct adm_request *rq)
{
	for (size_t i = 0; i < sizeof(TEMPLATE_OWNERS) / sizeof(TEMPLATE_OWNERS[0]); i++)
		if (adm__is(rq, TEMPLATE_OWNERS[i][0], TEMPLATE_OWNERS[i][1]))
			return true;
	return false;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Container @name of kind @kind in pod spec @spec, or the missing value. */
static struct jval container_named(struct jval spec, const char *kind, const char *name)
{
	struct jval list = jval_get(spec, kind), ct;
	size_t i;

	jval_foreach(list, i, ct)
		if (str_eq(jval_str(jval_get(ct, "name")), name))
			return ct;
	return (struct jval){0};
}

/* The pull policy the API server gives a container that names none (core/v1 defaults). */
static const char *pull_policy(struct jval ct, const char *image)
{
	const char *p = jval_str(jval_get(ct, "imagePullPolicy"));
	struct imageref ref;

	if (p && *p)
		return p;
	if (image && imageref_parse(image, strlen(image), &ref, NULL) == 0 &&
	    (strcmp(ref.tag, "latest") == 0 || (ref.tag[0] == '\0' && ref.digest[0] == '\0')))
		return "Always";
	return "IfNotPresent";
}

static bool image_check(struct adm_ctx *c, const char *image)
{
	struct jval list = adm__list(c->tenant, "allowed", "registries"), v;
	const char *entries[IMAGEREF_LIST_MAX];
	char msg[DENIAL_MSG_MAX];
	size_t n = 0, i;

	if (jval_type(list) != JT_ARRAY)
		return false;
	jval_foreach(list, i, v)
		if (n < IMAGEREF_LIST_MAX)
			entries[n++] = jval_str(v);
	if (imageref_check(image, strlen(image), c->tenant->name, entries, n, msg, sizeof(msg)))
		return false;
	return adm__violation(c, ADM_PODS, msg);
}

static bool container_check(struct adm_ctx *c, struct jval ct, struct jval old)
{
	const char *image = jval_str(jval_get(ct, "image"));
	const char *old_image = jval_str(jval_get(old, "image"));
	const char *name = jval_str(jval_get(ct, "name"));
	const char *policy = pull_policy(ct, image);
	char desc[DENIAL_VALUE_SHOWN * 4 + 32];
	struct denial d;

	if (image && !str_eq(image, old_image) && image_check(c, image))
		return true;
	if (jval_type(old) != JT_NONE && str_eq(policy, pull_policy(old, old_image)))
		return false;
	denial_init(&d, desc, sizeof(desc));
	denial_text(&d, "container ");
	denial_quote(&d, name ? name : "", name ? strlen(name) : 0);
	return adm__class_check(c, ADM_PODS, adm__list(c->tenant, "allowed", "imagePullPolicies"),
	                        "image pull policy", policy, desc);
}

static const char *service_account(struct jval spec)
{
	const char *sa = jval_str(jval_get(spec, "serviceAccountName"));

	if (sa == NULL || *sa == '\0')
		sa = jval_str(jval_get(spec, "serviceAccount"));
	return sa && *sa ? sa : "default";
}

static bool service_account_check(struct adm_ctx *c, struct jval spec, struct jval old_spec)
{
	struct jval denied = adm__list(c->tenant, "denied", "serviceAccounts");
	const char *sa = service_account(spec);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (!jval_has_string(denied, sa) ||
	    (jval_type(old_spec) != JT_NONE && str_eq(sa, service_account(old_spec))))
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "service account ");
	denial_quote(&d, sa, strlen(sa));
	denial_text(&d, " is denied to pods of tenant \"%s\" (any other is allowed; denied: ",
	            c->tenant->name);
	adm__list_items(&d, denied);
	denial_text(&d, ")");
	return adm__violation(c, ADM_PODS, msg);
}

/* A pod-level class field, checked when it changed. */
static bool class_field(struct adm_ctx *c, struct jval spec, struct jval old_spec,
                        const char *field, const char *list_name, const char *what)
{
	const char *v = jval_str(jval_get(spec, field));
	const char *old = jval_str(jval_get(old_spec, field));

	if (jval_type(old_spec) != JT_NONE && str_eq(v ? v : "", old ? old : ""))
		return false;
	/* a pod without a runtime class runs the cluster's default handler: always allowed */
	if (strcmp(field, "runtimeClassName") == 0 && (v == NULL || *v == '\0'))
		return false;
	return adm__class_check(c, ADM_PODS, adm__list(c->tenant, "allowed", list_name), what, v,
	                        "a pod");
}

/* Every rule on pod spec @spec; @old_spec is the one it replaces (missing on CREATE). */
static bool pod_spec(struct adm_ctx *c, struct jval spec, struct jval old_spec)
{
	struct jval list, ct;
	size_t k, i;

	for (k = 0; k < sizeof(CONTAINER_KINDS) / sizeof(CONTAINER_KINDS[0]); k++) {
		list = jval_get(spec, CONTAINER_KINDS[k]);
		jval_foreach(list, i, ct) {
			struct jval old = container_named(old_spec, CONTAINER_KINDS[k],
			                                  jval_str(jval_get(ct, "name")));

			if (container_check(c, ct, old))
				return true;
		}
	}
	return class_field(c, spec, old_spec, "priorityClassName", "priorityClasses",
	                   "priority class") ||
	       class_field(c, spec, old_spec, "runtimeClassName", "runtimeClasses",
	                   "runtime class") ||
	       service_account_check(c, spec, old_spec);
}

bool adm__pod(struct adm_ctx *c)
{
	return pod_spec(c, jval_get(c->rq->object, "spec"), jval_get(c->rq->old_object, "spec"));
}

static struct jval template_spec(struct jval obj, bool cronjob)
{
	if (cronjob)
		return jval_path(obj, "spec", "jobTemplate", "spec", "template", "spec", NULL);
	return jval_path(obj, "spec", "template", "spec", NULL);
}

bool adm__template(struct adm_ctx *c)
{
	bool cronjob = adm__is(c->rq, "batch", "cronjobs");
	struct jval old = template_spec(c->rq->old_object, cronjob);

	/* an old object without a template (a broken one) compares as nothing */
	if (c->rq->op != ADM_UPDATE)
		old = (struct jval){0};
	return pod_spec(c, template_spec(c->rq->object, cronjob), old);
}
