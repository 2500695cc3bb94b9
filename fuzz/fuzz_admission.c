/*
 * Fuzz the admission webhook core: any request body must give a well-formed JSON answer, 200
 * with a response carrying the request's uid, or 400 with a Status and no response.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
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
	struct buf out = BUF_INIT(ADMISSION_BODY_MAX);
	char *body = xstrndup((const char *)data, size);
	json_t *answer;
	int status;

	if (route == NULL)
		route = admission_route_new(NULL, "/validate", "fuzz", rules);
	status = admission_review(route, body, &out);
	answer = jx_loads(out.p, out.len, NULL);
	if (answer == NULL || (status != 200 && status != 400))
		abort();
	if (status == 200 && !jx_str(answer, "response", "uid", NULL))
		abort();
	if (status == 400 && jx_get(answer, "response", NULL))
		abort();
	json_decref(answer);
	buf_release(&out);
	free(body);
	return 0;
}
