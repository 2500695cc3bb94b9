/* podstore.c - the roll-up's compact pod store (see podstore.h). */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/vec.h"
#include "kube/cache.h"
#include "templates/podstore.h"

/* Separators of a label set's canonical text: control characters, never in a valid label. */
#define SEP_VALUE '\x1f' /* between a key and its value */
#define SEP_PAIR  '\x1e' /* between pairs */

enum phase { PH_PENDING, PH_RUNNING, PH_SUCCEEDED, PH_FAILED, PH_UNKNOWN };

/* An interned label set, shared by the pods that carry exactly these labels. */
struct pod_set {
	uint32_t refs;
	char text[]; /* "key\x1fvalue" pairs sorted by key, joined by \x1e */
};

struct pod_ns {
	struct pod *head;
	char name[];
};

struct pod {
	struct pod_ns *ns;
	struct pod_set *labels; /* NULL: none */
	struct pod *prev, *next;
	uint8_t phase; /* enum phase */
	bool stale;    /* not seen since the relist began */
	char name[];
};

struct listener {
	podstore_changed_fn fn;
	void *ud;
};

struct podstore {
	pthread_rwlock_t lock;
	struct cache_table pods; /* "namespace/name" -> struct pod */
	struct cache_table nss;  /* namespace -> struct pod_ns */
	struct cache_table sets; /* canonical text -> struct pod_set */
	size_t heap;             /* bytes of the entries, namespaces and sets */
	VEC(struct listener) listeners;
	char labels[256]; /* resource="..." */
};

/* Namespaces whose pods changed in one write, told to the listeners after it. */
struct ns_vec VEC_BODY(char *);

static size_t heap_size(const void *p)
{
	return malloc_usable_size((void *)p) + sizeof(size_t); /* as jdoc_bytes(): the header */
}

static bool pod_match(const void *item, const char *key)
{
	const struct pod *p = item;
	size_t len = strlen(p->ns->name);

	return strncmp(key, p->ns->name, len) == 0 && key[len] == '/' &&
	       strcmp(key + len + 1, p->name) == 0;
}

static bool ns_match(const void *item, const char *key)
{
	return strcmp(((const struct pod_ns *)item)->name, key) == 0;
}

static bool set_match(const void *item, const char *key)
{
	return strcmp(((const struct pod_set *)item)->text, key) == 0;
}

struct podstore *podstore_new(const char *name)
{
	struct podstore *ps = xcalloc(1, sizeof(*ps));

	pthread_rwlock_init(&ps->lock, NULL);
	ps->pods = CACHE_TABLE_INIT(pod_match);
	ps->nss = CACHE_TABLE_INIT(ns_match);
	ps->sets = CACHE_TABLE_INIT(set_match);
	metrics_labels(ps->labels, sizeof(ps->labels), "resource", name, NULL);
	return ps;
}

void podstore_free(struct podstore *ps)
{
	if (ps == NULL)
		return;
	for (size_t i = 0; i < ps->pods.cap; i++)
		free(ps->pods.slots[i].item);
	for (size_t i = 0; i < ps->nss.cap; i++)
		free(ps->nss.slots[i].item);
	for (size_t i = 0; i < ps->sets.cap; i++)
		free(ps->sets.slots[i].item);
	cache_release(&ps->pods);
	cache_release(&ps->nss);
	cache_release(&ps->sets);
	vec_release(&ps->listeners);
	pthread_rwlock_destroy(&ps->lock);
	free(ps);
}

void podstore_listen(struct podstore *ps, podstore_changed_fn fn, void *ud)
{
	vec_push(&ps->listeners, ((struct listener){fn, ud}));
}

/* ---- label sets ---- */

struct pair {
	const char *key, *value;
};

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(((const struct pair *)a)->key, ((const struct pair *)b)->key);
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20)
			return false;
	return true;
}

/* The pod's string labels, up to PODSTORE_LABELS_N, sorted by key. Return: how many. */
static size_t collect_pairs(struct jval labels, struct pair *out, bool *dropped)
{
	const char *key;
	struct jval v;
	size_t i, n = 0;

	jval_foreach_member(labels, i, key, v) {
		const char *value = jval_str(v);

		if (value == NULL || !printable(key) || !printable(value) ||
		    n == PODSTORE_LABELS_N) {
			*dropped = true;
			continue;
		}
		out[n++] = (struct pair){key, value};
	}
	qsort(out, n, sizeof(*out), cmp_pair);
	return n;
}

/* The canonical text of @labels into @text (PODSTORE_LABELS_MAX). Return: false when none. */
static bool canonical(struct jval labels, char *text, bool *dropped)
{
	struct pair pairs[PODSTORE_LABELS_N];
	size_t n = collect_pairs(labels, pairs, dropped), len = 0;

	text[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(pairs[i].key), v = strlen(pairs[i].value);

		/* separator (or not), key, SEP_VALUE, value, NUL */
		if (len + 1 + k + 1 + v + 1 > PODSTORE_LABELS_MAX) {
			*dropped = true;
			continue;
		}
		if (len)
			text[len++] = SEP_PAIR;
		memcpy(text + len, pairs[i].key, k);
		len += k;
		text[len++] = SEP_VALUE;
		memcpy(text + len, pairs[i].value, v + 1);
		len += v;
	}
	return len > 0;
}

/* Caller holds the write lock. A new reference to the set of @text. */
static struct pod_set *set_intern(struct podstore *ps, const char *text)
{
	struct pod_set *s = cache_get(&ps->sets, text);
	size_t len;

	if (s) {
		s->refs++;
		return s;
	}
	len = strlen(text) + 1;
	s = xmalloc(sizeof(*s) + len);
	s->refs = 1;
	memcpy(s->text, text, len);
	cache_put(&ps->sets, s->text, s);
	ps->heap += heap_size(s);
	return s;
}

/* Caller holds the write lock. Drop a reference; the last one frees the set. */
static void set_release(struct podstore *ps, struct pod_set *s)
{
	if (s == NULL || --s->refs > 0)
		return;
	cache_del(&ps->sets, s->text);
	ps->heap -= heap_size(s);
	free(s);
}

/* ---- pods ---- */

static enum phase phase_of(const char *phase)
{
	if (phase == NULL || strcmp(phase, "Pending") == 0)
		return PH_PENDING;
	if (strcmp(phase, "Running") == 0)
		return PH_RUNNING;
	if (strcmp(phase, "Succeeded") == 0)
		return PH_SUCCEEDED;
	if (strcmp(phase, "Failed") == 0)
		return PH_FAILED;
	return PH_UNKNOWN;
}

/* Caller holds the write lock. The namespace entry of @ns, made when missing. */
static struct pod_ns *ns_get(struct podstore *ps, const char *ns)
{
	struct pod_ns *n = cache_get(&ps->nss, ns);
	size_t len;

	if (n)
		return n;
	len = strlen(ns) + 1;
	n = xcalloc(1, sizeof(*n) + len);
	memcpy(n->name, ns, len);
	cache_put(&ps->nss, n->name, n);
	ps->heap += heap_size(n);
	return n;
}

/* Caller holds the write lock. A new pod at the head of its namespace's list. */
static struct pod *pod_add(struct podstore *ps, const char *key, const char *ns, const char *name)
{
	size_t len = strlen(name) + 1;
	struct pod *p = xcalloc(1, sizeof(*p) + len);

	memcpy(p->name, name, len);
	p->ns = ns_get(ps, ns);
	p->next = p->ns->head;
	if (p->next)
		p->next->prev = p;
	p->ns->head = p;
	cache_put(&ps->pods, key, p);
	ps->heap += heap_size(p);
	return p;
}

/* Caller holds the write lock. Remove @p (its namespace copied to @ns_out first) and free it. */
static void pod_remove(struct podstore *ps, struct pod *p, char ns_out[CACHE_KEY_MAX])
{
	struct pod_ns *n = p->ns;
	char key[CACHE_KEY_MAX];

	snprintf(ns_out, CACHE_KEY_MAX, "%s", n->name);
	snprintf(key, sizeof(key), "%s/%s", n->name, p->name); /* fitted when added */
	cache_del(&ps->pods, key);
	if (p->prev)
		p->prev->next = p->next;
	else
		n->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	if (n->head == NULL) {
		cache_del(&ps->nss, n->name);
		ps->heap -= heap_size(n);
		free(n);
	}
	set_release(ps, p->labels);
	ps->heap -= heap_size(p);
	free(p);
}

/* Caller holds the lock. */
static size_t bytes_locked(const struct podstore *ps)
{
	return ps->heap + cache_bytes(&ps->pods) + cache_bytes(&ps->nss) + cache_bytes(&ps->sets);
}

/* After a write, with no lock held: the gauges, then the listeners of @changed_ns (or none). */
static void written(struct podstore *ps, size_t n, size_t bytes, const char *changed_ns)
{
	metrics_set("landlord_informer_objects", ps->labels, (double)n);
	metrics_set("landlord_informer_bytes", ps->labels, (double)bytes);
	for (size_t i = 0; changed_ns && i < ps->listeners.len; i++)
		ps->listeners.v[i].fn(changed_ns, ps->listeners.v[i].ud);
}

/* Caller holds the write lock. Return: whether the roll-up would count differently. */
static bool put_locked(struct podstore *ps, const char *key, const char *ns, const char *name,
                       const char *text, enum phase phase)
{
	struct pod *p = cache_get(&ps->pods, key);
	struct pod_set *set = *text ? set_intern(ps, text) : NULL;
	bool changed = true;

	if (p == NULL) {
		p = pod_add(ps, key, ns, name);
	} else {
		changed = p->phase != phase || p->labels != set;
		set_release(ps, p->labels);
	}
	p->labels = set;
	p->phase = (uint8_t)phase;
	p->stale = false;
	return changed;
}

static void put_pod(struct podstore *ps, const struct jdoc *pod)
{
	const char *ns = jd_namespace(pod), *name = jd_name(pod);
	char key[CACHE_KEY_MAX], text[PODSTORE_LABELS_MAX];
	bool dropped = false, changed;
	size_t n, bytes;

	if (ns == NULL || *ns == '\0' || !cache_doc_key(pod, key)) {
		log_warn("pod not kept", "{s:s?,s:s?}", "namespace", ns, "name", name);
		return;
	}
	canonical(jd_get(pod, "metadata", "labels", NULL), text, &dropped);
	if (dropped)
		log_warn("pod labels left out of the roll-up", "{s:s,s:s}", "namespace", ns, "name",
		         name);
	pthread_rwlock_wrlock(&ps->lock);
	changed =
	        put_locked(ps, key, ns, name, text, phase_of(jd_str(pod, "status", "phase", NULL)));
	n = ps->pods.n;
	bytes = bytes_locked(ps);
	pthread_rwlock_unlock(&ps->lock);
	written(ps, n, bytes, changed ? ns : NULL);
}

static void delete_pod(struct podstore *ps, const struct jdoc *pod)
{
	char key[CACHE_KEY_MAX], ns[CACHE_KEY_MAX];
	struct pod *p;
	size_t n, bytes;
	bool found;

	if (!cache_doc_key(pod, key))
		return;
	pthread_rwlock_wrlock(&ps->lock);
	p = cache_get(&ps->pods, key);
	found = p != NULL;
	if (found)
		pod_remove(ps, p, ns);
	n = ps->pods.n;
	bytes = bytes_locked(ps);
	pthread_rwlock_unlock(&ps->lock);
	written(ps, n, bytes, found ? ns : NULL);
}

/* ---- the informer's handlers ---- */

static void on_add(const struct jdoc *obj, void *ud)
{
	put_pod(ud, obj);
}

static void on_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	(void)old_obj; /* NULL: a store-less informer has no old state */
	put_pod(ud, new_obj);
}

static void on_delete(const struct jdoc *obj, void *ud)
{
	delete_pod(ud, obj);
}

/* Every pod is stale until the list shows it again. */
static void on_relist_begin(void *ud)
{
	struct podstore *ps = ud;

	pthread_rwlock_wrlock(&ps->lock);
	for (size_t i = 0; i < ps->pods.cap; i++) {
		struct pod *p = ps->pods.slots[i].item;

		if (p)
			p->stale = true;
	}
	pthread_rwlock_unlock(&ps->lock);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The pods the list did not show were deleted meanwhile: drop them, tell their namespaces. */
static void on_relist_end(void *ud)
{
	struct podstore *ps = ud;
	VEC(struct pod *) stale = VEC_INIT;
	struct ns_vec nss = VEC_INIT;
	char ns[CACHE_KEY_MAX];
	size_t n, bytes;

	pthread_rwlock_wrlock(&ps->lock);
	for (size_t i = 0; i < ps->pods.cap; i++) {
		struct pod *p = ps->pods.slots[i].item;

		if (p && p->stale)
			vec_push(&stale, p);
	}
	for (size_t i = 0; i < stale.len; i++) {
		pod_remove(ps, stale.v[i], ns);
		vec_push(&nss, xstrdup(ns));
	}
	n = ps->pods.n;
	bytes = bytes_locked(ps);
	pthread_rwlock_unlock(&ps->lock);
	if (nss.len > 1)
		qsort(nss.v, nss.len, sizeof(*nss.v), cmp_str);
	written(ps, n, bytes, NULL);
	for (size_t i = 0; i < nss.len; i++) {
		if (i > 0 && strcmp(nss.v[i], nss.v[i - 1]) == 0)
			continue;
		for (size_t k = 0; k < ps->listeners.len; k++)
			ps->listeners.v[k].fn(nss.v[i], ps->listeners.v[k].ud);
	}
	for (size_t i = 0; i < nss.len; i++)
		free(nss.v[i]);
	vec_release(&nss);
	vec_release(&stale);
}

struct inf_handler podstore_handler(struct podstore *ps)
{
	return (struct inf_handler){on_add, on_update, on_delete, ps};
}

struct inf_relist_handler podstore_relist_handler(struct podstore *ps)
{
	return (struct inf_relist_handler){on_relist_begin, on_relist_end, ps};
}

void podstore_watch(struct podstore *ps, struct inf *inf)
{
	struct inf_handler h = podstore_handler(ps);
	struct inf_relist_handler rh = podstore_relist_handler(ps);

	inf_add_handler(inf, &h);
	inf_add_relist_handler(inf, &rh);
}

/* ---- reading ---- */

/* A label set read by sel_matches_lookup(): a value is copied out to be NUL-terminated. */
struct lookup {
	const struct pod_set *set;
	char value[PODSTORE_LABELS_MAX];
};

static const char *set_lookup(const char *key, void *ud)
{
	struct lookup *lk = ud;
	size_t klen = strlen(key);
	const char *p = lk->set ? lk->set->text : "";

	while (*p) {
		const char *end = strchr(p, SEP_PAIR);
		size_t plen = end ? (size_t)(end - p) : strlen(p);

		if (plen > klen && strncmp(p, key, klen) == 0 && p[klen] == SEP_VALUE) {
			memcpy(lk->value, p + klen + 1, plen - klen - 1);
			lk->value[plen - klen - 1] = '\0';
			return lk->value;
		}
		p += plen + (end != NULL);
	}
	return NULL;
}

static void count_phase(enum phase phase, struct tpl_row *row)
{
	long long *by_phase[] = {&row->pods.pending, &row->pods.running, &row->pods.succeeded,
	                         &row->pods.failed, &row->pods.unknown};

	(*by_phase[phase])++;
}

static bool selected(struct lookup *lk, struct sel *const *selectors, size_t n)
{
	for (size_t s = 0; s < n; s++)
		if (selectors[s] && sel_matches_lookup(selectors[s], set_lookup, lk))
			return true;
	return false;
}

void podstore_count(struct podstore *ps, const char *ns, struct sel *const *selectors, size_t n,
                    struct tpl_row *row)
{
	struct lookup *lk;
	const struct pod_ns *pns;
	const struct pod_set *last = NULL;
	bool last_selected = false;

	if (n == 0)
		return;
	lk = xmalloc(sizeof(*lk));
	pthread_rwlock_rdlock(&ps->lock);
	pns = cache_get(&ps->nss, ns);
	for (const struct pod *p = pns ? pns->head : NULL; p; p = p->next) {
		/* the pods of one ReplicaSet share a set and mostly sit together */
		if (p == pns->head || p->labels != last) {
			lk->set = p->labels;
			last = p->labels;
			last_selected = selected(lk, selectors, n);
		}
		if (last_selected)
			count_phase((enum phase)p->phase, row);
	}
	pthread_rwlock_unlock(&ps->lock);
	free(lk);
}

size_t podstore_len(struct podstore *ps)
{
	size_t n;

	pthread_rwlock_rdlock(&ps->lock);
	n = ps->pods.n;
	pthread_rwlock_unlock(&ps->lock);
	return n;
}

size_t podstore_label_sets(struct podstore *ps)
{
	size_t n;

	pthread_rwlock_rdlock(&ps->lock);
	n = ps->sets.n;
	pthread_rwlock_unlock(&ps->lock);
	return n;
}

size_t podstore_bytes(struct podstore *ps)
{
	size_t bytes;

	pthread_rwlock_rdlock(&ps->lock);
	bytes = bytes_locked(ps);
	pthread_rwlock_unlock(&ps->lock);
	return bytes;
}
