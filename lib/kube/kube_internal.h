/*
 * kube_internal.h - kube.c helpers exposed to its unit tests; not part of the public API.
 */
#ifndef LANDLORD_KUBE_INTERNAL_H
#define LANDLORD_KUBE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "kube/kube.h"

/**
 * kc__parse_status() - fill @out from an answer: from @body when it is a metav1.Status (kind
 * "Status"), otherwise, for @http_status >= 400, code = @http_status, a reason named after the
 * code ("NotFound", "Conflict"...) and the first bytes of @raw as the message. Leaves @out zeroed
 * for a 2xx answer that is not a Status. @body and @raw may be NULL.
 */
void kc__parse_status(const json_t *body, long http_status, const char *raw, size_t raw_len,
                      struct kc_status *out /* OUT */);

/** kc__curl_errno() - the negative errno for a CURLcode (@overflow: the body cap was hit). */
int kc__curl_errno(int curl_code, int overflow);

enum kc_scan {
	KC_SCAN_UNSURE, /* the raw text cannot tell cheaply: parse the page */
	KC_SCAN_LAST,   /* no continue token, or an empty one: the last page */
	KC_SCAN_NEXT,   /* a continue token */
};

/**
 * kc__scan_continue() - a list page's continue token read from its raw JSON without parsing it.
 * Only the top-level members before "items" are tokenised; "metadata" must be among them, and
 * its "continue" must be a string without escapes. Whenever the page parses with duplicate keys
 * rejected (jx_loads), LAST and NEXT agree with its metadata.continue. *@token (caller frees) is
 * set for NEXT only.
 */
enum kc_scan kc__scan_continue(const char *raw, size_t len, char **token /* OUT */);

/** kc__connects() - connections opened so far (sum of CURLINFO_NUM_CONNECTS). */
long kc__connects(struct kc_client *c);

#endif
