/* quotaplan.c - split a Plan's tenant-wide quota among namespaces; policy in quotaplan.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "kube/quantity.h"
#include "tenancy/quotaplan.h"

#define NANO_PER_MILLI ((__int128)1000000)
#define NANO_PER_UNIT  ((__int128)1000000000)

/* One plan resource; values in nano-units. */
struct res {
	const char *name; /* borrowed from the plan */
	struct qty plan;
	__int128 granule;
	__int128 used; /* tenant-wide */
	bool over;
};

/* One namespace's view of one resource. */
struct cell {
	__int128 used, spec, status, target;
	__int128 actual; /* status.used alone: @used is raised to a sleeping namespace's reservation
	                  */
	bool has_spec, has_status;
};

/* One value of a hard map under construction. */
struct slot {
	bool has;
	__int128 v;
};

struct planner {
	const struct qp_ns **ns; /* sorted by name */
	size_t n_ns;
	struct res *res; /* sorted by name */
	size_t n_res;
	struct cell *cells; /* cells[r * n_ns + i] */
	struct ll_err *err;
};

static struct cell *cell_at(const struct planner *p, size_t r, size_t i)
{
	return &p->cells[r * p->n_ns + i];
}

/* A ResourceList value: a quantity string (without NUL bytes) or an integer, never negative. */
static int read_value(struct jval v, struct qty *out)
{
	const char *s = jval_str(v);

	if (s) {
		if (strlen(s) != jval_strlen(v) || qty_parse(s, out) != 0)
			return -EINVAL;
	} else if (jval_type(v) == JT_INT) {
		*out = qty_from_int(jval_int(v, 0));
	} else {
		return -EINVAL;
	}
	return out->nano < 0 ? -EINVAL : 0;
}

static int lookup(const struct planner *p, struct jval map, const char *field, const char *ns,
                  const char *key, bool *has /* OUT */, __int128 *v /* OUT */)
{
	struct jval jv = jval_get(map, key);
	struct qty q;

	*has = false;
	*v = 0;
	if (jval_type(jv) == JT_NONE)
		return 0;
	if (read_value(jv, &q) != 0)
		return ll_err_set(p->err, -EINVAL,
		                  "namespace %s: %s[%s] is not a non-negative quantity", ns, field,
		                  key);
	*has = true;
	*v = q.nano;
	return 0;
}

static bool is_map(struct jval map)
{
	return jval_type(map) == JT_NONE || jval_type(map) == JT_OBJECT;
}

static int check_map(const struct planner *p, struct jval map, const char *field, const char *ns)
{
	if (!is_map(map))
		return ll_err_set(p->err, -EINVAL, "namespace %s: %s is not an object", ns, field);
	return 0;
}

static int cmp_ns(const void *a, const void *b)
{
	const struct qp_ns *x = *(const struct qp_ns *const *)a;
	const struct qp_ns *y = *(const struct qp_ns *const *)b;

	return strcmp(x->name, y->name);
}

static int cmp_res(const void *a, const void *b)
{
	return strcmp(((const struct res *)a)->name, ((const struct res *)b)->name);
}

static int sort_namespaces(struct planner *p, const struct qp_ns *ns, size_t n)
{
	size_t i;

	p->ns = xcalloc(n, sizeof(*p->ns));
	p->n_ns = n;
	for (i = 0; i < n; i++) {
		if (!ns[i].name || !ns[i].name[0])
			return ll_err_set(p->err, -EINVAL, "namespace %zu has no name", i);
		p->ns[i] = &ns[i];
	}
	qsort(p->ns, n, sizeof(*p->ns), cmp_ns);
	for (i = 1; i < n; i++)
		if (strcmp(p->ns[i - 1]->name, p->ns[i]->name) == 0)
			return ll_err_set(p->err, -EINVAL, "namespace %s is listed twice",
			                  p->ns[i]->name);
	return 0;
}

/* cpu is handed out in millicores; everything else (bytes, counts, devices) in whole units. */
static __int128 granule_of(const char *name)
{
	size_t len = strlen(name);

	if (strcmp(name, "cpu") == 0 || (len > 4 && strcmp(name + len - 4, ".cpu") == 0))
		return NANO_PER_MILLI;
	return NANO_PER_UNIT;
}

static int load_plan(struct planner *p, struct jval plan_hard)
{
	const char *key;
	struct jval v;
	size_t r;

	if (!is_map(plan_hard))
		return ll_err_set(p->err, -EINVAL, "plan hard is not an object");
	p->n_res = jval_size(plan_hard);
	p->res = xcalloc(p->n_res, sizeof(*p->res));
	jval_foreach_member(plan_hard, r, key, v) {
		if (read_value(v, &p->res[r].plan) != 0)
			return ll_err_set(p->err, -EINVAL,
			                  "plan hard[%s] is not a non-negative quantity", key);
		p->res[r].name = key;
		p->res[r].granule = granule_of(key);
	}
	qsort(p->res, p->n_res, sizeof(*p->res), cmp_res);
	return 0;
}

/*
 * A sleeping namespace keeps its share: its usage is the larger of status.used and what it used
 * when it went to sleep. The reservation is landlord's own annotation; a value in it that does
 * not read counts for nothing rather than stopping the tenant's plan.
 */
static void keep_reserved(const struct planner *p, const struct qp_ns *ns, const char *key,
                          __int128 *used)
{
	struct qty q;
	struct jval jv = jval_type(ns->reserved) == JT_OBJECT ? jval_get(ns->reserved, key)
	                                                      : (struct jval){0};

	(void)p;
	if (jval_type(jv) != JT_NONE && read_value(jv, &q) == 0 && q.nano > *used)
		*used = q.nano;
}

static int load_cells(struct planner *p)
{
	size_t r, i;
	int rc;

	p->cells = xcalloc(p->n_res * p->n_ns, sizeof(*p->cells));
	for (i = 0; i < p->n_ns; i++) {
		const struct qp_ns *ns = p->ns[i];
		bool has_used;

		if ((rc = check_map(p, ns->used, "status.used", ns->name)) != 0 ||
		    (rc = check_map(p, ns->status_hard, "status.hard", ns->name)) != 0 ||
		    (rc = check_map(p, ns->spec_hard, "spec.hard", ns->name)) != 0)
			return rc;
		for (r = 0; r < p->n_res; r++) {
			struct cell *c = cell_at(p, r, i);
			const char *key = p->res[r].name;

			if ((rc = lookup(p, ns->used, "status.used", ns->name, key, &has_used,
			                 &c->used)) != 0 ||
			    (rc = lookup(p, ns->status_hard, "status.hard", ns->name, key,
			                 &c->has_status, &c->status)) != 0 ||
			    (rc = lookup(p, ns->spec_hard, "spec.hard", ns->name, key, &c->has_spec,
			                 &c->spec)) != 0)
				return rc;
			c->actual = c->used;
			keep_reserved(p, ns, key, &c->used);
			if (__builtin_add_overflow(p->res[r].used, c->used, &p->res[r].used))
				return ll_err_set(p->err, -ERANGE, "tenant usage of %s overflows",
				                  key);
		}
	}
	return 0;
}

/* Least free room (hard - used) a namespace may keep before the resource is rebalanced. */
static __int128 low_water(const struct planner *p, size_t r)
{
	const struct res *rs = &p->res[r];
	__int128 granules = (rs->plan.nano - rs->used) / rs->granule;
	__int128 band = granules / (2 * (__int128)p->n_ns);

	/* a namespace with no room left while the tenant still has some is always rebalanced */
	return (granules > 0 && band == 0 ? 1 : band) * rs->granule;
}

/*
 * Targets = base (usage, or the current spec.hard) + an even split of what base leaves of the
 * plan, in whole granules: one leftover granule each to the first namespaces by name, and a
 * sub-granule rest to the first. The caller ensures sum(base) <= plan.
 */
static void spread(struct planner *p, size_t r, bool on_spec)
{
	const struct res *rs = &p->res[r];
	__int128 n = (__int128)p->n_ns, head = rs->plan.nano, granules, each, extra;
	size_t i;

	for (i = 0; i < p->n_ns; i++)
		head -= on_spec ? cell_at(p, r, i)->spec : cell_at(p, r, i)->used;
	granules = head / rs->granule;
	each = granules / n * rs->granule;
	extra = granules % n;
	for (i = 0; i < p->n_ns; i++) {
		struct cell *c = cell_at(p, r, i);

		c->target = (on_spec ? c->spec : c->used) + each +
		            ((__int128)i < extra ? rs->granule : 0);
	}
	cell_at(p, r, 0)->target += head - granules * rs->granule;
}

/* Every namespace has a spec.hard value and together they stay within the plan. */
static bool specs_within_plan(const struct planner *p, size_t r)
{
	__int128 plan = p->res[r].plan.nano, sum = 0;
	size_t i;

	for (i = 0; i < p->n_ns; i++) {
		const struct cell *c = cell_at(p, r, i);

		/* sum + spec > plan, written so that it cannot overflow */
		if (!c->has_spec || c->spec > plan - sum)
			return false;
		sum += c->spec;
	}
	return true;
}

static bool targets_not_below_specs(const struct planner *p, size_t r)
{
	size_t i;

	for (i = 0; i < p->n_ns; i++)
		if (cell_at(p, r, i)->target < cell_at(p, r, i)->spec)
			return false;
	return true;
}

static bool targets_in_band(const struct planner *p, size_t r)
{
	__int128 low = low_water(p, r);
	size_t i;

	for (i = 0; i < p->n_ns; i++)
		if (cell_at(p, r, i)->target - cell_at(p, r, i)->used < low)
			return false;
	return true;
}

static void pin(struct planner *p, size_t r)
{
	size_t i;

	for (i = 0; i < p->n_ns; i++) {
		struct cell *c = cell_at(p, r, i);
		__int128 cur = c->has_spec ? c->spec : 0;

		c->target = c->actual < cur ? c->actual : cur;
	}
}

/* The policy of quotaplan.h, for one resource. */
static void plan_resource(struct planner *p, size_t r)
{
	p->res[r].over = p->res[r].used > p->res[r].plan.nano;
	if (p->n_ns == 0)
		return;
	if (p->res[r].over) {
		pin(p, r);
		return;
	}
	spread(p, r, false);
	/* An even split that lowers no one is taken as is: this finishes a rebalance too. */
	if (!specs_within_plan(p, r) || targets_not_below_specs(p, r))
		return;
	spread(p, r, true);
	if (!targets_in_band(p, r))
		spread(p, r, false);
}

static json_t *value_json(const struct res *rs, __int128 nano)
{
	struct qty q = {.nano = nano, .format = rs->plan.format};
	char buf[QTY_STR_MAX];

	return json_string(qty_format(&q, buf));
}

static json_t *map_json(const struct planner *p, const struct slot *s)
{
	json_t *obj = json_object();
	size_t r;

	for (r = 0; r < p->n_res; r++)
		if (s[r].has)
			json_object_set_new(obj, p->res[r].name, value_json(&p->res[r], s[r].v));
	return obj;
}

static bool slots_equal(const struct slot *a, const struct slot *b, size_t n)
{
	size_t r;

	for (r = 0; r < n; r++)
		if (a[r].has != b[r].has || (a[r].has && a[r].v != b[r].v))
			return false;
	return true;
}

static void push(struct qp_write *list, size_t *n, const char *ns, json_t *take_hard, bool write)
{
	list[*n].ns = xstrdup(ns);
	list[*n].hard = take_hard;
	list[*n].write = write;
	(*n)++;
}

/* Per-namespace scratch maps: the target, the phase-1 map and the current spec.hard. */
struct maps {
	struct slot *target, *phase1, *spec;
};

/* Fills @m for namespace @i; true when some value must go below what may be in force. */
static bool build_maps(const struct planner *p, size_t i, struct maps *m)
{
	bool lowers = false;
	size_t r;

	for (r = 0; r < p->n_res; r++) {
		const struct cell *c = cell_at(p, r, i);
		__int128 spec = c->has_spec ? c->spec : 0;
		__int128 status = c->has_status ? c->status : 0;
		__int128 in_force = spec > status ? spec : status;

		m->target[r] = (struct slot){true, c->target};
		m->spec[r] = (struct slot){c->has_spec, c->spec};
		/* raises wait for phase 2 */
		m->phase1[r] = c->target <= in_force ? m->target[r] : m->spec[r];
		lowers |= c->target < in_force;
	}
	return lowers;
}

/* spec.hard holds keys of resources the plan no longer has. */
static bool has_foreign_keys(const struct planner *p, size_t i, const struct slot *spec)
{
	size_t known = 0, r;

	for (r = 0; r < p->n_res; r++)
		known += spec[r].has;
	return jval_size(p->ns[i]->spec_hard) > known;
}

static void emit_writes(const struct planner *p, struct qp_result *out)
{
	struct maps m;
	size_t i;

	m.target = xcalloc(p->n_res, sizeof(struct slot));
	m.phase1 = xcalloc(p->n_res, sizeof(struct slot));
	m.spec = xcalloc(p->n_res, sizeof(struct slot));
	out->phase1 = xcalloc(p->n_ns, sizeof(*out->phase1));
	out->phase2 = xcalloc(p->n_ns, sizeof(*out->phase2));
	for (i = 0; i < p->n_ns; i++) {
		bool lowers = build_maps(p, i, &m);
		bool foreign = has_foreign_keys(p, i, m.spec);
		const struct slot *base = lowers ? m.phase1 : m.spec;

		if (lowers)
			push(out->phase1, &out->n_phase1, p->ns[i]->name, map_json(p, m.phase1),
			     foreign || !slots_equal(m.phase1, m.spec, p->n_res));
		if (!slots_equal(m.target, base, p->n_res) || (!lowers && foreign))
			push(out->phase2, &out->n_phase2, p->ns[i]->name, map_json(p, m.target),
			     true);
	}
	free(m.target);
	free(m.phase1);
	free(m.spec);
}

static void emit_totals(const struct planner *p, struct qp_result *out)
{
	size_t r;

	out->used = json_object();
	out->over_resources = json_array();
	for (r = 0; r < p->n_res; r++) {
		json_object_set_new(out->used, p->res[r].name,
		                    value_json(&p->res[r], p->res[r].used));
		if (p->res[r].over) {
			json_array_append_new(out->over_resources, json_string(p->res[r].name));
			out->over_plan = true;
		}
	}
}

int qp_compute(struct jval plan_hard, const struct qp_ns *ns, size_t n_ns, struct qp_result *out,
               struct ll_err *err)
{
	struct planner p = {.err = err};
	size_t r;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = sort_namespaces(&p, ns, n_ns)) != 0 || (rc = load_plan(&p, plan_hard)) != 0 ||
	    (rc = load_cells(&p)) != 0)
		goto out;
	for (r = 0; r < p.n_res; r++)
		plan_resource(&p, r);
	emit_writes(&p, out);
	emit_totals(&p, out);
out:
	free(p.ns);
	free(p.res);
	free(p.cells);
	return rc;
}

static void release_writes(struct qp_write *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(list[i].ns);
		json_decref(list[i].hard);
	}
	free(list);
}

void qp_result_release(struct qp_result *r)
{
	release_writes(r->phase1, r->n_phase1);
	release_writes(r->phase2, r->n_phase2);
	json_decref(r->used);
	json_decref(r->over_resources);
	memset(r, 0, sizeof(*r));
}
