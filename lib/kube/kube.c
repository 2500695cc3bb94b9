/*
 * kube.c - untyped Kubernetes REST client (see kube.h and docs/internals/kube.md): the client
 * lifecycle and the verbs. The other kube_*.c files hold the rest; kube_internal.h maps them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/ratelimit.h"
#include "kube/kube.h"
#include "kube/kube_internal.h"
#include "kube/kubeconfig.h"

const struct kc_gvr KC_NAMESPACES = {"", "v1", "namespaces", "Namespace", false};
const struct kc_gvr KC_CONFIGMAPS = {"", "v1", "configmaps", "ConfigMap", true};
const struct kc_gvr KC_SECRETS = {"", "v1", "secrets", "Secret", true};
const struct kc_gvr KC_SERVICEACCOUNTS = {"", "v1", "serviceaccounts", "ServiceAccount", true};
const struct kc_gvr KC_PODS = {"", "v1", "pods", "Pod", true};
const struct kc_gvr KC_EVENTS = {"", "v1", "events", "Event", true};
const struct kc_gvr KC_RESOURCEQUOTAS = {"", "v1", "resourcequotas", "ResourceQuota", true};
const struct kc_gvr KC_LIMITRANGES = {"", "v1", "limitranges", "LimitRange", true};
const struct kc_gvr KC_PODTEMPLATES = {"", "v1", "podtemplates", "PodTemplate", true};
const struct kc_gvr KC_LEASES = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct kc_gvr KC_ROLEBINDINGS = {"rbac.authorization.k8s.io", "v1", "rolebindings",
                                       "RoleBinding", true};
const struct kc_gvr KC_CLUSTERROLES = {"rbac.authorization.k8s.io", "v1", "clusterroles",
                                       "ClusterRole", false};
const struct kc_gvr KC_CLUSTERROLEBINDINGS = {"rbac.authorization.k8s.io", "v1",
                                              "clusterrolebindings", "ClusterRoleBinding", false};
const struct kc_gvr KC_NETWORKPOLICIES = {"networking.k8s.io", "v1", "networkpolicies",
                                          "NetworkPolicy", true};
const struct kc_gvr KC_CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               "CustomResourceDefinition", false};
const struct kc_gvr KC_SELFSUBJECTACCESSREVIEWS = {
        "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false};

/*
 * A request on @path (a path and query, built by the caller; cut at its '?'); @obj (or NULL) is
 * sent as the body.
 */
static int object_request_as(struct kc_client *c, const char *verb, const char *method,
                             struct buf *path, const char *content_type, const json_t *obj,
                             const char *as_user, struct kc_resp *resp, struct ll_err *err)
{
	char *body = obj ? jx_dumps(obj) : NULL;
	struct kc_header as = {"Impersonate-User", as_user};
	struct kc_request kr = {.method = method,
	                        .body = body,
	                        .body_len = body ? strlen(body) : 0,
	                        .content_type = content_type,
	                        .headers = as_user ? &as : NULL,
	                        .n_headers = as_user ? 1 : 0,
	                        .verb = verb};
	int rc;

	kc__split_query(path, &kr.query);
	kr.path = buf_cstr(path);
	rc = kc_do(c, &kr, resp, err);
	free(body);
	return rc;
}

static int object_request(struct kc_client *c, const char *verb, const char *method,
                          struct buf *path, const char *content_type, const json_t *obj,
                          struct kc_resp *resp, struct ll_err *err)
{
	return object_request_as(c, verb, method, path, content_type, obj, NULL, resp, err);
}

int kc_get(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
           struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, NULL);

	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "GET", "GET", &path, NULL, NULL, resp, err);
	buf_release(&path);
	return rc;
}

int kc_create(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const json_t *obj,
              struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, NULL, NULL);

	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "CREATE", "POST", &path, NULL, obj, resp, err);
	buf_release(&path);
	return rc;
}

/* Set @key of @obj to @value unless it is NULL or "". */
static void set_attr(json_t *obj, const char *key, const char *value)
{
	if (value != NULL && *value != '\0')
		json_object_set_new(obj, key, json_string(value));
}

int kc_self_review(struct kc_client *c, const struct kc_access *a, bool *allowed,
                   struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	json_t *attrs = json_object(), *review;
	int rc;

	*allowed = false;
	set_attr(attrs, "verb", a->verb);
	set_attr(attrs, "group", a->group);
	set_attr(attrs, "resource", a->resource);
	set_attr(attrs, "subresource", a->subresource);
	set_attr(attrs, "name", a->name);
	set_attr(attrs, "namespace", a->ns);
	review = json_pack("{s:s,s:s,s:{s:o}}", "apiVersion", "authorization.k8s.io/v1", "kind",
	                   "SelfSubjectAccessReview", "spec", "resourceAttributes", attrs);
	rc = kc_path(&path, &KC_SELFSUBJECTACCESSREVIEWS, NULL, NULL, NULL);
	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "REVIEW", "POST", &path, NULL, review, resp, err);
	if (rc == 0 && kc_resp_ok(resp))
		*allowed = json_is_true(jx_get(resp->body, "status", "allowed", NULL));
	buf_release(&path);
	json_decref(review);
	return rc;
}

/* Overwrite the token string inside @resp's body, so that freeing it leaves no copy there. */
static void zero_token(struct kc_resp *resp)
{
	const json_t *t = jx_get(resp->body, "status", "token", NULL);

	if (json_is_string(t))
		explicit_bzero((char *)json_string_value(t), json_string_length(t));
}

int kc_token_request(struct kc_client *c, const char *ns, const char *sa, long expiration_seconds,
                     char **token, struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	json_t *rq = json_pack("{s:s,s:s,s:{s:I}}", "apiVersion", "authentication.k8s.io/v1",
	                       "kind", "TokenRequest", "spec", "expirationSeconds",
	                       (json_int_t)expiration_seconds);
	const char *t;
	int rc;

	*token = NULL;
	rc = kc_path(&path, &KC_SERVICEACCOUNTS, ns, sa, "token");
	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "REVIEW", "POST", &path, NULL, rq, resp, err);
	t = rc == 0 && kc_resp_ok(resp) ? jx_str(resp->body, "status", "token", NULL) : NULL;
	if (t != NULL && *t != '\0' && strlen(t) < KC_TOKEN_MAX)
		*token = xstrdup(t);
	else if (rc == 0 && kc_resp_ok(resp))
		rc = ll_err_set(err, -EPROTO, "TokenRequest %s/%s: no usable status.token", ns, sa);
	zero_token(resp);
	buf_release(&path);
	json_decref(rq);
	return rc;
}

int kc_replace(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
               const char *subresource, const json_t *obj, struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, subresource);

	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "UPDATE", "PUT", &path, NULL, obj, resp, err);
	buf_release(&path);
	return rc;
}

int kc_apply_with(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
                  const json_t *obj, const struct kc_apply_opts *o, struct kc_resp *resp,
                  struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, name, o->subresource);

	if (rc == 0)
		rc = kc__query(&path, "fieldManager", o->field_manager);
	if (rc == 0 && o->force)
		rc = kc__query(&path, "force", "true");
	if (rc == 0 && o->dry_run)
		rc = kc__query(&path, "dryRun", "All");
	rc = rc ? kc__path_error(resp, err)
	        : object_request_as(c, o->dry_run ? "REVIEW" : "APPLY", "PATCH", &path,
	                            "application/apply-patch+yaml", obj, o->as_user, resp, err);
	buf_release(&path);
	return rc;
}

int kc_apply(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, const json_t *obj, const char *field_manager, bool force,
             struct kc_resp *resp, struct ll_err *err)
{
	struct kc_apply_opts o = {
	        .field_manager = field_manager, .force = force, .subresource = subresource};

	return kc_apply_with(c, gvr, ns, name, obj, &o, resp, err);
}

int kc_patch(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
             const char *subresource, enum kc_patch_type type, const json_t *patch,
             const char *field_manager, struct kc_resp *resp, struct ll_err *err)
{
	static const char *const types[] = {
	        [KC_PATCH_MERGE] = "application/merge-patch+json",
	        [KC_PATCH_JSON] = "application/json-patch+json",
	        [KC_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	};
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc;

	if ((unsigned)type >= sizeof(types) / sizeof(types[0])) {
		memset(resp, 0, sizeof(*resp));
		return ll_err_set(err, -EINVAL, "unknown patch type %d", (int)type);
	}
	rc = kc_path(&path, gvr, ns, name, subresource);
	if (rc == 0)
		rc = kc__query(&path, "fieldManager", field_manager);
	rc = rc ? kc__path_error(resp, err)
	        : object_request(c, "PATCH", "PATCH", &path, types[type], patch, resp, err);
	buf_release(&path);
	return rc;
}

static json_t *delete_options(const struct kc_delete_opts *o)
{
	json_t *body = json_pack("{s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
	json_t *pre;

	if (o == NULL)
		return body;
	if (o->precondition_uid || o->precondition_rv) {
		pre = json_object();
		if (o->precondition_uid)
			json_object_set_new(pre, "uid", json_string(o->precondition_uid));
		if (o->precondition_rv)
			json_object_set_new(pre, "resourceVersion",
			                    json_string(o->precondition_rv));
		json_object_set_new(body, "preconditions", pre);
	}
	if (o->propagation)
		json_object_set_new(body, "propagationPolicy", json_string(o->propagation));
	if (o->grace_seconds >= 0)
		json_object_set_new(body, "gracePeriodSeconds", json_integer(o->grace_seconds));
	return body;
}

int kc_delete(struct kc_client *c, const struct kc_gvr *gvr, const char *ns, const char *name,
              const struct kc_delete_opts *opts, struct kc_resp *resp, struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	json_t *body = delete_options(opts);
	int rc = kc_path(&path, gvr, ns, name, NULL);

	rc = rc ? kc__path_error(resp, err)
	        : object_request_as(c, "DELETE", "DELETE", &path, NULL, body,
	                            opts ? opts->as_user : NULL, resp, err);
	json_decref(body);
	buf_release(&path);
	return rc;
}

/* ---------- client ---------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void client_free_fields(struct kc_client *c)
{
	free(c->server);
	free(c->base);
	curl_slist_free_all(c->connect_to);
	free(c->ca.data);
	free(c->cert.data);
	if (c->key.data)
		OPENSSL_cleanse(c->key.data, c->key.len);
	free(c->key.data);
	free(c->user_agent);
	free(c->name);
	free(c->token);
	free(c->token_file);
	free(c->token_cached);
	free(c);
}

static void set_opts(struct kc_client *c, const struct kc_opts *o)
{
	double qps = o && o->qps ? o->qps : 50;
	int burst = o && o->burst > 0 ? o->burst : 100;

	tbucket_init(&c->rl, qps, burst);
	c->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 30000;
	c->user_agent =
	        o && o->user_agent ? xstrdup(o->user_agent) : xstrdup("landlord/" LANDLORD_VERSION);
	c->name = xstrdup(o && o->client_name ? o->client_name : "main");
	c->http1 = !(o && o->http2);
}

static void describe_metrics(void)
{
	metrics_describe(M_REQUESTS, METRIC_COUNTER,
	                 "Kubernetes API requests by client, verb and HTTP status code.", NULL, 0);
	metrics_describe(M_DURATION, METRIC_HISTOGRAM,
	                 "Kubernetes API request latency in seconds (watches: until the response "
	                 "headers), by client and verb.",
	                 NULL, 0);
}

int kc_client_new(const struct kcfg *cfg, const struct kc_opts *opts, struct kc_client **out,
                  struct ll_err *err)
{
	struct kc_client *c;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->server == NULL || *cfg->server == '\0')
		return ll_err_set(err, -EINVAL, "no API server URL");
	rc = kc__check_tls(cfg, err);
	if (rc)
		return rc;
	if (cfg->token && !kc__header_safe(cfg->token))
		return ll_err_set(err, -EINVAL, "%s: bearer token holds control characters",
		                  cfg->source ? cfg->source : "kubeconfig");
	pthread_once(&curl_once, curl_init_once);
	c = xcalloc(1, sizeof(*c));
	rc = kc__set_base(c, cfg, err);
	if (rc) {
		client_free_fields(c);
		return rc;
	}
	c->server = xstrdup(cfg->server);
	kc__blob_dup(&c->ca, cfg->ca_pem, cfg->ca_pem_len);
	kc__blob_dup(&c->cert, cfg->cert_pem, cfg->cert_pem_len);
	kc__blob_dup(&c->key, cfg->key_pem, cfg->key_pem_len);
	c->insecure = cfg->insecure;
	c->token = xstrdup(cfg->token);
	c->token_file = xstrdup(cfg->token_file);
	set_opts(c, opts);
	pthread_mutex_init(&c->token_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	link_init(&c->incoming);
	link_init(&c->active);
	link_init(&c->cmds);
	describe_metrics();
	rc = kc__start_io(c, err);
	if (rc) {
		pthread_cond_destroy(&c->idle);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->token_lock);
		tbucket_release(&c->rl);
		client_free_fields(c);
		return rc;
	}
	*out = c;
	return 0;
}

void kc_client_free(struct kc_client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	/* Every transfer is DONE now; wait for their callers to return. */
	pthread_mutex_lock(&c->lock);
	while (c->callers > 0)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	curl_multi_cleanup(c->multi);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->token_lock);
	tbucket_release(&c->rl);
	client_free_fields(c);
}

const char *kc_server(const struct kc_client *c)
{
	return c->server;
}

long kc__connects(struct kc_client *c)
{
	long n;

	pthread_mutex_lock(&c->lock);
	n = c->connects;
	pthread_mutex_unlock(&c->lock);
	return n;
}
