/* fake_manager.c - controllers in the real manager against the fake (see fake_manager.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "fake_manager.h"
#include "kube/kubeconfig.h"

struct fake_mgr {
	struct kc_client *client;
	struct mgr *m;
	pthread_t thread;
	int rc;
};

struct kc_client *fake_client_new(struct fake_api *f)
{
	struct kcfg cfg = {.server = (char *)fake_api_url(f)};
	struct kc_opts o = {.timeout_ms = 10000, .qps = -1, .client_name = "fake"};
	struct kc_client *c = NULL;
	struct ll_err err = {{0}};

	if (kc_client_new(&cfg, &o, &c, &err) != 0) {
		fprintf(stderr, "fake_client_new: %s\n", err.msg);
		abort();
	}
	return c;
}

void fake_api_add_gvr(struct fake_api *f, const struct kc_gvr *gvr, bool has_status)
{
	fake_api_add_resource(f, gvr->group, gvr->version, gvr->resource, gvr->kind,
	                      gvr->namespaced, has_status);
}

static void *run(void *arg)
{
	struct fake_mgr *fm = arg;

	fm->rc = mgr_run(fm->m);
	if (fm->rc != 0)
		fprintf(stderr, "fake_mgr: mgr_run: %d\n", fm->rc);
	return NULL;
}

struct fake_mgr *fake_mgr_start(struct fake_api *f, const struct controller_def *defs, size_t n)
{
	struct fake_mgr *fm = xcalloc(1, sizeof(*fm));
	struct mgr_opts o = {.probe_port = -1};

	mgr_block_signals();
	fm->client = fake_client_new(f);
	o.client = fm->client;
	fm->m = mgr_new(&o);
	for (size_t i = 0; i < n; i++)
		mgr_add_controller(fm->m, &defs[i]);
	if (pthread_create(&fm->thread, NULL, run, fm) != 0)
		abort();
	return fm;
}

void fake_mgr_stop(struct fake_mgr *fm)
{
	if (fm == NULL)
		return;
	mgr_request_stop(fm->m);
	pthread_join(fm->thread, NULL);
	mgr_free(fm->m);
	kc_client_free(fm->client);
	free(fm);
}

struct kc_client *fake_mgr_client(struct fake_mgr *fm)
{
	return fm->client;
}

double fake_mgr_reconciles(const char *controller)
{
	static const char *const results[] = {"success", "requeue", "error"};
	char labels[256];
	double n = 0;

	for (size_t i = 0; i < 3; i++)
		n += metrics_get("landlord_reconcile_total",
		                 metrics_labels(labels, sizeof(labels), "controller", controller,
		                                "result", results[i], NULL));
	return n;
}

struct want {
	const char *controller;
	double n;
};

static bool reached(struct fake_api *f, void *ud)
{
	const struct want *w = ud;

	(void)f;
	return fake_mgr_reconciles(w->controller) >= w->n;
}

bool fake_mgr_wait_reconciles(struct fake_api *f, const char *controller, double n)
{
	struct want w = {controller, n};

	return fake_api_wait(f, reached, &w);
}
