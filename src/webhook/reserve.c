/*
 * reserve.c - take a maxNamespaces slot on the tenant's reservations ConfigMap (reserve.h):
 * read it, count the live slots, add ours and write it back guarded by its resourceVersion;
 * another writer in between (409) means read and count again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "kube/kube.h"
#include "tenancy/nsreserve.h"
#include "webhook/reserve.h"

#define ATTEMPTS 32 /* each a read and a write; 20 creates at once settle well within */

struct slot_req {
	struct kc_client *c;
	const struct adm_view *view;
	const char *tenant, *ns;
	long long max;
	char name[320]; /* the ConfigMap */
	char *why;
	size_t why_size;
};

static json_t *fresh_configmap(const struct slot_req *r)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{}}", "apiVersion", "v1", "kind",
	                 "ConfigMap", "metadata", "name", r->name, "namespace",
	                 LANDLORD_SYSTEM_NAMESPACE, "labels", LABEL_RESERVATIONS_FOR, r->tenant,
	                 LABEL_MANAGED_BY, "landlord", "data");
}

/* Read the ConfigMap into *@cm (a fresh one, *@create set, when there is none). 0 or -EIO. */
static int read_slots(struct slot_req *r, json_t **cm, bool *create)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_get(r->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, r->name, &resp, &err);

	*cm = NULL;
	*create = false;
	if (rc == 0 && kc_resp_ok(&resp) && json_is_object(resp.body))
		*cm = json_incref(resp.body);
	else if (rc == 0 && resp.http_status == 404) {
		*cm = fresh_configmap(r);
		*create = true;
	} else {
		snprintf(r->why, r->why_size, "cannot read ConfigMap %s/%s: %s",
		         LANDLORD_SYSTEM_NAMESPACE, r->name,
		         rc < 0 ? err.msg : resp.status.message);
		rc = -EIO;
	}
	kc_resp_release(&resp);
	return rc < 0 ? -EIO : 0;
}

/* Write @cm: POST when @create, else PUT guarded by its resourceVersion. 0, -EAGAIN, -EIO. */
static int write_slots(struct slot_req *r, const json_t *cm, bool create)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc =
	        create ? kc_create(r->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, cm, &resp, &err)
	               : kc_replace(r->c, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, r->name, NULL,
	                            cm, &resp, &err);

	if (rc == 0 && resp.http_status == 409)
		rc = -EAGAIN;
	else if (rc < 0 || !kc_resp_ok(&resp)) {
		snprintf(r->why, r->why_size, "cannot write ConfigMap %s/%s: %s",
		         LANDLORD_SYSTEM_NAMESPACE, r->name,
		         rc < 0 ? err.msg : resp.status.message);
		rc = -EIO;
	}
	kc_resp_release(&resp);
	return rc;
}

/* One read, count and write. Return: as ns_reserve_slot(). */
static int attempt(struct slot_req *r)
{
	int64_t now = (int64_t)time(NULL), next;
	json_t *cm = NULL, *live;
	size_t used;
	bool create;
	char taken[24];
	int rc = read_slots(r, &cm, &create);

	if (rc < 0)
		return rc;
	live = nsr_prune(jx_get(cm, "data", NULL), now, &next);
	/* one look at the caches for the namespaces and the slots: a namespace made meanwhile
	 * counts once, whether as a slot or as a namespace */
	used = adm_namespace_usage(r->view, r->tenant, r->ns, live);
	if (json_object_get(live, r->ns))
		rc = 0; /* a retried admission finds its slot */
	else if ((long long)used >= r->max) {
		snprintf(
		        r->why, r->why_size,
		        "tenant \"%s\" has %zu namespaces, counting those being created, the most "
		        "its plan allows (maxNamespaces %lld); delete one, or ask an administrator "
		        "for a larger plan",
		        r->tenant, used, r->max);
		rc = 1;
	} else {
		snprintf(taken, sizeof(taken), "%" PRId64, now);
		json_object_set_new(live, r->ns, json_string(taken));
		json_object_set(cm, "data", live);
		rc = write_slots(r, cm, create);
	}
	json_decref(live);
	json_decref(cm);
	return rc;
}

int ns_reserve_slot(struct kc_client *c, const struct adm_view *view, const char *tenant,
                    const char *ns, long long max, char *why, size_t why_size)
{
	struct slot_req r = {.c = c,
	                     .view = view,
	                     .tenant = tenant,
	                     .ns = ns,
	                     .max = max,
	                     .why = why,
	                     .why_size = why_size};
	int rc = -EAGAIN;

	snprintf(r.name, sizeof(r.name), RESERVATIONS_PREFIX "%s", tenant);
	for (int i = 0; i < ATTEMPTS && rc == -EAGAIN; i++)
		rc = attempt(&r);
	if (rc == -EAGAIN)
		snprintf(
		        why, why_size,
		        "too many namespaces of tenant \"%s\" are being created at once (ConfigMap "
		        "%s/%s kept changing); retry",
		        tenant, LANDLORD_SYSTEM_NAMESPACE, r.name);
	return rc;
}
