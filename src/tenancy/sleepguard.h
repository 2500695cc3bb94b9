/*
 * sleepguard.h - the webhook's verdict on waking, by hand, a workload that a ResourceSupervisor
 * enforcing its sleep put to sleep (docs/hibernation.md, "enforce"). Pure: no I/O.
 *
 * The API server sends these requests only from namespaces labelled
 * landlord.dev/sleeping=enforced (the webhook sleep.landlord.dev, path /sleep): UPDATEs of
 * Deployments, StatefulSets, ReplicaSets, Argo Rollouts, Jobs and CronJobs, and of the first
 * four's /scale.
 * A request is refused when the workload carries landlord's saved value
 * (landlord.dev/sleep-saved) and it raises spec.replicas, or clears spec.suspend; everything
 * else passes (a workload landlord did not put to sleep, a change of anything else, lowering).
 * A saved value landlord cannot read passes too: landlord left that workload alone. The
 * annotation can be forged by whoever may edit the workload, which only keeps that person's own
 * workload asleep.
 */
#ifndef LANDLORD_SLEEPGUARD_H
#define LANDLORD_SLEEPGUARD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/**
 * sleepguard_refuses() - should the AdmissionRequest @request (borrowed) be refused?
 * @saved: the workload's landlord.dev/sleep-saved annotation for a /scale request (the Scale
 *         object does not carry it; the caller reads the workload), or NULL; ignored for a
 *         request on the workload itself, whose oldObject carries it.
 * @msg: OUT, on refusal one line naming the workload, the supervisor and how to wake it.
 * Return: true to refuse. Thread-safe.
 */
bool sleepguard_refuses(const json_t *request, const char *saved, char *msg, size_t len);

/** sleepguard_kind() - "Deployment" for "deployments" (the kinds above), else NULL. */
const char *sleepguard_kind(const char *resource);

#endif
