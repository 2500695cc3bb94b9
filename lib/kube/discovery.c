/* discovery.c - kinds and resources from the API server's discovery documents (discovery.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/vec.h"
#include "kube/discovery.h"

#define REFRESH_MIN_MS 10000 /* misses refresh at most this often */
#define PATH_MAX_LEN   1024

struct disc_res {
	struct kc_gvr gvr; /* interned strings */
	bool preferred;    /* the group's preferred version */
};

struct disc {
	struct kc_client *c;
	pthread_mutex_t refresh_mu; /* one refresh at a time; held across HTTP calls */
	pthread_mutex_t mu;         /* everything below */
	json_t *strings;            /* interned: s -> json string s; never shrinks */
	struct disc_res *res;
	size_t n_res;
	long long last_refresh_ms; /* monotonic; 0: never */
	int last_rc;               /* of the last refresh */
	struct ll_err last_err;
};

/* A resource list under construction. */
struct res_vec VEC_BODY(struct disc_res);

/* Caller holds d->mu. The result lives until disc_free(). */
static const char *intern(struct disc *d, const char *s)
{
	json_t *v = json_object_get(d->strings, s);

	if (v == NULL) {
		v = json_string(s);
		json_object_set_new(d->strings, s, v);
	}
	return json_string_value(v);
}

struct disc *disc_new(struct kc_client *c)
{
	struct disc *d = xcalloc(1, sizeof(*d));

	d->c = c;
	d->strings = json_object();
	pthread_mutex_init(&d->refresh_mu, NULL);
	pthread_mutex_init(&d->mu, NULL);
	return d;
}

void disc_free(struct disc *d)
{
	if (d == NULL)
		return;
	free(d->res);
	json_decref(d->strings);
	pthread_mutex_destroy(&d->refresh_mu);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int answer_errno(long http_status)
{
	if (http_status == 401 || http_status == 403)
		return -EACCES;
	if (http_status == 404)
		return -ENOENT;
	return -EIO;
}

/* GET @path as JSON into *out (new reference). */
static int get_json(struct disc *d, const char *path, json_t **out, struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc;

	*out = NULL;
	rc = kc_request(d->c, "GET", path, NULL, NULL, 0, NULL, &resp, err);
	if (rc < 0)
		goto out;
	if (!kc_resp_ok(&resp)) {
		rc = ll_err_set(err, answer_errno(resp.http_status), "GET %s: HTTP %ld %s: %s",
		                path, resp.http_status, resp.status.reason, resp.status.message);
		goto out;
	}
	if (!json_is_object(resp.body)) {
		rc = ll_err_set(err, -EPROTO, "GET %s: the answer is not a JSON object", path);
		goto out;
	}
	*out = json_incref(resp.body);
out:
	kc_resp_release(&resp);
	return rc;
}

/* Add the resources of one APIResourceList; subresources ("pods/log") are skipped. */
static void add_resources(struct disc *d, struct res_vec *rv, const char *group,
                          const char *version, bool preferred, const json_t *list)
{
	json_t *resources = json_object_get(list, "resources"), *r;
	size_t i;

	pthread_mutex_lock(&d->mu);
	json_array_foreach(resources, i, r) {
		const char *name = jx_str(r, "name", NULL), *kind = jx_str(r, "kind", NULL);

		if (name == NULL || kind == NULL || strchr(name, '/'))
			continue;
		vec_push(rv, ((struct disc_res){{intern(d, group), intern(d, version),
		                                 intern(d, name), intern(d, kind),
		                                 jx_bool(r, false, "namespaced", NULL)},
		                                preferred}));
	}
	pthread_mutex_unlock(&d->mu);
}

/* Read one group version's resource list; the first error is kept in *first. */
static void read_group_version(struct disc *d, struct res_vec *rv, const char *group,
                               const char *version, bool preferred, int *first, struct ll_err *err)
{
	struct buf path = BUF_INIT(PATH_MAX_LEN);
	struct ll_err my_err = {{0}};
	json_t *list = NULL;
	int rc;

	if (*group)
		rc = buf_appendf(&path, "/apis/%s/%s", group, version);
	else
		rc = buf_appendf(&path, "/api/%s", version);
	if (rc == 0)
		rc = get_json(d, buf_cstr(&path), &list, &my_err);
	else
		ll_err_set(&my_err, rc, "group version %s/%s: name too long", group, version);
	if (rc == 0)
		add_resources(d, rv, group, version, preferred, list);
	else if (*first == 0)
		*first = ll_err_set(err, rc, "%s", my_err.msg);
	json_decref(list);
	buf_release(&path);
}

static void read_core(struct disc *d, struct res_vec *rv, int *first, struct ll_err *err)
{
	struct ll_err my_err = {{0}};
	json_t *api = NULL, *versions, *v;
	size_t i;
	int rc;

	rc = get_json(d, "/api", &api, &my_err);
	if (rc < 0) {
		if (*first == 0)
			*first = ll_err_set(err, rc, "%s", my_err.msg);
		return;
	}
	versions = json_object_get(api, "versions");
	json_array_foreach(versions, i, v) {
		if (json_is_string(v))
			read_group_version(d, rv, "", json_string_value(v), i == 0, first, err);
	}
	json_decref(api);
}

static void read_group(struct disc *d, struct res_vec *rv, const json_t *group, int *first,
                       struct ll_err *err)
{
	const char *name = jx_str(group, "name", NULL);
	const char *pref = jx_str(group, "preferredVersion", "version", NULL);
	json_t *versions = json_object_get(group, "versions"), *v;
	size_t i;

	if (name == NULL)
		return;
	json_array_foreach(versions, i, v) {
		const char *ver = jx_str(v, "version", NULL);

		if (ver)
			read_group_version(d, rv, name, ver, pref ? strcmp(pref, ver) == 0 : i == 0,
			                   first, err);
	}
}

static void read_groups(struct disc *d, struct res_vec *rv, int *first, struct ll_err *err)
{
	struct ll_err my_err = {{0}};
	json_t *apis = NULL, *groups, *g;
	size_t i;
	int rc;

	rc = get_json(d, "/apis", &apis, &my_err);
	if (rc < 0) {
		if (*first == 0)
			*first = ll_err_set(err, rc, "%s", my_err.msg);
		return;
	}
	groups = json_object_get(apis, "groups");
	json_array_foreach(groups, i, g) {
		read_group(d, rv, g, first, err);
	}
	json_decref(apis);
}

/* Caller holds refresh_mu. What could be read is installed even when some call failed. */
static int refresh_locked(struct disc *d, struct ll_err *err)
{
	struct res_vec rv = VEC_INIT;
	int first = 0;

	read_core(d, &rv, &first, err);
	read_groups(d, &rv, &first, err);
	pthread_mutex_lock(&d->mu);
	if (rv.len > 0 || first == 0) {
		free(d->res);
		d->res = rv.v; /* the array moves to @d; its length is all it needs */
		d->n_res = rv.len;
		rv = (struct res_vec)VEC_INIT;
	}
	d->last_refresh_ms = clock_mono_ms();
	d->last_rc = first;
	if (first)
		d->last_err = *err;
	pthread_mutex_unlock(&d->mu);
	vec_release(&rv);
	return first;
}

int disc_refresh(struct disc *d, struct ll_err *err)
{
	struct ll_err my_err = {{0}};
	int rc;

	pthread_mutex_lock(&d->refresh_mu);
	rc = refresh_locked(d, &my_err);
	if (rc)
		ll_err_set(err, rc, "%s", my_err.msg);
	pthread_mutex_unlock(&d->refresh_mu);
	return rc;
}

void disc_invalidate(struct disc *d)
{
	pthread_mutex_lock(&d->mu);
	d->last_refresh_ms = 0;
	pthread_mutex_unlock(&d->mu);
}

struct query {
	const char *group;
	const char *version;  /* kind lookups */
	const char *kind;     /* kind lookups */
	const char *resource; /* resource lookups */
};

static bool match(const struct disc_res *r, const struct query *q)
{
	if (strcmp(r->gvr.group, q->group) != 0)
		return false;
	if (q->kind)
		return strcmp(r->gvr.version, q->version) == 0 && strcmp(r->gvr.kind, q->kind) == 0;
	return strcmp(r->gvr.resource, q->resource) == 0;
}

/* A kind matches in its version; a resource in the preferred version, else the first one. */
static bool find(struct disc *d, const struct query *q, struct kc_gvr *out)
{
	const struct disc_res *hit = NULL;

	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < d->n_res; i++) {
		if (!match(&d->res[i], q))
			continue;
		if (hit == NULL || (d->res[i].preferred && !hit->preferred))
			hit = &d->res[i];
		if (q->kind || hit->preferred)
			break;
	}
	if (hit)
		*out = hit->gvr;
	pthread_mutex_unlock(&d->mu);
	return hit != NULL;
}

/* Return: true when a refresh is due; else false with the last refresh's outcome. */
static bool refresh_due(struct disc *d, int *last_rc, struct ll_err *err)
{
	bool due;

	pthread_mutex_lock(&d->mu);
	due = d->last_refresh_ms == 0 || clock_mono_ms() - d->last_refresh_ms >= REFRESH_MIN_MS;
	*last_rc = d->last_rc;
	if (!due && d->last_rc)
		ll_err_set(err, d->last_rc, "%s", d->last_err.msg);
	pthread_mutex_unlock(&d->mu);
	return due;
}

/*
 * Look up; on a miss refresh once (rate-limited) and look again. A miss after a failed
 * refresh returns that refresh's error: the server might serve the thing after all.
 */
static int lookup(struct disc *d, const struct query *q, struct kc_gvr *out, struct ll_err *err)
{
	struct ll_err my_err = {{0}};
	int rc = 0;

	if (find(d, q, out))
		return 0;
	pthread_mutex_lock(&d->refresh_mu);
	if (find(d, q, out))
		goto out; /* another thread's refresh found it */
	if (refresh_due(d, &rc, err))
		rc = refresh_locked(d, &my_err);
	if (rc && my_err.msg[0])
		ll_err_set(err, rc, "%s", my_err.msg);
	if (find(d, q, out))
		rc = 0;
	else if (rc == 0)
		rc = -ENOENT;
out:
	pthread_mutex_unlock(&d->refresh_mu);
	return rc;
}

int disc_lookup_kind(struct disc *d, const char *api_version, const char *kind, struct kc_gvr *out,
                     struct ll_err *err)
{
	const char *slash = strchr(api_version, '/');
	char *group = slash ? xstrndup(api_version, (size_t)(slash - api_version)) : xstrdup("");
	struct query q = {group, slash ? slash + 1 : api_version, kind, NULL};
	int rc = lookup(d, &q, out, err);

	if (rc == -ENOENT)
		ll_err_set(err, rc, "kind %s %s is not served", api_version, kind);
	free(group);
	return rc;
}

int disc_lookup_resource(struct disc *d, const char *group, const char *resource,
                         struct kc_gvr *out, struct ll_err *err)
{
	struct query q = {group ? group : "", NULL, NULL, resource};
	int rc = lookup(d, &q, out, err);

	if (rc == -ENOENT)
		ll_err_set(err, rc, "resource %s%s%s is not served", resource, *q.group ? "." : "",
		           q.group);
	return rc;
}
