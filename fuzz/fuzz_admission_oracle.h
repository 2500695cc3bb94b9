/*
 * fuzz_admission_oracle.h - what every admission fuzz target asks of an answer: any body gives
 * well-formed JSON, 200 with a response carrying the request's uid, or 400 with a Status and no
 * response; anything else aborts. Header-only, for the fuzz_admission*.c targets.
 */
#ifndef LANDLORD_FUZZ_ADMISSION_ORACLE_H
#define LANDLORD_FUZZ_ADMISSION_ORACLE_H

#include <stdlib.h>

#include "base/buf.h"
#include "base/json.h"
#include "webhook/admission.h"

/* Review @body through @route; the response (a new reference) when 200, NULL when 400. */
static inline json_t *fuzz_admission_answer(struct admission_route *route, const char *body)
{
	struct buf out = BUF_INIT(ADMISSION_BODY_MAX);
	int status = admission_review(route, body, &out);
	json_t *answer = jx_loads(out.p, out.len, NULL), *resp;

	if (answer == NULL || (status != 200 && status != 400))
		abort();
	if (status == 200 && !jx_str(answer, "response", "uid", NULL))
		abort();
	if (status == 400 && jx_get(answer, "response", NULL))
		abort();
	resp = status == 200 ? json_incref(json_object_get(answer, "response")) : NULL;
	json_decref(answer);
	buf_release(&out);
	return resp;
}

#endif
