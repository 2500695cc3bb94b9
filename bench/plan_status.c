/*
 * plan_status.c - benchmark: the Plan controller with N tenants on one plan whose usage keeps
 * changing, in the real manager against the in-process fake API server (tests/fake). Run by
 * bench/plan_status.py; never in CI.
 *
 *   bench_plan_status [--tenants N] [--rate CHANGES_PER_SECOND] [--seconds S] [--seed X]
 *
 * 1. One Plan (bench/tenants.py's five resources, maxNamespaces 4) and N Tenants on it, each with
 *    the status the Tenant controller would give it (4 namespaces, quota hard = the plan, used
 *    random), put straight into the fake's store.
 * 2. Baselines, in this process from the same tenants' documents: the old status shape
 *    (perTenant: every tenant's namespaces, used and hard) and its size; the time to build that
 *    tree (what the old controller did on every reconcile) and the time to build the summary
 *    afresh from all N tenants (what this controller does once per start); the summary's memory.
 * 3. The plan controller starts; time to its first status, and that status's size.
 * 4. For S seconds, RATE tenants a second change their usage (one at a time, a random tenant, new
 *    random values, written as the Tenant controller's status writes would land). Measured: the
 *    Plan status writes (count and bytes, seen by the fake's write hook), the plan reconciles and
 *    their mean time (landlord_reconcile_duration_seconds), tenants read again one at a time and
 *    summaries built afresh, and how long after the last change the status shows it.
 * 5. A restart over the same objects: its writes (must be 0).
 * Prints one JSON object on stdout; the manager's logs go to stderr.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/metrics.h"
#include "controllers/controllers.h"
#include "fake_manager.h"
#include "tenancy/planstatus.h"

#define TENANTS "tenants.landlord.dev"
#define PLANS   "plans.landlord.dev"
#define PLAN    "bench"
#define REPEATS 5

struct opts {
	int tenants, rate, seconds;
	uint64_t seed;
};

/* Plan status writes, as the fake stores them. */
struct written {
	pthread_mutex_t lock;
	long writes;
	size_t bytes, max_bytes; /* compact JSON of status */
};

struct bench {
	struct opts o;
	struct fake_api *f;
	struct written w;
	int *pods; /* each tenant's pods used, for the expected total */
	long long pods_total;
	uint64_t rng;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void on_write(const char *verb, const char *res, json_t *obj, void *ud)
{
	struct written *w = ud;
	char *s;
	size_t n;

	if (strcmp(res, PLANS) != 0 || strcmp(verb, "put") == 0)
		return;
	s = json_dumps(json_object_get(obj, "status"), JSON_COMPACT);
	n = s ? strlen(s) : 0;
	free(s);
	pthread_mutex_lock(&w->lock);
	w->writes++;
	w->bytes += n;
	w->max_bytes = n > w->max_bytes ? n : w->max_bytes;
	pthread_mutex_unlock(&w->lock);
}

static struct written written(struct bench *b)
{
	struct written w;

	pthread_mutex_lock(&b->w.lock);
	w = b->w;
	pthread_mutex_unlock(&b->w.lock);
	return w;
}

static json_t *plan_hard(void)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s}", "pods", "40", "requests.cpu", "8",
	                 "requests.memory", "16Gi", "count/configmaps", "100", "count/secrets",
	                 "100");
}

/* Tenant @i with new random usage; its pods are recorded for the expected total. */
static json_t *tenant(struct bench *b, int i)
{
	char name[32], pods[16], cpu[16], mem[16], cms[16], secrets[16];
	int p = (int)(next(&b->rng) % 41);

	snprintf(name, sizeof(name), "tenant-%05d", i);
	snprintf(pods, sizeof(pods), "%d", p);
	snprintf(cpu, sizeof(cpu), "%dm", (int)(next(&b->rng) % 8001));
	snprintf(mem, sizeof(mem), "%dMi", (int)(next(&b->rng) % 16385));
	snprintf(cms, sizeof(cms), "%d", (int)(next(&b->rng) % 101));
	snprintf(secrets, sizeof(secrets), "%d", (int)(next(&b->rng) % 101));
	b->pods_total += p - b->pods[i];
	b->pods[i] = p;
	return json_pack("{s:{s:s},s:{s:s},s:{s:i,s:{s:o,s:{s:s,s:s,s:s,s:s,s:s}}}}", "metadata",
	                 "name", name, "spec", "plan", PLAN, "status", "namespaceCount", 4, "quota",
	                 "hard", plan_hard(), "used", "pods", pods, "requests.cpu", cpu,
	                 "requests.memory", mem, "count/configmaps", cms, "count/secrets", secrets);
}

static void populate(struct bench *b)
{
	json_t *plan = json_pack("{s:{s:s},s:{s:i,s:{s:o}}}", "metadata", "name", PLAN, "spec",
	                         "maxNamespaces", 4, "resourceQuota", "hard", plan_hard());

	fake_api_put(b->f, PLANS, plan);
	json_decref(plan);
	for (int i = 0; i < b->o.tenants; i++) {
		json_t *t = tenant(b, i);

		fake_api_put(b->f, TENANTS, t);
		json_decref(t);
	}
}

/* ---- baselines from the same tenants ---- */

static struct jdoc_list tenant_docs(struct bench *b)
{
	json_t *all = fake_api_list(b->f, TENANTS, NULL), *t;
	struct jdoc_list l = {calloc(json_array_size(all), sizeof(*l.items)), 0};
	size_t i;

	json_array_foreach(all, i, t) {
		struct jdoc *d = NULL;

		if (jdoc_from_json(t, NULL, &d, NULL) == 0)
			l.items[l.n++] = d;
	}
	json_decref(all);
	return l;
}

/* The old controller's status body: every tenant's namespaces, used and hard. */
static json_t *old_shape(const struct jdoc_list *l)
{
	json_t *per = json_object();

	for (size_t i = 0; i < l->n; i++) {
		struct jval q = jd_get(l->items[i], "status", "quota", NULL);

		json_object_set_new(per, jd_name(l->items[i]),
		                    json_pack("{s:I,s:o?,s:o?}", "namespaces",
		                              (json_int_t)jd_int(l->items[i], 0, "status",
		                                                 "namespaceCount", NULL),
		                              "used", jval_to_json(jval_get(q, "used")), "hard",
		                              jval_to_json(jval_get(q, "hard"))));
	}
	return json_pack("{s:I,s:I,s:o}", "tenants", (json_int_t)l->n, "namespaces",
	                 (json_int_t)(4 * l->n), "perTenant", per);
}

static struct ps_plan *summary(const struct jdoc_list *l)
{
	struct ps_plan *p = ps_plan_new();

	for (size_t i = 0; i < l->n; i++)
		ps_plan_put(p, jd_name(l->items[i]), jd_get(l->items[i], "status", NULL));
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static json_t *baselines(struct bench *b)
{
	struct jdoc_list l = tenant_docs(b);
	double old_us[REPEATS], fresh_us[REPEATS];
	json_t *hard = plan_hard(), *old = NULL, *st;
	struct ps_plan *p = NULL;
	char *text;
	size_t old_bytes, ps_bytes;

	for (int r = 0; r < REPEATS; r++) {
		int64_t t0 = clock_mono_ns();

		json_decref(old);
		old = old_shape(&l);
		old_us[r] = (double)(clock_mono_ns() - t0) / 1e3;
		t0 = clock_mono_ns();
		ps_plan_free(p);
		p = summary(&l);
		st = ps_plan_status(p, hard);
		fresh_us[r] = (double)(clock_mono_ns() - t0) / 1e3;
		json_decref(st);
	}
	text = json_dumps(old, JSON_COMPACT);
	old_bytes = strlen(text);
	ps_bytes = ps_plan_bytes(p);
	free(text);
	json_decref(old);
	json_decref(hard);
	ps_plan_free(p);
	jdoc_list_release(&l);
	return json_pack("{s:I,s:f,s:f,s:f}", "old_status_bytes", (json_int_t)old_bytes,
	                 "old_tree_us", median_of(old_us, REPEATS), "summary_build_us",
	                 median_of(fresh_us, REPEATS), "summary_bytes_per_tenant",
	                 (double)ps_bytes / b->o.tenants);
}

/* ---- the controller ---- */

static struct fake_mgr *start(struct fake_api *f)
{
	struct controller_def def = plan_controller_def();

	return fake_mgr_start(f, &def, 1);
}

struct want {
	long long tenants, pods;
};

static bool current(struct fake_api *f, void *ud)
{
	const struct want *w = ud;
	json_t *p = fake_api_get(f, PLANS, NULL, PLAN);
	const char *pods = jx_str(p, "status", "quota", "used", "pods", NULL);
	bool ok = jx_int(p, -1, "status", "tenants", NULL) == w->tenants && pods &&
	          strtoll(pods, NULL, 10) == w->pods;

	json_decref(p);
	return ok;
}

/* Sum and count of the plan controller's reconcile durations, from the rendered registry. */
static void reconcile_time(double *sum, double *count)
{
	struct buf out = BUF_INIT(1 << 24);
	const char *s, *k;

	*sum = *count = 0;
	if (metrics_render(&out) < 0)
		goto out;
	s = buf_cstr(&out);
	k = strstr(s, "landlord_reconcile_duration_seconds_sum{controller=\"plan\"} ");
	if (k)
		*sum = strtod(strchr(k, ' ') + 1, NULL);
	k = strstr(s, "landlord_reconcile_duration_seconds_count{controller=\"plan\"} ");
	if (k)
		*count = strtod(strchr(k, ' ') + 1, NULL);
out:
	buf_release(&out);
}

static void drive(struct bench *b)
{
	int64_t t = clock_mono_ns(), step = 1000000000LL / b->o.rate;
	long changes = (long)b->o.rate * b->o.seconds;

	for (long c = 0; c < changes; c++) {
		json_t *tn = tenant(b, (int)(next(&b->rng) % (uint64_t)b->o.tenants));

		fake_api_put(b->f, TENANTS, tn);
		json_decref(tn);
		t += step;
		clock_sleep_until(t);
	}
}

/* Counters read before and after the drive. */
struct sample {
	struct written w;
	double rsum, rcount, updates, builds;
	int64_t at;
};

static struct sample sample(struct bench *b)
{
	struct sample s = {.w = written(b), .at = clock_mono_ns()};

	reconcile_time(&s.rsum, &s.rcount);
	s.updates = metrics_get("landlord_plan_status_tenant_updates_total", NULL);
	s.builds = metrics_get("landlord_plan_status_builds_total", NULL);
	return s;
}

static json_t *drive_result(struct bench *b, const struct sample *s0, const struct sample *s1,
                            int64_t drive_end)
{
	long writes = s1->w.writes - s0->w.writes;
	double reconciles = s1->rcount - s0->rcount;

	return json_pack(
	        "{s:f,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "drive_seconds", (double)b->o.seconds,
	        "changes", (json_int_t)((long)b->o.rate * b->o.seconds), "writes",
	        (json_int_t)writes, "max_status_bytes", (json_int_t)s1->w.max_bytes,
	        "mean_status_bytes", writes ? (double)(s1->w.bytes - s0->w.bytes) / writes : 0.0,
	        "lag_ms", (double)(s1->at - drive_end) / 1e6, "reconciles", reconciles,
	        "reconcile_mean_us", reconciles ? (s1->rsum - s0->rsum) / reconciles * 1e6 : 0.0,
	        "tenant_updates", s1->updates - s0->updates, "builds_while_driving",
	        s1->builds - s0->builds);
}

/* Stop, start again over the same objects, wait for the plan's reconcile: the writes. */
static int restart_writes(struct bench *b, struct fake_mgr *m)
{
	double reconciles;
	int before;

	fake_mgr_stop(m);
	before = fake_api_writes(b->f);
	reconciles = fake_mgr_reconciles("plan");
	m = start(b->f);
	fake_mgr_wait_reconciles(b->f, "plan", reconciles + 1);
	fake_mgr_stop(m);
	return fake_api_writes(b->f) - before;
}

static json_t *run(struct bench *b)
{
	struct want w = {b->o.tenants, b->pods_total};
	int64_t t0 = clock_mono_ns(), drive_end;
	struct sample s0, s1;
	struct fake_mgr *m = start(b->f);
	json_t *res;

	if (!fake_api_wait(b->f, current, &w))
		return NULL;
	s0 = sample(b);
	drive(b);
	drive_end = clock_mono_ns();
	w.pods = b->pods_total;
	if (!fake_api_wait(b->f, current, &w))
		return NULL;
	s1 = sample(b);
	res = drive_result(b, &s0, &s1, drive_end);
	json_object_set_new(res, "first_status_ms", json_real((double)(s0.at - t0) / 1e6));
	json_object_set_new(res, "first_status_bytes", json_integer((json_int_t)s0.w.max_bytes));
	json_object_set_new(res, "first_writes", json_integer(s0.w.writes));
	json_object_set_new(res, "restart_writes", json_integer(restart_writes(b, m)));
	return res;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {{"tenants", required_argument, NULL, 't'},
	                                      {"rate", required_argument, NULL, 'r'},
	                                      {"seconds", required_argument, NULL, 's'},
	                                      {"seed", required_argument, NULL, 'x'},
	                                      {NULL, 0, NULL, 0}};
	int c;

	*o = (struct opts){1000, 200, 10, 0x9e3779b97f4a7c15ULL};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 't')
			o->tenants = (int)strtol(optarg, NULL, 10);
		else if (c == 'r')
			o->rate = (int)strtol(optarg, NULL, 10);
		else if (c == 's')
			o->seconds = (int)strtol(optarg, NULL, 10);
		else if (c == 'x')
			o->seed = strtoull(optarg, NULL, 0) | 1;
		else
			return -1;
	}
	return o->tenants > 0 && o->rate > 0 && o->seconds > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct bench b = {.w = {.lock = PTHREAD_MUTEX_INITIALIZER}};
	json_t *out, *base, *res;

	if (parse(argc, argv, &b.o) < 0) {
		fprintf(stderr,
		        "usage: %s [--tenants N] [--rate CHANGES_PER_S] [--seconds S] "
		        "[--seed X]\n",
		        argv[0]);
		return 2;
	}
	b.rng = b.o.seed;
	b.pods = calloc((size_t)b.o.tenants, sizeof(*b.pods));
	b.f = fake_api_start();
	fake_api_add_gvr(b.f, &LL_TENANTS, true);
	fake_api_add_gvr(b.f, &LL_PLANS, true);
	fake_api_set_write_hook(b.f, on_write, &b.w);
	populate(&b);
	base = baselines(&b);
	res = run(&b);
	if (res == NULL) {
		fprintf(stderr, "the Plan's status never showed the tenants' usage\n");
		return 1;
	}
	out = json_pack("{s:i,s:i,s:i,s:o,s:o}", "tenants", b.o.tenants, "rate", b.o.rate,
	                "seconds", b.o.seconds, "baseline", base, "controller", res);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	fputc('\n', stdout);
	json_decref(out);
	fake_api_stop(b.f);
	free(b.pods);
	return 0;
}
