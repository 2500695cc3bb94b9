/* jdoc_meta.c - Kubernetes metadata shorthands and reference lists over documents (jdoc.h). */
#include <stdlib.h>

#include "base/jdoc.h"

const char *jval_name(struct jval obj)
{
	return jval_str(jval_path(obj, "metadata", "name", NULL));
}

const char *jval_namespace(struct jval obj)
{
	return jval_str(jval_path(obj, "metadata", "namespace", NULL));
}

const char *jval_resource_version(struct jval obj)
{
	return jval_str(jval_path(obj, "metadata", "resourceVersion", NULL));
}

const char *jval_label(struct jval obj, const char *key)
{
	return jval_str(jval_get(jval_path(obj, "metadata", "labels", NULL), key));
}

const char *jval_annotation(struct jval obj, const char *key)
{
	return jval_str(jval_get(jval_path(obj, "metadata", "annotations", NULL), key));
}

const char *jd_name(const struct jdoc *d)
{
	return jval_name(jdoc_root(d));
}

const char *jd_namespace(const struct jdoc *d)
{
	return jval_namespace(jdoc_root(d));
}

const char *jd_uid(const struct jdoc *d)
{
	return jd_str(d, "metadata", "uid", NULL);
}

const char *jd_resource_version(const struct jdoc *d)
{
	return jval_resource_version(jdoc_root(d));
}

const char *jd_label(const struct jdoc *d, const char *key)
{
	return jval_label(jdoc_root(d), key);
}

const char *jd_annotation(const struct jdoc *d, const char *key)
{
	return jval_annotation(jdoc_root(d), key);
}

void jdoc_list_release(struct jdoc_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		jdoc_unref(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}
