/*
 * kube_path.c - API paths and query strings.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
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

/* A byte a path or query may hold as is: printable ASCII without space (the rest is encoded). */
static bool url_byte(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f && ch != '#';
}

/* Whether the segment [p, end) is "." or ".." once "%2e" is decoded: curl would resolve it. */
static bool dot_segment(const char *p, const char *end)
{
	size_t dots = 0;

	while (p < end) {
		if (*p == '.') {
			p++;
		} else if (end - p >= 3 && p[0] == '%' && p[1] == '2' &&
		           (p[2] == 'e' || p[2] == 'E')) {
			p += 3;
		} else {
			return false;
		}
		dots++;
	}
	return dots == 1 || dots == 2;
}

int kc__check_target(const char *path, const char *query, struct ll_err *err)
{
	const char *seg_start;

	if (path == NULL || path[0] != '/')
		return ll_err_set(err, -EINVAL, "the path must be absolute");
	seg_start = path + 1;
	for (const char *p = path + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			if (dot_segment(seg_start, p))
				return ll_err_set(err, -EINVAL,
				                  "the path holds a \".\" or \"..\" segment");
			if (*p == '\0')
				break;
			seg_start = p + 1;
		} else if (!url_byte((unsigned char)*p) || *p == '?') {
			return ll_err_set(
			        err, -EINVAL,
			        "the path holds a byte that must be percent-encoded (0x%02x)",
			        (unsigned char)*p);
		}
	}
	for (const char *p = query; p && *p; p++) {
		if (!url_byte((unsigned char)*p))
			return ll_err_set(
			        err, -EINVAL,
			        "the query holds a byte that must be percent-encoded (0x%02x)",
			        (unsigned char)*p);
	}
	return 0;
}

void kc__split_query(struct buf *b, const char **query)
{
	char *q = b->p ? strchr(b->p, '?') : NULL;

	*query = NULL;
	if (q) {
		*q = '\0';
		*query = q + 1;
	}
}
