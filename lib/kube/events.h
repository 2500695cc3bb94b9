/*
 * events.h - Kubernetes Events about landlord's objects (what `kubectl describe` shows).
 *
 * Each call POSTs one core/v1 Event. Events about cluster-scoped objects (a Tenant, a Plan) go
 * into the "default" namespace, as client-go does, so `kubectl describe tenant` finds them.
 * Recording is best effort: a failure is logged and never fails a reconcile. Callers record
 * only on change (a namespace created, a new failure message), never once per reconcile.
 */
#ifndef LANDLORD_EVENTS_H
#define LANDLORD_EVENTS_H

#include <jansson.h>

#include "base/jdoc.h"

struct kc_client;

#define EVENT_NORMAL  "Normal"
#define EVENT_WARNING "Warning"

/**
 * event_record() - record an Event about @obj (borrowed; apiVersion, kind, name, uid and
 * namespace are read), reported by @component (the Event's source and reportingComponent). @type is
 * EVENT_NORMAL or EVENT_WARNING; @reason is CamelCase; the message is printf-formatted and cut at
 * 1024 bytes.
 */
void event_record(struct kc_client *c, const char *component, const json_t *obj, const char *type,
                  const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/** event_record_doc() - event_record() about an object read in place (a cached document). */
void event_record_doc(struct kc_client *c, const char *component, struct jval obj, const char *type,
                      const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));

#endif
