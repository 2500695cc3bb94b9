/*
 * fake_internal.h - shared between fake_apiserver.c (HTTP, hooks) and fake_store.c (objects,
 * history, selectors, patches). Functions named fake__* run with f->mu held.
 *
 * The store maps "resource\nnamespace\nname" to an object that is never changed once stored
 * (a write stores a new object), so history events may share it. Events are
 * {rv, res, type, object, old} in resourceVersion order since the last compaction.
 */
#ifndef LANDLORD_FAKE_INTERNAL_H
#define LANDLORD_FAKE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "base/vec.h"
#include "fake_apiserver.h"

struct fake_res {
	char *name; /* "rolebindings.rbac.authorization.k8s.io" */
	char *group, *version, *resource, *kind;
	bool namespaced, has_status;
};

struct fake_rule_slot {
	struct fake_rule r;
	char *method, *path, *query;
	int id, hits;
	bool released, removed;
};

struct fake_api {
	struct MHD_Daemon *d;
	int port;
	char url[64];
	pthread_mutex_t mu;
	pthread_cond_t cond;
	VEC(struct fake_res) res;
	VEC(struct fake_rule_slot) rules;
	int next_rule;
	json_t *store;
	json_t *events;
	json_t *log;
	long long rv, compacted, uid_seq, gen_seq;
	unsigned long changes; /* bumped on every request and change: fake_api_wait() */
	unsigned long epoch;   /* bumped by compaction: open watches end */
	int writes;
	bool hold_ns, stopping;
	enum fake_list_layout list_layout;
	fake_write_hook hook;
	void *hook_ud;
	fake_access_hook access;
	void *access_ud;
	fake_token_hook token;
	void *token_ud;
};

static inline void fake__changed(struct fake_api *f)
{
	f->changes++;
	pthread_cond_broadcast(&f->cond);
}

const struct fake_res *fake__res(struct fake_api *f, const char *name);
const struct fake_res *fake__res_by_path(struct fake_api *f, const char *group, const char *version,
                                         const char *resource);
const char *fake__str(const json_t *obj, const char *k1, const char *k2);
json_t *fake__meta(json_t *obj);
json_t *fake__lookup(struct fake_api *f, const struct fake_res *r, const char *ns,
                     const char *name);
json_t *fake__store(struct fake_api *f, const struct fake_res *r, const char *verb, json_t *obj,
                    json_t *old);
void fake__remove(struct fake_api *f, const struct fake_res *r, json_t *obj);
json_t *fake__delete(struct fake_api *f, const struct fake_res *r, json_t *obj);
void fake__after_write(struct fake_api *f, const struct fake_res *r, json_t *obj);
void fake__finish_namespace(struct fake_api *f, const char *ns);
json_t *fake__parse_labels(const char *sel);
bool fake__labels_match(const json_t *reqs, const json_t *obj);
json_t *fake__parse_fields(const char *sel);
bool fake__fields_match(const json_t *reqs, const json_t *obj);
json_t *fake__merge_patch(json_t *target, const json_t *patch);
json_t *fake__json_patch(const json_t *doc, const json_t *ops);

#endif
