/*
 * test_tokens.c - the tenant proxy's bearer tokens (src/proxy/tokens.h) against the fake API
 * server, whose token hook plays the API server's authenticators: an authenticated token gives
 * its user, uid and groups and is cached for the TTL (clock hooks move time), or less when the
 * JWT's exp comes first, and not at all when exp has passed; a refusal is cached for at most a
 * second; a failed review is never cached; malformed tokens are refused without a request;
 * identities the proxy cannot carry are refused; audiences are sent and checked; concurrent
 * misses make one request; 64 threads at once over a small cache stay correct and bounded.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "fake_manager.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "proxy/tokens.h"

#define SEC     CLOCK_NS_PER_SEC
#define WALL0   (1800000000LL * SEC) /* the fake wall clock's start: 2027-01-15 */
#define REVIEWS "/tokenreviews"
#define METRIC  "landlord_proxy_token_reviews_total"
#define THREADS 64

struct env {
	struct fake_api *f;
	struct kc_client *kc;
	struct px_tokens *t;
	_Atomic int64_t mono, wall;
	pthread_mutex_t mu;    /* guards last_spec and aud_answered */
	json_t *last_spec;     /* the spec of the last review the fake saw */
	json_t *aud_answered;  /* status.audiences the fake answers, or NULL */
	_Atomic int hook_runs; /* reviews the token hook answered */
};

static int64_t mono_of(void *ud)
{
	return atomic_load(&((struct env *)ud)->mono);
}

static int64_t wall_of(void *ud)
{
	return atomic_load(&((struct env *)ud)->wall);
}

static void advance(struct env *e, int64_t ns)
{
	atomic_fetch_add(&e->mono, ns);
	atomic_fetch_add(&e->wall, ns);
}

/* ---- the fake's authenticators ---- */

static json_t *user_status(const char *name, json_t *groups)
{
	return json_pack("{s:b,s:{s:s,s:s,s:o}}", "authenticated", true, "user", "username", name,
	                 "uid", "uid-1", "groups", groups);
}

/* "groups-N-L": N groups of L bytes each. */
static json_t *many_groups(const char *tok)
{
	int n = 0, len = 0;
	json_t *groups = json_array();
	char g[1024];

	if (sscanf(tok, "groups-%d-%d", &n, &len) != 2 || len < 1 || len >= (int)sizeof(g))
		return json_pack("{s:b}", "authenticated", false);
	for (int i = 0; i < n; i++) {
		memset(g, 'a' + i % 26, (size_t)len);
		g[len] = '\0';
		json_array_append_new(groups, json_string(g));
	}
	return user_status("many", groups);
}

static json_t *answer(struct env *e, const char *tok)
{
	if (strncmp(tok, "user-", 5) == 0)
		return user_status(tok, json_pack("[s,s]", tok, "system:authenticated"));
	if (strncmp(tok, "eyJ", 3) == 0)
		return user_status("jwt-user", json_pack("[s]", "system:authenticated"));
	if (strncmp(tok, "groups-", 7) == 0)
		return many_groups(tok);
	if (strcmp(tok, "q\"uo\\te") == 0)
		return user_status("quote-user", json_array());
	if (strcmp(tok, "ctl-user") == 0)
		return user_status("a\tb", json_array());
	if (strcmp(tok, "malformed") == 0)
		return json_pack("{s:s}", "authenticated", "yes");
	if (strcmp(tok, "sa-token") == 0)
		return json_pack("{s:b,s:{s:s}}", "authenticated", true, "user", "username",
		                 "system:serviceaccount:acme-dev:builder");
	return json_pack("{s:s}", "error", "invalid bearer token"); /* authenticated omitted */
}

static json_t *token_hook(const json_t *spec, void *ud)
{
	struct env *e = ud;
	const char *tok = jx_str(spec, "token", NULL);
	json_t *st = tok ? answer(e, tok) : NULL;

	atomic_fetch_add(&e->hook_runs, 1);
	pthread_mutex_lock(&e->mu);
	json_decref(e->last_spec);
	e->last_spec = json_deep_copy(spec);
	if (st && e->aud_answered)
		json_object_set(st, "audiences", e->aud_answered);
	pthread_mutex_unlock(&e->mu);
	return st;
}

/* ---- set-up ---- */

static struct px_tokens *tokens_new(struct env *e, const struct px_tokens_opts *given)
{
	struct px_tokens_opts o = given ? *given : (struct px_tokens_opts){0};

	o.now_ns = mono_of;
	o.wall_ns = wall_of;
	o.clock_ud = e;
	return px_tokens_new(e->kc, &o);
}

static int setup(void **state)
{
	struct env *e = xcalloc(1, sizeof(*e));

	e->f = fake_api_start();
	e->kc = fake_client_new(e->f);
	atomic_store(&e->mono, 1000 * SEC);
	atomic_store(&e->wall, WALL0);
	pthread_mutex_init(&e->mu, NULL);
	fake_api_set_token_hook(e->f, token_hook, e);
	e->t = tokens_new(e, NULL);
	assert_non_null(e->t);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	px_tokens_free(e->t);
	kc_client_free(e->kc);
	fake_api_stop(e->f);
	json_decref(e->last_spec);
	json_decref(e->aud_answered);
	pthread_mutex_destroy(&e->mu);
	free(e);
	return 0;
}

static int asked(struct env *e)
{
	return fake_api_requests(e->f, "POST", REVIEWS);
}

static double counted(const char *result)
{
	char labels[64];

	return metrics_get(METRIC, metrics_labels(labels, sizeof(labels), "result", result, NULL));
}

/* A review of @tok expected to give @want_rc; on 0 the user's name must be @name. */
static void expect(struct px_tokens *t, const char *tok, int want_rc, const char *name)
{
	struct px_token_user u;
	struct ll_err err = {{0}};
	int rc = px_tokens_review(t, tok, &u, &err);

	if (rc != want_rc)
		fail_msg("review: %d, want %d (%s)", rc, want_rc, err.msg);
	if (rc == 0)
		assert_string_equal(u.name, name);
	else
		assert_null(u.name);
	px_token_user_release(&u);
}

/* base64url, unpadded */
static char *b64url(const char *s)
{
	static const char abc[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t n = strlen(s), o = 0;
	char *out = xmalloc(n * 4 / 3 + 4);
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | (unsigned char)s[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = abc[(acc >> bits) & 63];
		}
	}
	if (bits > 0)
		out[o++] = abc[(acc << (6 - bits)) & 63];
	out[o] = '\0';
	return out;
}

/* A JWS-shaped token whose payload is @claims (JSON). */
static char *jwt(const char *claims)
{
	char *h = b64url("{\"alg\":\"RS256\",\"kid\":\"k\"}"), *p = b64url(claims);
	char *tok = xasprintf("%s.%s.c2lnbmF0dXJl", h, p);

	free(h);
	free(p);
	return tok;
}

static char *jwt_exp_in(struct env *e, int64_t seconds)
{
	char claims[128];

	snprintf(claims, sizeof(claims), "{\"iss\":\"k8s\",\"sub\":\"x\",\"exp\":%lld}",
	         (long long)(atomic_load(&e->wall) / SEC + seconds));
	return jwt(claims);
}

/* ---- tests ---- */

static void test_tokens__an_authenticated_token_gives_its_user_and_groups(void **state)
{
	struct env *e = *state;
	struct px_token_user u;
	struct ll_err err = {{0}};
	double authenticated = counted("authenticated");

	assert_int_equal(px_tokens_review(e->t, "user-alice", &u, &err), 0);
	assert_string_equal(u.name, "user-alice");
	assert_string_equal(u.uid, "uid-1");
	assert_int_equal(u.n_groups, 2);
	assert_string_equal(u.groups[0], "user-alice");
	assert_string_equal(u.groups[1], "system:authenticated");
	px_token_user_release(&u);
	assert_null(u.name);
	px_token_user_release(&u); /* twice is fine */
	assert_int_equal(asked(e), 1);
	assert_int_equal(fake_api_writes(e->f), 0);
	/* what was sent: the token, no audiences */
	pthread_mutex_lock(&e->mu);
	assert_string_equal(jx_str(e->last_spec, "token", NULL), "user-alice");
	assert_null(jx_get(e->last_spec, "audiences", NULL));
	pthread_mutex_unlock(&e->mu);
	assert_true(counted("authenticated") == authenticated + 1);
	/* a ServiceAccount without uid or groups */
	assert_int_equal(px_tokens_review(e->t, "sa-token", &u, NULL), 0);
	assert_string_equal(u.name, "system:serviceaccount:acme-dev:builder");
	assert_string_equal(u.uid, "");
	assert_int_equal(u.n_groups, 0);
	px_token_user_release(&u);
}

static void test_tokens__a_second_review_is_answered_from_the_cache(void **state)
{
	struct env *e = *state;
	double cached = counted("cached");

	expect(e->t, "user-bob", 0, "user-bob");
	expect(e->t, "user-bob", 0, "user-bob");
	expect(e->t, "user-bob", 0, "user-bob");
	assert_int_equal(asked(e), 1);
	assert_true(counted("cached") == cached + 2);
	assert_int_equal(px_tokens_size(e->t), 1);
	/* another token is another entry */
	expect(e->t, "user-carol", 0, "user-carol");
	assert_int_equal(asked(e), 2);
	assert_int_equal(px_tokens_size(e->t), 2);
}

static void test_tokens__an_answer_expires_after_the_ttl(void **state)
{
	struct env *e = *state;
	struct px_tokens *t = tokens_new(e, &(struct px_tokens_opts){.ttl_ns = 3 * SEC});

	expect(e->t, "user-dave", 0, "user-dave");
	advance(e, 10 * SEC - 1);
	expect(e->t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 1);
	advance(e, 1);
	expect(e->t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 2);
	/* a shorter TTL of the caller's */
	expect(t, "user-dave", 0, "user-dave");
	advance(e, 3 * SEC - 1);
	expect(t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 3);
	advance(e, 1);
	expect(t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 4);
	px_tokens_free(t);
	/* a longer one is cut to 10 s; a negative one caches nothing */
	t = tokens_new(e, &(struct px_tokens_opts){.ttl_ns = 60 * SEC});
	expect(t, "user-dave", 0, "user-dave");
	advance(e, 10 * SEC);
	expect(t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 6);
	px_tokens_free(t);
	t = tokens_new(e, &(struct px_tokens_opts){.ttl_ns = -1});
	expect(t, "user-dave", 0, "user-dave");
	expect(t, "user-dave", 0, "user-dave");
	assert_int_equal(asked(e), 8);
	assert_int_equal(px_tokens_size(t), 0);
	px_tokens_free(t);
}

static void test_tokens__a_jwt_exp_sooner_than_the_ttl_ends_the_entry(void **state)
{
	struct env *e = *state;
	char *tok = jwt_exp_in(e, 3), *late = jwt_exp_in(e, 3600);
	char claims[128], *fractional;

	expect(e->t, tok, 0, "jwt-user");
	advance(e, 3 * SEC - 1);
	expect(e->t, tok, 0, "jwt-user");
	assert_int_equal(asked(e), 1);
	advance(e, 1);
	expect(e->t, tok, 0, "jwt-user"); /* the API server still says yes: not cached now */
	assert_int_equal(asked(e), 2);
	expect(e->t, tok, 0, "jwt-user");
	assert_int_equal(asked(e), 3);
	/* an exp later than the TTL does not lengthen it */
	expect(e->t, late, 0, "jwt-user");
	advance(e, 10 * SEC - 1);
	expect(e->t, late, 0, "jwt-user");
	assert_int_equal(asked(e), 4);
	advance(e, 1);
	expect(e->t, late, 0, "jwt-user");
	assert_int_equal(asked(e), 5);
	/* a fractional exp counts too (rounded down) */
	snprintf(claims, sizeof(claims), "{\"exp\":%lld.75}",
	         (long long)(atomic_load(&e->wall) / SEC + 2));
	fractional = jwt(claims);
	expect(e->t, fractional, 0, "jwt-user");
	advance(e, 2 * SEC - 1);
	expect(e->t, fractional, 0, "jwt-user");
	assert_int_equal(asked(e), 6);
	advance(e, 1);
	expect(e->t, fractional, 0, "jwt-user");
	assert_int_equal(asked(e), 7);
	free(tok);
	free(late);
	free(fractional);
}

static void test_tokens__an_expired_jwt_is_never_cached(void **state)
{
	struct env *e = *state;
	char *past = jwt_exp_in(e, -5), *now = jwt_exp_in(e, 0);

	expect(e->t, past, 0, "jwt-user");
	expect(e->t, past, 0, "jwt-user");
	assert_int_equal(asked(e), 2);
	expect(e->t, now, 0, "jwt-user");
	expect(e->t, now, 0, "jwt-user");
	assert_int_equal(asked(e), 4);
	assert_int_equal(px_tokens_size(e->t), 0);
	free(past);
	free(now);
}

static void test_tokens__a_jwt_without_a_usable_exp_is_cached_for_the_ttl(void **state)
{
	struct env *e = *state;
	const char *claims[] = {"{\"sub\":\"x\"}", "{\"exp\":\"soon\"}", "not json",
	                        "{\"exp\":1,\"exp\":2}", "[1]"};

	for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		char *tok = jwt(claims[i]);

		expect(e->t, tok, 0, "jwt-user");
		advance(e, 10 * SEC - 1);
		expect(e->t, tok, 0, "jwt-user");
		assert_int_equal(asked(e), (int)i + 1);
		advance(e, 1);
		free(tok);
	}
}

static void test_tokens__a_refusal_is_cached_for_a_second_at_most(void **state)
{
	struct env *e = *state;
	struct px_token_user u;
	struct ll_err err = {{0}};
	double rejected = counted("rejected"), cached = counted("cached");
	struct px_tokens *t;

	assert_int_equal(px_tokens_review(e->t, "stolen-token", &u, &err), -EACCES);
	assert_null(u.name);
	assert_non_null(strstr(err.msg, "did not authenticate"));
	assert_null(strstr(err.msg, "stolen-token"));
	assert_null(strstr(err.msg, "invalid bearer token")); /* status.error is not repeated */
	memset(&err, 0, sizeof(err));
	advance(e, SEC - 1);
	assert_int_equal(px_tokens_review(e->t, "stolen-token", &u, &err), -EACCES);
	assert_non_null(strstr(err.msg, "did not authenticate"));
	assert_int_equal(asked(e), 1);
	advance(e, 1);
	expect(e->t, "stolen-token", -EACCES, NULL);
	assert_int_equal(asked(e), 2);
	assert_true(counted("rejected") == rejected + 2);
	assert_true(counted("cached") == cached + 1);
	/* a shorter negative TTL, or none */
	t = tokens_new(e, &(struct px_tokens_opts){.negative_ttl_ns = -1});
	expect(t, "stolen-token", -EACCES, NULL);
	expect(t, "stolen-token", -EACCES, NULL);
	assert_int_equal(asked(e), 4);
	px_tokens_free(t);
	t = tokens_new(e, &(struct px_tokens_opts){.negative_ttl_ns = 5 * SEC}); /* cut to 1 s */
	expect(t, "stolen-token", -EACCES, NULL);
	advance(e, SEC);
	expect(t, "stolen-token", -EACCES, NULL);
	assert_int_equal(asked(e), 6);
	px_tokens_free(t);
}

static void test_tokens__a_failed_review_is_not_cached(void **state)
{
	struct env *e = *state;
	struct px_token_user u;
	struct ll_err err = {{0}};
	double errors = counted("error");
	int rule = fake_api_rule_add(e->f, &(struct fake_rule){.path_contains = REVIEWS,
	                                                       .action = FAKE_ANSWER,
	                                                       .status = 500,
	                                                       .times = 2});

	assert_int_equal(px_tokens_review(e->t, "user-erin", &u, &err), -EIO);
	assert_null(u.name);
	assert_non_null(strstr(err.msg, "HTTP 500"));
	assert_null(strstr(err.msg, "user-erin"));
	expect(e->t, "user-erin", -EIO, NULL);
	expect(e->t, "user-erin", 0, "user-erin");
	assert_int_equal(asked(e), 3);
	assert_int_equal(fake_api_rule_hits(e->f, rule), 2);
	assert_true(counted("error") == errors + 2);
	/* the proxy may not review tokens: an error too, not a refusal of the token */
	fake_api_rule_add(e->f, &(struct fake_rule){.path_contains = REVIEWS,
	                                            .action = FAKE_ANSWER,
	                                            .status = 403,
	                                            .times = 1});
	expect(e->t, "user-frank", -EIO, NULL);
	expect(e->t, "user-frank", 0, "user-frank");
	/* a 2xx answer that makes no sense */
	expect(e->t, "malformed", -EIO, NULL);
	expect(e->t, "malformed", -EIO, NULL);
	assert_int_equal(asked(e), 7);
	assert_int_equal(px_tokens_size(e->t), 2);
}

static void test_tokens__a_review_that_times_out_is_not_cached(void **state)
{
	struct env *e = *state;
	struct kcfg cfg = {.server = (char *)fake_api_url(e->f)};
	struct kc_opts o = {.timeout_ms = 300, .qps = -1, .client_name = "tokens"};
	struct kc_client *kc = NULL;
	struct px_tokens *t;
	struct ll_err err = {{0}};
	struct px_token_user u;
	int hold = fake_api_rule_add(
	        e->f,
	        &(struct fake_rule){.path_contains = REVIEWS, .action = FAKE_HOLD, .times = 1});

	assert_int_equal(kc_client_new(&cfg, &o, &kc, NULL), 0);
	t = px_tokens_new(kc, NULL);
	assert_int_equal(px_tokens_review(t, "user-gina", &u, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "TokenReview"));
	fake_api_release(e->f, hold);
	expect(t, "user-gina", 0, "user-gina");
	assert_int_equal(asked(e), 2);
	px_tokens_free(t);
	kc_client_free(kc);
}

static void test_tokens__malformed_tokens_are_refused_without_a_request(void **state)
{
	struct env *e = *state;
	char *huge = xmalloc(PX_TOKEN_MAX + 2);
	const char *bad[] = {"", "two words", "tab\there", "new\nline", "del\x7f", "caf\xc3\xa9"};
	struct ll_err err = {{0}};
	struct px_token_user u;
	double rejected = counted("rejected");

	memset(huge, 'x', PX_TOKEN_MAX + 1);
	huge[PX_TOKEN_MAX + 1] = '\0';
	assert_int_equal(px_tokens_review(e->t, huge, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "over 16384 bytes"));
	assert_int_equal(px_tokens_review(e->t, NULL, &u, NULL), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(e->t, bad[i], -EINVAL, NULL);
	assert_int_equal(asked(e), 0);
	assert_true(counted("rejected") == rejected + 8);
	/* exactly at the bound is sent (and refused by the API server) */
	huge[PX_TOKEN_MAX] = '\0';
	expect(e->t, huge, -EACCES, NULL);
	assert_int_equal(asked(e), 1);
	free(huge);
}

static void test_tokens__quotes_and_backslashes_reach_the_api_server_intact(void **state)
{
	struct env *e = *state;

	expect(e->t, "q\"uo\\te", 0, "quote-user");
	pthread_mutex_lock(&e->mu);
	assert_string_equal(jx_str(e->last_spec, "token", NULL), "q\"uo\\te");
	pthread_mutex_unlock(&e->mu);
}

static void test_tokens__identities_the_proxy_cannot_carry_are_refused(void **state)
{
	struct env *e = *state;
	struct px_token_user u;
	struct ll_err err = {{0}};

	assert_int_equal(px_tokens_review(e->t, "groups-32-256", &u, &err), 0);
	assert_int_equal(u.n_groups, 32);
	assert_int_equal(strlen(u.groups[31]), 256);
	px_token_user_release(&u);
	assert_int_equal(px_tokens_review(e->t, "groups-33-1", &u, &err), -EACCES);
	assert_non_null(strstr(err.msg, "more than 32 groups"));
	assert_int_equal(px_tokens_review(e->t, "groups-1-257", &u, &err), -EACCES);
	assert_non_null(strstr(err.msg, "1 to 256 bytes"));
	assert_int_equal(px_tokens_review(e->t, "ctl-user", &u, &err), -EACCES);
	assert_non_null(strstr(err.msg, "control character"));
	/* refusals like any other: cached briefly */
	expect(e->t, "groups-33-1", -EACCES, NULL);
	assert_int_equal(asked(e), 4);
}

static void test_tokens__audiences_are_sent_and_checked(void **state)
{
	struct env *e = *state;
	const char *aud[] = {"landlord-proxy", "https://kubernetes.default.svc", NULL};
	const char *bad_aud[] = {"has\"quote", NULL}, *empty_aud[] = {"", NULL};
	struct px_tokens *t = tokens_new(e, &(struct px_tokens_opts){.audiences = aud});
	const json_t *sent;

	assert_non_null(t);
	/* the API server names none of them */
	pthread_mutex_lock(&e->mu);
	e->aud_answered = json_pack("[s]", "other");
	pthread_mutex_unlock(&e->mu);
	expect(t, "user-hank", -EACCES, NULL);
	pthread_mutex_lock(&e->mu);
	sent = jx_get(e->last_spec, "audiences", NULL);
	assert_int_equal(json_array_size(sent), 2);
	assert_string_equal(json_string_value(json_array_get(sent, 0)), "landlord-proxy");
	assert_string_equal(json_string_value(json_array_get(sent, 1)),
	                    "https://kubernetes.default.svc");
	json_decref(e->aud_answered);
	e->aud_answered = json_pack("[s,s]", "other", "https://kubernetes.default.svc");
	pthread_mutex_unlock(&e->mu);
	expect(t, "user-ivan", 0, "user-ivan");
	/* none answered at all */
	pthread_mutex_lock(&e->mu);
	json_decref(e->aud_answered);
	e->aud_answered = NULL;
	pthread_mutex_unlock(&e->mu);
	expect(t, "user-jane", -EACCES, NULL);
	px_tokens_free(t);
	/* audiences that cannot be sent */
	assert_null(tokens_new(e, &(struct px_tokens_opts){.audiences = bad_aud}));
	assert_null(tokens_new(e, &(struct px_tokens_opts){.audiences = empty_aud}));
}

/* ---- many threads ---- */

struct crowd {
	struct env *e;
	struct px_tokens *t;
	pthread_barrier_t *start;
	int id, rounds;
	const char *token; /* all the same token, or NULL: user-<n> of a few */
	int want_rc;
	int failures;
};

static void *crowd_member(void *arg)
{
	struct crowd *c = arg;
	char tok[32], want[32];

	pthread_barrier_wait(c->start);
	for (int r = 0; r < c->rounds; r++) {
		struct px_token_user u;
		int rc;

		snprintf(tok, sizeof(tok), "user-%d", (c->id + r) % 24);
		snprintf(want, sizeof(want), "%s", c->token ? c->token : tok);
		rc = px_tokens_review(c->t, want, &u, NULL);
		if (rc != c->want_rc || (rc == 0 && (strcmp(u.name, want) != 0 || u.n_groups != 2 ||
		                                     strcmp(u.groups[0], want) != 0)))
			c->failures++;
		px_token_user_release(&u);
	}
	return NULL;
}

static bool review_arrived(struct fake_api *f, void *ud)
{
	return fake_api_requests(f, "POST", REVIEWS) > *(int *)ud;
}

/* THREADS threads at once over @t: each reviews @token (or a mix) @rounds times. */
static int run_crowd(struct env *e, struct px_tokens *t, const char *token, int want_rc, int rounds,
                     int hold)
{
	struct crowd c[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t start;
	int failures = 0, before = asked(e);

	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		c[i] = (struct crowd){e, t, &start, i, rounds, token, want_rc, 0};
		assert_int_equal(pthread_create(&th[i], NULL, crowd_member, &c[i]), 0);
	}
	if (hold >= 0) {
		assert_true(fake_api_wait(e->f, review_arrived, &before));
		clock_sleep_until(clock_mono_ns() + 200 * CLOCK_NS_PER_MS); /* the rest pile up */
		fake_api_release(e->f, hold);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		failures += c[i].failures;
	}
	pthread_barrier_destroy(&start);
	return failures;
}

static void test_tokens__concurrent_misses_make_one_request(void **state)
{
	struct env *e = *state;
	double cached = counted("cached");
	int hold = fake_api_rule_add(
	        e->f,
	        &(struct fake_rule){.path_contains = REVIEWS, .action = FAKE_HOLD, .times = 1});

	assert_int_equal(run_crowd(e, e->t, "user-kate", 0, 1, hold), 0);
	assert_int_equal(asked(e), 1);
	assert_true(counted("cached") == cached + THREADS - 1);
	/* a failure is shared by those who waited for it, and not cached */
	hold = fake_api_rule_add(
	        e->f,
	        &(struct fake_rule){.path_contains = REVIEWS, .action = FAKE_HOLD, .times = 1});
	assert_int_equal(run_crowd(e, e->t, "malformed", -EIO, 1, hold), 0);
	assert_int_equal(asked(e), 2);
	expect(e->t, "malformed", -EIO, NULL);
	assert_int_equal(asked(e), 3);
	/* and so is a refusal */
	hold = fake_api_rule_add(
	        e->f,
	        &(struct fake_rule){.path_contains = REVIEWS, .action = FAKE_HOLD, .times = 1});
	assert_int_equal(run_crowd(e, e->t, "nobody", -EACCES, 1, hold), 0);
	assert_int_equal(asked(e), 4);
}

static void test_tokens__sixty_four_threads_over_a_small_cache(void **state)
{
	struct env *e = *state;
	struct px_tokens *t = tokens_new(e, &(struct px_tokens_opts){.max_entries = 8});

	/* 24 tokens through 8 entries: hits, misses, waits and evictions all at once */
	assert_int_equal(run_crowd(e, t, NULL, 0, 40, -1), 0);
	assert_true(px_tokens_size(t) <= 8);
	assert_true(asked(e) >= 24);
	px_tokens_free(t);
}

static void test_tokens__the_cache_holds_at_most_max_entries(void **state)
{
	struct env *e = *state;
	struct px_tokens *t = tokens_new(e, &(struct px_tokens_opts){.max_entries = 4});
	char tok[32];

	for (int i = 0; i < 10; i++) {
		snprintf(tok, sizeof(tok), "user-%d", i);
		expect(t, tok, 0, tok);
		assert_true(px_tokens_size(t) <= 4);
	}
	assert_int_equal(px_tokens_size(t), 4);
	assert_int_equal(asked(e), 10);
	expect(t, "user-9", 0, "user-9"); /* among the newest: cached */
	expect(t, "user-6", 0, "user-6");
	assert_int_equal(asked(e), 10);
	expect(t, "user-0", 0, "user-0"); /* the oldest went first */
	assert_int_equal(asked(e), 11);
	/* dead entries make room before live ones */
	advance(e, 10 * SEC);
	expect(t, "user-1", 0, "user-1");
	assert_int_equal(px_tokens_size(t), 1);
	px_tokens_free(t);
	/* the defaults */
	t = px_tokens_new(e->kc, NULL);
	expect(t, "user-0", 0, "user-0");
	expect(t, "user-0", 0, "user-0");
	assert_int_equal(asked(e), 13);
	px_tokens_free(t);
}

/* ---- the pure helpers ---- */

static void test_tokens__jwt_exp_is_read_defensively(void **state)
{
	const struct {
		const char *claims;
		bool ok;
		int64_t exp;
	} cases[] = {
	        {"{\"exp\":1800000000}", true, 1800000000},
	        {"{\"exp\":1800000000.9}", true, 1800000000},
	        {"{\"exp\":0}", true, 0},
	        {"{\"exp\":4294967296}", true, 4294967296LL},
	        {"{\"exp\":4294967297}", false, 0},
	        {"{\"exp\":-1}", false, 0},
	        {"{\"exp\":1e300}", false, 0},
	        {"{\"exp\":99999999999999999999999}", false, 0},
	        {"{\"exp\":null}", false, 0},
	        {"{\"exp\":true}", false, 0},
	        {"{\"exp\":1,\"exp\":1}", false, 0},
	        {"{}", false, 0},
	        {"[]", false, 0},
	        {"", false, 0},
	};
	int64_t exp;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *tok = jwt(cases[i].claims);

		exp = -7;
		if (px_token_jwt_exp(tok, strlen(tok), &exp) != cases[i].ok)
			fail_msg("%s: want %d", cases[i].claims, cases[i].ok);
		if (cases[i].ok)
			assert_int_equal(exp, cases[i].exp);
		free(tok);
	}
	/* not the JWS compact form: eyJleHAiOjF9 is {"exp":1} */
	assert_true(px_token_jwt_exp("a.eyJleHAiOjF9.s", 16, &exp));
	assert_int_equal(exp, 1);
	assert_true(px_token_jwt_exp("a.eyJleHAiOjF9.", 15, &exp)); /* an empty signature */
	assert_false(px_token_jwt_exp(".eyJleHAiOjF9.s", 15, &exp));
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF9", 14, &exp));
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF9.s.t", 18, &exp));
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF9=.s", 17, &exp)); /* padding */
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF+.s", 16, &exp));  /* base64, not url */
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF9x.s", 17, &exp)); /* 4n+1 characters */
	assert_false(px_token_jwt_exp("a.eyJleHAiOjF9.s", 10, &exp));  /* @len counts */
	assert_false(px_token_jwt_exp("opaque-token", 12, &exp));
	assert_false(px_token_jwt_exp(NULL, 0, &exp));
}

static void test_tokens__serviceaccount_namespaces_are_read_strictly(void **state)
{
	char ns[64];

	(void)state;
	assert_true(
	        px_token_sa_namespace("system:serviceaccount:acme-dev:builder", ns, sizeof(ns)));
	assert_string_equal(ns, "acme-dev");
	assert_true(px_token_sa_namespace("system:serviceaccount:a:b.c", ns, sizeof(ns)));
	assert_string_equal(ns, "a");
	const char *bad[] = {
	        "system:serviceaccount:acme-dev",
	        "system:serviceaccount:acme-dev:",
	        "system:serviceaccount::builder",
	        "system:serviceaccount:acme-dev:builder:x",
	        "system:serviceaccount:Acme:builder",
	        "system:serviceaccount:acme_dev:builder",
	        "system:serviceaccount:acme-dev:Builder",
	        "system:serviceaccounts:acme-dev",
	        /* a namespace of 64 characters, one over the DNS label limit */
	        ("system:serviceaccount:"
	         "a123456789012345678901234567890123456789012345678901234567890123:b"),
	        "System:serviceaccount:acme-dev:builder",
	        "alice",
	        "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(ns, sizeof(ns), "junk");
		if (px_token_sa_namespace(bad[i], ns, sizeof(ns)))
			fail_msg("accepted %s", bad[i]);
		assert_string_equal(ns, "");
	}
	assert_false(px_token_sa_namespace(NULL, ns, sizeof(ns)));
	/* a buffer too short for NS */
	assert_false(px_token_sa_namespace("system:serviceaccount:acme-dev:builder", ns, 8));
	assert_string_equal(ns, "");
	assert_true(px_token_sa_namespace("system:serviceaccount:acme-dev:builder", ns, 9));
	assert_string_equal(ns, "acme-dev");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(test_tokens__##name, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(an_authenticated_token_gives_its_user_and_groups),
	        T(a_second_review_is_answered_from_the_cache),
	        T(an_answer_expires_after_the_ttl),
	        T(a_jwt_exp_sooner_than_the_ttl_ends_the_entry),
	        T(an_expired_jwt_is_never_cached),
	        T(a_jwt_without_a_usable_exp_is_cached_for_the_ttl),
	        T(a_refusal_is_cached_for_a_second_at_most),
	        T(a_failed_review_is_not_cached),
	        T(a_review_that_times_out_is_not_cached),
	        T(malformed_tokens_are_refused_without_a_request),
	        T(quotes_and_backslashes_reach_the_api_server_intact),
	        T(identities_the_proxy_cannot_carry_are_refused),
	        T(audiences_are_sent_and_checked),
	        T(concurrent_misses_make_one_request),
	        T(sixty_four_threads_over_a_small_cache),
	        T(the_cache_holds_at_most_max_entries),
	        T(jwt_exp_is_read_defensively),
	        T(serviceaccount_namespaces_are_read_strictly),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
