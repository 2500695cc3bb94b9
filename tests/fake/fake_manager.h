/*
 * fake_manager.h - run controllers in the real manager (lib/kube/manager) against a fake API
 * server (fake_apiserver.h), without a Lease (it leads at once) and without a probe port.
 *
 * Finished reconciles are read from the manager's own metric, landlord_reconcile_total, so a
 * test can wait for "N more reconciles have finished" instead of sleeping. A quiet point, where
 * nothing is in flight, is fake_mgr_stop(): it joins the workers after the reconcile each is in.
 * The usual check that a second pass writes nothing: wait until converged, stop, note
 * fake_api_writes(), start again (leadership enqueues every primary object once), wait for
 * that many reconciles, and compare.
 */
#ifndef LANDLORD_FAKE_MANAGER_H
#define LANDLORD_FAKE_MANAGER_H

#include <stdbool.h>
#include <stddef.h>

#include "fake_apiserver.h"
#include "kube/kube.h"
#include "kube/manager.h"

struct fake_mgr;

/** fake_client_new() - a client of @f without a rate limit (kc_client_free() it). */
struct kc_client *fake_client_new(struct fake_api *f);
/** fake_api_add_gvr() - serve @gvr (e.g. a CRD's) on @f. */
void fake_api_add_gvr(struct fake_api *f, const struct kc_gvr *gvr, bool has_status);

/** fake_mgr_start() - a manager running @defs (@n of them) on its own thread. Blocks SIGTERM
 * and SIGINT in the calling thread (the manager needs them blocked everywhere). */
struct fake_mgr *fake_mgr_start(struct fake_api *f, const struct controller_def *defs, size_t n);
/** fake_mgr_stop() - stop the manager (reconciles in flight finish), join it and free. */
void fake_mgr_stop(struct fake_mgr *m);
struct kc_client *fake_mgr_client(struct fake_mgr *m);

/** fake_mgr_reconciles() - finished reconciles of @controller so far in this process, whatever
 * their result (the metric is process-wide: take differences). */
double fake_mgr_reconciles(const char *controller);
/** fake_mgr_wait_reconciles() - wait until fake_mgr_reconciles(@controller) >= @n. */
bool fake_mgr_wait_reconciles(struct fake_api *f, const char *controller, double n);

#endif
