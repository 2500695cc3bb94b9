/*
 * tokens.c - bearer tokens reviewed by the API server and cached by salted SHA-256 (see
 * tokens.h): the review, the cache (a chained hash table plus an insertion-order list, under
 * one mutex), flights that coalesce concurrent misses, and the pure JWT and ServiceAccount
 * helpers.
 */
#include "proxy/tokens.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "kube/k8sname.h"
#include "kube/kube.h"

#define METRIC      "landlord_proxy_token_reviews_total"
#define REVIEW_PATH "/apis/authentication.k8s.io/v1/tokenreviews"
#define KEY_LEN     32 /* SHA-256 */
#define SALT_LEN    16
#define EXP_MAX     (1LL << 32) /* the largest exp claim read, Unix seconds (year 2106) */
#define SA_PREFIX   "system:serviceaccount:"
#define BUCKETS_MIN 16u

/* Why a token is refused (static: cached refusals keep the pointer). */
_Static_assert(PX_TOKEN_NAME_MAX == 1024 && PX_TOKEN_UID_MAX == 256 && PX_TOKEN_GROUPS_MAX == 32 &&
                       PX_TOKEN_GROUP_MAX == 256,
               "the reasons below quote these limits");
static const char WHY_NOT_AUTHENTICATED[] = "the API server did not authenticate the bearer token";
static const char WHY_NAME[] = "the bearer token's user name is missing, empty, over 1024 bytes "
                               "or holds a control character";
static const char WHY_UID[] =
        "the bearer token's uid is not a string of at most 256 bytes without control characters";
static const char WHY_GROUPS[] = "the bearer token's user is in more than 32 groups";
static const char WHY_GROUP[] = "a group of the bearer token's user is not a string of 1 to 256 "
                                "bytes without control characters";
static const char WHY_AUDIENCE[] = "the bearer token is not meant for the proxy's audiences";

/* One cached answer. */
struct entry {
	unsigned char key[KEY_LEN];
	struct entry *chain;         /* next in its bucket */
	struct entry *older, *newer; /* insertion order */
	int64_t expires_ns;          /* monotonic; the entry is dead from then on */
	int rc;                      /* 0 or -EACCES */
	const char *why;             /* rc -EACCES: a WHY_* */
	struct px_token_user user;   /* rc 0 */
};

/* A review in the air, which later callers for the same key wait for. */
struct flight {
	unsigned char key[KEY_LEN];
	struct flight *next;
	int waiters;
	bool done;
	int rc;
	struct ll_err err;         /* rc != 0 */
	struct px_token_user user; /* rc 0, copied only when someone waits */
};

struct px_tokens {
	struct kc_client *c;
	int64_t ttl_ns, neg_ttl_ns; /* 0: not cached */
	size_t max_entries;
	char **audiences;
	size_t n_aud;
	int64_t (*now_ns)(void *ud);
	int64_t (*wall_ns)(void *ud);
	void *clock_ud;
	unsigned char salt[SALT_LEN];
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t landed;
	struct entry **buckets;
	size_t mask;
	struct entry *oldest, *newest;
	size_t n;
	struct flight *flights;
};

/* ---- identities ---- */

void px_token_user_release(struct px_token_user *u)
{
	if (u == NULL)
		return;
	free(u->mem);
	memset(u, 0, sizeof(*u));
}

static char *put_str(char **p, const char *s)
{
	size_t n = strlen(s) + 1;
	char *at = *p;

	memcpy(at, s, n);
	*p += n;
	return at;
}

/* @out: @name, @uid and @groups copied into one allocation, pointers first. */
static void user_pack(struct px_token_user *out, const char *name, const char *uid,
                      const char *const *groups, size_t n)
{
	size_t size = n * sizeof(char *) + strlen(name) + strlen(uid) + 2;
	char **g, *p;

	for (size_t i = 0; i < n; i++)
		size += strlen(groups[i]) + 1;
	out->mem = xmalloc(size);
	g = out->mem;
	p = (char *)(g + n);
	out->name = put_str(&p, name);
	out->uid = put_str(&p, uid);
	for (size_t i = 0; i < n; i++)
		g[i] = put_str(&p, groups[i]);
	out->groups = (const char *const *)g;
	out->n_groups = n;
}

static void user_copy(struct px_token_user *out, const struct px_token_user *u)
{
	user_pack(out, u->name, u->uid, u->groups, u->n_groups);
}

/* ---- clocks and metrics ---- */

static int64_t now_of(const struct px_tokens *t)
{
	return t->now_ns ? t->now_ns(t->clock_ud) : clock_mono_ns();
}

static int64_t wall_of(const struct px_tokens *t)
{
	struct timespec ts;

	if (t->wall_ns)
		return t->wall_ns(t->clock_ud);
	ts = clock_wall_now();
	return (int64_t)ts.tv_sec * CLOCK_NS_PER_SEC + ts.tv_nsec;
}

static void count(const char *result)
{
	char labels[64];

	metrics_add(METRIC, metrics_labels(labels, sizeof(labels), "result", result, NULL), 1);
}

static const char *result_of(int rc)
{
	return rc == 0 ? "authenticated" : rc == -EACCES || rc == -EINVAL ? "rejected" : "error";
}

/* ---- the cache (t->mu held) ---- */

static struct entry **slot_of(struct px_tokens *t, const unsigned char *key)
{
	uint64_t h;
	struct entry **pp;

	memcpy(&h, key, sizeof(h)); /* salted digest bits: nobody can aim at a bucket */
	pp = &t->buckets[h & t->mask];
	while (*pp != NULL && memcmp((*pp)->key, key, KEY_LEN) != 0)
		pp = &(*pp)->chain;
	return pp;
}

static void entry_drop(struct px_tokens *t, struct entry **pp)
{
	struct entry *e = *pp;

	*pp = e->chain;
	if (e->older)
		e->older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		t->newest = e->older;
	t->n--;
	px_token_user_release(&e->user);
	explicit_bzero(e->key, sizeof(e->key));
	free(e);
}

/* The live answer for @key, or NULL; a dead one is dropped. */
static struct entry *cache_get(struct px_tokens *t, const unsigned char *key, int64_t now)
{
	struct entry **pp = slot_of(t, key);

	if (*pp == NULL)
		return NULL;
	if ((*pp)->expires_ns > now)
		return *pp;
	entry_drop(t, pp);
	return NULL;
}

/* Remember an answer until @until: dead and, past the bound, the oldest entries make room. */
static void cache_put(struct px_tokens *t, const unsigned char *key, int rc, const char *why,
                      const struct px_token_user *u, int64_t until, int64_t now)
{
	struct entry **pp = slot_of(t, key), *e;

	if (*pp != NULL)
		entry_drop(t, pp);
	while (t->oldest != NULL && (t->oldest->expires_ns <= now || t->n >= t->max_entries))
		entry_drop(t, slot_of(t, t->oldest->key));
	e = xcalloc(1, sizeof(*e));
	memcpy(e->key, key, KEY_LEN);
	e->expires_ns = until;
	e->rc = rc;
	e->why = why;
	if (rc == 0)
		user_copy(&e->user, u);
	pp = slot_of(t, key);
	*pp = e;
	e->older = t->newest;
	if (t->newest)
		t->newest->newer = e;
	else
		t->oldest = e;
	t->newest = e;
	t->n++;
}

/* ---- flights (t->mu held) ---- */

static struct flight *flight_take_off(struct px_tokens *t, const unsigned char *key)
{
	struct flight *f = xcalloc(1, sizeof(*f));

	memcpy(f->key, key, KEY_LEN);
	f->next = t->flights;
	t->flights = f;
	return f;
}

static void flight_free(struct flight *f)
{
	px_token_user_release(&f->user);
	explicit_bzero(f, sizeof(*f));
	free(f);
}

/* @f's answer to its waiters, and @f out of the air. */
static void flight_land(struct px_tokens *t, struct flight *f, int rc,
                        const struct px_token_user *u, const struct ll_err *err)
{
	struct flight **pp = &t->flights;

	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	f->rc = rc;
	f->done = true;
	if (f->waiters == 0) {
		flight_free(f);
		return;
	}
	if (rc == 0)
		user_copy(&f->user, u);
	else
		f->err = *err;
	pthread_cond_broadcast(&t->landed);
}

/* Wait for @f's answer, a copy of which is the caller's. */
static int flight_wait(struct px_tokens *t, struct flight *f, struct px_token_user *out,
                       struct ll_err *err)
{
	int rc;

	f->waiters++;
	while (!f->done)
		pthread_cond_wait(&t->landed, &t->mu);
	rc = f->rc;
	if (rc == 0)
		user_copy(out, &f->user);
	else if (err != NULL)
		*err = f->err;
	if (--f->waiters == 0)
		flight_free(f);
	return rc;
}

/*
 * The answer for @key without asking (true, *@rc set): cached, or another caller's review in
 * the air; else false with a flight of the caller's own in *@lead.
 */
static bool known(struct px_tokens *t, const unsigned char *key, int *rc, struct px_token_user *out,
                  struct ll_err *err, struct flight **lead)
{
	struct entry *e = cache_get(t, key, now_of(t));
	struct flight *f = t->flights;

	if (e != NULL) {
		*rc = e->rc;
		if (e->rc == 0)
			user_copy(out, &e->user);
		else
			ll_err_set(err, e->rc, "%s", e->why);
		return true;
	}
	while (f != NULL && memcmp(f->key, key, KEY_LEN) != 0)
		f = f->next;
	if (f == NULL) {
		*lead = flight_take_off(t, key);
		return false;
	}
	*rc = flight_wait(t, f, out, err);
	return true;
}

/* ---- the review ---- */

/* 0, or -EINVAL when @token is not a token this module sends; its length in *@len. */
static int check_token(const char *token, size_t *len, struct ll_err *err)
{
	size_t n = token ? strnlen(token, PX_TOKEN_MAX + 1) : 0;

	if (n == 0)
		return ll_err_set(err, -EINVAL, "an empty bearer token");
	if (n > PX_TOKEN_MAX)
		return ll_err_set(err, -EINVAL, "a bearer token over %u bytes", PX_TOKEN_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)token[i] < 0x21 || (unsigned char)token[i] > 0x7e)
			return ll_err_set(err, -EINVAL,
			                  "the bearer token holds a byte outside printable ASCII "
			                  "(at offset %zu)",
			                  i);
	*len = n;
	return 0;
}

static int digest(const struct px_tokens *t, const char *token, size_t len,
                  unsigned char key[KEY_LEN], struct ll_err *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new(); /* freeing it cleanses its state */
	unsigned int n = 0;
	int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	         EVP_DigestUpdate(ctx, t->salt, SALT_LEN) == 1 &&
	         EVP_DigestUpdate(ctx, token, len) == 1 && EVP_DigestFinal_ex(ctx, key, &n) == 1 &&
	         n == KEY_LEN;

	EVP_MD_CTX_free(ctx);
	return ok ? 0 : ll_err_set(err, -EIO, "SHA-256 of the bearer token failed (OpenSSL)");
}

static char *put_bytes(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* The TokenReview for @token (@len bytes, printable ASCII), in one exactly sized allocation. */
static char *review_body(const struct px_tokens *t, const char *token, size_t len, size_t *size)
{
	static const char head[] = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
	                           "\"TokenReview\",\"spec\":{\"token\":\"";
	size_t cap = sizeof(head) + 2 * len + sizeof(",\"audiences\":[]}}");
	char *body, *p;

	for (size_t i = 0; i < t->n_aud; i++)
		cap += strlen(t->audiences[i]) + 3;
	body = p = xmalloc(cap);
	p = put_bytes(p, head, sizeof(head) - 1);
	for (size_t i = 0; i < len; i++) {
		if (token[i] == '"' || token[i] == '\\')
			*p++ = '\\';
		*p++ = token[i];
	}
	*p++ = '"';
	for (size_t i = 0; i < t->n_aud; i++) {
		p = put_bytes(p, i ? ",\"" : ",\"audiences\":[\"", i ? 2 : 15);
		p = put_bytes(p, t->audiences[i], strlen(t->audiences[i]));
		*p++ = '"';
	}
	p = put_bytes(p, t->n_aud ? "]}}" : "}}", t->n_aud ? 3 : 2);
	*size = (size_t)(p - body);
	return body;
}

/*
 * Overwrite the echo of @token in @b, the member "token":"<token>" (spec.token as the API
 * server writes it; a token with bytes it escapes is not found, and its parsed copy is wiped
 * instead), with '*'. Only that member: the token's bytes may also be in the user's name.
 */
static void scrub(struct buf *b, const char *token, size_t len)
{
	static const char key[] = "\"token\":\"";
	const size_t klen = sizeof(key) - 1;
	char *at = b->p, *end = b->p + b->len;

	while ((size_t)(end - at) >= len && (at = memmem(at, (size_t)(end - at), token, len))) {
		if (at - b->p >= (ptrdiff_t)klen && memcmp(at - klen, key, klen) == 0 &&
		    at + len < end && at[len] == '"') {
			memset(at, '*', len);
			at += len;
		} else {
			at++;
		}
	}
}

/* A 2xx answer's body, parsed, with no copy of the token left (spec.token wiped). */
static json_t *answer_doc(struct kc_resp *resp, const char *token, size_t len)
{
	json_t *doc;
	const json_t *echo;

	if (resp->raw.p == NULL)
		return NULL;
	scrub(&resp->raw, token, len);
	doc = jx_loads(resp->raw.p, resp->raw.len, NULL);
	explicit_bzero(resp->raw.p, resp->raw.len);
	echo = json_object_get(json_object_get(doc, "spec"), "token");
	if (json_is_string(echo))
		explicit_bzero((char *)json_string_value(echo), json_string_length(echo));
	return doc;
}

/* One TokenReview: 0 with its answer in *@doc; -ETIMEDOUT or -EIO with @err set. */
static int ask(struct px_tokens *t, const char *token, size_t len, json_t **doc, struct ll_err *err)
{
	size_t size = 0;
	char *body = review_body(t, token, len, &size);
	struct kc_request rq = {.method = "POST",
	                        .path = REVIEW_PATH,
	                        .body = body,
	                        .body_len = size,
	                        .flags = KC_REQ_RAW,
	                        .verb = "REVIEW"};
	struct kc_resp resp;
	struct ll_err why = {{0}};
	int rc = kc_do(t->c, &rq, &resp, &why);

	explicit_bzero(body, size);
	free(body);
	if (rc != 0)
		rc = ll_err_set(err, rc == -ETIMEDOUT ? -ETIMEDOUT : -EIO, "TokenReview: %s",
		                why.msg);
	else if (!kc_resp_ok(&resp))
		rc = ll_err_set(err, -EIO, "TokenReview: HTTP %ld %s: %s", resp.http_status,
		                resp.status.reason, resp.status.message);
	else if ((*doc = answer_doc(&resp, token, len)) == NULL)
		rc = ll_err_set(err, -EIO, "TokenReview: the answer is not JSON");
	if (resp.raw.p != NULL)
		explicit_bzero(resp.raw.p, resp.raw.len);
	kc_resp_release(&resp);
	return rc;
}

/* Whether @v is a string of @min..@max bytes, no NUL or other control character. */
static bool is_text(const json_t *v, size_t min, size_t max)
{
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t n = json_string_length(v);

	if (s == NULL || n < min || n > max || strlen((const char *)s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* status.user as @u; NULL, or why it cannot be carried. */
static const char *read_user(const json_t *user, struct px_token_user *u)
{
	const json_t *name = json_object_get(user, "username"), *uid = json_object_get(user, "uid"),
	             *groups = json_object_get(user, "groups"), *g;
	const char *gs[PX_TOKEN_GROUPS_MAX];
	size_t i;

	if (!is_text(name, 1, PX_TOKEN_NAME_MAX))
		return WHY_NAME;
	if (uid != NULL && !json_is_null(uid) && !is_text(uid, 0, PX_TOKEN_UID_MAX))
		return WHY_UID;
	if (groups != NULL && !json_is_null(groups) && !json_is_array(groups))
		return WHY_GROUP;
	if (json_array_size(groups) > PX_TOKEN_GROUPS_MAX)
		return WHY_GROUPS;
	json_array_foreach(groups, i, g) {
		if (!is_text(g, 1, PX_TOKEN_GROUP_MAX))
			return WHY_GROUP;
		gs[i] = json_string_value(g);
	}
	user_pack(u, json_string_value(name),
	          uid && json_is_string(uid) ? json_string_value(uid) : "", gs,
	          json_array_size(groups));
	return NULL;
}

static bool audience_ok(const struct px_tokens *t, const json_t *status)
{
	const json_t *a;
	size_t i;

	if (t->n_aud == 0)
		return true;
	json_array_foreach(json_object_get(status, "audiences"), i, a)
		for (size_t j = 0; j < t->n_aud; j++)
			if (json_is_string(a) && strcmp(json_string_value(a), t->audiences[j]) == 0)
				return true;
	return false;
}

/* What a 2xx answer says: 0 with @u; -EACCES with *@why; -EIO (malformed) with @err. */
static int read_review(const struct px_tokens *t, const json_t *doc, struct px_token_user *u,
                       const char **why, struct ll_err *err)
{
	const json_t *status = json_object_get(doc, "status");
	const json_t *authn = json_object_get(status, "authenticated"); /* omitted when false */

	if (!json_is_object(status) || (authn != NULL && !json_is_boolean(authn)))
		return ll_err_set(err, -EIO, "TokenReview: the answer has no status.authenticated");
	if (!json_is_true(authn)) /* status.error is not repeated: it may quote the token */
		*why = WHY_NOT_AUTHENTICATED;
	else if (!audience_ok(t, status)) {
		*why = WHY_AUDIENCE;
	} else {
		*why = read_user(json_object_get(status, "user"), u);
	}
	return *why ? ll_err_set(err, -EACCES, "%s", *why) : 0;
}

/* How long an authenticated answer for @token is cached from @start: 0 not at all. */
static int64_t positive_until(const struct px_tokens *t, const char *token, size_t len,
                              int64_t start)
{
	int64_t ttl = t->ttl_ns, exp_s, left;

	if (ttl <= 0)
		return 0;
	if (px_token_jwt_exp(token, len, &exp_s)) {
		left = exp_s * CLOCK_NS_PER_SEC - wall_of(t);
		if (left <= 0)
			return 0;
		if (left < ttl)
			ttl = left;
	}
	return start + ttl;
}

/* The caller's own review, under its flight @f: asked, cached as due, handed to waiters. */
static int lead(struct px_tokens *t, struct flight *f, const char *token, size_t len,
                struct px_token_user *out, struct ll_err *err)
{
	struct ll_err why = {{0}};
	const char *refusal = NULL;
	json_t *doc = NULL;
	int64_t start = now_of(t), until = 0, now;
	int rc = ask(t, token, len, &doc, &why);

	if (rc == 0)
		rc = read_review(t, doc, out, &refusal, &why);
	json_decref(doc);
	if (rc == 0)
		until = positive_until(t, token, len, start);
	else if (rc == -EACCES && t->neg_ttl_ns > 0)
		until = start + t->neg_ttl_ns;
	pthread_mutex_lock(&t->mu);
	now = now_of(t);
	if (until > now)
		cache_put(t, f->key, rc, refusal, out, until, now);
	flight_land(t, f, rc, out, &why);
	pthread_mutex_unlock(&t->mu);
	if (rc != 0 && err != NULL)
		*err = why;
	return rc;
}

int px_tokens_review(struct px_tokens *t, const char *token, struct px_token_user *out,
                     struct ll_err *err)
{
	unsigned char key[KEY_LEN];
	struct flight *f = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = check_token(token, &len, err);
	if (rc == 0)
		rc = digest(t, token, len, key, err);
	if (rc != 0) {
		count(result_of(rc));
		return rc;
	}
	pthread_mutex_lock(&t->mu);
	if (known(t, key, &rc, out, err, &f)) {
		pthread_mutex_unlock(&t->mu);
		explicit_bzero(key, sizeof(key));
		count("cached");
		return rc;
	}
	pthread_mutex_unlock(&t->mu);
	rc = lead(t, f, token, len, out, err);
	explicit_bzero(key, sizeof(key));
	count(result_of(rc));
	return rc;
}

/* ---- life ---- */

static bool audience_valid(const char *a)
{
	size_t n = strnlen(a, PX_TOKENS_AUDIENCE_MAX + 1);

	if (n == 0 || n > PX_TOKENS_AUDIENCE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (a[i] < 0x20 || a[i] > 0x7e || a[i] == '"' || a[i] == '\\')
			return false;
	return true;
}

/* @o's audiences copied into @t; false when one is not valid or there are too many. */
static bool take_audiences(struct px_tokens *t, const char *const *aud)
{
	size_t n = 0;

	while (aud != NULL && aud[n] != NULL) {
		if (n == PX_TOKENS_AUDIENCES_MAX || !audience_valid(aud[n]))
			return false;
		n++;
	}
	t->audiences = xcalloc(n ? n : 1, sizeof(char *));
	for (t->n_aud = 0; t->n_aud < n; t->n_aud++)
		t->audiences[t->n_aud] = xstrdup(aud[t->n_aud]);
	return true;
}

static int64_t ttl_of(int64_t asked, int64_t max)
{
	return asked < 0 ? 0 : asked == 0 || asked > max ? max : asked;
}

static void take_limits(struct px_tokens *t, const struct px_tokens_opts *o)
{
	size_t buckets = BUCKETS_MIN;

	t->ttl_ns = ttl_of(o->ttl_ns, PX_TOKENS_TTL_MAX_NS);
	t->neg_ttl_ns = ttl_of(o->negative_ttl_ns, PX_TOKENS_NEGATIVE_TTL_MAX_NS);
	t->max_entries = o->max_entries == 0 ? PX_TOKENS_ENTRIES_DEFAULT : o->max_entries;
	if (t->max_entries > PX_TOKENS_ENTRIES_MAX)
		t->max_entries = PX_TOKENS_ENTRIES_MAX;
	while (buckets < t->max_entries)
		buckets <<= 1;
	t->buckets = xcalloc(buckets, sizeof(*t->buckets));
	t->mask = buckets - 1;
}

static void describe_metric(void)
{
	static const char *const results[] = {"cached", "authenticated", "rejected", "error"};

	metrics_describe(METRIC, METRIC_COUNTER,
	                 "Bearer tokens the tenant proxy checked, by result: cached (no request of "
	                 "its own), authenticated, rejected, error (the TokenReview failed).",
	                 NULL, 0);
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
		char labels[64];

		metrics_add(METRIC,
		            metrics_labels(labels, sizeof(labels), "result", results[i], NULL), 0);
	}
}

struct px_tokens *px_tokens_new(struct kc_client *c, const struct px_tokens_opts *o)
{
	static const struct px_tokens_opts defaults;
	struct px_tokens *t = xcalloc(1, sizeof(*t));

	o = o ? o : &defaults;
	t->c = c;
	if (!take_audiences(t, o->audiences) || RAND_bytes(t->salt, SALT_LEN) != 1) {
		px_tokens_free(t);
		return NULL;
	}
	take_limits(t, o);
	t->now_ns = o->now_ns;
	t->wall_ns = o->wall_ns;
	t->clock_ud = o->clock_ud;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->landed, NULL);
	describe_metric();
	return t;
}

void px_tokens_free(struct px_tokens *t)
{
	if (t == NULL)
		return;
	if (t->buckets != NULL) {
		while (t->oldest != NULL)
			entry_drop(t, slot_of(t, t->oldest->key));
		free(t->buckets);
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->landed);
	}
	for (size_t i = 0; i < t->n_aud; i++)
		free(t->audiences[i]);
	free(t->audiences);
	explicit_bzero(t->salt, sizeof(t->salt));
	free(t);
}

size_t px_tokens_size(struct px_tokens *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* ---- pure helpers ---- */

static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Unpadded base64url @s (@len chars) decoded into @out (at least len * 3 / 4 bytes). */
static bool b64url_decode(const char *s, size_t len, unsigned char *out, size_t *out_len)
{
	uint32_t acc = 0;
	int bits = 0, v;
	size_t n = 0;

	if (len % 4 == 1)
		return false;
	for (size_t i = 0; i < len; i++) {
		v = b64url_value((unsigned char)s[i]);
		if (v < 0)
			return false;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	*out_len = n;
	return true;
}

/* The numeric exp of the JSON object @json (@len bytes), within 0..EXP_MAX. */
static bool exp_claim(const unsigned char *json, size_t len, int64_t *exp_s)
{
	json_t *claims = json_loadb((const char *)json, len, JSON_REJECT_DUPLICATES, NULL);
	const json_t *exp = json_object_get(claims, "exp");
	double d = json_is_real(exp) ? json_real_value(exp) : -1;
	bool ok = false;

	if (json_is_integer(exp) && json_integer_value(exp) >= 0 &&
	    json_integer_value(exp) <= EXP_MAX) {
		*exp_s = json_integer_value(exp);
		ok = true;
	} else if (isfinite(d) && d >= 0 && d <= (double)EXP_MAX) {
		*exp_s = (int64_t)d;
		ok = true;
	}
	json_decref(claims);
	return ok;
}

bool px_token_jwt_exp(const char *token, size_t len, int64_t *exp_s)
{
	const char *dot1, *dot2, *payload;
	unsigned char *raw;
	size_t plen, n = 0;
	bool ok;

	if (token == NULL || len == 0 || len > PX_TOKEN_MAX)
		return false;
	dot1 = memchr(token, '.', len);
	if (dot1 == NULL || dot1 == token)
		return false;
	payload = dot1 + 1;
	dot2 = memchr(payload, '.', len - (size_t)(payload - token));
	if (dot2 == NULL || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)) != NULL)
		return false;
	plen = (size_t)(dot2 - payload);
	raw = xmalloc(plen + 1);
	ok = b64url_decode(payload, plen, raw, &n) && exp_claim(raw, n, exp_s);
	explicit_bzero(raw, plen + 1);
	free(raw);
	return ok;
}

bool px_token_sa_namespace(const char *user, char *ns, size_t size)
{
	const char *p, *colon, *name;
	size_t n;

	if (size > 0)
		ns[0] = '\0';
	if (user == NULL || strncmp(user, SA_PREFIX, sizeof(SA_PREFIX) - 1) != 0)
		return false;
	p = user + sizeof(SA_PREFIX) - 1;
	colon = strchr(p, ':');
	if (colon == NULL)
		return false;
	n = (size_t)(colon - p);
	name = colon + 1;
	if (strchr(name, ':') != NULL || k8s_dns_label_problem(p, n) != NULL ||
	    k8s_dns_subdomain_problem(name, strlen(name)) != NULL || n >= size)
		return false;
	memcpy(ns, p, n);
	ns[n] = '\0';
	return true;
}
