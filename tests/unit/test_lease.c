/*
 * test_lease.c - MicroTime format, identities, option checks and, against a real API server
 * (LANDLORD_TEST_KUBECONFIG), elections between electors that each use their own client.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "live.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/metrics.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/lease.h"

#define TEST_NS      "landlord-system"
#define MICROTIME_RE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$"
#define N_CLIENTS    3
#define LEASE_MS     3000
#define RENEW_MS     2000
#define RETRY_MS     500

static bool matches(const char *re, const char *s)
{
	regex_t rx;
	bool ok;

	assert_int_equal(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0);
	ok = regexec(&rx, s, 0, NULL, 0) == 0;
	regfree(&rx);
	return ok;
}

/* ---------- offline ---------- */

static void test_lease__default_identity_is_host_pid_random(void **state)
{
	char host[HOST_NAME_MAX + 1] = "", prefix[HOST_NAME_MAX + 32];
	struct lease_opts o = {.ns = "ns-d", .name = "default-identity"};
	struct lease *a = lease_new(NULL, &o), *b = lease_new(NULL, &o);
	const char *ia, *ib;

	assert_non_null(a);
	assert_non_null(b);
	ia = lease_identity(a);
	ib = lease_identity(b);
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	snprintf(prefix, sizeof(prefix), "%s_%ld_", host, (long)getpid());
	assert_int_equal(strncmp(ia, prefix, strlen(prefix)), 0);
	assert_true(matches("_[0-9]+_[0-9a-f]{8}$", ia));
	assert_int_equal(strlen(ia), strlen(prefix) + 8);
	assert_true(matches("_[0-9a-f]{8}$", ib));
	assert_string_not_equal(ia, ib);
	lease_free(a);
	lease_free(b);
}

static void test_lease__explicit_identity_is_kept(void **state)
{
	struct lease_opts o = {.ns = "ns-i", .name = "identity", .identity = "replica-1"};
	struct lease *l = lease_new(NULL, &o);

	assert_non_null(l);
	assert_string_equal(lease_identity(l), "replica-1");
	assert_false(lease_is_leader(l));
	lease_stop(l); /* never started: nothing to do */
	lease_free(l);
}

static void test_lease__rejects_inconsistent_timings(void **state)
{
	struct lease_opts deadline_too_long = {.lease_duration_ms = 3000,
	                                       .renew_deadline_ms = 3000};
	struct lease_opts retry_too_long = {.renew_deadline_ms = 2000, .retry_period_ms = 2000};
	struct lease_opts empty_name = {.ns = "ns-e", .name = ""};
	struct lease_opts no_namespace = {.name = "no-namespace"};

	assert_null(lease_new(NULL, &deadline_too_long));
	assert_null(lease_new(NULL, &retry_too_long));
	assert_null(lease_new(NULL, &empty_name));
	assert_null(lease_new(NULL, &no_namespace));
}

static void test_lease__gauge_starts_at_zero(void **state)
{
	struct lease_opts o = {.ns = "ns-g", .name = "gauge"};
	struct lease *l;
	struct buf out = BUF_INIT(1 << 20);

	metrics_set("landlord_leader", "lease=\"ns-g/gauge\"", 1);
	l = lease_new(NULL, &o);
	assert_non_null(l);
	assert_true(metrics_get("landlord_leader", "lease=\"ns-g/gauge\"") == 0);
	assert_int_equal(metrics_render(&out), 0);
	assert_non_null(strstr(out.p, "# TYPE landlord_leader gauge"));
	assert_non_null(strstr(out.p, "# TYPE landlord_leader_transitions_total counter"));
	buf_release(&out);
	lease_free(l);
}

/* ---------- live ---------- */

struct live {
	struct kcfg cfg;
	struct kc_client *kc[N_CLIENTS];
	struct kc_client *test_kc; /* the test's own writes */
};

static struct live *live;

struct rec {
	atomic_int started;
	atomic_int stopped;
	atomic_int new_leader;
	pthread_mutex_t mu;
	char leaders[8][128]; /* identities given to on_new_leader, in order */
};

static void on_started(void *ud)
{
	struct rec *r = ud;

	atomic_fetch_add(&r->started, 1);
}

static void on_stopped(void *ud)
{
	struct rec *r = ud;

	atomic_fetch_add(&r->stopped, 1);
}

static void on_new_leader(const char *id, void *ud)
{
	struct rec *r = ud;
	int n;

	pthread_mutex_lock(&r->mu);
	n = atomic_fetch_add(&r->new_leader, 1);
	if (n < 8)
		snprintf(r->leaders[n], sizeof(r->leaders[n]), "%s", id);
	pthread_mutex_unlock(&r->mu);
}

static bool saw_leader(struct rec *r, const char *id)
{
	bool found = false;
	int i, n;

	pthread_mutex_lock(&r->mu);
	n = atomic_load(&r->new_leader);
	for (i = 0; i < n && i < 8; i++)
		found = found || strcmp(r->leaders[i], id) == 0;
	pthread_mutex_unlock(&r->mu);
	return found;
}

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
}

static void need_cluster(void)
{
	if (live == NULL)
		skip();
}

static void ensure_namespace(struct kc_client *kc)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
	                       "metadata", "name", TEST_NS);

	assert_int_equal(kc_create(kc, &KC_NAMESPACES, NULL, ns, &resp, &err), 0);
	assert_true(kc_resp_ok(&resp) || resp.http_status == 409);
	kc_resp_release(&resp);
	json_decref(ns);
}

static int live_setup(void **state)
{
	struct ll_err err = {{0}};
	struct kc_opts o = {.timeout_ms = 5000, .client_name = "lease-test"};
	char name[32];
	int i;

	if (live_kubeconfig() == NULL)
		return 0;
	live = calloc(1, sizeof(*live));
	if (live_connect(&live->cfg, &o, &live->test_kc) != 0) {
		free(live);
		live = NULL;
		return -1;
	}
	/* the electors' own clients, on the same kubeconfig */
	for (i = 0; i < N_CLIENTS; i++) {
		snprintf(name, sizeof(name), "lease-test-%d", i);
		o.client_name = name;
		if (kc_client_new(&live->cfg, &o, &live->kc[i], &err) != 0) {
			fprintf(stderr, "live setup: client %s: %s\n", name, err.msg);
			return -1;
		}
	}
	ensure_namespace(live->test_kc);
	return 0;
}

static int live_teardown(void **state)
{
	int i;

	if (live == NULL)
		return 0;
	for (i = 0; i < N_CLIENTS; i++)
		kc_client_free(live->kc[i]);
	kc_client_free(live->test_kc);
	kcfg_release(&live->cfg);
	free(live);
	live = NULL;
	return 0;
}

static void unique_name(char out[32])
{
	char sfx[16];

	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(out, 32, "lease-test-%s", sfx);
}

static struct lease *elector(int client, const char *name, struct rec *r)
{
	struct lease_opts o = {
	        .ns = TEST_NS,
	        .name = name,
	        .lease_duration_ms = LEASE_MS,
	        .renew_deadline_ms = RENEW_MS,
	        .retry_period_ms = RETRY_MS,
	        .on_started_leading = on_started,
	        .on_stopped_leading = on_stopped,
	        .on_new_leader = on_new_leader,
	        .ud = r,
	};
	struct lease *l = lease_new(live->kc[client], &o);

	assert_non_null(l);
	return l;
}

static bool wait_leading(struct lease *l, long long timeout_ms)
{
	long long end = clock_mono_ms() + timeout_ms;

	while (!lease_is_leader(l) && clock_mono_ms() < end)
		live_sleep_ms(20);
	return lease_is_leader(l);
}

/* get_stored() - the Lease as stored (new reference). */
static json_t *get_stored(const char *name)
{
	struct kc_resp resp = {0};
	json_t *obj;

	assert_int_equal(kc_get(live->test_kc, &KC_LEASES, TEST_NS, name, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	obj = json_incref(resp.body);
	kc_resp_release(&resp);
	return obj;
}

static void delete_lease(const char *name)
{
	struct kc_resp resp = {0};

	assert_int_equal(kc_delete(live->test_kc, &KC_LEASES, TEST_NS, name, NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
}

static void test_lease__one_of_two_leads_and_hands_over_on_stop(void **state)
{
	char name[32], labels[128];
	struct rec ra, rb;
	struct lease *a, *b, *leader, *other;
	struct rec *rl, *ro;
	long long end, t0;
	json_t *stored;

	need_cluster();
	unique_name(name);
	rec_init(&ra);
	rec_init(&rb);
	a = elector(0, name, &ra);
	b = elector(1, name, &rb);
	assert_int_equal(lease_start(a), 0);
	assert_int_equal(lease_start(b), 0);

	end = clock_mono_ms() + 10000;
	while (!lease_is_leader(a) && !lease_is_leader(b) && clock_mono_ms() < end)
		live_sleep_ms(20);
	/* Over more than a lease duration, exactly one leads at every sample. */
	end = clock_mono_ms() + LEASE_MS + 1000;
	while (clock_mono_ms() < end) {
		assert_true(lease_is_leader(a) != lease_is_leader(b));
		live_sleep_ms(25);
	}
	leader = lease_is_leader(a) ? a : b;
	other = leader == a ? b : a;
	rl = leader == a ? &ra : &rb;
	ro = leader == a ? &rb : &ra;
	assert_int_equal(atomic_load(&rl->started), 1);
	assert_int_equal(atomic_load(&ro->started), 0);
	assert_true(saw_leader(ro, lease_identity(leader)));
	snprintf(labels, sizeof(labels), "lease=\"%s/%s\"", TEST_NS, name);
	assert_true(metrics_get("landlord_leader", labels) == 1);

	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), lease_identity(leader));
	assert_true(matches(MICROTIME_RE, jx_str(stored, "spec", "renewTime", NULL)));
	assert_true(matches(MICROTIME_RE, jx_str(stored, "spec", "acquireTime", NULL)));
	assert_int_equal(jx_int(stored, -1, "spec", "leaseDurationSeconds", NULL), 3);
	json_decref(stored);

	/* Graceful hand-over: the follower takes over at a retry, well before expiry. */
	lease_stop(leader);
	t0 = clock_mono_ms();
	assert_false(lease_is_leader(leader));
	assert_int_equal(atomic_load(&rl->stopped), 1);
	assert_true(wait_leading(other, LEASE_MS));
	assert_true(clock_mono_ms() - t0 < LEASE_MS);
	assert_true(saw_leader(ro, lease_identity(other)));
	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), lease_identity(other));
	assert_true(jx_int(stored, 0, "spec", "leaseTransitions", NULL) >= 1);
	assert_true(matches(MICROTIME_RE, jx_str(stored, "spec", "renewTime", NULL)));
	json_decref(stored);

	/* Stopping the last leader leaves a released Lease behind. */
	lease_stop(other);
	assert_int_equal(atomic_load(&ro->stopped), 1);
	assert_true(metrics_get("landlord_leader", labels) == 0);
	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), "");
	assert_int_equal(jx_int(stored, -1, "spec", "leaseDurationSeconds", NULL), 1);
	json_decref(stored);
	lease_free(a);
	lease_free(b);
	delete_lease(name);
}

static void test_lease__late_joiner_does_not_take_a_held_lease(void **state)
{
	char name[32];
	struct rec ra, rc, rd;
	struct lease *a, *c, *d;
	struct lease_opts slow = {
	        .ns = TEST_NS,
	        .lease_duration_ms = 60000,
	        .renew_deadline_ms = 40000,
	        .retry_period_ms = 20000,
	        .on_new_leader = on_new_leader,
	        .ud = &rd,
	};
	long long end, t0;

	need_cluster();
	unique_name(name);
	rec_init(&ra);
	rec_init(&rc);
	rec_init(&rd);
	a = elector(0, name, &ra);
	assert_int_equal(lease_start(a), 0);
	assert_true(wait_leading(a, 10000));

	c = elector(1, name, &rc);
	slow.name = name;
	d = lease_new(live->kc[2], &slow);
	assert_non_null(d);
	assert_int_equal(lease_start(c), 0);
	assert_int_equal(lease_start(d), 0);
	/* Longer than the lease duration: an elector ignoring renewals would have taken over. */
	end = clock_mono_ms() + 2 * LEASE_MS;
	while (clock_mono_ms() < end) {
		assert_false(lease_is_leader(c));
		assert_true(lease_is_leader(a));
		live_sleep_ms(50);
	}
	assert_int_equal(atomic_load(&rc.started), 0);
	assert_true(saw_leader(&rc, lease_identity(a)));
	assert_true(saw_leader(&rd, lease_identity(a)));

	/* A waiting candidate wakes from its 20 s retry sleep at once. */
	t0 = clock_mono_ms();
	lease_stop(d);
	assert_true(clock_mono_ms() - t0 < 2000);
	assert_false(lease_is_leader(d));

	lease_stop(c);
	assert_int_equal(atomic_load(&rc.stopped), 0);
	lease_free(c);
	lease_free(d);
	lease_free(a);
	assert_int_equal(atomic_load(&ra.stopped), 1);
	delete_lease(name);
}

static void steal(const char *name, const char *thief)
{
	struct kc_resp resp = {0};
	json_t *lease = get_stored(name);
	json_t *spec = json_object_get(lease, "spec");
	char now[CLOCK_UTC_MAX];
	struct timespec ts = clock_wall_now();

	clock_format_utc(&ts, 6, now);
	json_object_set_new(spec, "holderIdentity", json_string(thief));
	json_object_set_new(spec, "renewTime", json_string(now));
	assert_int_equal(
	        kc_replace(live->test_kc, &KC_LEASES, TEST_NS, name, NULL, lease, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 200);
	kc_resp_release(&resp);
	json_decref(lease);
}

static void test_lease__leader_whose_lease_is_stolen_steps_down(void **state)
{
	char name[32];
	struct rec ra;
	struct lease *a;
	long long end;
	json_t *stored;

	need_cluster();
	unique_name(name);
	rec_init(&ra);
	a = elector(0, name, &ra);
	assert_int_equal(lease_start(a), 0);
	assert_true(wait_leading(a, 10000));

	steal(name, "thief");
	end = clock_mono_ms() + RENEW_MS + 2 * RETRY_MS;
	while (atomic_load(&ra.stopped) == 0 && clock_mono_ms() < end)
		live_sleep_ms(20);
	assert_int_equal(atomic_load(&ra.stopped), 1);
	assert_false(lease_is_leader(a));
	assert_true(saw_leader(&ra, "thief"));
	/* It released nothing: the Lease is not ours to clear. */
	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), "thief");
	json_decref(stored);

	/* Back to candidate: the thief never renews, so the Lease expires and A takes it again. */
	assert_true(wait_leading(a, LEASE_MS + 4 * RETRY_MS + 2000));
	assert_int_equal(atomic_load(&ra.started), 2);
	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), lease_identity(a));
	assert_true(jx_int(stored, 0, "spec", "leaseTransitions", NULL) >= 1);
	json_decref(stored);
	lease_free(a);
	delete_lease(name);
}

static const struct kc_gvr VAP = {"admissionregistration.k8s.io", "v1",
                                  "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
                                  false};
static const struct kc_gvr VAP_BINDING = {"admissionregistration.k8s.io", "v1",
                                          "validatingadmissionpolicybindings",
                                          "ValidatingAdmissionPolicyBinding", false};

/* freeze() - an admission policy that denies every UPDATE of Lease @name. */
static void freeze(const char *name)
{
	struct kc_resp resp = {0};
	char expr[96];
	json_t *policy, *binding;

	snprintf(expr, sizeof(expr), "object.metadata.name != '%s'", name);
	policy = json_pack(
	        "{s:s,s:s,s:{s:s},s:{s:s,s:{s:[{s:[s],s:[s],s:[s],s:[s]}]},s:[{s:s,s:s}]}}",
	        "apiVersion", "admissionregistration.k8s.io/v1", "kind",
	        "ValidatingAdmissionPolicy", "metadata", "name", name, "spec", "failurePolicy",
	        "Fail", "matchConstraints", "resourceRules", "apiGroups", "coordination.k8s.io",
	        "apiVersions", "v1", "operations", "UPDATE", "resources", "leases", "validations",
	        "expression", expr, "message", "frozen by test_lease");
	binding = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:[s]}}", "apiVersion",
	                    "admissionregistration.k8s.io/v1", "kind",
	                    "ValidatingAdmissionPolicyBinding", "metadata", "name", name, "spec",
	                    "policyName", name, "validationActions", "Deny");
	assert_non_null(policy);
	assert_non_null(binding);
	assert_int_equal(kc_create(live->test_kc, &VAP, NULL, policy, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	kc_resp_release(&resp);
	assert_int_equal(kc_create(live->test_kc, &VAP_BINDING, NULL, binding, &resp, NULL), 0);
	assert_int_equal(resp.http_status, 201);
	kc_resp_release(&resp);
	json_decref(policy);
	json_decref(binding);
}

static void thaw(const char *name)
{
	struct kc_resp resp = {0};

	assert_int_equal(kc_delete(live->test_kc, &VAP_BINDING, NULL, name, NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
	assert_int_equal(kc_delete(live->test_kc, &VAP, NULL, name, NULL, &resp, NULL), 0);
	kc_resp_release(&resp);
}

static void test_lease__leader_that_cannot_renew_steps_down_by_the_deadline(void **state)
{
	char name[32];
	struct rec ra;
	struct lease *a;
	long long end;
	json_t *stored;

	need_cluster();
	unique_name(name);
	rec_init(&ra);
	a = elector(0, name, &ra);
	assert_int_equal(lease_start(a), 0);
	assert_true(wait_leading(a, 10000));

	/* Renewals (and the release) are rejected from now on, once the policy is loaded. */
	freeze(name);
	end = clock_mono_ms() + 20000;
	while (atomic_load(&ra.stopped) == 0 && clock_mono_ms() < end)
		live_sleep_ms(20);
	assert_int_equal(atomic_load(&ra.stopped), 1);
	assert_false(lease_is_leader(a));
	/* Nobody else wrote the Lease: the renew deadline ended the leadership. */
	stored = get_stored(name);
	assert_string_equal(jx_str(stored, "spec", "holderIdentity", NULL), lease_identity(a));
	json_decref(stored);

	/* Back to candidate: once writes pass again, it leads again. */
	thaw(name);
	assert_true(wait_leading(a, 20000));
	assert_int_equal(atomic_load(&ra.started), 2);
	lease_free(a);
	delete_lease(name);
}

int main(void)
{
	const struct CMUnitTest offline[] = {
	        cmocka_unit_test(test_lease__default_identity_is_host_pid_random),
	        cmocka_unit_test(test_lease__explicit_identity_is_kept),
	        cmocka_unit_test(test_lease__rejects_inconsistent_timings),
	        cmocka_unit_test(test_lease__gauge_starts_at_zero),
	};
	const struct CMUnitTest live_tests[] = {
	        cmocka_unit_test(test_lease__one_of_two_leads_and_hands_over_on_stop),
	        cmocka_unit_test(test_lease__late_joiner_does_not_take_a_held_lease),
	        cmocka_unit_test(test_lease__leader_whose_lease_is_stolen_steps_down),
	        cmocka_unit_test(test_lease__leader_that_cannot_renew_steps_down_by_the_deadline),
	};
	int failed;

	failed = cmocka_run_group_tests_name("lease", offline, NULL, NULL);
	failed += cmocka_run_group_tests_name("lease_live", live_tests, live_setup, live_teardown);
	return failed;
}
