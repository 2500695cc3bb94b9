/*
 * admit.c - adm_decide(): who is exempt, cordons, and which family's rules a request meets
 * (see admit.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "tenancy/admit_internal.h"

static const char *const FAMILY_NAMES[ADM_FAMILY_N] = {
        [ADM_RBAC] = "rolebindings", [ADM_STORAGE] = "storage",       [ADM_INGRESS] = "ingress",
        [ADM_SERVICES] = "services", [ADM_CORDON] = "cordon",         [ADM_PODS] = "pods",
        [ADM_TENANTS] = "tenants",   [ADM_NAMESPACES] = "namespaces", [ADM_TEMPLATES] = "templates",
};

const char *adm_family_name(enum adm_family f)
{
	return (unsigned)f < ADM_FAMILY_N ? FAMILY_NAMES[f] : NULL;
}

int adm_family_parse(const char *name)
{
	for (int f = 0; name && f < ADM_FAMILY_N; f++)
		if (strcmp(FAMILY_NAMES[f], name) == 0)
			return f;
	return -1;
}

static unsigned op_of(const char *s)
{
	static const char *const names[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};

	for (unsigned i = 0; s && i < 4; i++)
		if (strcmp(names[i], s) == 0)
			return 1u << i;
	return 0;
}

/* A string member, "" when absent or null; false when present with another type. */
static bool opt_str(struct jval obj, const char *key, const char **out)
{
	struct jval v = jval_get(obj, key);

	*out = jval_str(v) ? jval_str(v) : "";
	return jval_type(v) == JT_NONE || jval_type(v) == JT_NULL || jval_type(v) == JT_STRING;
}

int adm_request_read(struct jval req, struct adm_request *out, struct ll_err *err)
{
	struct jval res = jval_get(req, "resource"), user = jval_get(req, "userInfo");

	*out = (struct adm_request){.req = req};
	if (jval_type(req) != JT_OBJECT)
		return ll_err_set(err, -EINVAL, "request: must be an object");
	out->op = op_of(jval_str(jval_get(req, "operation")));
	if (out->op == 0)
		return ll_err_set(err, -EINVAL,
		                  "request.operation: must be CREATE, UPDATE, DELETE "
		                  "or CONNECT");
	if (!opt_str(res, "group", &out->group) || !opt_str(res, "resource", &out->resource) ||
	    *out->resource == '\0')
		return ll_err_set(err, -EINVAL, "request.resource: must name a resource");
	if (!opt_str(req, "subResource", &out->subresource) ||
	    !opt_str(req, "namespace", &out->ns) || !opt_str(req, "name", &out->name) ||
	    !opt_str(user, "username", &out->username))
		return ll_err_set(err, -EINVAL,
		                  "request: subResource, namespace, name and "
		                  "userInfo.username must be strings");
	out->groups = jval_get(user, "groups");
	if (jval_type(out->groups) != JT_NONE && jval_type(out->groups) != JT_ARRAY)
		return ll_err_set(err, -EINVAL, "request.userInfo.groups: must be an array");
	out->object = jval_get(req, "object");
	out->old_object = jval_get(req, "oldObject");
	return 0;
}

void adm__warn(struct adm_decision *d, const char *msg)
{
	if (d->n_warnings == ADM_WARNINGS_MAX) {
		d->dropped_warnings++;
		return;
	}
	snprintf(d->warnings[d->n_warnings++], ADM_WARNING_MAX, "%s", msg);
}

bool adm__violation(struct adm_ctx *c, enum adm_family f, const char *msg)
{
	char line[ADM_WARNING_MAX];

	if (c->view->ops->mode(c->view->ctx, f) == ADM_AUDIT) {
		snprintf(line, sizeof(line), "audit: %s", msg);
		adm__warn(c->d, line);
		c->d->audited |= 1u << f;
		return false;
	}
	c->d->allowed = false;
	c->d->code = 403;
	c->d->family = f;
	snprintf(c->d->message, sizeof(c->d->message), "%s", msg);
	return true;
}

bool adm__is(const struct adm_request *rq, const char *group, const char *resource)
{
	return strcmp(rq->group, group) == 0 && strcmp(rq->resource, resource) == 0;
}

struct jval adm__list(const struct adm_tenant *t, const char *section, const char *field)
{
	struct jval v = jval_path(t->obj, "spec", section, field, NULL);

	return jval_type(v) == JT_ARRAY ? v : (struct jval){0};
}

void adm__list_items(struct denial *d, struct jval list)
{
	struct jval v;
	size_t i, n = 0;

	jval_foreach(list, i, v) {
		if (jval_str(v) == NULL)
			continue;
		if (jval_strlen(v) == 0)
			denial_item(d, n++, "\"\" (none)", 9, false);
		else
			denial_item(d, n++, jval_str(v), jval_strlen(v), false);
	}
	denial_list_end(d, n);
}

bool adm__class_check(struct adm_ctx *c, enum adm_family f, struct jval list, const char *what,
                      const char *value, const char *object_desc)
{
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (jval_type(list) != JT_ARRAY || jval_has_string(list, value ? value : ""))
		return false;
	denial_init(&d, msg, sizeof(msg));
	if (value && *value) {
		denial_text(&d, "%s ", what);
		denial_quote(&d, value, strlen(value));
		if (object_desc)
			denial_text(&d, " of %s", object_desc);
	} else {
		denial_text(&d, "%s without %s %s", object_desc ? object_desc : "an object",
		            strchr("aeiou", what[0]) ? "an" : "a", what);
	}
	denial_text(&d, " is not allowed for tenant \"%s\" (allowed: ", c->tenant->name);
	adm__list_items(&d, list);
	denial_text(&d, ")");
	return adm__violation(c, f, msg);
}

static bool in_group(const struct adm_request *rq, const char *group)
{
	return jval_has_string(rq->groups, group);
}

/*
 * landlord itself, the LandlordConfig's privileged subjects and the groups the policies and the
 * webhook configurations exempt (cluster administrators, landlord:privileged): no tenant rule
 * applies.
 */
static bool privileged(const struct adm_ctx *c)
{
	const char *groups[64];
	size_t n = 0, i;
	struct jval g;
	const char *self = c->view->ops->self_user(c->view->ctx);

	if (self && *self && strcmp(self, c->rq->username) == 0)
		return true;
	if (in_group(c->rq, GROUP_MASTERS) || in_group(c->rq, GROUP_PRIVILEGED))
		return true;
	jval_foreach(c->rq->groups, i, g)
		if (jval_str(g) && n < sizeof(groups) / sizeof(groups[0]))
			groups[n++] = jval_str(g);
	return lcfg_is_privileged_user(c->view->ops->config(c->view->ctx),
	                               *c->rq->username ? c->rq->username : NULL, groups, n);
}

/* The cluster's own components, exempt from every rule but the pod rules (issue 12, point 5). */
static bool system_component(const struct adm_request *rq)
{
	static const char kube_system_sa[] = "system:serviceaccount:kube-system:";

	return in_group(rq, "system:nodes") ||
	       strcmp(rq->username, "system:kube-controller-manager") == 0 ||
	       strncmp(rq->username, kube_system_sa, sizeof(kube_system_sa) - 1) == 0;
}

/* Events pass a cordon (Capsule does the same): they record, they do not run anything. */
static bool cordon_applies(const struct adm_request *rq)
{
	if (rq->op == ADM_CONNECT || strcmp(rq->subresource, "status") == 0)
		return false;
	return !adm__is(rq, "", "events") && !adm__is(rq, "events.k8s.io", "events");
}

bool adm__cordon(struct adm_ctx *c)
{
	struct jval ns = c->view->ops->namespace_obj(c->view->ctx, c->rq->ns);
	const char *label = jval_label(ns, LABEL_CORDONED);
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (!cordon_applies(c->rq))
		return false;
	denial_init(&d, msg, sizeof(msg));
	if (jval_bool(jval_path(c->tenant->obj, "spec", "cordoned", NULL), false))
		denial_text(&d,
		            "tenant \"%s\" is cordoned: no object in its namespaces may be "
		            "created, changed or deleted (ask an administrator to set "
		            "spec.cordoned to false)",
		            c->tenant->name);
	else if (label && strcmp(label, "true") == 0)
		denial_text(&d,
		            "namespace \"%s\" of tenant \"%s\" is cordoned: no object in it may "
		            "be created, changed or deleted (ask an administrator to remove the "
		            "label " LABEL_CORDONED ")",
		            c->rq->ns, c->tenant->name);
	else
		return false;
	return adm__violation(c, ADM_CORDON, msg);
}

static bool is_pod(const struct adm_request *rq)
{
	return adm__is(rq, "", "pods") && (rq->op & (ADM_CREATE | ADM_UPDATE)) &&
	       (*rq->subresource == '\0' || strcmp(rq->subresource, "ephemeralcontainers") == 0);
}

/* Namespaced objects other than pods, by resource; only CREATE and UPDATE carry rules. */
static bool namespaced_rules(struct adm_ctx *c)
{
	const struct adm_request *rq = c->rq;

	if (!(rq->op & (ADM_CREATE | ADM_UPDATE)) || *rq->subresource)
		return false;
	if (adm__is(rq, "rbac.authorization.k8s.io", "rolebindings"))
		return adm__rolebinding(c);
	if (adm__is(rq, "", "persistentvolumeclaims"))
		return adm__pvc(c);
	if (adm__is(rq, "networking.k8s.io", "ingresses"))
		return adm__ingress(c);
	if (adm__is(rq, "gateway.networking.k8s.io", "httproutes"))
		return adm__httproute(c);
	if (adm__is(rq, "gateway.networking.k8s.io", "gateways"))
		return adm__gateway(c);
	if (adm__is(rq, "", "services"))
		return adm__service(c);
	if (adm__is_template_owner(rq))
		return adm__template(c);
	if (adm__is(rq, LANDLORD_GROUP, "templateinstances"))
		return adm__template_instance(c);
	return false;
}

static void decide_cluster(struct adm_ctx *c)
{
	const struct adm_request *rq = c->rq;

	if (adm__is(rq, LANDLORD_GROUP, "tenants") && *rq->subresource == '\0' &&
	    (rq->op & (ADM_CREATE | ADM_UPDATE)))
		adm__tenant_object(c);
	else if (adm__is(rq, LANDLORD_GROUP, "plans") && rq->op == ADM_DELETE)
		adm__plan_delete(c);
	else if (adm__is(rq, LANDLORD_GROUP, "templates") && *rq->subresource == '\0' &&
	         (rq->op & (ADM_CREATE | ADM_UPDATE)))
		adm__template_object(c);
}

/*
 * A request in a namespace the view does not know. The API server sends a namespaced request
 * only for a namespace that exists and carries landlord.dev/tenant (the configurations'
 * selectors), so the caches are behind: a namespace just created or labelled. Judged as no
 * tenant's it would pass every rule; it is refused with 503 instead, which clients retry. A
 * Namespace being created is not in the caches yet by nature: the namespace rules judge it.
 */
static bool unknown_namespace(struct adm_ctx *c)
{
	const struct adm_request *rq = c->rq;
	struct denial d;

	if (adm__is(rq, "", "namespaces") ||
	    jval_type(c->view->ops->namespace_obj(c->view->ctx, rq->ns)) != JT_NONE)
		return false;
	c->d->allowed = false;
	c->d->code = 503;
	denial_init(&d, c->d->message, sizeof(c->d->message));
	denial_text(&d, "namespace ");
	denial_quote(&d, rq->ns, strlen(rq->ns));
	denial_text(&d, " is not in landlord's caches yet (just created or labelled for a tenant): "
	                "try again in a moment");
	return true;
}

static void decide(const struct adm_request *rq, const struct adm_view *view,
                   struct adm_decision *d)
{
	struct adm_ctx c = {.rq = rq, .view = view, .d = d};
	bool system;

	if (*rq->ns == '\0') {
		decide_cluster(&c);
		return;
	}
	if (rq->op == ADM_CREATE && adm__is(rq, "", "namespaces")) {
		if (!privileged(&c) && !system_component(rq))
			adm__namespace_create(&c);
		return;
	}
	c.tenant = view->ops->tenant_of_namespace(view->ctx, rq->ns);
	if (adm__is(rq, LANDLORD_GROUP, "templateinstances") && *rq->subresource == '\0' &&
	    (rq->op & (ADM_CREATE | ADM_UPDATE)))
		adm__last_writer(&c, privileged(&c), system_component(rq));
	if (privileged(&c))
		return;
	if (c.tenant == NULL) {
		unknown_namespace(&c);
		return;
	}
	system = system_component(rq);
	if (!system && adm__cordon(&c))
		return;
	if (is_pod(rq)) {
		adm__pod(&c);
		return;
	}
	if (!system)
		namespaced_rules(&c);
}

void adm_decide(const struct adm_request *rq, const struct adm_view *view, struct adm_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->allowed = true;
	d->ns.max = -1;
	if (view->ops->hold)
		view->ops->hold(view->ctx);
	decide(rq, view, d);
	if (view->ops->release)
		view->ops->release(view->ctx);
}
