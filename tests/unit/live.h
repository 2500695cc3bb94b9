/*
 * live.h - helpers shared by the unit suites' live tests, which run against a real API server
 * when LANDLORD_TEST_KUBECONFIG is set (tests/e2e/test_library_live.py always sets it): the
 * kubeconfig and a client on it, unique names, a namespace of the suite's own, and polling.
 * Header-only and static inline: each suite is its own executable and uses what it needs; only
 * suites linked with the kube layer include it.
 */
#ifndef LANDLORD_TESTS_LIVE_H
#define LANDLORD_TESTS_LIVE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/err.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"

/* $LANDLORD_TEST_KUBECONFIG, or NULL when the live tests are off (unset or empty). */
static inline const char *live_kubeconfig(void)
{
	const char *path = getenv("LANDLORD_TEST_KUBECONFIG");

	return path && *path ? path : NULL;
}

/*
 * live_connect() - load live_kubeconfig() into @cfg (the caller releases it with kcfg_release()
 * once its clients are gone) and make one client with @opts (NULL: defaults). 0, or -1 with the
 * reason on stderr and @cfg released.
 */
static inline int live_connect(struct kcfg *cfg, const struct kc_opts *opts, struct kc_client **out)
{
	const char *path = live_kubeconfig();
	struct ll_err err = {{0}};

	*out = NULL;
	if (path == NULL) {
		fprintf(stderr, "live setup: LANDLORD_TEST_KUBECONFIG is not set\n");
		return -1;
	}
	if (kcfg_load_file(path, NULL, cfg, &err) != 0) {
		fprintf(stderr, "live setup: %s\n", err.msg);
		return -1;
	}
	if (kc_client_new(cfg, opts, out, &err) != 0) {
		fprintf(stderr, "live setup: client for %s: %s\n", path, err.msg);
		kcfg_release(cfg);
		return -1;
	}
	return 0;
}

/* Six random hex digits, to keep names unique across runs sharing one cluster. */
static inline void live_rand_suffix(char *out, size_t len)
{
	unsigned int r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)getpid();
	snprintf(out, len, "%06x", r & 0xffffff);
}

/*
 * The control plane's state directory (tests/cluster/start.sh): @explicit_dir when set
 * ($LANDLORD_TEST_STATE_DIR), else STATE_DIR when the kubeconfig is STATE_DIR/kubeconfigs/x and
 * STATE_DIR/env exists; else "".
 */
static inline void live_state_dir(const char *kubeconfig, const char *explicit_dir, char *out,
                                  size_t len)
{
	char env[1024];
	char *slash;

	out[0] = '\0';
	if (explicit_dir && *explicit_dir) {
		snprintf(out, len, "%s", explicit_dir);
		return;
	}
	snprintf(out, len, "%s", kubeconfig);
	for (int i = 0; i < 2; i++) {
		slash = strrchr(out, '/');
		if (slash == NULL) {
			out[0] = '\0';
			return;
		}
		*slash = '\0';
	}
	snprintf(env, sizeof(env), "%s/env", out);
	if (access(env, R_OK) != 0)
		out[0] = '\0';
}

/*
 * live_namespace_create() - create the namespace "<prefix>-<six hex digits>" and write its name
 * to @name. 0 (201 Created), or -1 with the reason on stderr.
 */
static inline int live_namespace_create(struct kc_client *c, const char *prefix, char *name,
                                        size_t len)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	char sfx[16];
	json_t *ns;
	int rc;

	live_rand_suffix(sfx, sizeof(sfx));
	snprintf(name, len, "%s-%s", prefix, sfx);
	ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
	               "name", name);
	rc = kc_create(c, &KC_NAMESPACES, NULL, ns, &resp, &err);
	json_decref(ns);
	if (rc != 0 || resp.http_status != 201) {
		fprintf(stderr, "live setup: create namespace %s: rc %d HTTP %ld: %s %s\n", name,
		        rc, resp.http_status, err.msg, resp.status.message);
		kc_resp_release(&resp);
		return -1;
	}
	kc_resp_release(&resp);
	return 0;
}

/* live_namespace_delete() - ask for @name's deletion, best effort (teardown does not wait). */
static inline void live_namespace_delete(struct kc_client *c, const char *name)
{
	struct kc_resp resp = {0};

	kc_delete(c, &KC_NAMESPACES, NULL, name, NULL, &resp, NULL);
	kc_resp_release(&resp);
}

/* A suite's live state: a client and a namespace of its own (cmocka group state). */
struct live_ns {
	struct kcfg cfg;
	struct kc_client *c;
	char ns[64];
};

/**
 * live_ns_setup() - cmocka group setup: *@state gets a connected client and a fresh namespace
 * "<@prefix>-<six hex digits>", or NULL when no live cluster is configured (the live tests
 * then skip). Returns 0, or -1 when the cluster is configured but the set-up failed.
 */
static inline int live_ns_setup(void **state, const char *prefix)
{
	struct live_ns *l;

	*state = NULL;
	if (live_kubeconfig() == NULL)
		return 0;
	l = calloc(1, sizeof(*l));
	*state = l;
	if (live_connect(&l->cfg, NULL, &l->c) != 0)
		return -1;
	return live_namespace_create(l->c, prefix, l->ns, sizeof(l->ns));
}

/** live_ns_teardown() - delete the namespace (best effort) and free what setup made. */
static inline int live_ns_teardown(void **state)
{
	struct live_ns *l = *state;

	if (l == NULL)
		return 0;
	if (l->c && l->ns[0])
		live_namespace_delete(l->c, l->ns);
	kc_client_free(l->c);
	kcfg_release(&l->cfg);
	free(l);
	return 0;
}

static inline void live_sleep_ms(long ms)
{
	clock_sleep_until(clock_mono_ns() + ms * CLOCK_NS_PER_MS);
}

/* live_wait() - poll @done(@arg) every 100 ms for up to @timeout_ms; whether it came true. */
static inline bool live_wait(bool (*done)(void *arg), void *arg, long timeout_ms)
{
	for (long waited = 0;; waited += 100) {
		if (done(arg))
			return true;
		if (waited >= timeout_ms)
			return false;
		live_sleep_ms(100);
	}
}

#endif
