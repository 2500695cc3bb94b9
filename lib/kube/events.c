/* events.c - Kubernetes Events (see events.h). */
#include <stdarg.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/log.h"
#include "kube/events.h"
#include "kube/kube.h"

/* The object an Event is about, as it names it. */
struct involved {
	const char *api_version, *kind, *name, *uid, *ns;
};

static void record(struct kc_client *c, const char *component, const struct involved *obj,
                   const char *type, const char *reason, const char *fmt, va_list ap)
        __attribute__((format(printf, 6, 0)));

static void record(struct kc_client *c, const char *component, const struct involved *obj,
                   const char *type, const char *reason, const char *fmt, va_list ap)
{
	const char *ns = obj->ns ? obj->ns : "default";
	char message[1024], now[CLOCK_UTC_MAX], prefix[300];
	struct timespec wall = clock_wall_now();
	struct kc_resp resp = {0};
	struct ll_err err;
	json_t *ev;

	vsnprintf(message, sizeof(message), fmt, ap);
	clock_format_utc(&wall, 0, now);
	snprintf(prefix, sizeof(prefix), "%s.", obj->name ? obj->name : component);
	ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s?,s:s?,s:s?,s:s?,s:s?},s:s,s:s,s:s,s:{s:s},"
	               "s:s,s:s,s:i,s:s}",
	               "apiVersion", "v1", "kind", "Event", "metadata", "generateName", prefix,
	               "namespace", ns, "involvedObject", "apiVersion", obj->api_version, "kind",
	               obj->kind, "name", obj->name, "uid", obj->uid, "namespace", obj->ns,
	               "reason", reason, "message", message, "type", type, "source", "component",
	               component, "firstTimestamp", now, "lastTimestamp", now, "count", 1,
	               "reportingComponent", component);
	if (ev == NULL)
		return;
	if (kc_create(c, &KC_EVENTS, ns, ev, &resp, &err) < 0)
		log_warn("event not recorded", "{s:s,s:s}", "reason", reason, "error", err.msg);
	else if (!kc_resp_ok(&resp))
		log_warn("event not recorded", "{s:s,s:i,s:s}", "reason", reason, "code",
		         (int)resp.http_status, "message", resp.status.message);
	kc_resp_release(&resp);
	json_decref(ev);
}

void event_record(struct kc_client *c, const char *component, const json_t *obj, const char *type,
                  const char *reason, const char *fmt, ...)
{
	struct involved o = {jx_str(obj, "apiVersion", NULL), jx_str(obj, "kind", NULL),
	                     jx_name(obj), jx_uid(obj), jx_namespace(obj)};
	va_list ap;

	va_start(ap, fmt);
	record(c, component, &o, type, reason, fmt, ap);
	va_end(ap);
}

void event_record_doc(struct kc_client *c, const char *component, struct jval obj, const char *type,
                      const char *reason, const char *fmt, ...)
{
	struct involved o = {jval_str(jval_get(obj, "apiVersion")), jval_str(jval_get(obj, "kind")),
	                     jval_name(obj), jval_str(jval_path(obj, "metadata", "uid", NULL)),
	                     jval_namespace(obj)};
	va_list ap;

	va_start(ap, fmt);
	record(c, component, &o, type, reason, fmt, ap);
	va_end(ap);
}
