/*
 * supervisor.h - the ResourceSupervisor controller: namespaces put to sleep and woken on a
 * schedule, every workload restored exactly as it was (docs/hibernation.md).
 *
 * What sleeps: Deployments, StatefulSets and ownerless ReplicaSets go to 0 replicas; CronJobs
 * and unfinished Jobs get suspend: true. Each change is one JSON patch that tests the current
 * value, adds the annotation landlord.dev/sleep-saved (the supervisor and the old value) and
 * replaces the value; a wake tests the value landlord left, removes the annotation and puts the
 * saved value back. replicas is never server-side applied (a later apply without it would have
 * the API server drop the field and default it to 1).
 *
 * Invariants:
 *  - State lives in the API server only: the wanted state is a function of the spec, the
 *    override annotation and the clock (hibernation/schedule.h); what was changed is in the
 *    workloads' annotations and the namespaces' label landlord.dev/sleeping. A landlord killed
 *    after any write, or replaced, converges to the end state of an uninterrupted run.
 *  - Order. Sleep: the Argo CD deny window is on the supervisor's AppProjects before any
 *    namespace is labelled, and a namespace is labelled (and its quota usage reserved) before
 *    any of its workloads goes down. Wake: every workload is up before the label goes, and the
 *    window goes once no namespace is labelled or reserved. So a workload at 0 with landlord's
 *    annotation is always in a labelled namespace, under the window. One reconcile handles up
 *    to four namespaces at once, each one's writes in this order.
 *  - A workload carrying another supervisor's annotation, or one landlord cannot read, is left
 *    alone and reported; one changed by someone else while asleep is kept as it is.
 *  - Timers are requeue_after at the next transition; nothing polls.
 */
#ifndef LANDLORD_SUPERVISOR_H
#define LANDLORD_SUPERVISOR_H

#include "kube/manager.h"

struct hib;

/** hib_new() - the controller's state; @zoneinfo_dir NULL: the system's zones. */
struct hib *hib_new(const char *zoneinfo_dir);
void hib_free(struct hib *h);
/** hib_controller_def() - the controller "resourcesupervisor" (@h borrowed). */
struct controller_def hib_controller_def(struct hib *h);
/**
 * hib_add_test_hooks() - with the manager's test hooks on: /debug/clock?shift=SECONDS moves
 * the controller's clock (it starts at the wall clock) by SECONDS (may be negative) and
 * reconciles every supervisor at once; /debug/clock answers the controller's time. Before
 * mgr_run().
 */
int hib_add_test_hooks(struct hib *h, struct mgr *m);

#endif
