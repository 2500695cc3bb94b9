/*
 * finalizers.h - adding or removing one finalizer of an object, leaving the others' entries.
 *
 * The patch is a JSON patch, so another controller's finalizer written meanwhile is never lost:
 * an add is guarded by the resourceVersion it was decided on (a list that appeared meanwhile
 * would otherwise be replaced), a removal by a test that the entry at that index is still ours.
 * A guard that fails is the API server's 422 (KC_JSON_PATCH_NOT_APPLIED): read again and retry.
 */
#ifndef LANDLORD_FINALIZERS_H
#define LANDLORD_FINALIZERS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/jdoc.h"

/** kc_finalizer_index() - where @finalizer is in @obj's metadata.finalizers, or -1. */
int kc_finalizer_index(struct jval obj, const char *finalizer);

/**
 * kc_finalizer_patch() - the JSON patch that adds (@present) or removes @finalizer on @obj as
 * it is cached (borrowed), or NULL when there is nothing to change. A new reference.
 */
json_t *kc_finalizer_patch(struct jval obj, const char *finalizer, bool present);

#endif
