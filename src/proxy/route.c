/* route.c - a tenant proxy path, split and classified (route.h). */
#include "proxy/route.h"

#include <stddef.h>
#include <string.h>

#include "kube/k8sname.h"

struct segs {
	char *s[PX_SEGMENTS_MAX];
	size_t n;
};

static bool is_dot_segment(const char *s)
{
	return strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

static const char *segment_problem(const char *s)
{
	if (!*s)
		return "empty path segment";
	if (is_dot_segment(s))
		return "a '.' or '..' path segment";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x21 || *p == 0x7f)
			return "a control character or space in the path";
	return NULL;
}

/* Split @buf (starting with '/') in place into @out. Return: NULL or the problem. */
static const char *split(char *buf, struct segs *out)
{
	char *p = buf + 1;

	out->n = 0;
	for (;;) {
		char *slash = strchr(p, '/');

		if (out->n == PX_SEGMENTS_MAX)
			return "too many path segments";
		out->s[out->n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	for (size_t i = 0; i < out->n; i++) {
		const char *why = segment_problem(out->s[i]);

		if (why)
			return why;
	}
	return NULL;
}

static enum px_kind bad(struct px_route *r, const char *why)
{
	r->kind = PX_BAD;
	r->why = why;
	return PX_BAD;
}

static enum px_kind found(struct px_route *r, enum px_kind k)
{
	r->kind = k;
	return k;
}

/* Segments @from.. joined again with '/' (they are contiguous in the buffer). */
static const char *join_from(struct segs *g, size_t from)
{
	if (from >= g->n)
		return NULL;
	for (size_t k = from + 1; k < g->n; k++)
		g->s[k][-1] = '/';
	return g->s[from];
}

static enum px_kind in_namespace(struct px_route *r, struct segs *g, size_t i, bool core)
{
	r->ns = g->s[i + 1];
	if (!k8s_is_dns_label(r->ns))
		return bad(r, "a namespace that is not a DNS label");
	if (g->n == i + 2)
		return found(r, core ? PX_NAMESPACE : PX_NOT_FOUND);
	if (core && g->n == i + 3 &&
	    (strcmp(g->s[i + 2], "status") == 0 || strcmp(g->s[i + 2], "finalize") == 0)) {
		r->sub = g->s[i + 2];
		return found(r, PX_NAMESPACE);
	}
	r->resource = g->s[i + 2];
	r->name = g->n > i + 3 ? g->s[i + 3] : NULL;
	r->sub = join_from(g, i + 4);
	return found(r, PX_NAMESPACED);
}

/* The segments from @i on name resources of group/version already set in @r. */
static enum px_kind resources(struct px_route *r, struct segs *g, size_t i)
{
	bool core = px_route_is_core(r);

	if (strcmp(g->s[i], "watch") == 0)
		return bad(r, "the legacy /watch/ path: use ?watch=true");
	if (strcmp(g->s[i], "namespaces") == 0 && g->n > i + 1)
		return in_namespace(r, g, i, core);
	if (core && strcmp(g->s[i], "namespaces") == 0)
		return found(r, PX_NAMESPACES);
	r->resource = g->s[i];
	r->name = g->n > i + 1 ? g->s[i + 1] : NULL;
	r->sub = join_from(g, i + 2);
	return found(r, PX_TOP);
}

static enum px_kind api_core(struct px_route *r, struct segs *g)
{
	if (g->n == 3 || (g->n == 4 && strcmp(g->s[3], "v1") == 0))
		return found(r, PX_DISCOVERY);
	if (strcmp(g->s[3], "v1") != 0)
		return found(r, PX_NOT_FOUND);
	r->group = "";
	r->version = "v1";
	return resources(r, g, 4);
}

static enum px_kind api_groups(struct px_route *r, struct segs *g)
{
	if (g->n <= 5)
		return found(r, PX_DISCOVERY);
	r->group = g->s[3];
	r->version = g->s[4];
	return resources(r, g, 5);
}

/* Below the tenant's base: g->s[2] is the first segment there. */
static enum px_kind below_base(struct px_route *r, struct segs *g)
{
	const char *first = g->s[2];

	if (strcmp(first, "version") == 0 && g->n == 3)
		return found(r, PX_DISCOVERY);
	if (strcmp(first, "kubeconfig") == 0 && g->n == 3)
		return found(r, PX_KUBECONFIG);
	if (strcmp(first, "openapi") == 0)
		return found(r, PX_OPENAPI);
	if (strcmp(first, "api") == 0)
		return api_core(r, g);
	if (strcmp(first, "apis") == 0)
		return api_groups(r, g);
	return found(r, PX_NOT_FOUND);
}

static void keep_rest(struct px_route *r, const char *path, size_t base_len)
{
	size_t n = strlen(path + base_len);

	memcpy(r->rest_buf, path + base_len, n + 1);
	r->rest = r->rest_buf;
}

enum px_kind px_route_parse(const char *path, struct px_route *out)
{
	struct segs g;
	size_t len = strlen(path);
	const char *why;

	memset(out, 0, offsetof(struct px_route, buf));
	if (len > PX_PATH_MAX)
		return bad(out, "a path over 4096 bytes");
	if (strncmp(path, "/tenants/", 9) != 0)
		return found(out, PX_NOT_FOUND);
	memcpy(out->buf, path, len + 1);
	why = split(out->buf, &g);
	if (why)
		return bad(out, why);
	out->tenant = g.s[1];
	if (!k8s_is_dns_label(out->tenant))
		return bad(out, "a tenant name that is not a DNS label");
	if (g.n == 2)
		return found(out, PX_NOT_FOUND);
	keep_rest(out, path, (size_t)(g.s[2] - 1 - out->buf));
	return below_base(out, &g);
}

bool px_route_is_core(const struct px_route *r)
{
	return r->group && !*r->group;
}
