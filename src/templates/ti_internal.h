/*
 * ti_internal.h - one reconcile of one TemplateInstance (ti.c), and its status (ti_status.c).
 *
 * A struct ti_rec lives for one reconcile and is touched by one thread. It holds references to
 * cached documents (the instance, its Template and namespace), read in place; the first failure
 * recorded (ti_fail) is what status reports.
 */
#ifndef LANDLORD_TI_INTERNAL_H
#define LANDLORD_TI_INTERNAL_H

#include "base/buf.h"
#include "templates/releases.h"
#include "templates/templates_internal.h"

struct ti_rec {
	struct templates *t;
	char key[512]; /* namespace/name */
	char ns_name[256], name[256], tmpl_name[256];
	char field_manager[640];               /* landlord/ti/<namespace>/<name> */
	const struct jdoc *ti_doc, *tmpl, *ns; /* references; tmpl and ns may be NULL */
	struct jval ti;                        /* the instance's root */
	json_t *ns_labels;                     /* the namespace's labels (an object, maybe empty) */
	const char *writer;                    /* landlord.dev/last-writer, or "editor" */
	json_t *objects;                       /* the render, or NULL */
	size_t *order;                         /* the apply order of @objects */
	json_t *kinds;                         /* "apiVersion/Kind" applied, now and before */
	struct ti_account account;
	size_t applied, pruned;
	bool synced;    /* applied and pruned this time (or before, for sync: false) */
	bool unchanged; /* nothing applied: status only */
	bool failed;
	char reason[64], object[TPL_FAIL_OBJECT_MAX], message[TPL_FAIL_MESSAGE_MAX];
	char release[64];         /* the Template's chart's release here, "" when none */
	struct release_state rel; /* what the release controller says of it */
};

/** ti_rec_load() - the instance @key from the caches. Return: 0, -ENOENT when it is gone. */
int ti_rec_load(struct templates *t, const char *key, struct ti_rec *r /* OUT */);
void ti_rec_release(struct ti_rec *r);
/** ti_fail() - record the first failure of this reconcile. */
void ti_fail(struct ti_rec *r, const char *reason, const char *object, const char *message);
/** ti_finish() - write status when it changed; @res, or a retry when the write failed. */
struct ctrl_result ti_finish(struct ti_rec *r, struct ctrl_result res);
/** ti_synced_before() - status says a past reconcile applied everything (Synced=True). */
bool ti_synced_before(const struct ti_rec *r);
/** ti_write_status_kinds() - status.kinds := r->kinds, now. Return: 0 or -EAGAIN. */
int ti_write_status_kinds(struct ti_rec *r);
/** ti_patch() - patch the instance (or its @subresource). Return: 0 or -EAGAIN (logged). */
int ti_patch(struct ti_rec *r, const char *subresource, enum kc_patch_type type,
             const json_t *body);
/**
 * ti_map_resources() - append the copies of the Template's resourceMappings to r->objects
 * (mappings.c); a missing source is a failure (SourceNotFound) and is not copied. The sources'
 * resourceVersions are appended to @versions (a change applies again).
 */
void ti_map_resources(struct ti_rec *r, struct buf *versions);
/** ti_enqueue_template() - every instance of Template @name applies again. */
void ti_enqueue_template(struct templates *t, const char *name);
/**
 * ti_charts() - the Template's chart (spec.resources.helm) wanted of the release controller, as
 * the instance's account, once the manifests are applied; the instance's other releases in its
 * namespace (a chart dropped, a release renamed) wanted gone (ti_helm.c).
 */
void ti_charts(struct ti_rec *r);
/**
 * ti_charts_gone() - every release of the instance wanted gone. Return: whether all are
 * (uninstalled, or never installed).
 */
bool ti_charts_gone(struct ti_rec *r);
/** ti_target() - where and as whom the instance's objects are written. */
void ti_target(const struct ti_rec *r, struct tpl_target *out /* OUT */);

#endif
