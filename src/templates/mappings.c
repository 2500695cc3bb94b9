/*
 * mappings.c - a Template's resourceMappings: named Secrets and ConfigMaps copied into an
 * instance's namespace, following their source (data, type, deletion).
 *
 * Each distinct source has a watch of its own (namespace and fieldSelector metadata.name=NAME),
 * made when a render first names it: landlord never watches every Secret of the cluster. The
 * copies join the render's objects, so they are dry-run, applied by the instance's identity,
 * drift-repaired and pruned like the rest; a copy carries the annotation landlord.dev/mapped-from
 * (<namespace>/<name>), which is how an instance that stops being instantiable finds what to
 * delete. A source that does not exist is not copied (its copy is pruned) and is reported.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/json.h"
#include "base/log.h"
#include "templates/ti_internal.h"

struct source_kind {
	const char *field; /* in spec.resources.resourceMappings */
	const struct kc_gvr *gvr;
};

static const struct source_kind SOURCES[] = {
        {"secrets", &KC_SECRETS},
        {"configMaps", &KC_CONFIGMAPS},
};

/* A source changed: every instance of a Template that maps it applies again. */
static void source_changed(struct templates *t, const struct jdoc *src, const char *field)
{
	struct jdoc_list tmpls = inf_list_ref(t->templates, NULL);
	const char *ns = jd_namespace(src), *name = jd_name(src);
	struct jval m;
	size_t j;

	for (size_t i = 0; i < tmpls.n && ns && name; i++) {
		jval_foreach(jd_get(tmpls.items[i], "spec", "resources", "resourceMappings", field,
		                    NULL),
		             j, m) {
			const char *mns = jval_str(jval_get(m, "namespace")),
			           *mname = jval_str(jval_get(m, "name"));

			if (mns && mname && strcmp(mns, ns) == 0 && strcmp(mname, name) == 0)
				ti_enqueue_template(t, jd_name(tmpls.items[i]));
		}
	}
	jdoc_list_release(&tmpls);
}

static void on_secret(const struct jdoc *obj, void *ud)
{
	source_changed(ud, obj, "secrets");
}

static void on_configmap(const struct jdoc *obj, void *ud)
{
	source_changed(ud, obj, "configMaps");
}

static void on_secret_update(const struct jdoc *o, const struct jdoc *n, void *ud)
{
	(void)o;
	on_secret(n, ud);
}

static void on_configmap_update(const struct jdoc *o, const struct jdoc *n, void *ud)
{
	(void)o;
	on_configmap(n, ud);
}

/* The watch on one source, made on first use. */
static struct inf *source_informer(struct templates *t, const struct source_kind *k, const char *ns,
                                   const char *name)
{
	static const char *const keep[] = {"type", "data", "binaryData", NULL};
	char selector[300], label[400];
	struct inf *inf;
	bool created;

	snprintf(selector, sizeof(selector), "metadata.name=%s", name);
	snprintf(label, sizeof(label), "mapped-%s-%s-%s", k->gvr->resource, ns, name);
	inf = mgr_informer_live(ctrl_mgr(t->ti),
	                        &(struct inf_opts){.gvr = *k->gvr,
	                                           .ns = ns,
	                                           .field_selector = selector,
	                                           .keep = keep,
	                                           .name = label},
	                        &created);
	if (created)
		inf_add_handler(
		        inf,
		        k->gvr == &KC_SECRETS
		                ? &(struct inf_handler){on_secret, on_secret_update, on_secret, t}
		                : &(struct inf_handler){on_configmap, on_configmap_update,
		                                        on_configmap, t});
	return inf;
}

/* The copy of @src for @r's namespace, new reference. */
static json_t *copy_of(const struct ti_rec *r, const struct source_kind *k, const struct jdoc *src,
                       const char *from)
{
	json_t *copy = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}}}", "apiVersion", "v1", "kind",
	                         k->gvr->kind, "metadata", "name", jd_name(src), "namespace",
	                         r->ns_name, "annotations", ANNOT_MAPPED_FROM, from);
	static const char *const fields[] = {"type", "data", "binaryData"};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *v = jval_to_json(jd_get(src, fields[i], NULL));

		if (v)
			json_object_set_new(copy, fields[i], v);
	}
	return copy;
}

/* One mapping @m of kind @k: its copy appended to the render, or the source reported. */
static void map_one(struct ti_rec *r, const struct source_kind *k, struct jval m,
                    struct buf *versions)
{
	const char *ns = jval_str(jval_get(m, "namespace")), *name = jval_str(jval_get(m, "name"));
	const struct jdoc *src;
	char from[320], msg[512];
	struct inf *inf;

	if (ns == NULL || name == NULL)
		return;
	inf = source_informer(r->t, k, ns, name);
	src = inf_has_synced(inf) ? inf_get_ref(inf, ns, name) : NULL;
	snprintf(from, sizeof(from), "%s/%s", ns, name);
	if (src == NULL) {
		snprintf(msg, sizeof(msg), "%s %s does not exist%s", k->gvr->kind, from,
		         inf_has_synced(inf) ? "" : " (yet: its watch is starting)");
		ti_fail(r, "SourceNotFound", from, msg);
		buf_appendf(versions, "/-");
		return;
	}
	json_array_append_new(r->objects, copy_of(r, k, src, from));
	buf_appendf(versions, "/%s", jd_resource_version(src));
	jdoc_unref(src);
}

void ti_map_resources(struct ti_rec *r, struct buf *versions)
{
	struct jval mappings = jd_get(r->tmpl, "spec", "resources", "resourceMappings", NULL), m;
	size_t i;

	for (size_t k = 0; k < sizeof(SOURCES) / sizeof(SOURCES[0]); k++)
		jval_foreach(jval_get(mappings, SOURCES[k].field), i, m)
			map_one(r, &SOURCES[k], m, versions);
}
