/* jdoc_meta.c - Kubernetes metadata shorthands and reference lists over documents (jdoc.h). */
#include <stdlib.h>

#include "base/jdoc.h"

const char *jd_name(const struct jdoc *d)
{
	return jd_str(d, "metadata", "name", NULL);
}

const char *jd_namespace(const struct jdoc *d)
{
	return jd_str(d, "metadata", "namespace", NULL);
}

const char *jd_uid(const struct jdoc *d)
{
	return jd_str(d, "metadata", "uid", NULL);
}

const char *jd_resource_version(const struct jdoc *d)
{
	return jd_str(d, "metadata", "resourceVersion", NULL);
}

const char *jd_label(const struct jdoc *d, const char *key)
{
	return jval_str(jval_get(jd_get(d, "metadata", "labels", NULL), key));
}

const char *jd_annotation(const struct jdoc *d, const char *key)
{
	return jval_str(jval_get(jd_get(d, "metadata", "annotations", NULL), key));
}

void jdoc_list_release(struct jdoc_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		jdoc_unref(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}
