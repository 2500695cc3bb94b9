/*
 * bare_tenants - the floor of the tenant provisioning benchmark (bench/tenants.py), and the
 * client that applies Tenants for landlord in the same benchmark.
 *
 *   bare_tenants --kubeconfig K --mode floor|apply --prefix P --tenants N --plan NAME
 *                --kinds dev,stage,prod --plan-hard JSON --ns-hard JSON --limits JSON
 *                [--threads T] [--timeout-seconds S] [--http2] [--no-sandbox]
 *                [--quota-status kcm|self] [--serviceaccount] [--access-first]
 *
 * Tenant i is "<P>-<i>", on plan NAME, owned by user "owner-<i>", with one namespace
 * "<P>-<i>-<kind>" per kind and a sandbox "<P>-<i>-owner-<i>-sandbox" (none with --no-sandbox).
 *
 * --mode apply: POST the N Tenants (T threads) and wait, through one watch, until every one
 * has the condition Ready=True. This is what landlord is timed against.
 *
 * --mode floor: what a bare client that knows the answer does to reach the end state of
 * docs/tenants.md for the same Tenants: POST each Tenant, then with T threads POST every object
 * (Namespace, ResourceQuota with this namespace's share @ns-hard, LimitRange, NetworkPolicy,
 * ClusterRole and ClusterRoleBinding landlord:tenant:<t>), create each namespace's RoleBinding
 * only once its ResourceQuota's status.hard equals its spec.hard (seen through one cluster-wide
 * watch) and its LimitRange and NetworkPolicy exist, and finally write the Tenant's status with
 * one merge patch. Requests answered 429 or 5xx, or lost to a timeout, are retried, and so are
 * creates the admission policy landlord-quota-in-force refuses while the API server has not yet
 * seen the namespace's new ResourceQuota (deploy/policies/quota-in-force.yaml).
 *
 * --quota-status self (floor): put each ResourceQuota in force the way landlord does
 * (src/controllers/tenant_quota.c) instead of waiting for kube-controller-manager: right after
 * creating it, count what a new namespace holds that the quota counts (a GET of the root CA
 * ConfigMap where count/configmaps is limited, of the default ServiceAccount where
 * count/serviceaccounts is), then write status.hard = spec.hard and that status.used with one
 * JSON patch of the status subresource guarded by the create's resourceVersion. A conflict
 * (kube-controller-manager or quota admission wrote the status meanwhile) is read back: in force
 * if status.hard equals spec.hard, else written again, at most 3 times. The quota watch still
 * counts a quota in force when kube-controller-manager gets there first.
 *
 * --serviceaccount (floor): also create each namespace's default ServiceAccount right after its
 * quota, instead of leaving it to kube-controller-manager (what-if: a pod is admitted only once
 * its ServiceAccount exists). Not part of landlord's end state's making today.
 *
 * --access-first (floor): a RoleBinding whose namespace is ready is written before any other
 * queued job (namespaces still to make, Tenant status), so that every owner gets access as
 * early as the work allows; by default jobs run in the order they became ready.
 *
 * Requests are spread over HTTP/1.1 keep-alive connections, one per request in flight (the
 * client core's default, and landlord's), or with --http2 multiplexed over one HTTP/2 connection.
 *
 * Both modes print one JSON line: seconds from the first POST to the end, phase times, request
 * counts, failures, and the tool's own CPU time and peak RSS, and t0_mono_ns, the first POST on
 * CLOCK_MONOTONIC (for tests/tools/pod_probe.c). Exit status 1 on any failure.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/ratelimit.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

#define MAX_KINDS   16
#define MAX_THREADS 64
#define RETRIES     8
#define FORCE_TRIES 3 /* --quota-status self: writes of one quota's status */

static const struct kc_gvr TENANTS = {"landlord.dev", "v1alpha1", "tenants", "Tenant", false};

enum job_type { JOB_TENANT, JOB_ACCESS, JOB_NAMESPACE, JOB_ROLEBINDING, JOB_STATUS };

struct job {
	enum job_type type;
	int t; /* tenant index */
	int k; /* namespace index within the tenant */
};

/* One tenant namespace. @prereq counts what its RoleBinding still waits for. */
struct ns_state {
	char *name;
	const char *kind;
	atomic_int prereq; /* quota in force + LimitRange and NetworkPolicy created */
	atomic_bool quota_seen;
};

struct tenant_state {
	char *name;
	char *owner;
	struct ns_state *ns; /* nkinds + 1 (the sandbox last) */
	atomic_int pending;  /* RoleBindings + the access objects still to write */
	int64_t ready_ns;    /* apply mode: when Ready=True was seen; 0 before */
};

struct bench {
	/* arguments */
	const char *kubeconfig;
	const char *mode;
	const char *prefix;
	const char *plan;
	int tenants;
	int threads;
	int timeout_s;
	bool http2;   /* every request on one HTTP/2 connection instead of HTTP/1.1 connections */
	bool sandbox; /* a sandbox namespace per tenant (default; --no-sandbox) */
	bool quota_status; /* --quota-status self: the client puts each quota in force */
	bool create_sa;    /* --serviceaccount: the client creates each default ServiceAccount */
	bool access_first; /* --access-first: RoleBindings before any other queued write */
	const char *kinds[MAX_KINDS];
	int nkinds;
	json_t *plan_hard;
	json_t *ns_hard;
	json_t *limits;

	struct kc_client *c;
	struct tenant_state *ts;
	int nns;             /* namespaces per tenant */
	json_t *ns_index;    /* namespace name -> t * nns + k; read by the watch thread only */
	atomic_int cancel;   /* ends the watch */
	char *start_rv;      /* the watch starts after this resourceVersion */
	int64_t t0;          /* first POST */
	int64_t t_posted;    /* apply: every Tenant POSTed; floor: every namespace's objects */
	int64_t t_quota;     /* floor: last ResourceQuota seen in force */
	atomic_long writes;  /* successful write requests */
	atomic_long reads;   /* --quota-status self: GETs (counting, reading a quota back) */
	atomic_long forced;  /* --quota-status self: quotas this client put in force */
	atomic_long retries; /* requests sent again after 429, 5xx or a timeout */
	atomic_int failures;

	/* the job queue: a FIFO over a fixed array (each job is queued once) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *jobs;
	size_t head, tail, cap;
	struct job *urgent; /* --access-first: RoleBinding jobs, taken before the others */
	size_t uhead, utail;
	int running;        /* jobs being executed */
	int done;           /* tenants finished (floor: status written; apply: Ready seen) */
	int ns_done;        /* floor: namespaces whose first four objects exist */
	int quota_in_force; /* floor: namespaces whose quota is in force */
	bool stop;
};

static void push(struct bench *b, enum job_type type, int t, int k)
{
	pthread_mutex_lock(&b->mu);
	if (b->access_first && type == JOB_ROLEBINDING && b->utail < b->cap)
		b->urgent[b->utail++] = (struct job){type, t, k};
	else if (b->tail < b->cap)
		b->jobs[b->tail++] = (struct job){type, t, k};
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void fail(struct bench *b, const char *what, const char *name, const struct kc_resp *r,
                 const struct ll_err *err)
{
	atomic_fetch_add(&b->failures, 1);
	log_kv(LOG_ERROR, "bare_tenants: request failed", "{s:s,s:s,s:i,s:s,s:s}", "what", what,
	       "name", name, "code", r ? (int)r->http_status : 0, "reason",
	       r ? r->status.reason : "", "message",
	       r && r->http_status ? r->status.message : err->msg);
	pthread_mutex_lock(&b->mu);
	b->stop = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/*
 * The admission policy landlord-quota-in-force refused a write in a namespace whose
 * landlord-quota the API server's informer has not seen yet (it looks the parameter up before it
 * looks at who asks, so cluster admins are refused too): just created, it is there a moment later.
 */
static bool no_params(const struct kc_resp *r)
{
	return r->http_status >= 400 && strstr(r->status.message, "no params found") != NULL;
}

static bool retryable(int rc, const struct kc_resp *r)
{
	return rc == -ETIMEDOUT ||
	       (rc == 0 && (r->http_status == 429 || r->http_status >= 500 || no_params(r)));
}

/*
 * POST (or, with @subresource, merge-PATCH) with retries; takes @obj. Returns 0 on 2xx, with the
 * object as the API server wrote it in *@written when that is not NULL (a new reference).
 */
static int write_obj_out(struct bench *b, const struct kc_gvr *gvr, const char *ns,
                         const char *name, const char *subresource, json_t *obj, json_t **written)
{
	struct kc_resp r = {0};
	struct ll_err err = {{0}};
	int attempt, rc = -EIO;

	for (attempt = 0; attempt < RETRIES; attempt++) {
		kc_resp_release(&r);
		if (subresource)
			rc = kc_patch(b->c, gvr, ns, name, subresource, KC_PATCH_MERGE, obj,
			              "bare-tenants", &r, &err);
		else
			rc = kc_create(b->c, gvr, ns, obj, &r, &err);
		if (rc == 0 && kc_resp_ok(&r)) {
			atomic_fetch_add(&b->writes, 1);
			if (written)
				*written = json_incref(r.body);
			goto out;
		}
		if (!retryable(rc, &r))
			break;
		atomic_fetch_add(&b->retries, 1);
		log_kv(LOG_WARN, "bare_tenants: retrying", "{s:s,s:s,s:i,s:i,s:s}", "what",
		       gvr->resource, "name", name, "rc", rc, "code", (int)r.http_status, "message",
		       rc < 0 ? err.msg : r.status.message);
		usleep((no_params(&r) ? 10000u : 100000u) << (attempt < 4 ? attempt : 4));
	}
	fail(b, gvr->resource, name, rc == 0 ? &r : NULL, &err);
	rc = -EIO;
out:
	kc_resp_release(&r);
	json_decref(obj);
	return rc;
}

static int write_obj(struct bench *b, const struct kc_gvr *gvr, const char *ns, const char *name,
                     const char *subresource, json_t *obj)
{
	return write_obj_out(b, gvr, ns, name, subresource, obj, NULL);
}

static json_t *labels(const struct bench *b, int t)
{
	return json_pack("{s:s,s:s}", "app.kubernetes.io/managed-by", "landlord",
	                 "landlord.dev/tenant", b->ts[t].name);
}

static json_t *meta(const struct bench *b, int t, const char *name)
{
	return json_pack("{s:s,s:o}", "name", name, "labels", labels(b, t));
}

static json_t *owners(const struct bench *b, int t)
{
	return json_pack("[{s:s,s:s,s:s}]", "kind", "User", "apiGroup", "rbac.authorization.k8s.io",
	                 "name", b->ts[t].owner);
}

static json_t *tenant_obj(const struct bench *b, int t)
{
	json_t *kinds = json_array();
	int k;

	for (k = 0; k < b->nkinds; k++)
		json_array_append_new(kinds, json_string(b->kinds[k]));
	return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:{s:{s:[s]}},s:{s:o,s:{s:b}}}}", "apiVersion",
	                 "landlord.dev/v1alpha1", "kind", "Tenant", "metadata", "name",
	                 b->ts[t].name, "spec", "plan", b->plan, "accessControl", "owners", "users",
	                 b->ts[t].owner, "namespaces", "withTenantPrefix", kinds, "sandboxes",
	                 "enabled", b->sandbox);
}

static void job_tenant(struct bench *b, int t)
{
	int k;

	if (write_obj(b, &TENANTS, NULL, b->ts[t].name, NULL, tenant_obj(b, t)) < 0)
		return;
	if (strcmp(b->mode, "apply") == 0)
		return;
	push(b, JOB_ACCESS, t, 0);
	for (k = 0; k < b->nns; k++)
		push(b, JOB_NAMESPACE, t, k);
}

static void job_access(struct bench *b, int t)
{
	char *name = xasprintf("landlord:tenant:%s", b->ts[t].name);
	json_t *role =
	        json_pack("{s:o,s:[{s:[s],s:[s],s:[s],s:[s,s]}]}", "metadata", meta(b, t, name),
	                  "rules", "apiGroups", "landlord.dev", "resources", "tenants",
	                  "resourceNames", b->ts[t].name, "verbs", "get", "watch");
	json_t *binding = json_pack("{s:o,s:{s:s,s:s,s:s},s:o}", "metadata", meta(b, t, name),
	                            "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
	                            "ClusterRole", "name", name, "subjects", owners(b, t));

	if (write_obj(b, &KC_CLUSTERROLES, NULL, name, NULL, role) < 0) {
		json_decref(binding);
		goto out;
	}
	if (write_obj(b, &KC_CLUSTERROLEBINDINGS, NULL, name, NULL, binding) < 0)
		goto out;
	if (atomic_fetch_sub(&b->ts[t].pending, 1) == 1)
		push(b, JOB_STATUS, t, 0);
out:
	free(name);
}

static void prereq_done(struct bench *b, int t, int k)
{
	if (atomic_fetch_sub(&b->ts[t].ns[k].prereq, 1) == 1)
		push(b, JOB_ROLEBINDING, t, k);
}

/* The quota of namespace @k of tenant @t is in force: counted once, whoever saw it first. */
static void quota_in_force(struct bench *b, int t, int k)
{
	if (atomic_exchange(&b->ts[t].ns[k].quota_seen, true))
		return;
	pthread_mutex_lock(&b->mu);
	if (++b->quota_in_force == b->tenants * b->nns)
		b->t_quota = clock_mono_ns();
	pthread_mutex_unlock(&b->mu);
	prereq_done(b, t, k);
}

/* A GET of @ns/@name: the object (a new reference), or NULL when missing or unreadable. */
static json_t *read_obj(struct bench *b, const struct kc_gvr *gvr, const char *ns, const char *name)
{
	struct kc_resp r = {0};
	struct ll_err err;
	json_t *obj = NULL;

	if (kc_get(b->c, gvr, ns, name, &r, &err) == 0 && kc_resp_ok(&r))
		obj = json_incref(r.body);
	atomic_fetch_add(&b->reads, 1);
	kc_resp_release(&r);
	return obj;
}

static bool exists(struct bench *b, const struct kc_gvr *gvr, const char *ns, const char *name)
{
	json_t *obj = read_obj(b, gvr, ns, name);

	json_decref(obj);
	return obj != NULL;
}

/* What a new quota counts in the new namespace @ns, counted as landlord counts it. */
static json_t *fresh_used(struct bench *b, const char *ns)
{
	json_t *used = json_object(), *v;
	int ca = -1, sa = -1; /* -1: not asked yet */
	const char *k;

	json_object_foreach(b->ns_hard, k, v) {
		bool one = false;

		if (strcmp(k, "configmaps") == 0 || strcmp(k, "count/configmaps") == 0) {
			ca = ca < 0 ? exists(b, &KC_CONFIGMAPS, ns, "kube-root-ca.crt") : ca;
			one = ca;
		} else if (strcmp(k, "count/serviceaccounts") == 0) {
			sa = sa < 0 ? exists(b, &KC_SERVICEACCOUNTS, ns, "default") : sa;
			one = sa;
		}
		json_object_set_new(used, k, json_string(one ? "1" : "0"));
	}
	return used;
}

static bool status_applied(const json_t *rq)
{
	const json_t *st = jx_get(rq, "status", "hard", NULL);

	return st && json_equal(jx_get(rq, "spec", "hard", NULL), st);
}

/* The JSON patch writing @rq's status: hard = spec.hard, used = what is counted, guarded. */
static json_t *status_patch(const json_t *rq, const json_t *fresh)
{
	json_t *used = json_deep_copy(jx_get(rq, "status", "used", NULL));

	used = used ? used : json_object();
	json_object_update_missing(used, (json_t *)fresh);
	return json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:{s:O,s:o}}]", "op", "replace", "path",
	                 "/metadata/resourceVersion", "value", jx_resource_version(rq), "op", "add",
	                 "path", "/status", "value", "hard",
	                 (json_t *)jx_get(rq, "spec", "hard", NULL), "used", used);
}

/* --quota-status self: put the quota @rq (as created; consumed) in force, as landlord does. */
static void force_quota(struct bench *b, int t, int k, json_t *rq)
{
	const char *ns = b->ts[t].ns[k].name;
	json_t *fresh = fresh_used(b, ns);

	for (int attempt = 0; rq && !status_applied(rq) && attempt < FORCE_TRIES; attempt++) {
		json_t *body = status_patch(rq, fresh);
		struct kc_resp r = {0};
		struct ll_err err;
		int rc = kc_patch(b->c, &KC_RESOURCEQUOTAS, ns, "landlord-quota", "status",
		                  KC_PATCH_JSON, body, "bare-tenants", &r, &err);

		json_decref(rq);
		rq = NULL;
		if (rc == 0 && kc_resp_ok(&r)) {
			atomic_fetch_add(&b->writes, 1);
			atomic_fetch_add(&b->forced, 1);
			rq = json_incref(r.body);
		} else if (rc == 0 && r.http_status == 409) { /* someone wrote it: read it back */
			rq = read_obj(b, &KC_RESOURCEQUOTAS, ns, "landlord-quota");
		}
		kc_resp_release(&r);
		json_decref(body);
	}
	if (rq && status_applied(rq))
		quota_in_force(b, t, k);
	json_decref(rq); /* not in force: the quota watch sees kube-controller-manager's */
	json_decref(fresh);
}

/*
 * --serviceaccount: the namespace's default ServiceAccount, which kube-controller-manager
 * creates otherwise (one worker). Already there (409) is done. After the quota: before it
 * exists, the quota-in-force policy refuses everyone.
 */
static int create_sa(struct bench *b, const char *ns)
{
	json_t *sa = json_pack("{s:{s:s}}", "metadata", "name", "default");
	struct kc_resp r = {0};
	struct ll_err err = {{0}};
	int rc = -EIO;

	for (int attempt = 0; attempt < RETRIES; attempt++) {
		kc_resp_release(&r);
		rc = kc_create(b->c, &KC_SERVICEACCOUNTS, ns, sa, &r, &err);
		if (rc == 0 && (kc_resp_ok(&r) || r.http_status == 409))
			break;
		atomic_fetch_add(&b->retries, 1);
		usleep(10000u << (attempt < 4 ? attempt : 4));
	}
	if (rc == 0 && kc_resp_ok(&r))
		atomic_fetch_add(&b->writes, 1);
	else if (!(rc == 0 && r.http_status == 409))
		fail(b, "serviceaccounts", ns, rc == 0 ? &r : NULL, &err);
	rc = rc == 0 && (kc_resp_ok(&r) || r.http_status == 409) ? 0 : -EIO;
	kc_resp_release(&r);
	json_decref(sa);
	return rc;
}

/* The namespace's ResourceQuota; with --quota-status self, put in force at once. */
static int job_quota(struct bench *b, int t, int k)
{
	const char *ns = b->ts[t].ns[k].name;
	json_t *quota = json_pack("{s:o,s:{s:o}}", "metadata", meta(b, t, "landlord-quota"), "spec",
	                          "hard", json_deep_copy(b->ns_hard));
	json_t *written = NULL;

	if (write_obj_out(b, &KC_RESOURCEQUOTAS, ns, "landlord-quota", NULL, quota, &written) < 0)
		return -1;
	if (b->quota_status)
		force_quota(b, t, k, written);
	else
		json_decref(written);
	return 0;
}

static void job_namespace(struct bench *b, int t, int k)
{
	struct ns_state *n = &b->ts[t].ns[k];
	const char *level = "restricted";
	bool sandbox = b->sandbox && k == b->nkinds;
	json_t *nsmeta = meta(b, t, n->name), *l = json_object_get(nsmeta, "labels");
	json_t *limits, *policy, *keys, *managed;
	char *dumped;
	void *it;

	json_object_set_new(l, "landlord.dev/kind", json_string(n->kind));
	json_object_set_new(l, "landlord.dev/plan", json_string(b->plan));
	json_object_set_new(l, "pod-security.kubernetes.io/enforce", json_string(level));
	json_object_set_new(l, "pod-security.kubernetes.io/warn", json_string(level));
	json_object_set_new(l, "pod-security.kubernetes.io/audit", json_string(level));
	if (sandbox)
		json_object_set_new(l, "landlord.dev/username", json_string(b->ts[t].owner));
	/* The record of what landlord set, so that the namespace carries what landlord writes. */
	keys = json_array();
	for (it = json_object_iter(l); it; it = json_object_iter_next(l, it))
		json_array_append_new(keys, json_string(json_object_iter_key(it)));
	managed = json_pack("{s:s,s:o,s:[s]}", "tenant", b->ts[t].name, "labels", keys,
	                    "annotations", "landlord.dev/source");
	dumped = json_dumps(managed, JSON_COMPACT | JSON_SORT_KEYS);
	json_object_set_new(nsmeta, "annotations",
	                    json_pack("{s:s,s:s}", "landlord.dev/managed-metadata", dumped,
	                              "landlord.dev/source", "spec"));
	free(dumped);
	json_decref(managed);
	if (write_obj(b, &KC_NAMESPACES, NULL, n->name, NULL,
	              json_pack("{s:o}", "metadata", nsmeta)) < 0)
		return;
	if (job_quota(b, t, k) < 0 || (b->create_sa && create_sa(b, n->name) < 0))
		return;
	limits = json_pack("{s:o,s:{s:o}}", "metadata", meta(b, t, "landlord-limits"), "spec",
	                   "limits", json_deep_copy(b->limits));
	if (write_obj(b, &KC_LIMITRANGES, n->name, "landlord-limits", NULL, limits) < 0)
		return;
	policy = json_pack("{s:o,s:{s:{},s:[s],s:[{s:[{s:{s:{s:s}}}]}]}}", "metadata",
	                   meta(b, t, "landlord-isolation"), "spec", "podSelector", "policyTypes",
	                   "Ingress", "ingress", "from", "namespaceSelector", "matchLabels",
	                   "landlord.dev/tenant", b->ts[t].name);
	if (write_obj(b, &KC_NETWORKPOLICIES, n->name, "landlord-isolation", NULL, policy) < 0)
		return;
	pthread_mutex_lock(&b->mu);
	if (++b->ns_done == b->tenants * b->nns)
		b->t_posted = clock_mono_ns();
	pthread_mutex_unlock(&b->mu);
	prereq_done(b, t, k);
}

static void job_rolebinding(struct bench *b, int t, int k)
{
	json_t *rb = json_pack("{s:o,s:{s:s,s:s,s:s},s:o}", "metadata",
	                       meta(b, t, "landlord-owners-admin"), "roleRef", "apiGroup",
	                       "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", "admin",
	                       "subjects", owners(b, t));

	if (write_obj(b, &KC_ROLEBINDINGS, b->ts[t].ns[k].name, "landlord-owners-admin", NULL, rb) <
	    0)
		return;
	if (atomic_fetch_sub(&b->ts[t].pending, 1) == 1)
		push(b, JOB_STATUS, t, 0);
}

static json_t *condition(const char *type, const char *now)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "type", type, "status", "True", "reason",
	                 "Provisioned", "message", "provisioned", "observedGeneration",
	                 (json_int_t)1, "lastTransitionTime", now);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void job_status(struct bench *b, int t)
{
	static const char *const types[] = {"Ready", "NamespacesReady", "AccessReady", "QuotaReady",
	                                    "PoliciesReady"};
	struct tenant_state *ts = &b->ts[t];
	json_t *names = json_array(), *conds = json_array(), *used = json_object(), *status;
	void *it;
	const char *sorted[MAX_KINDS + 1];
	char now[32];
	time_t sec = time(NULL);
	struct tm tm;
	size_t i;
	int k;

	gmtime_r(&sec, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (k = 0; k < b->nns; k++)
		sorted[k] = ts->ns[k].name;
	qsort(sorted, (size_t)b->nns, sizeof(*sorted), cmp_str);
	for (k = 0; k < b->nns; k++)
		json_array_append_new(names, json_string(sorted[k]));
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		json_array_append_new(conds, condition(types[i], now));
	for (it = json_object_iter(b->plan_hard); it; it = json_object_iter_next(b->plan_hard, it))
		json_object_set_new(used, json_object_iter_key(it), json_string("0"));
	status = json_pack(
	        "{s:{s:I,s:o,s:i,s:o,s:{s:o,s:o},s:o}}", "status", "observedGeneration",
	        (json_int_t)1, "namespaces", names, "namespaceCount", b->nns, "sandboxes",
	        b->sandbox ? json_pack("{s:s}", ts->owner, ts->ns[b->nkinds].name) : json_object(),
	        "quota", "hard", json_deep_copy(b->plan_hard), "used", used, "conditions", conds);
	if (write_obj(b, &TENANTS, NULL, ts->name, "status", status) < 0)
		return;
	pthread_mutex_lock(&b->mu);
	b->done++;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void *worker(void *ud)
{
	struct bench *b = ud;
	struct job j;

	for (;;) {
		pthread_mutex_lock(&b->mu);
		while (!b->stop && b->head == b->tail && b->uhead == b->utail)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->stop) {
			pthread_mutex_unlock(&b->mu);
			return NULL;
		}
		j = b->uhead < b->utail ? b->urgent[b->uhead++] : b->jobs[b->head++];
		b->running++;
		pthread_mutex_unlock(&b->mu);
		switch (j.type) {
		case JOB_TENANT:
			job_tenant(b, j.t);
			break;
		case JOB_ACCESS:
			job_access(b, j.t);
			break;
		case JOB_NAMESPACE:
			job_namespace(b, j.t, j.k);
			break;
		case JOB_ROLEBINDING:
			job_rolebinding(b, j.t, j.k);
			break;
		case JOB_STATUS:
			job_status(b, j.t);
			break;
		}
		pthread_mutex_lock(&b->mu);
		b->running--;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
	}
}

/* Floor: a ResourceQuota of ours whose status.hard equals its spec.hard is in force. */
static int on_quota(enum watch_event_type type, json_t *obj, void *ud)
{
	struct bench *b = ud;
	const char *ns = jx_namespace(obj);
	json_t *idx = ns ? json_object_get(b->ns_index, ns) : NULL;
	const json_t *spec = jx_get(obj, "spec", "hard", NULL),
	             *st = jx_get(obj, "status", "hard", NULL);
	int t, k;

	if (type == WATCH_BOOKMARK || type == WATCH_ERROR || idx == NULL || spec == NULL ||
	    st == NULL || !json_equal(spec, st))
		return 0;
	t = (int)json_integer_value(idx) / b->nns;
	k = (int)json_integer_value(idx) % b->nns;
	quota_in_force(b, t, k);
	return 0;
}

static bool ready_true(const json_t *conds)
{
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const char *type = jx_str(json_array_get(conds, i), "type", NULL);
		const char *status = jx_str(json_array_get(conds, i), "status", NULL);

		if (type && status && strcmp(type, "Ready") == 0 && strcmp(status, "True") == 0)
			return true;
	}
	return false;
}

/* Apply: a Tenant of ours with Ready=True is done. */
static int on_tenant(enum watch_event_type type, json_t *obj, void *ud)
{
	struct bench *b = ud;
	const char *name = jx_name(obj);
	size_t plen = strlen(b->prefix);
	const json_t *conds = jx_get(obj, "status", "conditions", NULL);
	char *end;
	long t;

	if (type == WATCH_BOOKMARK || type == WATCH_ERROR || name == NULL ||
	    strncmp(name, b->prefix, plen) != 0 || name[plen] != '-')
		return 0;
	t = strtol(name + plen + 1, &end, 10);
	if (*end != '\0' || t < 0 || t >= b->tenants || b->ts[t].ready_ns != 0)
		return 0;
	if (!ready_true(conds))
		return 0;
	b->ts[t].ready_ns = clock_mono_ns();
	pthread_mutex_lock(&b->mu);
	b->done++;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return 0;
}

/*
 * The resourceVersion a watch starts after: that of one page of at most one item (kc_list()
 * would walk every page, one item each, through everything earlier rounds created).
 */
static int current_rv(struct bench *b, const struct kc_gvr *gvr)
{
	struct buf path = BUF_INIT(4096);
	struct kc_request rq = {.method = "GET", .query = "limit=1", .verb = "LIST"};
	struct kc_resp r = {0};
	struct ll_err err = {{0}};
	const char *rv;
	int rc = kc_path(&path, gvr, NULL, NULL, NULL);

	rq.path = buf_cstr(&path);
	if (rc == 0)
		rc = kc_do(b->c, &rq, &r, &err);
	rv = kc_resp_ok(&r) ? jx_str(r.body, "metadata", "resourceVersion", NULL) : NULL;
	if (rc == 0 && rv)
		b->start_rv = xstrdup(rv);
	else
		fail(b, "list", gvr->resource, rc == 0 ? &r : NULL, &err);
	rc = rc == 0 && rv ? 0 : -EIO;
	kc_resp_release(&r);
	buf_release(&path);
	return rc;
}

/*
 * One request before the watch and the clock start, so that the connection is up, as landlord's
 * is by the time Tenants arrive. Without it, on HTTP/2, when the watch is among the first streams
 * of a new connection, requests started after the first few stall with 0 bytes received until
 * their 30 s timeout (libcurl 7.88.1; every time in 4 of 4 runs, never with a warm connection).
 */
static int warm_up(struct bench *b)
{
	struct kc_resp r = {0};
	struct ll_err err;
	int rc = kc_get(b->c, &KC_NAMESPACES, NULL, "default", &r, &err);

	if (rc == 0 && !kc_resp_ok(&r))
		rc = -EIO;
	if (rc < 0)
		fail(b, "get", "default", rc == 0 ? &r : NULL, &err);
	kc_resp_release(&r);
	return rc;
}

static void *watcher(void *ud)
{
	struct bench *b = ud;
	bool floor = strcmp(b->mode, "floor") == 0;
	const struct kc_gvr *gvr = floor ? &KC_RESOURCEQUOTAS : &TENANTS;
	struct kc_watch_opts wo = {.resource_version = b->start_rv,
	                           .timeout_seconds = b->timeout_s + 60,
	                           .cancel = &b->cancel};
	struct kc_resp r = {0};
	struct ll_err err;
	int rc;

	/* The server-side timeout is past the run's deadline, so a watch that ends before it is
	 * cancelled is a failure of the run, not something to paper over with a relist. */
	rc = kc_watch(b->c, gvr, NULL, &wo, floor ? on_quota : on_tenant, b, &r, &err);
	if (rc != -ECANCELED)
		fail(b, "watch", gvr->resource, rc == 0 ? &r : NULL, &err);
	kc_resp_release(&r);
	return NULL;
}

static long status_kib(const char *field)
{
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static double secs(int64_t from, int64_t to)
{
	return to > 0 ? (double)(to - from) / 1e9 : -1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void report(struct bench *b, int64_t t_end)
{
	struct rusage ru;
	int64_t *ready = xcalloc((size_t)b->tenants, sizeof(*ready));
	double cpu, p50 = -1;
	int i, n = 0;

	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	for (i = 0; i < b->tenants; i++)
		if (b->ts[i].ready_ns)
			ready[n++] = b->ts[i].ready_ns;
	if (n > 0) {
		qsort(ready, (size_t)n, sizeof(*ready), cmp_i64);
		p50 = secs(b->t0, ready[n / 2]);
	}
	printf("{\"mode\":\"%s\",\"tenants\":%d,\"namespaces_per_tenant\":%d,\"threads\":%d,"
	       "\"seconds\":%.3f,\"done\":%d,\"posted_seconds\":%.3f,\"quota_seconds\":%.3f,"
	       "\"ready_p50_seconds\":%.3f,\"writes\":%ld,\"retries\":%ld,\"failures\":%d,"
	       "\"cpu_seconds\":%.3f,\"hwm_kib\":%ld,\"reads\":%ld,\"quotas_forced\":%ld,"
	       "\"t0_mono_ns\":%lld}\n",
	       b->mode, b->tenants, b->nns, b->threads, secs(b->t0, t_end), b->done,
	       secs(b->t0, b->t_posted), secs(b->t0, b->t_quota), p50, atomic_load(&b->writes),
	       atomic_load(&b->retries), atomic_load(&b->failures), cpu, status_kib("VmHWM"),
	       atomic_load(&b->reads), atomic_load(&b->forced), (long long)b->t0);
	fflush(stdout);
	free(ready);
}

static int run(struct bench *b)
{
	pthread_t workers[MAX_THREADS], watch;
	bool watching = false;
	struct timespec deadline;
	int64_t t_end = 0;
	int i, rc;

	if (warm_up(b) < 0)
		return -EIO;
	if (current_rv(b, strcmp(b->mode, "floor") == 0 ? &KC_RESOURCEQUOTAS : &TENANTS) < 0)
		return -EIO;
	pthread_create(&watch, NULL, watcher, b);
	watching = true;
	b->t0 = clock_mono_ns();
	for (i = 0; i < b->tenants; i++)
		push(b, JOB_TENANT, i, 0);
	for (i = 0; i < b->threads; i++)
		pthread_create(&workers[i], NULL, worker, b);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += b->timeout_s;
	pthread_mutex_lock(&b->mu);
	rc = 0;
	while (!b->stop && b->done < b->tenants && rc != ETIMEDOUT) {
		if (strcmp(b->mode, "apply") == 0 && b->t_posted == 0 && b->head == b->tail &&
		    b->running == 0)
			b->t_posted = clock_mono_ns();
		rc = pthread_cond_timedwait(&b->cv, &b->mu, &deadline);
	}
	t_end = b->done == b->tenants ? clock_mono_ns() : 0;
	if (t_end == 0 && !b->stop)
		atomic_fetch_add(&b->failures, 1); /* timed out */
	b->stop = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	for (i = 0; i < b->threads; i++)
		pthread_join(workers[i], NULL);
	atomic_store(&b->cancel, 1);
	if (watching)
		pthread_join(watch, NULL);
	report(b, t_end);
	return atomic_load(&b->failures) ? -EIO : 0;
}

static void setup_tenants(struct bench *b)
{
	int t, k;

	b->nns = b->nkinds + (b->sandbox ? 1 : 0);
	b->ts = xcalloc((size_t)b->tenants, sizeof(*b->ts));
	b->ns_index = json_object();
	for (t = 0; t < b->tenants; t++) {
		struct tenant_state *ts = &b->ts[t];

		ts->name = xasprintf("%s-%d", b->prefix, t);
		ts->owner = xasprintf("owner-%d", t);
		ts->ns = xcalloc((size_t)b->nns, sizeof(*ts->ns));
		atomic_init(&ts->pending, b->nns + 1);
		for (k = 0; k < b->nns; k++) {
			struct ns_state *n = &ts->ns[k];

			n->kind = k < b->nkinds ? b->kinds[k] : "sandbox";
			n->name = k < b->nkinds ? xasprintf("%s-%s", ts->name, b->kinds[k])
			                        : xasprintf("%s-%s-sandbox", ts->name, ts->owner);
			atomic_init(&n->prereq, 2);
			json_object_set_new(b->ns_index, n->name, json_integer(t * b->nns + k));
		}
	}
	b->cap = (size_t)b->tenants * (size_t)(2 * b->nns + 3);
	b->jobs = xcalloc(b->cap, sizeof(*b->jobs));
	b->urgent = xcalloc(b->cap, sizeof(*b->urgent));
}

static void free_tenants(struct bench *b)
{
	int t, k;

	for (t = 0; b->ts && t < b->tenants; t++) {
		for (k = 0; k < b->nns; k++)
			free(b->ts[t].ns[k].name);
		free(b->ts[t].ns);
		free(b->ts[t].name);
		free(b->ts[t].owner);
	}
	free(b->ts);
	free(b->jobs);
	free(b->urgent);
	free(b->start_rv);
	json_decref(b->ns_index);
}

static json_t *json_arg(const char *s, const char *flag)
{
	struct ll_err err;
	json_t *v = jx_loads(s, strlen(s), &err);

	if (v == NULL)
		fprintf(stderr, "bare_tenants: %s: %s\n", flag, err.msg);
	return v;
}

static void parse_kinds(struct bench *b, const char *arg, char **kinds_buf)
{
	char *save = NULL, *tok;

	free(*kinds_buf);
	*kinds_buf = xstrdup(arg);
	b->nkinds = 0;
	for (tok = strtok_r(*kinds_buf, ",", &save); tok && b->nkinds < MAX_KINDS;
	     tok = strtok_r(NULL, ",", &save))
		b->kinds[b->nkinds++] = tok;
}

static void set_json(json_t **slot, const char *arg, const char *flag)
{
	json_decref(*slot);
	*slot = json_arg(arg, flag);
}

/* One option @ch with its argument @arg into @b. */
static int parse_opt(struct bench *b, int ch, const char *arg, char **kinds_buf)
{
	switch (ch) {
	case 'k':
		b->kubeconfig = arg;
		break;
	case 'm':
		b->mode = arg;
		break;
	case 'p':
		b->prefix = arg;
		break;
	case 'n':
		b->tenants = (int)strtol(arg, NULL, 10);
		break;
	case 'P':
		b->plan = arg;
		break;
	case 'K':
		parse_kinds(b, arg, kinds_buf);
		break;
	case 'H':
		set_json(&b->plan_hard, arg, "--plan-hard");
		break;
	case 'N':
		set_json(&b->ns_hard, arg, "--ns-hard");
		break;
	case 'L':
		set_json(&b->limits, arg, "--limits");
		break;
	case 't':
		b->threads = (int)strtol(arg, NULL, 10);
		break;
	case 'T':
		b->timeout_s = (int)strtol(arg, NULL, 10);
		break;
	case '2':
		b->http2 = true;
		break;
	case 'S':
		b->sandbox = false;
		break;
	case 'A':
		b->create_sa = true;
		break;
	case 'F':
		b->access_first = true;
		break;
	case 'Q':
		if (strcmp(arg, "self") != 0 && strcmp(arg, "kcm") != 0)
			return -EINVAL;
		b->quota_status = strcmp(arg, "self") == 0;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/* Parse the command line into @b; @kinds_buf keeps the strings --kinds points into. */
static int parse_args(int argc, char **argv, struct bench *b, char **kinds_buf)
{
	static const struct option opts[] = {
	        {"kubeconfig", required_argument, NULL, 'k'},
	        {"mode", required_argument, NULL, 'm'},
	        {"prefix", required_argument, NULL, 'p'},
	        {"tenants", required_argument, NULL, 'n'},
	        {"plan", required_argument, NULL, 'P'},
	        {"kinds", required_argument, NULL, 'K'},
	        {"plan-hard", required_argument, NULL, 'H'},
	        {"ns-hard", required_argument, NULL, 'N'},
	        {"limits", required_argument, NULL, 'L'},
	        {"threads", required_argument, NULL, 't'},
	        {"timeout-seconds", required_argument, NULL, 'T'},
	        {"http2", no_argument, NULL, '2'},
	        {"no-sandbox", no_argument, NULL, 'S'},
	        {"quota-status", required_argument, NULL, 'Q'},
	        {"serviceaccount", no_argument, NULL, 'A'},
	        {"access-first", no_argument, NULL, 'F'},
	        {NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (parse_opt(b, ch, optarg, kinds_buf) < 0)
			return -EINVAL;
	if (b->mode == NULL || (strcmp(b->mode, "floor") != 0 && strcmp(b->mode, "apply") != 0) ||
	    b->prefix == NULL || b->plan == NULL || b->tenants <= 0 || b->threads <= 0 ||
	    b->threads > MAX_THREADS || b->timeout_s <= 0 || !json_is_object(b->plan_hard) ||
	    !json_is_object(b->ns_hard) || !json_is_array(b->limits)) {
		fprintf(stderr, "bare_tenants: --mode floor|apply, --prefix, --plan, --tenants, "
		                "--plan-hard, --ns-hard, --limits are required (see the source)\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b = {.threads = 4, .timeout_s = 900, .sandbox = true};
	struct kcfg cfg = {0};
	struct ll_err err;
	char *kinds_buf = NULL;
	int rc;

	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	rc = parse_args(argc, argv, &b, &kinds_buf);
	if (rc < 0)
		goto out;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = kcfg_load_default(b.kubeconfig, NULL, &cfg, &err);
	if (rc == 0)
		rc = kc_client_new(
		        &cfg, &(struct kc_opts){.qps = -1, .client_name = "bare", .http2 = b.http2},
		        &b.c, &err);
	if (rc < 0) {
		log_kv(LOG_ERROR, "bare_tenants: cannot start", "{s:s}", "error", err.msg);
	} else {
		setup_tenants(&b);
		rc = run(&b);
	}
	kc_client_free(b.c);
	kcfg_release(&cfg);
	free_tenants(&b);
	curl_global_cleanup();
out:
	json_decref(b.plan_hard);
	json_decref(b.ns_hard);
	json_decref(b.limits);
	free(kinds_buf);
	pthread_mutex_destroy(&b.mu);
	pthread_cond_destroy(&b.cv);
	return rc < 0 ? 1 : 0;
}
