/*
 * kube_internal.h - kube.c helpers exposed to its unit tests; not part of the public API.
 */
#ifndef LANDLORD_KUBE_INTERNAL_H
#define LANDLORD_KUBE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "landlord/kube.h"

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

/** kc__connects() - connections opened so far (sum of CURLINFO_NUM_CONNECTS). */
long kc__connects(struct kc_client *c);

#endif
