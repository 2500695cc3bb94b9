/* events.c - Kubernetes Events (see events.h). */
#include <stdarg.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "kube/events.h"
#include "kube/kube.h"

void event_record(struct kc_client *c, const char *component, const json_t *obj, const char *type,
                  const char *reason, const char *fmt, ...)
{
	const char *ns = jx_namespace(obj) ? jx_namespace(obj) : "default";
	char message[1024], now[CLOCK_UTC_MAX], prefix[300];
	struct timespec wall = clock_wall_now();
	struct kc_resp resp = {0};
	struct ll_err err;
	json_t *ev;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	clock_format_utc(&wall, 0, now);
	snprintf(prefix, sizeof(prefix), "%s.", jx_name(obj) ? jx_name(obj) : component);
	ev = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s?,s:s?,s:s?,s:s?,s:s?},s:s,s:s,s:s,s:{s:s},"
	               "s:s,s:s,s:i,s:s}",
	               "apiVersion", "v1", "kind", "Event", "metadata", "generateName", prefix,
	               "namespace", ns, "involvedObject", "apiVersion",
	               jx_str(obj, "apiVersion", NULL), "kind", jx_str(obj, "kind", NULL), "name",
	               jx_name(obj), "uid", jx_uid(obj), "namespace", jx_namespace(obj), "reason",
	               reason, "message", message, "type", type, "source", "component", component,
	               "firstTimestamp", now, "lastTimestamp", now, "count", 1,
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
