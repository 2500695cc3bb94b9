/*
 * templates.h - the template controllers (issue 13, docs/templates.md): a TemplateInstance's
 * Template rendered (tenancy/render.h) into its namespace and applied with its writer's rights,
 * kept in sync, pruned and cleaned.
 *
 * struct templates holds what the controllers share for the life of the process: API
 * discovery (a render's kinds and scopes) and the watches on rendered kinds, which start as a
 * kind is first rendered (the manager frees them). main owns it: templates_new() before the
 * manager, templates_free() after mgr_free().
 *
 * Invariants:
 * - landlord never applies a tenant's objects with its own rights: a TemplateInstance's objects
 *   are written by impersonating system:serviceaccount:landlord-system:ti.<ns>.editor (or
 *   .owner when landlord.dev/last-writer says owner or privileged), which a RoleBinding in the
 *   namespace binds to LandlordConfig's editor (or owner) ClusterRole.
 * - A render is dry-run whole before anything of it is written (templates/apply.h).
 * - Drift comes by watch (one metadata-only informer per rendered kind, selecting the instance
 *   label), never by a resync timer.
 */
#ifndef LANDLORD_TEMPLATES_H
#define LANDLORD_TEMPLATES_H

#include <stdint.h>

#include "kube/manager.h"

struct templates;
struct kcfg;
struct ll_err;

/** templates_new() - for controllers on client @kc (borrowed; it must outlive the result). */
struct templates *templates_new(struct kc_client *kc);
/** templates_free() - after the manager that ran the controllers is freed. NULL is fine. */
void templates_free(struct templates *t);

/* How landlord runs helm (the --helm-* flags). */
struct helm_opts {
	int concurrency;         /* helm processes at most at once */
	int64_t timeout_ms;      /* each one killed after it */
	int64_t repair_every_ms; /* a release's drift repaired by a forced upgrade at most this
	                            often */
};

/**
 * templates_enable_helm() - Templates' charts installed by the Helm 4 binary @helm (absolute;
 * checked by helm_binary_check() first) against the API server of @cfg, as @opts says. Before
 * the manager runs; then add helm_controller_def(). Return: 0, or a negative errno with @err.
 */
int templates_enable_helm(struct templates *t, const char *helm, const struct kcfg *cfg,
                          const struct helm_opts *opts, struct ll_err *err);
/** helm_controller_def() - the release controller (templates/releases.h), once helm is on. */
struct controller_def helm_controller_def(struct templates *t);

/** ti_controller_def() - the TemplateInstance controller on @t (borrowed). */
struct controller_def ti_controller_def(struct templates *t);
/**
 * tgi_controller_def() - the TemplateGroupInstance controller on @t (borrowed): the Template
 * rendered into every namespace its selector matches, applied as landlord itself (within the
 * ClusterRole landlord-templates), never in default, landlord-system, kube-* or LandlordConfig's
 * privileged namespaces, and in a tenant namespace only once its quota is in force.
 */
struct controller_def tgi_controller_def(struct templates *t);

#endif
