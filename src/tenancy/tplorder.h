/*
 * tplorder.h - the order in which the objects of one render are applied, without I/O.
 *
 * A render (render.h) gives a Template's objects in manifest order. They are applied kind by
 * kind, so that what an object refers to exists before it (issue 13, point 5):
 *
 *   ServiceAccount, Secret, ConfigMap, Role, ClusterRole, RoleBinding, ClusterRoleBinding,
 *   then every other kind,
 *
 * in manifest order within a rank (the kind alone decides, whatever the apiVersion). An object
 * may ask for more with the annotation landlord.dev/depends-on: a comma-separated list of
 * Kind/name (spaces around entries allowed) naming objects of the same render, each of which
 * is applied before it. An entry names every object of that kind and name (a render for a
 * TemplateGroupInstance may hold one in two namespaces). A dependency overrides the kind rank:
 * the order is the topological order of the dependencies that, at each step, applies the
 * object of lowest (kind rank, manifest index) whose dependencies are all applied. It is
 * deterministic, and without annotations it is the kind order above.
 *
 * Invariants:
 * - The objects are only read: the annotation stays on them, and is applied with them.
 * - On error nothing is returned (*order_out stays NULL) and @err holds one printable line
 *   (denial.h's escaping) naming the object by its manifest index and Kind/name, as in
 *   spec.resources.manifests[2]: ConfigMap "web": landlord.dev/depends-on: "Secret/db" is
 *   not an object of this render.
 * - Pure: no globals, no I/O, thread-safe; bounded by TPL_ORDER_OBJECTS_MAX and
 *   TPL_ORDER_DEPS_MAX (time O(n^2), memory about 80 bytes an object).
 */
#ifndef LANDLORD_TPLORDER_H
#define LANDLORD_TPLORDER_H

#include <jansson.h>
#include <stddef.h>

struct ll_err;

#define TPL_ORDER_OBJECTS_MAX 256 /* objects of one render */
#define TPL_ORDER_DEPS_MAX    16  /* entries of one landlord.dev/depends-on */
/* The annotation. */
#define TPL_DEPENDS_ON "landlord.dev/depends-on"

/**
 * tpl_order() - the apply order of the rendered objects @objects (a JSON array, borrowed and
 * only read; each element an object with string kind and metadata.name that are not empty).
 * @order_out: OUT, on success a new array of the n indexes of @objects in apply order (a
 *             permutation of 0..n-1; xmalloc'd, at least one element long, the caller frees
 *             it); NULL on error.
 * @err: may be NULL; the one-line reason on error.
 * Return: 0; -EINVAL (@objects not an array, an element without kind or metadata.name, an
 * annotation that is not a string or an entry that is not Kind/name, an entry naming no
 * object of the render or the object itself, dependencies that make a cycle: the message lists
 * its objects); -E2BIG (over TPL_ORDER_OBJECTS_MAX objects, or over TPL_ORDER_DEPS_MAX
 * entries in one annotation). Thread-safe.
 */
int tpl_order(const json_t *objects, size_t **order_out /* OUT */, struct ll_err *err);

#endif
