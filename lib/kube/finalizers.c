/*
 * finalizers.c - one finalizer added or removed by a guarded JSON patch (finalizers.h).
 */
#include <stdio.h>
#include <string.h>

#include "kube/finalizers.h"

int kc_finalizer_index(struct jval obj, const char *finalizer)
{
	struct jval list = jval_path(obj, "metadata", "finalizers", NULL), v;
	size_t i;

	jval_foreach(list, i, v)
		if (jval_str(v) && strcmp(jval_str(v), finalizer) == 0)
			return (int)i;
	return -1;
}

json_t *kc_finalizer_patch(struct jval obj, const char *finalizer, bool present)
{
	int idx = kc_finalizer_index(obj, finalizer);
	bool have_list = jval_type(jval_path(obj, "metadata", "finalizers", NULL)) != JT_NONE;
	char path[64];

	if ((idx >= 0) == present)
		return NULL;
	if (present)
		return json_pack(
		        "[{s:s,s:s,s:s},{s:s,s:s,s:o}]", "op", "test", "path",
		        "/metadata/resourceVersion", "value",
		        jval_resource_version(obj) ? jval_resource_version(obj) : "", "op", "add",
		        "path", have_list ? "/metadata/finalizers/-" : "/metadata/finalizers",
		        "value", have_list ? json_string(finalizer) : json_pack("[s]", finalizer));
	snprintf(path, sizeof(path), "/metadata/finalizers/%d", idx);
	return json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "op", "test", "path", path, "value",
	                 finalizer, "op", "remove", "path", path);
}
