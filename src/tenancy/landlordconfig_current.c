/* current.c - the LandlordConfig in force (see current.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "tenancy/landlordconfig_current.h"

struct subscriber {
	void (*fn)(void *ud);
	void *ud;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct lcfg *in_force; /* NULL: the defaults, created on first use */
static struct subscriber subscribers[LCFG_MAX_SUBSCRIBERS];
static size_t n_subscribers;

struct lcfg *lcfg_current(void)
{
	struct lcfg *cfg;

	pthread_mutex_lock(&mu);
	if (in_force == NULL)
		in_force = lcfg_defaults();
	cfg = lcfg_ref(in_force);
	pthread_mutex_unlock(&mu);
	return cfg;
}

static bool same_config(const struct lcfg *a, const struct lcfg *b)
{
	json_t *ja = lcfg_to_json(a), *jb = lcfg_to_json(b);
	bool same = json_equal(ja, jb);

	json_decref(ja);
	json_decref(jb);
	return same;
}

bool lcfg_install(struct lcfg *cfg)
{
	struct subscriber copy[LCFG_MAX_SUBSCRIBERS];
	struct lcfg *old;
	size_t n;
	bool changed;

	pthread_mutex_lock(&mu);
	if (in_force == NULL)
		in_force = lcfg_defaults();
	old = in_force;
	changed = !same_config(cfg, old);
	in_force = lcfg_ref(cfg);
	n = n_subscribers;
	for (size_t i = 0; i < n; i++)
		copy[i] = subscribers[i];
	pthread_mutex_unlock(&mu);
	lcfg_unref(old);
	if (changed)
		for (size_t i = 0; i < n; i++)
			copy[i].fn(copy[i].ud);
	return changed;
}

int lcfg_subscribe(void (*fn)(void *ud), void *ud)
{
	int rc = 0;

	pthread_mutex_lock(&mu);
	if (n_subscribers == LCFG_MAX_SUBSCRIBERS)
		rc = -ENOSPC;
	else
		subscribers[n_subscribers++] = (struct subscriber){fn, ud};
	pthread_mutex_unlock(&mu);
	return rc;
}

void lcfg_current_reset(void)
{
	struct lcfg *old;

	pthread_mutex_lock(&mu);
	old = in_force;
	in_force = NULL;
	n_subscribers = 0;
	pthread_mutex_unlock(&mu);
	lcfg_unref(old);
}
