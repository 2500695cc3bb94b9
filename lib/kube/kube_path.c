/*
 * kube_path.c - API paths and query strings.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "kube/kube_internal.h"

static int seg(struct buf *out, const char *s)
{
	int rc = buf_append(out, "/", 1);

	return rc ? rc : buf_append_urlencoded(out, s);
}

int kc_path(struct buf *out, const struct kc_gvr *gvr, const char *ns, const char *name,
            const char *subresource)
{
	bool grouped = gvr->group && *gvr->group;
	int rc = buf_append_str(out, grouped ? "/apis" : "/api");

	if (rc == 0 && grouped)
		rc = seg(out, gvr->group);
	if (rc == 0)
		rc = seg(out, gvr->version);
	if (rc == 0 && gvr->namespaced && ns && *ns) {
		rc = seg(out, "namespaces");
		if (rc == 0)
			rc = seg(out, ns);
	}
	if (rc == 0)
		rc = seg(out, gvr->resource);
	if (rc == 0 && name && *name) {
		rc = seg(out, name);
		if (rc == 0 && subresource && *subresource)
			rc = seg(out, subresource);
	}
	return rc;
}

/* Append "?k=v" or "&k=v" with @v percent-encoded; NULL or empty values are skipped. */
int kc__query(struct buf *out, const char *k, const char *v)
{
	int rc;

	if (v == NULL || *v == '\0')
		return 0;
	rc = buf_append_str(out, strchr(buf_cstr(out), '?') ? "&" : "?");
	if (rc == 0)
		rc = buf_append_str(out, k);
	if (rc == 0)
		rc = buf_append(out, "=", 1);
	return rc ? rc : buf_append_urlencoded(out, v);
}

int kc__query_long(struct buf *out, const char *k, long v)
{
	char num[24];

	snprintf(num, sizeof(num), "%ld", v);
	return kc__query(out, k, num);
}
