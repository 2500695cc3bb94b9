/*
 * serve.c - the proxy role: its HTTPS server, each request's route, caller and membership
 * checked on the server thread, then the upstream work handed to a thread of its own
 * (proxy.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/later.h"
#include "http/server.h"
#include "kube/discovery.h"
#include "pki/pki.h"
#include "proxy/proxy_internal.h"
#include "proxy/view.h"

#define JOB_STACK (256u << 10) /* a job's thread: jansson and OpenSSL frames, not more */

void px_write_status(struct http_resp *resp, int code, const char *reason, const char *msg)
{
	json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
	                       "apiVersion", "v1", "metadata", "status", "Failure", "message", msg,
	                       "reason", reason, "code", code);
	char *text = json_dumps(st, JSON_COMPACT);

	http_resp_header(resp, "Content-Type", "application/json");
	buf_append_str(http_resp_body(resp), text ? text : "{}");
	free(text);
	json_decref(st);
}

static int refuse(struct http_resp *resp, int code, const char *reason, const char *msg)
{
	px_write_status(resp, code, reason, msg);
	return code;
}

static bool arg_true(struct http_req *req, const char *name)
{
	const char *v = http_req_arg(req, name);

	return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static struct px_job *job_new(struct px *p, struct http_req *req)
{
	struct px_job *j = xcalloc(1, sizeof(*j));
	const char *ct = http_req_header(req, "Content-Type");
	const char *accept = http_req_header(req, "Accept");
	size_t len;
	const char *body = http_req_body(req, &len);

	j->px = p;
	j->method = xstrdup(http_req_method(req));
	j->query = xstrdup(http_req_query(req));
	j->content_type = ct ? xstrdup(ct) : NULL;
	j->accept = accept ? xstrdup(accept) : NULL;
	buf_init(&j->body, PX_BODY_MAX);
	buf_append(&j->body, body, len);
	j->watch = arg_true(req, "watch");
	j->follow = arg_true(req, "follow");
	px_credentials_take(j, req);
	px_upgrade_take(j, req);
	return j;
}

static void job_done(struct px *p)
{
	pthread_mutex_lock(&p->mu);
	if (--p->jobs == 0)
		pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->mu);
}

static void *job_main(void *arg)
{
	struct px_job *j = arg;
	struct px *p = j->px;

	px_job_run(j);
	job_done(p);
	return NULL;
}

static int spawn(struct px *p, struct px_job *j)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_mutex_lock(&p->mu);
	p->jobs++;
	pthread_mutex_unlock(&p->mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, JOB_STACK);
	rc = pthread_create(&t, &attr, job_main, j);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		log_warn("the proxy could not start a thread for a request", "{s:i}", "errno", rc);
		px_job_status(j, 503, "ServiceUnavailable", "the proxy is out of threads");
		px_job_free(j);
		job_done(p);
	}
	return rc;
}

static int on_request(void *ud, struct http_req *req, struct http_resp *resp)
{
	struct px *p = ud;
	struct px_job *j;
	int code = 0;

	if (!px_view_synced(p->view))
		return refuse(resp, 503, "ServiceUnavailable", "the proxy is starting: try again");
	j = job_new(p, req);
	/* parsed in place: the route's strings point into it, so it never moves */
	if (px_route_parse(http_req_path(req), &j->route) == PX_BAD)
		code = refuse(resp, 400, "BadRequest", j->route.why);
	else if (j->route.kind == PX_NOT_FOUND)
		code = refuse(resp, 404, "NotFound",
		              "the server could not find the requested resource");
	if (code) {
		px_job_free(j);
		return code;
	}
	j->later = http_resp_defer(resp);
	spawn(p, j);
	return 0;
}

int px_set_client_cas(struct px *p, const char *bundle_pem, struct ll_err *err)
{
	struct pki_bundle b = {0};
	int rc = pki_bundle_split(bundle_pem, strlen(bundle_pem), &b, err);
	char *copy;

	if (rc == 0 && b.n == 0)
		rc = ll_err_set(err, -EINVAL, "the proxy's client CA bundle holds no certificate");
	pki_bundle_release(&b);
	if (rc < 0)
		return rc;
	copy = xstrdup(bundle_pem);
	pthread_rwlock_wrlock(&p->ca_lock);
	free(p->client_cas);
	p->client_cas = copy;
	pthread_rwlock_unlock(&p->ca_lock);
	return 0;
}

int px_new(const struct px_opts *o, struct px **out, struct ll_err *err)
{
	struct px *p;
	int rc;

	if (!o->cert_pem || !o->key_pem || !o->client_ca_pem || !o->client || !o->mgr)
		return ll_err_set(err, -EINVAL, "the proxy needs a serving pair and a client CA");
	p = xcalloc(1, sizeof(*p));
	p->o = *o;
	pthread_rwlock_init(&p->ca_lock, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->idle, NULL);
	rc = px_set_client_cas(p, o->client_ca_pem, err);
	if (rc == 0)
		rc = px_view_new(o->mgr, &p->view, err);
	if (rc == 0)
		p->tokens = px_tokens_new(o->client, NULL);
	if (rc < 0) {
		px_free(p);
		return rc;
	}
	p->disc = disc_new(o->client);
	*out = p;
	return 0;
}

int px_start(struct px *p, struct ll_err *err)
{
	struct http_server_opts so = {.name = "proxy",
	                              .addr = p->o.addr,
	                              .port = p->o.port,
	                              .cert_pem = p->o.cert_pem,
	                              .key_pem = p->o.key_pem,
	                              .client_ca_pem = p->client_cas,
	                              .body_max = PX_BODY_MAX,
	                              .conn_limit = PX_CONN_LIMIT};
	struct http_route any = {.path = "/tenants/", .prefix = true, .fn = on_request, .ud = p};
	int rc;

	p->server = http_server_new(&so);
	rc = http_server_route(p->server, &any);
	if (rc == 0)
		rc = http_server_start(p->server, err);
	if (rc == 0)
		log_info("proxy listening", "{s:s,s:i}", "addr",
		         p->o.addr ? p->o.addr : "127.0.0.1", "port", http_server_port(p->server));
	return rc;
}

int px_set_serving(struct px *p, const char *cert_pem, const char *key_pem, struct ll_err *err)
{
	return p->server ? http_server_set_cert(p->server, cert_pem, key_pem, err) : 0;
}

int px_port(const struct px *p)
{
	return http_server_port(p->server);
}

void px_free(struct px *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_mutex_unlock(&p->mu);
	http_server_free(p->server); /* pending answers 503, streams closed: jobs wind down */
	pthread_mutex_lock(&p->mu);
	while (p->jobs > 0)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
	px_view_free(p->view);
	px_tokens_free(p->tokens);
	disc_free(p->disc);
	free(p->client_cas);
	pthread_rwlock_destroy(&p->ca_lock);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->idle);
	free(p);
}
