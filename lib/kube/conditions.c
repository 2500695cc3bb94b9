/* conditions.c - status condition lists (see conditions.h). */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "kube/conditions.h"

static json_t *condition(const char *type, const char *status, const char *reason,
                         const char *message, const char *since, long long observed_generation)
{
	char now[CLOCK_UTC_MAX];
	struct timespec wall = clock_wall_now();

	clock_format_utc(&wall, 0, now);
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "type", type, "status", status, "reason",
	                 reason, "message", message, "lastTransitionTime", since ? since : now,
	                 "observedGeneration", (json_int_t)observed_generation);
}

json_t *cond_set(const json_t *current, const char *type, const char *status, const char *reason,
                 const char *message, long long observed_generation)
{
	json_t *out = json_array(), *c;
	bool replaced = false;
	size_t i;

	json_array_foreach((json_t *)current, i, c) {
		const char *ctype = jx_str(c, "type", NULL), *old = jx_str(c, "status", NULL);
		const char *since = NULL;

		if (ctype == NULL || strcmp(ctype, type) != 0) {
			json_array_append(out, c);
			continue;
		}
		if (old && strcmp(old, status) == 0)
			since = jx_str(c, "lastTransitionTime", NULL);
		json_array_append_new(
		        out, condition(type, status, reason, message, since, observed_generation));
		replaced = true;
	}
	if (!replaced)
		json_array_append_new(
		        out, condition(type, status, reason, message, NULL, observed_generation));
	return out;
}

const json_t *cond_find(const json_t *conditions, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conditions, i, c) {
		const char *t = jx_str(c, "type", NULL);

		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}
