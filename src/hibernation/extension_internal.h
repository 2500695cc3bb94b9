/*
 * extension_internal.h - what the files of the Extension controller share.
 *
 *   extension.c          informers, event mapping, the reconcile, status, deletion
 *   extension_project.c  the AppProject and the rbac key as landlord wants them (pure)
 *   extension_accounts.c each tenant namespace's ServiceAccount and RoleBinding landlord-argocd
 *   extension_report.c   the status
 */
#ifndef LANDLORD_EXTENSION_INTERNAL_H
#define LANDLORD_EXTENSION_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/jdoc.h"
#include "hibernation/extension.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "tenancy/landlordconfig.h"

#define EXT_REFUSED_MAX 32 /* names refused that status reports by field (the rest counted) */

/* ---------- extension_project.c: pure ---------- */

/**
 * ext_name_safe() - may @name (a user or group) go into an Argo CD casbin line? Not empty,
 * no ',', '"', '\'', no control character (newline, CR, tab...), no DEL, no leading or trailing
 * space (casbin's CSV reader trims fields: " alice" would be alice).
 */
bool ext_name_safe(const char *name);

/* What the AppProject and the rbac key are built from (all borrowed). */
struct ext_in {
	const char *tenant;      /* the AppProject's name */
	const char *argo_ns;     /* its namespace */
	struct jval argocd;      /* the Extension's spec.argoCD (may be missing) */
	struct jval tenant_spec; /* the Tenant's spec */
	const json_t *cfg;       /* lcfg_argocd(), or NULL */
	const char *const
	        *namespaces; /* the destinations, sorted; none while impersonation is off */
	size_t n_namespaces;
};

struct ext_want {
	json_t *project; /* the apply body: apiVersion, kind, metadata, the owned spec fields */
	char *csv;       /* the rbac key's value ("" when no user), malloc'd */
	json_t *refused; /* array of the fields left out, e.g. "spec.accessControl.owners.users[1]"
	                  */
};

/** ext_want_build() - fill @out (ext_want_release()). Return: 0, or -ENOMEM. */
int ext_want_build(const struct ext_in *in, struct ext_want *out /* OUT */);
void ext_want_release(struct ext_want *w);

/**
 * ext_project_differs() - does the cached AppProject @have differ from @want (an
 * ext_want.project) in a field landlord owns: its two labels, spec.description, sourceRepos,
 * destinations, destinationServiceAccounts, clusterResourceWhitelist,
 * namespaceResourceBlacklist, roles? A field @want leaves out must be absent (or empty) in @have.
 */
bool ext_project_differs(struct jval have, const json_t *want);

/** ext_project_ours() - is the AppProject @have landlord's for @tenant (both labels)? */
bool ext_project_ours(struct jval have, const char *tenant);

/* ---------- the controller ---------- */

struct ext {
	struct controller *ctl;
	struct disc *disc; /* finds the AppProject kind */
	struct inf *extensions, *tenants, *namespaces, *crds, *accounts, *bindings;
	pthread_mutex_t lock;
	struct inf *projects; /* NULL until the AppProject CRD is served */
};

/* One reconcile of one Extension. */
struct ext_rec {
	struct ext *e;
	struct kc_client *kc;
	const char *name;       /* the Extension's */
	const struct jdoc *obj; /* cached, referenced */
	const char *tenant;     /* its spec.tenant */
	struct lcfg *cfg;       /* in force, referenced */
	const char *argo_ns;    /* from cfg, or NULL */
	bool retry;             /* something failed or raced: back off and look again */
	bool soon;              /* an informer is not read yet: look again shortly */
	char conflicts[256];    /* namespaces whose landlord-argocd landlord did not make */
	size_t n_conflicts;
};

/* extension.c */
/**
 * ext_write_ok() - did the write (kc_* returned @rc with @resp) succeed? A 404 counts as done
 * when @gone_ok. Otherwise it is logged and r->retry set.
 */
bool ext_write_ok(struct ext_rec *r, int rc, const struct kc_resp *resp, const char *what,
                  const char *ns, const char *name, bool gone_ok);
/** ext_delete() - delete @doc (a cached object of @gvr) with its uid as precondition. */
bool ext_delete(struct ext_rec *r, const struct kc_gvr *gvr, const struct jdoc *doc);

/* What a reconcile found, for the status. */
struct outcome {
	const char *reason; /* Ready's; "Synced" is True */
	char message[512];
	char project[160]; /* <namespace>/<name> of the AppProject landlord keeps, or "" */
	size_t destinations;
	json_t *refused; /* fields of names left out (new reference), or NULL */
};

/* extension_report.c */
/** outcome_set() - Ready's reason and its message (printf-formatted, cut to fit). */
void outcome_set(struct outcome *o, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/** ext_write_status() - write the status for @o when it differs (r->retry on failure). */
void ext_write_status(struct ext_rec *r, const struct outcome *o);

/* ---------- extension_accounts.c ---------- */

/**
 * ext_accounts_sync() - the ServiceAccount and RoleBinding landlord-argocd in each namespace
 * of @nss (the tenant's), none elsewhere for this tenant. Return: how many of @nss are usable
 * as destinations; their names are moved to the front of @nss (order kept). A namespace whose
 * account someone else made is left out and named in r->conflicts.
 */
size_t ext_accounts_sync(struct ext_rec *r, const char **nss, size_t n);
/** ext_accounts_remove() - delete every account and binding of the tenant. Return: all gone. */
bool ext_accounts_remove(struct ext_rec *r);

#endif
