/*
 * tgi_internal.h - one reconcile of one TemplateGroupInstance (tgi.c, tgi_ns.c) and its status
 * (tgi_status.c).
 *
 * A struct tgi_rec lives for one reconcile and is touched by one thread. It holds a reference
 * to the cached instance and its Template, read in place; every namespace's row and failure go
 * into a bounded status builder (tenancy/tplstatus.h) as they are found.
 */
#ifndef LANDLORD_TGI_INTERNAL_H
#define LANDLORD_TGI_INTERNAL_H

#include "templates/releases.h"
#include "templates/templates_internal.h"
#include "tenancy/landlordconfig.h"

struct tpl_status;
struct sel;

struct tgi_rec {
	struct templates *t;
	char name[256], tmpl_name[256];
	char field_manager[320];             /* landlord/tgi/<name> */
	const struct jdoc *tgi_doc, *tmpl;   /* references; tmpl may be NULL */
	struct jval tgi;                     /* the instance's root */
	struct lcfg *cfg;                    /* LandlordConfig in force (a reference) */
	struct sel *selector;                /* spec.selector, or NULL when invalid */
	json_t *kinds;                       /* "apiVersion/Kind" applied, now and before */
	json_t *selected;                    /* namespace -> true: matched and writable */
	json_t *ready_before;                /* namespace -> rendered: all applied, last status */
	struct tpl_status *status;           /* rows and failures of this reconcile */
	bool sync;                           /* spec.sync */
	size_t not_ready;                    /* matched namespaces not ready */
	bool failed, conflict, retry, quota; /* a namespace failed; Conflict; -EIO; quota wait */
	bool workloads;                      /* applied somewhere, workloads not ready there */
	size_t row_rendered;                 /* objects rendered, of the last row counted */
	char reason[64], message[TPL_FAIL_MESSAGE_MAX]; /* the first failure, for conditions */
};

/** tgi_rec_load() - TGI @name from the caches. Return: 0, -ENOENT when it is gone. */
int tgi_rec_load(struct templates *t, const char *name, struct tgi_rec *r /* OUT */);
void tgi_rec_release(struct tgi_rec *r);
/** tgi_fail() - count a failure of namespace @ns (NULL: the whole instance) in status. */
void tgi_fail(struct tgi_rec *r, const char *ns, const char *reason, const char *object,
              const char *message);
/** tgi_finish() - write status when it changed; @res, or a retry when the write failed. */
struct ctrl_result tgi_finish(struct tgi_rec *r, struct ctrl_result res);
/** tgi_write_status_kinds() - status.kinds := r->kinds, now. Return: 0 or -EAGAIN. */
int tgi_write_status_kinds(struct tgi_rec *r);
/** tgi_patch() - patch the instance (or its @subresource). Return: 0 or -EAGAIN (logged). */
int tgi_patch(struct tgi_rec *r, const char *subresource, enum kc_patch_type type,
              const json_t *body);
/** tgi_set_finalizer() - add (@present) or remove landlord's finalizer. Return: 0 or -EAGAIN. */
int tgi_set_finalizer(struct tgi_rec *r, bool present);
bool tgi_has_finalizer(const struct tgi_rec *r);
/** tgi_target() - landlord writing the instance's objects into @ns. */
void tgi_target(const struct tgi_rec *r, const char *ns, struct tpl_target *out /* OUT */);
/**
 * tgi_chart() - the Template's chart in @row's namespace, whose manifests are applied: its
 * release (name into @release) wanted as tgi.<ns>; @row shows it, is ready only when it is,
 * and a failure is counted (tgi_helm.c). No chart: nothing.
 */
void tgi_chart(struct tgi_rec *r, struct tpl_row *row, char release[64],
               struct release_state *st /* OUT */);
/**
 * tgi_charts_leftover() - the instance's releases in namespaces no longer selected, of another
 * name, or (@all) every one, wanted gone. Return: whether all of those are gone.
 */
bool tgi_charts_leftover(struct tgi_rec *r, bool all);
/** tgi_row() - count namespace @ns in status: ready or not, @applied of @rendered. */
void tgi_row(struct tgi_rec *r, const char *ns, bool ready, size_t applied, size_t rendered);

#endif
