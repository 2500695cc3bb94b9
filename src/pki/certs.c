/*
 * certs.c - the webhook's certificates through one Secret (see certs.h and
 * docs/internals/pki.md): read or create it, rotate what is due, publish the bundle, serve.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "pki/certs.h"
#include "pki/certs_internal.h"

#define ATTEMPTS 4 /* passes started again after a lost race, per certs_sync() */

struct certs {
	struct certs_opts o; /* strings and arrays owned (copied) */
	char *ns, *secret;
	char **dns, **ips, **validating, **mutating;

	pthread_mutex_t sync_mu; /* one pass at a time */
	pthread_mutex_t mu;      /* guards what follows */
	pthread_cond_t cond;
	struct pki_pair served;
	char *bundle;  /* the bundle of the last successful pass (PEM), and... */
	long long gen; /* ...its generation */
	bool stop, started;
	pthread_t thread;
};

static char **copy_list(const char *const *l)
{
	size_t n = 0;
	char **out;

	while (l && l[n])
		n++;
	out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(l[i]);
	return out;
}

static void free_list(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

struct certs *certs_new(const struct certs_opts *o)
{
	struct certs *c = xcalloc(1, sizeof(*c));

	c->o = *o;
	c->ns = xstrdup(o->ns ? o->ns : LANDLORD_SYSTEM_NAMESPACE);
	c->secret = xstrdup(o->secret_name ? o->secret_name : WEBHOOK_TLS_SECRET);
	c->dns = copy_list(o->dns_names);
	c->ips = copy_list(o->ips);
	c->validating = copy_list(o->validating);
	c->mutating = copy_list(o->mutating);
	c->o.ca_lifetime_s = o->ca_lifetime_s > 0 ? o->ca_lifetime_s : CERTS_CA_LIFETIME_S;
	c->o.serving_lifetime_s =
	        o->serving_lifetime_s > 0 ? o->serving_lifetime_s : CERTS_SERVING_LIFETIME_S;
	c->o.publish_grace_s = o->publish_grace_s == 0  ? CERTS_PUBLISH_GRACE_S
	                       : o->publish_grace_s < 0 ? 0
	                                                : o->publish_grace_s;
	c->o.drain_s = o->drain_s > 0 ? o->drain_s : CERTS_DRAIN_S;
	pthread_mutex_init(&c->sync_mu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	clock_cond_init(&c->cond);
	return c;
}

static int64_t now_s(const struct certs *c)
{
	return c->o.now ? c->o.now(c->o.ud) : (int64_t)time(NULL);
}

/* ---- the state in the Secret ---- */

static void state_release(struct certs_state *st)
{
	pki_pair_release(&st->ca);
	pki_pair_release(&st->next);
	pki_pair_release(&st->serving);
	pki_bundle_release(&st->bundle);
	*st = (struct certs_state){0};
}

/* A data field, base64-decoded: an owned string, or NULL when absent or not base64. */
static char *data_field(const json_t *secret, const char *key)
{
	const char *b64 = jx_str(secret, "data", key, NULL);
	struct buf b = BUF_INIT(PKI_BUNDLE_MAX);

	if (b64 == NULL || pki_b64_decode(b64, &b) < 0 || b.len == 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}

static long long annotation_ll(const json_t *obj, const char *key, long long *second)
{
	const char *v = jx_annotation(obj, key);
	char *end = NULL;
	long long n = v ? strtoll(v, &end, 10) : 0;

	if (second)
		*second = end && *end == ' ' ? strtoll(end + 1, NULL, 10) : 0;
	return n;
}

static bool is_ca_pair(const struct pki_pair *p)
{
	struct pki_cert_info info;

	return p->cert_pem && p->key_pem && pki_check_pair(p, NULL) == 0 &&
	       pki_read_cert(p->cert_pem, strlen(p->cert_pem), &info, NULL) == 0 && info.is_ca;
}

/* Read @secret into @st. Return: 0, or -EINVAL when its CA is unusable (with the reason). */
static int state_read(const json_t *secret, struct certs_state *st, struct ll_err *err)
{
	char *bundle = data_field(secret, "ca-bundle.crt");

	*st = (struct certs_state){0};
	st->ca = (struct pki_pair){data_field(secret, "ca.crt"), data_field(secret, "ca.key")};
	st->next = (struct pki_pair){data_field(secret, "next-ca.crt"),
	                             data_field(secret, "next-ca.key")};
	st->serving =
	        (struct pki_pair){data_field(secret, "tls.crt"), data_field(secret, "tls.key")};
	st->gen = annotation_ll(secret, ANNOT_CA_BUNDLE_GEN, NULL);
	st->pub_gen = annotation_ll(secret, ANNOT_CA_BUNDLE_PUBLISH, &st->pub_at);
	st->old_until = annotation_ll(secret, ANNOT_OLD_CAS_UNTIL, NULL);
	if (bundle == NULL || pki_bundle_split(bundle, strlen(bundle), &st->bundle, NULL) < 0)
		st->bundle.n = 0;
	free(bundle);
	if (!is_ca_pair(&st->ca))
		return ll_err_set(err, -EINVAL,
		                  "its ca.crt and ca.key are missing, do not parse, "
		                  "do not match or are no CA");
	if (st->next.cert_pem && !is_ca_pair(&st->next))
		pki_pair_release(&st->next); /* a half-made rotation: it starts again */
	return 0;
}

static void put_data(json_t *data, const char *key, const char *pem)
{
	if (pem == NULL) {
		json_object_del(data, key);
		return;
	}
	char *b64 = pki_b64_encode(pem, strlen(pem));

	json_object_set_new(data, key, json_string(b64));
	free(b64);
}

static void set_annotation(json_t *annotations, const char *key, long long a, long long b, bool two)
{
	char v[64];

	if (a == 0) {
		json_object_del(annotations, key);
		return;
	}
	if (two)
		snprintf(v, sizeof(v), "%lld %lld", a, b);
	else
		snprintf(v, sizeof(v), "%lld", a);
	json_object_set_new(annotations, key, json_string(v));
}

/* The Secret for @st: @base (its metadata kept) or a new one. A new reference. */
static json_t *state_secret(const struct certs *c, const struct certs_state *st, const json_t *base)
{
	json_t *s = base ? json_deep_copy(base) : json_object(), *md, *ann, *data = json_object();
	char *bundle = pki_bundle_join(&st->bundle);

	json_object_set_new(s, "apiVersion", json_string("v1"));
	json_object_set_new(s, "kind", json_string("Secret"));
	json_object_set_new(s, "type", json_string("kubernetes.io/tls"));
	if (!json_is_object(json_object_get(s, "metadata")))
		json_object_set_new(s, "metadata",
		                    json_pack("{s:s,s:s}", "name", c->secret, "namespace", c->ns));
	md = json_object_get(s, "metadata");
	if (!json_is_object(json_object_get(md, "labels")))
		json_object_set_new(md, "labels", json_object());
	json_object_set_new(json_object_get(md, "labels"), LABEL_MANAGED_BY,
	                    json_string(MANAGED_BY_VALUE));
	if (!json_is_object(json_object_get(md, "annotations")))
		json_object_set_new(md, "annotations", json_object());
	ann = json_object_get(md, "annotations");
	set_annotation(ann, ANNOT_CA_BUNDLE_GEN, st->gen, 0, false);
	set_annotation(ann, ANNOT_CA_BUNDLE_PUBLISH, st->pub_gen, st->pub_at, true);
	set_annotation(ann, ANNOT_OLD_CAS_UNTIL, st->old_until, 0, false);
	put_data(data, "tls.crt", st->serving.cert_pem);
	put_data(data, "tls.key", st->serving.key_pem);
	put_data(data, "ca.crt", st->ca.cert_pem);
	put_data(data, "ca.key", st->ca.key_pem);
	put_data(data, "next-ca.crt", st->next.cert_pem);
	put_data(data, "next-ca.key", st->next.key_pem);
	put_data(data, "ca-bundle.crt", bundle);
	json_object_set_new(s, "data", data);
	free(bundle);
	return s;
}

/* ---- what is due ---- */

/* Two thirds of the certificate's lifetime have passed (or it does not parse). */
static bool renewal_due(const char *pem, int64_t now)
{
	struct pki_cert_info i;

	if (pem == NULL || pki_read_cert(pem, strlen(pem), &i, NULL) < 0)
		return true;
	return now >= i.not_before + (i.not_after - i.not_before) * 2 / 3;
}

static int mint_ca(const struct certs *c, int64_t now, struct pki_pair *out, struct ll_err *err)
{
	char cn[PKI_CN_MAX + 1];

	snprintf(cn, sizeof(cn), "landlord-webhook-ca-%lld", (long long)now);
	return pki_make_ca(cn, now, c->o.ca_lifetime_s, out, err);
}

static int mint_serving(const struct certs *c, const struct pki_pair *ca, int64_t now,
                        struct pki_pair *out, struct ll_err *err)
{
	struct pki_serving_opts so = {.dns_names = (const char *const *)c->dns,
	                              .ips = (const char *const *)c->ips,
	                              .now = now,
	                              .lifetime_s = c->o.serving_lifetime_s};

	return pki_make_serving(ca, &so, out, err);
}

/*
 * The serving pair matches, is signed by the CA and is not due. A replica whose clock is
 * behind the one that minted it checks it at its notBefore instead: it does not mint again.
 */
static bool serving_ok(const struct certs_state *st, int64_t now)
{
	struct pki_cert_info i;
	const char *crt = st->serving.cert_pem;

	if (crt == NULL || st->serving.key_pem == NULL ||
	    pki_read_cert(crt, strlen(crt), &i, NULL) < 0 || pki_check_pair(&st->serving, NULL) < 0)
		return false;
	return pki_verify(crt, st->ca.cert_pem, now < i.not_before ? i.not_before : now, true,
	                  NULL) == 0 &&
	       !renewal_due(crt, now);
}

/* A state from nothing: one CA, its serving certificate, a bundle of that CA. */
static int state_fresh(const struct certs *c, int64_t now, long long gen, struct certs_state *st,
                       struct ll_err *err)
{
	int rc;

	*st = (struct certs_state){.gen = gen};
	rc = mint_ca(c, now, &st->ca, err);
	if (rc == 0)
		rc = mint_serving(c, &st->ca, now, &st->serving, err);
	if (rc == 0)
		rc = pki_bundle_add(&st->bundle, st->ca.cert_pem, err);
	if (rc < 0)
		state_release(st);
	return rc;
}

/* The CA's time has come: a next CA joins the bundle, not yet signing anything served. */
static int start_ca_rotation(const struct certs *c, struct certs_state *st, int64_t now,
                             struct ll_err *err)
{
	int rc = mint_ca(c, now, &st->next, err);

	if (rc == 0)
		rc = pki_bundle_add(&st->bundle, st->next.cert_pem, err);
	if (rc < 0)
		return rc;
	st->gen++;
	st->pub_gen = st->pub_at = 0;
	log_info("CA rotation started: a new CA joins the bundle", "{s:I}", "generation",
	         (json_int_t)st->gen);
	return 0;
}

/* The bundle with the next CA is published: serve from the next CA. */
static int switch_ca(const struct certs *c, struct certs_state *st, int64_t now, struct ll_err *err)
{
	struct pki_cert_info old;
	struct pki_pair serving = {0};
	int64_t until = now + c->o.drain_s;
	int rc = mint_serving(c, &st->next, now, &serving, err);

	if (rc < 0)
		return rc;
	if (st->serving.cert_pem &&
	    pki_read_cert(st->serving.cert_pem, strlen(st->serving.cert_pem), &old, NULL) == 0 &&
	    old.not_after < until)
		until = old.not_after;
	if (until < st->old_until)
		until = st->old_until;
	pki_pair_release(&st->serving);
	pki_pair_release(&st->ca);
	st->serving = serving;
	st->ca = st->next;
	st->next = (struct pki_pair){0};
	st->pub_gen = st->pub_at = 0;
	st->old_until = until;
	log_info("CA rotation: serving a certificate from the new CA", "{s:I}", "old_cas_until",
	         (json_int_t)until);
	return 0;
}

/* Old CAs leave: the bundle is the CA and the next CA, if any. */
static int drop_old_cas(struct certs_state *st, struct ll_err *err)
{
	struct pki_bundle b = {0};
	int rc = pki_bundle_add(&b, st->ca.cert_pem, err);

	if (rc == 0 && st->next.cert_pem)
		rc = pki_bundle_add(&b, st->next.cert_pem, err);
	if (rc < 0) {
		pki_bundle_release(&b);
		return rc;
	}
	pki_bundle_release(&st->bundle);
	st->bundle = b;
	st->gen++;
	st->old_until = 0;
	log_info("CA rotation finished: old CAs left the bundle", "{s:I}", "generation",
	         (json_int_t)st->gen);
	return 0;
}

/* The bundle must hold the CA and the next CA whatever happened to the Secret. */
static int ensure_bundle(struct certs_state *st, bool *changed, struct ll_err *err)
{
	const struct pki_pair *must[2] = {&st->ca, &st->next};
	int rc = 0;

	for (int i = 0; i < 2 && rc == 0; i++) {
		if (must[i]->cert_pem == NULL || pki_bundle_has(&st->bundle, must[i]->cert_pem))
			continue;
		rc = pki_bundle_add(&st->bundle, must[i]->cert_pem, err);
		st->gen++;
		*changed = true;
	}
	return rc;
}

/* Everything due at @now, in order. *@changed: @st must be written. */
static int plan(const struct certs *c, struct certs_state *st, int64_t now, bool *changed,
                struct ll_err *err)
{
	int rc = ensure_bundle(st, changed, err);

	if (rc == 0 && st->next.cert_pem == NULL && renewal_due(st->ca.cert_pem, now)) {
		rc = start_ca_rotation(c, st, now, err);
		*changed = true;
	}
	if (rc == 0 && st->next.cert_pem && st->pub_gen == st->gen &&
	    now >= st->pub_at + c->o.publish_grace_s) {
		rc = switch_ca(c, st, now, err);
		*changed = true;
	}
	if (rc == 0 && st->old_until && now >= st->old_until) {
		rc = drop_old_cas(st, err);
		*changed = true;
	}
	if (rc == 0 && !serving_ok(st, now)) {
		pki_pair_release(&st->serving);
		rc = mint_serving(c, &st->ca, now, &st->serving, err);
		*changed = true;
	}
	return rc;
}

/* ---- one pass ---- */

/*
 * Write @take_secret: POST when @create, else PUT guarded by its resourceVersion. On success
 * *@current is the stored object. Return: 0, -EAGAIN (another replica wrote first), -EIO.
 */
static int write_secret(struct certs *c, json_t *take_secret, bool create, json_t **current,
                        struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc = create ? kc_create(c->o.client, &KC_SECRETS, c->ns, take_secret, &resp, err)
	                : kc_replace(c->o.client, &KC_SECRETS, c->ns, c->secret, NULL, take_secret,
	                             &resp, err);

	json_decref(take_secret);
	if (rc < 0)
		rc = -EIO;
	else if (resp.http_status == 409)
		rc = -EAGAIN;
	else if (!kc_resp_ok(&resp) || !json_is_object(resp.body))
		rc = ll_err_set(err, -EIO, "cannot %s Secret %s/%s: %ld %s",
		                create ? "create" : "update", c->ns, c->secret, resp.http_status,
		                resp.status.message);
	if (rc == 0) {
		json_decref(*current);
		*current = json_incref(resp.body);
	}
	kc_resp_release(&resp);
	return rc;
}

/* Read the Secret into *@current (NULL when there is none). Return: 0 or -EIO. */
static int read_secret(struct certs *c, json_t **current, struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc = kc_get(c->o.client, &KC_SECRETS, c->ns, c->secret, &resp, err);

	*current = NULL;
	if (rc < 0)
		rc = -EIO;
	else if (kc_resp_ok(&resp) && json_is_object(resp.body))
		*current = json_incref(resp.body);
	else if (resp.http_status != 404)
		rc = ll_err_set(err, -EIO, "cannot read Secret %s/%s: %ld %s", c->ns, c->secret,
		                resp.http_status, resp.status.message);
	kc_resp_release(&resp);
	return rc;
}

/* The Secret as a state, created (or replaced, when its CA is unusable) if need be. */
static int load_state(struct certs *c, int64_t now, json_t **cur, struct certs_state *st,
                      struct ll_err *err)
{
	struct ll_err why = {{0}};
	bool create;
	int rc = read_secret(c, cur, err);

	if (rc < 0 || (*cur && state_read(*cur, st, &why) == 0))
		return rc;
	create = *cur == NULL;
	if (!create) {
		log_warn("the webhook's Secret is unusable: a new CA replaces it", "{s:s,s:s}",
		         "secret", c->secret, "reason", why.msg);
		state_release(st);
	}
	rc = state_fresh(c, now, create ? 1 : annotation_ll(*cur, ANNOT_CA_BUNDLE_GEN, NULL) + 1,
	                 st, err);
	if (rc == 0)
		rc = write_secret(c, state_secret(c, st, *cur), create, cur, err);
	if (rc == 0 && create)
		log_info("webhook CA and serving certificate created", "{s:s,s:s}", "namespace",
		         c->ns, "secret", c->secret);
	return rc;
}

static void serve(struct certs *c, const struct pki_pair *p)
{
	bool same;

	pthread_mutex_lock(&c->mu);
	same = c->served.cert_pem && strcmp(c->served.cert_pem, p->cert_pem) == 0 &&
	       strcmp(c->served.key_pem, p->key_pem) == 0;
	if (!same) {
		pki_pair_release(&c->served);
		c->served = (struct pki_pair){xstrdup(p->cert_pem), xstrdup(p->key_pem)};
	}
	pthread_mutex_unlock(&c->mu);
	if (!same && c->o.on_pair)
		c->o.on_pair(c->o.ud, p->cert_pem, p->key_pem);
}

static void keep_bundle(struct certs *c, const struct certs_state *st)
{
	char *pem = pki_bundle_join(&st->bundle);

	pthread_mutex_lock(&c->mu);
	free(c->bundle);
	c->bundle = pem;
	c->gen = st->gen;
	pthread_mutex_unlock(&c->mu);
}

static int sync_once(struct certs *c, struct ll_err *err)
{
	struct certs_state st = {0};
	json_t *cur = NULL;
	bool changed = false, all = false;
	int64_t now = now_s(c);
	int rc = load_state(c, now, &cur, &st, err);

	if (rc == 0)
		rc = plan(c, &st, now, &changed, err);
	if (rc == 0 && changed)
		rc = write_secret(c, state_secret(c, &st, cur), false, &cur, err);
	if (rc == 0)
		rc = certs__publish(c->o.client, (const char *const *)c->validating,
		                    (const char *const *)c->mutating, &st, &all, err);
	if (rc == 0 && all && st.next.cert_pem && st.pub_gen != st.gen) {
		st.pub_gen = st.gen;
		st.pub_at = now;
		rc = write_secret(c, state_secret(c, &st, cur), false, &cur, err);
	}
	if (rc == 0) {
		keep_bundle(c, &st);
		serve(c, &st.serving); /* after a lost race, the next pass serves what won */
	}
	state_release(&st);
	json_decref(cur);
	return rc;
}

int certs_sync(struct certs *c, struct ll_err *err)
{
	int rc = -EAGAIN;

	if (c->o.client == NULL || (c->dns[0] == NULL && c->ips[0] == NULL))
		return ll_err_set(err, -EINVAL, "certs need an API client and a DNS name or IP");
	pthread_mutex_lock(&c->sync_mu);
	for (int i = 0; i < ATTEMPTS && rc == -EAGAIN; i++)
		rc = sync_once(c, err);
	pthread_mutex_unlock(&c->sync_mu);
	if (rc == -EAGAIN)
		ll_err_set(err, rc, "Secret %s/%s kept changing under %d passes", c->ns, c->secret,
		           ATTEMPTS);
	return rc;
}

int certs_served(struct certs *c, struct pki_pair *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&c->mu);
	if (c->served.cert_pem) {
		*out = (struct pki_pair){xstrdup(c->served.cert_pem), xstrdup(c->served.key_pem)};
		rc = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int certs_bundle(struct certs *c, char **bundle_pem /* OUT */, long long *gen /* OUT */)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&c->mu);
	if (c->bundle) {
		*bundle_pem = xstrdup(c->bundle);
		*gen = c->gen;
		rc = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* ---- the periodic thread ---- */

struct loop_arg {
	struct certs *c;
	int64_t period_ms;
};

static void *loop(void *arg)
{
	struct loop_arg a = *(struct loop_arg *)arg;
	struct certs *c = a.c;
	struct ll_err err = {{0}};

	free(arg);
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		int64_t wait_ms = a.period_ms;
		int rc;

		pthread_mutex_unlock(&c->mu);
		rc = certs_sync(c, &err);
		if (rc < 0) {
			log_warn("webhook certificate pass failed", "{s:s,s:i}", "error", err.msg,
			         "errno", -rc);
			wait_ms = a.period_ms / 4;
		}
		pthread_mutex_lock(&c->mu);
		int64_t deadline = clock_mono_ns() + wait_ms * 1000000;
		while (!c->stop && clock_cond_wait_until(&c->cond, &c->mu, deadline) == 0)
			;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int certs_start(struct certs *c, int64_t period_ms)
{
	struct loop_arg *a = xmalloc(sizeof(*a));
	int rc;

	*a = (struct loop_arg){c, period_ms > 0 ? period_ms : CERTS_PERIOD_MS};
	if (c->started) {
		free(a);
		return -EALREADY;
	}
	rc = pthread_create(&c->thread, NULL, loop, a);
	if (rc) {
		free(a);
		return -rc;
	}
	c->started = true;
	return 0;
}

void certs_free(struct certs *c)
{
	if (c == NULL)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->mu);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->thread, NULL);
	}
	pki_pair_release(&c->served);
	free(c->bundle);
	free_list(c->dns);
	free_list(c->ips);
	free_list(c->validating);
	free_list(c->mutating);
	free(c->ns);
	free(c->secret);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->sync_mu);
	free(c);
}
