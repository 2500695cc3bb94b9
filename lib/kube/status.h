/*
 * status.h - writing a landlord object's status subresource.
 *
 * Every controller writes status the same way: only when the desired status differs from the
 * cached one, on the status subresource, under the caller's field manager. A status is either
 * replaced whole (maps and lists in it shrink with the world, so merging would keep stale keys)
 * or merged (a controller that leaves some fields as they are and removes others with null).
 * A 404 is success: the object is gone, and so is the status to write.
 */
#ifndef LANDLORD_CONTROLLERS_STATUS_H
#define LANDLORD_CONTROLLERS_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"

enum status_write_mode {
	STATUS_REPLACE, /* JSON patch: add /status */
	STATUS_MERGE,   /* merge patch {"status": ...}: null removes a field */
};

/**
 * status_write() - write @status (borrowed) on object @name of @gvr (cluster-scoped).
 * Return: 0, or -EIO with what went wrong (no answer, or the API server's code, reason and
 * message) in @why. Nothing is logged; the caller decides what a failure means.
 */
int status_write(struct kc_client *kc, const struct kc_gvr *gvr, const char *name,
                 const json_t *status, enum status_write_mode mode, const char *field_manager,
                 char *why /* OUT */, size_t why_len);

#endif
