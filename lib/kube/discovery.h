/*
 * discovery.h - resolve kinds and resources through the API server's discovery documents.
 *
 * Reads /api and /apis (aggregated discovery is not required) and each group version's resource
 * list, skipping subresources. A lookup that misses triggers one refresh, at most every 10 s, so
 * CRDs installed later are found without polling. GVR strings returned are owned by the
 * discovery object and stay valid until disc_free() (refreshes never free older strings).
 * Thread-safe.
 */
#ifndef LANDLORD_DISCOVERY_H
#define LANDLORD_DISCOVERY_H

#include "kube/kube.h"

struct disc;

struct disc *disc_new(struct kc_client *c);
void disc_free(struct disc *d);
/** disc_refresh() - re-read everything now. Return: 0 or the error of the first failing call. */
int disc_refresh(struct disc *d, struct ll_err *err);
/**
 * disc_invalidate() - the next lookup that misses refreshes at once, not after the usual pause
 * between refreshes: for a caller that saw a CRD installed or changed.
 */
void disc_invalidate(struct disc *d);
/**
 * disc_lookup_kind() - @api_version as in objects ("v1", "apps/v1", "networking.k8s.io/v1").
 * Return: 0; -ENOENT when the server does not serve that kind (after one refresh).
 */
int disc_lookup_kind(struct disc *d, const char *api_version, const char *kind,
                     struct kc_gvr *out /* OUT */, struct ll_err *err);
/** disc_lookup_resource() - @group "" for core; the group's preferred version. */
int disc_lookup_resource(struct disc *d, const char *group, const char *resource,
                         struct kc_gvr *out /* OUT */, struct ll_err *err);

#endif
