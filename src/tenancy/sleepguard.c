/*
 * sleepguard.c - refusing a hand-made wake of a workload whose sleep is enforced
 * (sleepguard.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "tenancy/hibernation.h"
#include "tenancy/sleepguard.h"

static const char *const KINDS[][2] = {{"deployments", "Deployment"},
                                       {"statefulsets", "StatefulSet"},
                                       {"replicasets", "ReplicaSet"},
                                       {"rollouts", "Rollout"},
                                       {"jobs", "Job"},
                                       {"cronjobs", "CronJob"}};

const char *sleepguard_kind(const char *resource)
{
	for (size_t i = 0; resource && i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
		if (strcmp(resource, KINDS[i][0]) == 0)
			return KINDS[i][1];
	return NULL;
}

/* Does @request raise what landlord keeps at its sleep value (@field)? */
static bool wakes(const json_t *request, enum hib_saved_field field)
{
	const json_t *now = jx_get(request, "object", "spec", NULL);
	const json_t *was = jx_get(request, "oldObject", "spec", NULL);

	if (field == HIB_SAVED_SUSPEND)
		return jx_bool(was, false, "suspend", NULL) &&
		       !jx_bool(now, false, "suspend", NULL);
	if (field == HIB_SAVED_REPLICAS)
		return jx_int(now, 1, "replicas", NULL) > jx_int(was, 1, "replicas", NULL);
	return false;
}

bool sleepguard_refuses(const json_t *request, const char *saved, char *msg, size_t len)
{
	const char *resource = jx_str(request, "resource", "resource", NULL);
	const char *sub = jx_str(request, "subResource", NULL);
	const char *kind = sleepguard_kind(resource);
	struct hib_saved s;

	if (kind == NULL || jx_str(request, "operation", NULL) == NULL ||
	    strcmp(jx_str(request, "operation", NULL), "UPDATE") != 0)
		return false;
	if (sub == NULL || *sub == '\0')
		saved = jx_str(request, "oldObject", "metadata", "annotations",
		               HIB_SAVED_ANNOTATION, NULL);
	else if (strcmp(sub, "scale") != 0)
		return false;
	if (saved == NULL || hib_saved_parse(saved, &s, NULL) < 0 || !wakes(request, s.field))
		return false;
	snprintf(msg, len,
	         "%s %.63s/%.253s is asleep under ResourceSupervisor %s, which enforces its sleep: "
	         "its %s stays as landlord left it until the supervisor wakes it; to wake it now: "
	         "kubectl annotate resourcesupervisor %s " HIB_OVERRIDE_ANNOTATION "=wake "
	         "--overwrite",
	         kind, jx_str(request, "namespace", NULL) ?: "",
	         jx_str(request, "name", NULL) ?: "", s.supervisor,
	         s.field == HIB_SAVED_SUSPEND ? "suspend" : "replicas", s.supervisor);
	return true;
}
