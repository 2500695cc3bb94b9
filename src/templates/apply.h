/*
 * apply.h - one render's objects written into one namespace as one identity: checked whole
 * first, then applied in order, and what is no longer rendered pruned.
 *
 * tpl_apply() sends every object with dryRun=All as the identity that will write it (RBAC,
 * admission, the webhook and field conflicts all judge it), and writes nothing unless every
 * object passes; then it applies them in the given order with server-side apply under the
 * instance's field manager, stamping the instance's labels. A RoleBinding to a Role of the same
 * render skips the dry run (the Role does not exist yet, so RBAC could not judge the binding);
 * the real apply judges it.
 *
 * Conflicts: an object in which another instance's field manager (landlord/ti/...,
 * landlord/tgi/...) owns fields, or whose apply conflicts with one, fails with reason Conflict
 * naming that manager; nothing is forced over an instance. A conflict with any other manager (a
 * user's kubectl edit) is drift: the apply forces over it.
 *
 * tpl_repair() applies again objects of such a render that drifted, without the dry run.
 *
 * tpl_prune() deletes, as the same identity and with a uid precondition, the objects of the
 * given kinds that carry the instance's label and in which its manager owns fields, but that
 * the render no longer holds. A forged label alone deletes nothing: the manager must own fields.
 *
 * Invariants: no state between calls; every input borrowed; thread-safe as far as the client
 * and discovery are (they are).
 */
#ifndef LANDLORD_TEMPLATES_APPLY_H
#define LANDLORD_TEMPLATES_APPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct kc_client;
struct disc;

/* Who writes, and what every written object carries. Strings borrowed. */
struct tpl_target {
	struct kc_client *kc;
	struct disc *disc;
	const char *ns;             /* the namespace written into */
	const char *as_user;        /* Impersonate-User; NULL: landlord itself */
	const char *field_manager;  /* landlord/ti/<ns>/<name> or landlord/tgi/<name> */
	const char *label_key;      /* landlord.dev/ti or landlord.dev/tgi */
	const char *label_value;    /* the instance's name */
	bool managed_by;            /* also app.kubernetes.io/managed-by=landlord (TGIs) */
	const char *only_annotated; /* tpl_prune(): only objects carrying this annotation */
};

#define TPL_FAIL_OBJECT_MAX  320
#define TPL_FAIL_REASON_MAX  64
#define TPL_FAIL_MESSAGE_MAX 1024

/* The first object that failed, and whether anything was written before it. */
struct tpl_failure {
	char object[TPL_FAIL_OBJECT_MAX]; /* Kind/name */
	char reason[TPL_FAIL_REASON_MAX]; /* Forbidden, Conflict, Invalid, NotFound, Unavailable...
	                                   */
	char message[TPL_FAIL_MESSAGE_MAX];
	bool written; /* the dry run passed; the real apply failed part way */
};

/**
 * tpl_apply() - dry-run @objects (a JSON array, borrowed) in @order (indexes, @n of them), then
 * apply them all in that order. @applied: OUT, how many were applied (the real apply).
 * Return: 0; -EAGAIN (*@fail filled: an API server answer refused an object; reason and message
 * are the server's or Conflict's), -EIO (no answer: *@fail says which object).
 */
int tpl_apply(const struct tpl_target *t, const json_t *objects, const size_t *order, size_t n,
              size_t *applied /* OUT */, struct tpl_failure *fail /* OUT */);

/**
 * tpl_repair() - apply again, in @order, objects of a render that did not change since it was
 * applied whole, because they drifted (deleted, or edited by someone else): no dry run (that
 * render passed one as this identity), unforced first; a conflict with a manager that is not an
 * instance is forced over, one with an instance fails with Conflict, as does another instance
 * owning fields of the result. Returns and fills @applied and @fail as tpl_apply().
 */
int tpl_repair(const struct tpl_target *t, const json_t *objects, const size_t *order, size_t n,
               size_t *applied /* OUT */, struct tpl_failure *fail /* OUT */);

/**
 * tpl_prune() - delete what @t's instance applied in its namespace, of the kinds @kinds (an
 * array of "apiVersion/Kind" strings, borrowed), that @keep (rendered objects, borrowed; NULL:
 * none, everything goes) does not hold. @pruned: OUT, how many were deleted.
 * Return: 0, or -EAGAIN/-EIO with *@fail as tpl_apply(); a kind no longer served is skipped.
 */
int tpl_prune(const struct tpl_target *t, const json_t *kinds, const json_t *keep,
              size_t *pruned /* OUT */, struct tpl_failure *fail /* OUT */);

/** tpl_kind_key() - "apiVersion/Kind" of @obj, into @out (TPL_FAIL_OBJECT_MAX). */
void tpl_kind_key(const json_t *obj, char *out);

#endif
