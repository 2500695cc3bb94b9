/* planstatus.c - a Plan's status summary kept per tenant, with running sums (planstatus.h). */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/vec.h"
#include "tenancy/planstatus.h"

#define NO_RES UINT32_MAX

/* One resource of one tenant: the values it reports, clamped to +-PS_QTY_LIMIT. */
struct amount {
	__int128 used, hard;
	uint32_t res;               /* index into ps_plan.res */
	bool has_used, has_hard;    /* the tenant reports a value that parses */
	uint8_t used_fmt, hard_fmt; /* enum qty_format of what it reports */
};

struct tenant {
	char *name;
	long long namespaces;
	long long per_mille; /* nearness (planstatus.h) */
	uint32_t near;       /* the amount that sets it, or NO_RES */
	uint32_t n;          /* amounts */
	struct amount *a;    /* sorted by resource name */
};

/* A resource some tenant reports; ids (indexes) stay put while a tenant refers to them. */
struct res {
	char *name; /* NULL: a free slot */
	__int128 used, hard;
	uint32_t refs; /* amounts that refer to it */
};

struct tvec VEC_BODY(struct tenant *);

struct ps_plan {
	VEC(struct res) res;
	VEC(uint32_t) res_order; /* live resource ids, sorted by name */
	struct tvec by_name;     /* every tenant, by name */
	struct tvec by_near;     /* every tenant, nearness order */
	struct tvec by_ns;       /* every tenant, most namespaces first, then by name */
	long long namespaces;
};

typedef int (*tenant_cmp)(const struct tenant *a, const struct tenant *b);

static int cmp_name(const struct tenant *a, const struct tenant *b)
{
	return strcmp(a->name, b->name);
}

static int cmp_near(const struct tenant *a, const struct tenant *b)
{
	if (a->per_mille != b->per_mille)
		return a->per_mille > b->per_mille ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_ns(const struct tenant *a, const struct tenant *b)
{
	if (a->namespaces != b->namespaces)
		return a->namespaces > b->namespaces ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The first position in @v whose tenant does not sort before @key. */
static size_t lower_bound(const struct tvec *v, const struct tenant *key, tenant_cmp cmp)
{
	size_t lo = 0, hi = v->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(v->v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void sorted_insert(struct tvec *v, struct tenant *t, tenant_cmp cmp)
{
	size_t at = lower_bound(v, t, cmp);

	vec_reserve(v, v->len + 1);
	memmove(v->v + at + 1, v->v + at, (v->len - at) * sizeof(*v->v));
	v->v[at] = t;
	v->len++;
}

/* Remove @t, which is in @v at the place its current keys give it. */
static void sorted_remove(struct tvec *v, const struct tenant *t, tenant_cmp cmp)
{
	size_t at = lower_bound(v, t, cmp);

	if (at < v->len && v->v[at] == t) {
		memmove(v->v + at, v->v + at + 1, (v->len - at - 1) * sizeof(*v->v));
		v->len--;
	}
}

static struct tenant *find_tenant(const struct ps_plan *p, const char *name)
{
	struct tenant key = {.name = (char *)name};
	size_t at = lower_bound(&p->by_name, &key, cmp_name);

	return at < p->by_name.len && strcmp(p->by_name.v[at]->name, name) == 0 ? p->by_name.v[at]
	                                                                        : NULL;
}

/* ---- resources ---- */

/* The position in res_order of resource @name, or where it would go; *found says which. */
static size_t res_position(const struct ps_plan *p, const char *name, bool *found)
{
	size_t lo = 0, hi = p->res_order.len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->res.v[p->res_order.v[mid]].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static uint32_t res_find(const struct ps_plan *p, const char *name)
{
	bool found;
	size_t at = res_position(p, name, &found);

	return found ? p->res_order.v[at] : NO_RES;
}

/* The id of resource @name, created when no tenant reports it yet; one more reference. */
static uint32_t res_ref(struct ps_plan *p, const char *name)
{
	bool found;
	size_t at = res_position(p, name, &found), id;

	if (found) {
		id = p->res_order.v[at];
	} else {
		for (id = 0; id < p->res.len && p->res.v[id].name; id++)
			;
		if (id == p->res.len)
			vec_push(&p->res, (struct res){0});
		p->res.v[id] = (struct res){.name = xstrdup(name)};
		vec_reserve(&p->res_order, p->res_order.len + 1);
		memmove(p->res_order.v + at + 1, p->res_order.v + at,
		        (p->res_order.len - at) * sizeof(*p->res_order.v));
		p->res_order.v[at] = (uint32_t)id;
		p->res_order.len++;
	}
	p->res.v[id].refs++;
	return (uint32_t)id;
}

static void res_unref(struct ps_plan *p, uint32_t id)
{
	struct res *r = &p->res.v[id];
	bool found;
	size_t at;

	if (--r->refs > 0)
		return;
	at = res_position(p, r->name, &found);
	memmove(p->res_order.v + at, p->res_order.v + at + 1,
	        (p->res_order.len - at - 1) * sizeof(*p->res_order.v));
	p->res_order.len--;
	free(r->name);
	*r = (struct res){0};
}

/* ---- one tenant's contribution ---- */

static __int128 clamp(__int128 v)
{
	return v > PS_QTY_LIMIT ? PS_QTY_LIMIT : v < -PS_QTY_LIMIT ? -PS_QTY_LIMIT : v;
}

/* Parse quantity @v into *@nano and *@fmt; false when it is not a quantity. */
static bool parse_amount(struct jval v, __int128 *nano, uint8_t *fmt)
{
	struct qty q;

	if (jval_type(v) == JT_STRING) {
		if (qty_parse_n(jval_str(v), jval_strlen(v), &q) < 0)
			return false;
	} else if (jval_type(v) == JT_INT) {
		q = qty_from_int(jval_int(v, 0));
	} else {
		return false;
	}
	*nano = clamp(q.nano);
	*fmt = (uint8_t)q.format;
	return true;
}

/* Fill @a from the member @key of used (@u) and/or hard (@h); false when neither parses. */
static bool make_amount(struct ps_plan *p, struct amount *a, const char *key, struct jval u,
                        struct jval h)
{
	*a = (struct amount){0};
	a->has_used = parse_amount(u, &a->used, &a->used_fmt);
	a->has_hard = parse_amount(h, &a->hard, &a->hard_fmt);
	if (!a->has_used && !a->has_hard)
		return false;
	a->res = res_ref(p, key);
	return true;
}

/* The tenant's amounts: used and hard merged by resource name (both are sorted that way). */
static void read_amounts(struct ps_plan *p, struct tenant *t, struct jval quota)
{
	struct jval used = jval_get(quota, "used"), hard = jval_get(quota, "hard");
	size_t nu = jval_size(used), nh = jval_size(hard), i = 0, j = 0;
	struct jval none = {NULL, 0};

	t->a = xcalloc(nu + nh ? nu + nh : 1, sizeof(*t->a));
	while (i < nu || j < nh) {
		const char *ku = i < nu ? jval_key_at(used, i) : NULL;
		const char *kh = j < nh ? jval_key_at(hard, j) : NULL;
		int c = !ku ? 1 : !kh ? -1 : strcmp(ku, kh);
		struct jval u = c <= 0 ? jval_value_at(used, i++) : none;
		struct jval h = c >= 0 ? jval_value_at(hard, j++) : none;

		if (make_amount(p, &t->a[t->n], c <= 0 ? ku : kh, u, h))
			t->n++;
	}
	/* a resource in both maps took one slot of two */
	t->a = xreallocarray(t->a, t->n ? t->n : 1, sizeof(*t->a));
}

long long ps_used_per_mille(const struct qty *used, const struct qty *hard)
{
	/* clamped, 1000 * u cannot overflow */
	__int128 u = clamp(used->nano), h = clamp(hard->nano), q;

	if (h <= 0)
		return u > 0 ? PS_PER_MILLE_MAX : 0;
	if (u <= 0)
		return 0;
	q = u * 1000 / h;
	if (u > h && q * h != u * 1000)
		q++;
	return q > PS_PER_MILLE_MAX ? PS_PER_MILLE_MAX : (long long)q;
}

/* The tenant's nearness: the highest usedPerMille over its resources, first by name on ties. */
static void nearness(struct tenant *t)
{
	t->per_mille = 0;
	t->near = NO_RES;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct amount *a = &t->a[i];
		struct qty u = {a->has_used ? a->used : 0, QTY_DECIMAL_SI}, h = {a->hard, 0};
		long long pm;

		if (!a->has_hard)
			continue;
		pm = ps_used_per_mille(&u, &h);
		if (t->near == NO_RES || pm > t->per_mille) {
			t->per_mille = pm;
			t->near = i;
		}
	}
}

/* Add (@sign 1) or subtract (-1) the tenant's contribution to the plan's sums. */
static void contribute(struct ps_plan *p, const struct tenant *t, int sign)
{
	p->namespaces += sign * t->namespaces;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct amount *a = &t->a[i];
		struct res *r = &p->res.v[a->res];

		if (a->has_used)
			r->used += sign * a->used;
		if (a->has_hard)
			r->hard += sign * a->hard;
	}
}

/* Forget the tenant's amounts (after contribute(-1)). */
static void drop_amounts(struct ps_plan *p, struct tenant *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		res_unref(p, t->a[i].res);
	free(t->a);
	t->a = NULL;
	t->n = 0;
}

static long long read_namespaces(struct jval status)
{
	long long n = jval_int(jval_get(status, "namespaceCount"), 0);

	return n < 0 ? 0 : n > 1000000000 ? 1000000000 : n;
}

void ps_plan_put(struct ps_plan *p, const char *name, struct jval status)
{
	struct tenant *t = find_tenant(p, name);

	if (t) {
		sorted_remove(&p->by_near, t, cmp_near);
		sorted_remove(&p->by_ns, t, cmp_ns);
		contribute(p, t, -1);
		drop_amounts(p, t);
	} else {
		t = xcalloc(1, sizeof(*t));
		t->name = xstrdup(name);
		sorted_insert(&p->by_name, t, cmp_name);
	}
	t->namespaces = read_namespaces(status);
	read_amounts(p, t, jval_get(status, "quota"));
	nearness(t);
	contribute(p, t, 1);
	sorted_insert(&p->by_near, t, cmp_near);
	sorted_insert(&p->by_ns, t, cmp_ns);
}

bool ps_plan_remove(struct ps_plan *p, const char *name)
{
	struct tenant *t = find_tenant(p, name);

	if (t == NULL)
		return false;
	sorted_remove(&p->by_near, t, cmp_near);
	sorted_remove(&p->by_ns, t, cmp_ns);
	sorted_remove(&p->by_name, t, cmp_name);
	contribute(p, t, -1);
	drop_amounts(p, t);
	free(t->name);
	free(t);
	return true;
}

struct ps_plan *ps_plan_new(void)
{
	return xcalloc(1, sizeof(struct ps_plan));
}

void ps_plan_free(struct ps_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->by_name.len; i++) {
		free(p->by_name.v[i]->a);
		free(p->by_name.v[i]->name);
		free(p->by_name.v[i]);
	}
	for (size_t i = 0; i < p->res.len; i++)
		free(p->res.v[i].name);
	vec_release(&p->by_name);
	vec_release(&p->by_near);
	vec_release(&p->by_ns);
	vec_release(&p->res);
	vec_release(&p->res_order);
	free(p);
}

size_t ps_plan_tenants(const struct ps_plan *p)
{
	return p->by_name.len;
}

long long ps_plan_namespaces(const struct ps_plan *p)
{
	return p->namespaces;
}

/* ---- the summary ---- */

static json_t *qty_json(__int128 nano, int fmt)
{
	struct qty q = {nano, (enum qty_format)fmt};
	char s[QTY_STR_MAX];

	return json_string(qty_format(&q, s));
}

/* Per resource of the plan: the sums, in the plan's suffix family. */
static json_t *totals(const struct ps_plan *p, const json_t *plan_hard)
{
	json_t *used = json_object(), *hard = json_object(), *v;
	const char *key;

	json_object_foreach((json_t *)plan_hard, key, v) {
		uint32_t id = res_find(p, key);
		struct qty q;
		int fmt = json_is_string(v) && qty_parse(json_string_value(v), &q) == 0
		                  ? (int)q.format
		                  : QTY_DECIMAL_SI;

		json_object_set_new(used, key, qty_json(id == NO_RES ? 0 : p->res.v[id].used, fmt));
		json_object_set_new(hard, key, qty_json(id == NO_RES ? 0 : p->res.v[id].hard, fmt));
	}
	return json_pack("{s:o,s:o}", "used", used, "hard", hard);
}

static json_t *near_entry(const struct ps_plan *p, const struct tenant *t)
{
	const struct amount *a = &t->a[t->near];

	return json_pack(
	        "{s:s,s:I,s:s,s:o,s:o,s:I}", "name", t->name, "namespaces",
	        (json_int_t)t->namespaces, "resource", p->res.v[a->res].name, "used",
	        qty_json(a->has_used ? a->used : 0, a->has_used ? a->used_fmt : a->hard_fmt),
	        "hard", qty_json(a->hard, a->hard_fmt), "usedPerMille", (json_int_t)t->per_mille);
}

json_t *ps_plan_status(const struct ps_plan *p, const json_t *plan_hard)
{
	json_t *near = json_array();

	for (size_t i = 0; i < p->by_near.len && i < PS_NEAR_MAX; i++) {
		const struct tenant *t = p->by_near.v[i];

		if (t->per_mille <= 0)
			break;
		json_array_append_new(near, near_entry(p, t));
	}
	return json_pack("{s:I,s:I,s:o,s:o}", "tenants", (json_int_t)p->by_name.len, "namespaces",
	                 (json_int_t)p->namespaces, "quota",
	                 totals(p, json_is_object(plan_hard) ? plan_hard : NULL),
	                 "tenantsNearLimit", near);
}

size_t ps_plan_over_namespaces(const struct ps_plan *p, long long max, size_t limit,
                               struct buf *names)
{
	/* by_ns puts the tenants over @max first: find where they end */
	struct tenant key = {.name = "", .namespaces = max};
	size_t over = max < 0 ? 0 : lower_bound(&p->by_ns, &key, cmp_ns), i;

	for (i = 0; i < over && i < limit; i++)
		buf_appendf(names, "%s%s (%lld)", i ? ", " : "", p->by_ns.v[i]->name,
		            p->by_ns.v[i]->namespaces);
	if (over > i)
		buf_appendf(names, " and %zu more", over - i);
	return over;
}

static size_t heap(const void *ptr)
{
	return ptr ? malloc_usable_size((void *)ptr) + sizeof(size_t) : 0;
}

size_t ps_plan_bytes(const struct ps_plan *p)
{
	size_t n = heap(p) + heap(p->res.v) + heap(p->res_order.v) + heap(p->by_name.v) +
	           heap(p->by_near.v) + heap(p->by_ns.v);

	for (size_t i = 0; i < p->res.len; i++)
		n += heap(p->res.v[i].name);
	for (size_t i = 0; i < p->by_name.len; i++)
		n += heap(p->by_name.v[i]) + heap(p->by_name.v[i]->name) + heap(p->by_name.v[i]->a);
	return n;
}
