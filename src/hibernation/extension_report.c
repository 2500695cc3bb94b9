/*
 * extension_report.c - an Extension's status: observedGeneration, the AppProject, the Argo CD
 * namespace, the count of destinations, and the conditions Ready, NamesRefused and
 * AccountConflict; written only when it differs from the cached status (so the write wakes the
 * Extension once, and that reconcile writes nothing).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/log.h"
#include "hibernation/extension_internal.h"
#include "kube/conditions.h"
#include "kube/status.h"

static json_t *conditions(const struct ext_rec *r, const struct outcome *o)
{
	json_t *old = jval_to_json(jd_get(r->obj, "status", "conditions", NULL)), *c1, *c2, *c3;
	long long gen = jd_int(r->obj, 0, "metadata", "generation", NULL);
	bool ready = strcmp(o->reason, "Synced") == 0;
	size_t nref = json_array_size(o->refused);
	char msg[768] = "", more[64] = "";
	size_t i, len = 0;
	json_t *v;

	c1 = cond_set(old, "Ready", ready ? "True" : "False", o->reason, o->message, gen);
	json_array_foreach(o->refused, i, v) {
		if (i >= 8) {
			snprintf(more, sizeof(more), " and %zu more", nref - i);
			break;
		}
		if (len < sizeof(msg))
			len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s", i ? ", " : "",
			                        json_string_value(v));
	}
	if (nref && len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len,
		         "%s: a name with a comma, quote or control character cannot go into Argo "
		         "CD's policy; left out",
		         more);
	c2 = cond_set(c1, "NamesRefused", nref ? "True" : "False", nref ? "UnsafeName" : "AllSafe",
	              msg, gen);
	snprintf(msg, sizeof(msg),
	         "ServiceAccount " ARGOCD_ACCOUNT " exists and is not landlord's in: %s (no "
	         "destination there until it is deleted)",
	         r->conflicts);
	c3 = cond_set(c2, "AccountConflict", r->n_conflicts ? "True" : "False",
	              r->n_conflicts ? "AccountExists" : "NoConflict", r->n_conflicts ? msg : "",
	              gen);
	json_decref(c2);
	json_decref(c1);
	json_decref(old);
	return c3;
}

void ext_write_status(struct ext_rec *r, const struct outcome *o)
{
	json_t *status =
	        json_pack("{s:I,s:s,s:s,s:I}", "observedGeneration",
	                  (json_int_t)jd_int(r->obj, 0, "metadata", "generation", NULL),
	                  "appProject", o->project, "argoNamespace", r->argo_ns ? r->argo_ns : "",
	                  "destinations", (json_int_t)o->destinations);
	char why[512];

	json_object_set_new(status, "conditions", conditions(r, o));
	if (!jval_equal_json(jd_get(r->obj, "status", NULL), status) &&
	    status_write(r->kc, &LL_EXTENSIONS, r->name, status, STATUS_REPLACE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0) {
		log_warn("argocd: status not written", "{s:s,s:s}", "extension", r->name, "error",
		         why);
		r->retry = true;
	}
	json_decref(status);
}

void outcome_set(struct outcome *o, const char *reason, const char *fmt, ...)
{
	va_list ap;

	o->reason = reason;
	va_start(ap, fmt);
	vsnprintf(o->message, sizeof(o->message), fmt, ap);
	va_end(ap);
}
