/*
 * rules.h - the admission rules landlord's webhook enforces: one table, in rules.c.
 */
#ifndef LANDLORD_WEBHOOK_RULES_H
#define LANDLORD_WEBHOOK_RULES_H

#include "webhook/admission.h"

/* Ended by a row whose name is NULL: the rules served on POST /validate. */
extern const struct admission_rule webhook_rules[];
/*
 * The same for POST /mutate: a row may also append JSON Patch operations to the verdict's
 * patch (admission.h), sent when the request is admitted.
 */
extern const struct admission_rule webhook_mutations[];

/*
 * The tenant rules (tenancy/admit.h, docs/admission-rules.md) as one row:
 *
 *	{"tenancy", wh_tenancy_resources, ADMISSION_ANY_OP, wh_tenancy_validate, &view},
 *
 * where @ud is a const struct adm_view * that outlives the route (the webhook's informer-backed
 * view; tests use admit_memview.h). Every resource: the cordon covers them all, and the
 * webhook configuration decides what the API server sends. A request that cannot be read is
 * refused with 400.
 */
extern const char *const wh_tenancy_resources[];
void wh_tenancy_validate(const json_t *request, struct admission_verdict *v, void *ud);

/*
 * The tenant rules as landlord serves them, on its informer-backed view: 503 until the caches
 * have loaded; an admitted Namespace CREATE that joins a tenant must carry the tenant label
 * (/mutate adds it) and, under a maxNamespaces limit, gets its slot (webhook/reserve.h) or is
 * refused. wh_tenancy_mutate() never denies: it adds the tenant label to a namespace an owner
 * creates without it, and /validate gives any reason to refuse.
 */
struct cacheview;
struct kc_client;
struct wh_tenancy {
	struct cacheview *cv;     /* borrowed */
	struct kc_client *client; /* borrowed; NULL: no reservations (maxNamespaces unchecked) */
};
void wh_tenancy_serve(const json_t *request, struct admission_verdict *v,
                      void *ud /* struct wh_tenancy */);
void wh_tenancy_mutate(const json_t *request, struct admission_verdict *v,
                       void *ud /* struct wh_tenancy */);
/*
 * What wh_tenancy_mutate() answers for, on CREATE (namespaces) and UPDATE
 * (templateinstances): it also sets the annotation landlord.dev/last-writer of every
 * TemplateInstance CREATE and UPDATE to the decision's last_writer (tenancy/admit.h),
 * replacing the client's value.
 */
extern const char *const wh_tenancy_mutate_resources[];
/* wh_tenancy_mutate() on any view (@ud: a const struct adm_view *): tests. */
void wh_tenancy_label(const json_t *request, struct admission_verdict *v, void *ud);

/*
 * The /sleep route (rule_sleep.c): refuses raising replicas or clearing suspend on a workload
 * landlord put to sleep under a supervisor that enforces it (tenancy/sleepguard.h). @ud: a
 * struct wh_tenancy (its client reads the workload of a /scale request).
 */
extern const char *const wh_sleep_resources[];
void wh_sleep_validate(const json_t *request, struct admission_verdict *v,
                       void *ud /* struct wh_tenancy */);

#endif
