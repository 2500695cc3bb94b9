/*
 * Fuzz the admission webhook core: any request body must give a well-formed JSON answer, 200
 * with a response carrying the request's uid, or 400 with a Status and no response.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "fuzz_admission_oracle.h"
#include "webhook/admission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Denies objects named "deny": exercises rule matching and the denial path. */
static void deny_by_name(const json_t *request, struct admission_verdict *v, void *ud)
{
	const char *name = jx_str(request, "name", NULL);

	if (name && strcmp(name, "deny") == 0) {
		v->allowed = false;
		snprintf(v->message, sizeof(v->message), "%s", name);
	}
}

static const struct admission_rule rules[] = {
        {"any", (const char *const[]){"*", NULL}, ADMISSION_ANY_OP, deny_by_name, NULL},
        {"configmaps", (const char *const[]){"configmaps", "apps/deployments", NULL},
         ADMISSION_CREATE | ADMISSION_UPDATE, deny_by_name, NULL},
        {.name = NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct admission_route *route;
	char *body = xstrndup((const char *)data, size);

	if (route == NULL)
		route = admission_route_new(NULL, "/validate", "fuzz", rules);
	json_decref(fuzz_admission_answer(route, body));
	free(body);
	return 0;
}
