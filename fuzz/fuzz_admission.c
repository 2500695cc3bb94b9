/*
 * Fuzz the admission webhook core: any request body must give a well-formed JSON answer, 200
 * with a response carrying the request's uid, or 400 with a Status and no response.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "http/probe.h"
#include "webhook/admission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct probe *server;
	static struct admission_route *route;
	struct buf out = BUF_INIT(ADMISSION_BODY_MAX);
	char *body = xstrndup((const char *)data, size);
	json_t *answer;
	int status;

	if (route == NULL) {
		server = probe_new(NULL, 0);
		route = admission_route_new(server, "/validate", "fuzz");
	}
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
