/*
 * admit_net.c - the rules on what a tenant exposes and stores (issue 12, point 7): PVC storage
 * classes; Ingress, HTTPRoute and Gateway classes and hosts; Service types and externalIPs.
 * In spec.services, an absent field allows its type (the CRD: absent means no restriction) and
 * false refuses it; externalIPs are refused unless spec.services.externalIPs is true, since
 * they capture any traffic to those addresses (CVE-2020-8554).
 *
 * As for pods, an UPDATE is checked on what it changes: a class equal to the old object's and a
 * host the old object already served pass.
 */
#include <stdio.h>
#include <string.h>

#include "tenancy/admit_internal.h"

#define DESC_MAX (DENIAL_VALUE_SHOWN * 4 + 64)

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* "Kind \"name\"" into @out, the name quoted as a value. */
static const char *describe(const struct adm_request *rq, const char *kind, char out[DESC_MAX])
{
	const char *name = jval_name(rq->object);
	struct denial d;

	if (name == NULL || *name == '\0')
		name = jval_str(jval_path(rq->object, "metadata", "generateName", NULL));
	denial_init(&d, out, DESC_MAX);
	denial_text(&d, "%s ", kind);
	denial_quote(&d, name ? name : "", name ? strlen(name) : 0);
	return out;
}

/* A class checked on CREATE and when an UPDATE changes it. */
static bool class_changed(struct adm_ctx *c, const char *v, const char *old)
{
	return c->rq->op != ADM_UPDATE || !str_eq(v, old);
}

bool adm__pvc(struct adm_ctx *c)
{
	struct jval obj = c->rq->object, old = c->rq->old_object;
	const char *cls = jval_str(jval_path(obj, "spec", "storageClassName", NULL));
	const char *old_cls = jval_str(jval_path(old, "spec", "storageClassName", NULL));
	char desc[DESC_MAX];

	if (cls == NULL)
		cls = jval_annotation(obj, "volume.beta.kubernetes.io/storage-class");
	if (old_cls == NULL)
		old_cls = jval_annotation(old, "volume.beta.kubernetes.io/storage-class");
	if (!class_changed(c, cls, old_cls))
		return false;
	return adm__class_check(c, ADM_STORAGE, adm__list(c->tenant, "allowed", "storageClasses"),
	                        "storage class", cls,
	                        describe(c->rq, "PersistentVolumeClaim", desc));
}

/* Does the tenant list hosts (names or regex), so that a request must name its hosts? */
static bool hosts_listed(const struct adm_tenant *t)
{
	struct jval h = jval_path(t->obj, "spec", "allowed", "hosts", NULL);

	return jval_type(jval_get(h, "names")) == JT_ARRAY ||
	       jval_type(jval_get(h, "regex")) != JT_NONE;
}

static bool host_check(struct adm_ctx *c, const char *host)
{
	const struct adm_tenant *t = c->tenant;
	const char *other_tenant, *other = NULL;
	char msg[DENIAL_MSG_MAX];
	enum hm_verdict v;

	if (t->hosts_error) {
		struct denial d;

		denial_init(&d, msg, sizeof(msg));
		denial_text(&d, "host ");
		denial_quote(&d, host, strlen(host));
		denial_text(&d,
		            " cannot be checked: spec.allowed.hosts of tenant \"%s\" is invalid "
		            "(ask an administrator to fix it)",
		            t->name);
		return adm__violation(c, ADM_INGRESS, msg);
	}
	v = hm_check(t->hosts, host, strlen(host), NULL);
	if (v != HM_ALLOWED) {
		hm_denial(t->hosts, v, t->name, host, strlen(host), msg, sizeof(msg));
		return adm__violation(c, ADM_INGRESS, msg);
	}
	other_tenant = c->view->ops->host_user(c->view->ctx, host, t->name, &other);
	if (other_tenant == NULL)
		return false;
	if (other && strcmp(other, host) != 0) {
		hm_conflict(host, strlen(host), other, strlen(other), other_tenant, msg,
		            sizeof(msg));
	} else {
		struct denial d;

		denial_init(&d, msg, sizeof(msg));
		denial_text(&d, "host ");
		denial_quote(&d, host, strlen(host));
		denial_text(&d, " is already used by tenant ");
		denial_quote(&d, other_tenant, strlen(other_tenant));
		denial_text(&d, " (a host serves one tenant: choose another)");
	}
	return adm__violation(c, ADM_INGRESS, msg);
}

/* A host of @obj that @old already had is not checked again. */
static bool host_new(struct adm_ctx *c, const char *host,
                     bool (*had)(struct jval old, const char *host))
{
	return c->rq->op != ADM_UPDATE || !had(c->rq->old_object, host);
}

static bool no_host(struct adm_ctx *c, const char *what)
{
	char msg[DENIAL_MSG_MAX];
	struct denial d;

	if (!hosts_listed(c->tenant))
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d,
	            "%s serves every host, which tenant \"%s\" may not (name hosts that "
	            "spec.allowed.hosts allows)",
	            what, c->tenant->name);
	return adm__violation(c, ADM_INGRESS, msg);
}

static bool ingress_had(struct jval old, const char *host)
{
	struct jval rules = jval_path(old, "spec", "rules", NULL),
	            tls = jval_path(old, "spec", "tls", NULL), r;
	size_t i;

	jval_foreach(rules, i, r)
		if (str_eq(jval_str(jval_get(r, "host")), host))
			return true;
	jval_foreach(tls, i, r)
		if (jval_has_string(jval_get(r, "hosts"), host))
			return true;
	return false;
}

static bool ingress_hosts(struct adm_ctx *c, const char *desc)
{
	struct jval rules = jval_path(c->rq->object, "spec", "rules", NULL);
	struct jval tls = jval_path(c->rq->object, "spec", "tls", NULL), r, h;
	size_t i, j;
	const char *host;

	jval_foreach(rules, i, r) {
		host = jval_str(jval_get(r, "host"));
		if (host == NULL || *host == '\0') {
			if (!ingress_had(c->rq->old_object, "") &&
			    no_host(c, "a rule without a host"))
				return true;
		} else if (host_new(c, host, ingress_had) && host_check(c, host)) {
			return true;
		}
	}
	jval_foreach(tls, i, r) {
		struct jval hosts = jval_get(r, "hosts");

		jval_foreach(hosts, j, h)
			if ((host = jval_str(h)) && host_new(c, host, ingress_had) &&
			    host_check(c, host))
				return true;
	}
	if (jval_type(jval_path(c->rq->object, "spec", "defaultBackend", NULL)) == JT_OBJECT &&
	    jval_type(jval_path(c->rq->old_object, "spec", "defaultBackend", NULL)) != JT_OBJECT)
		return no_host(c, desc);
	return false;
}

bool adm__ingress(struct adm_ctx *c)
{
	struct jval obj = c->rq->object, old = c->rq->old_object;
	const char *cls = jval_str(jval_path(obj, "spec", "ingressClassName", NULL));
	const char *old_cls = jval_str(jval_path(old, "spec", "ingressClassName", NULL));
	char desc[DESC_MAX], with_backend[DESC_MAX + 32];

	if (cls == NULL)
		cls = jval_annotation(obj, "kubernetes.io/ingress.class");
	if (old_cls == NULL)
		old_cls = jval_annotation(old, "kubernetes.io/ingress.class");
	describe(c->rq, "Ingress", desc);
	if (class_changed(c, cls, old_cls) &&
	    adm__class_check(c, ADM_INGRESS, adm__list(c->tenant, "allowed", "ingressClasses"),
	                     "ingress class", cls, desc))
		return true;
	snprintf(with_backend, sizeof(with_backend), "the defaultBackend of %s", desc);
	return ingress_hosts(c, with_backend);
}

static bool hostnames_had(struct jval old, const char *host)
{
	return jval_has_string(jval_path(old, "spec", "hostnames", NULL), host);
}

bool adm__httproute(struct adm_ctx *c)
{
	struct jval names = jval_path(c->rq->object, "spec", "hostnames", NULL), h;
	const char *host;
	size_t i;

	/* no hostnames: the route takes the hostnames of the Gateway listeners it attaches to */
	jval_foreach(names, i, h)
		if ((host = jval_str(h)) && host_new(c, host, hostnames_had) && host_check(c, host))
			return true;
	return false;
}

static bool listener_had(struct jval old, const char *host)
{
	struct jval listeners = jval_path(old, "spec", "listeners", NULL), l;
	size_t i;

	jval_foreach(listeners, i, l)
		if (str_eq(jval_str(jval_get(l, "hostname")), host))
			return true;
	return false;
}

bool adm__gateway(struct adm_ctx *c)
{
	const char *cls = jval_str(jval_path(c->rq->object, "spec", "gatewayClassName", NULL));
	const char *old = jval_str(jval_path(c->rq->old_object, "spec", "gatewayClassName", NULL));
	struct jval listeners = jval_path(c->rq->object, "spec", "listeners", NULL), l;
	const char *host;
	char desc[DESC_MAX];
	size_t i;

	if (class_changed(c, cls, old) &&
	    adm__class_check(c, ADM_INGRESS, adm__list(c->tenant, "allowed", "ingressClasses"),
	                     "gateway class", cls, describe(c->rq, "Gateway", desc)))
		return true;
	jval_foreach(listeners, i, l) {
		host = jval_str(jval_get(l, "hostname"));
		if (host == NULL || *host == '\0') {
			if (!listener_had(c->rq->old_object, "") &&
			    no_host(c, "a Gateway listener without a hostname"))
				return true;
		} else if (host_new(c, host, listener_had) && host_check(c, host)) {
			return true;
		}
	}
	return false;
}

static const struct {
	const char *type;
	const char *field;
} SERVICE_TYPES[] = {
        {"NodePort", "nodePort"},
        {"LoadBalancer", "loadBalancer"},
        {"ExternalName", "externalName"},
};

static bool type_allowed(const struct adm_tenant *t, const char *field)
{
	return jval_bool(jval_path(t->obj, "spec", "services", field, NULL), true);
}

static bool service_type(struct adm_ctx *c, const char *desc)
{
	const char *type = jval_str(jval_path(c->rq->object, "spec", "type", NULL));
	const char *old = jval_str(jval_path(c->rq->old_object, "spec", "type", NULL));
	char msg[DENIAL_MSG_MAX];
	struct denial d;
	size_t i, k;

	if (!class_changed(c, type, old))
		return false;
	for (i = 0; i < sizeof(SERVICE_TYPES) / sizeof(SERVICE_TYPES[0]); i++)
		if (str_eq(type, SERVICE_TYPES[i].type) &&
		    !type_allowed(c->tenant, SERVICE_TYPES[i].field))
			break;
	if (i == sizeof(SERVICE_TYPES) / sizeof(SERVICE_TYPES[0]))
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "%s of type %s is not allowed for tenant \"%s\" (allowed types: ClusterIP",
	            desc, SERVICE_TYPES[i].type, c->tenant->name);
	for (k = 0; k < sizeof(SERVICE_TYPES) / sizeof(SERVICE_TYPES[0]); k++)
		if (type_allowed(c->tenant, SERVICE_TYPES[k].field))
			denial_text(&d, ", %s", SERVICE_TYPES[k].type);
	denial_text(&d, ")");
	return adm__violation(c, ADM_SERVICES, msg);
}

static bool external_ips(struct adm_ctx *c, const char *desc)
{
	struct jval ips = jval_path(c->rq->object, "spec", "externalIPs", NULL), ip;
	struct jval old = jval_path(c->rq->old_object, "spec", "externalIPs", NULL);
	char msg[DENIAL_MSG_MAX];
	struct denial d;
	size_t i, n = 0;

	if (jval_bool(jval_path(c->tenant->obj, "spec", "services", "externalIPs", NULL), false))
		return false;
	denial_init(&d, msg, sizeof(msg));
	denial_text(&d, "%s sets externalIPs ", desc);
	jval_foreach(ips, i, ip)
		if (jval_str(ip) && !jval_has_string(old, jval_str(ip)))
			denial_item(&d, n++, jval_str(ip), jval_strlen(ip), true);
	if (n == 0)
		return false;
	denial_list_end(&d, n);
	denial_text(&d,
	            ", which tenant \"%s\" may not use (allowed: none; an administrator "
	            "allows them with spec.services.externalIPs)",
	            c->tenant->name);
	return adm__violation(c, ADM_SERVICES, msg);
}

bool adm__service(struct adm_ctx *c)
{
	char desc[DESC_MAX];

	describe(c->rq, "Service", desc);
	return service_type(c, desc) || external_ips(c, desc);
}
