/*
 * kube_status.c - errno for libcurl codes, and metav1.Status from an answer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "base/json.h"
#include "kube/kube_internal.h"

/* libcurl's codes as errnos; a code not listed is -EIO. */
static const struct {
	CURLcode curl;
	int err;
} CURL_ERRNO[] = {
        {CURLE_OK, 0},
        {CURLE_COULDNT_CONNECT, -ECONNREFUSED},
        {CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH},
        {CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH},
        {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT},
        {CURLE_SSL_CONNECT_ERROR, -EPROTO},
        {CURLE_PEER_FAILED_VERIFICATION, -EPROTO},
        {CURLE_SSL_CERTPROBLEM, -EPROTO},
        {CURLE_SSL_CIPHER, -EPROTO},
        {CURLE_SSL_CACERT_BADFILE, -EPROTO},
        {CURLE_SSL_ISSUER_ERROR, -EPROTO},
        {CURLE_SSL_PINNEDPUBKEYNOTMATCH, -EPROTO},
        {CURLE_SSL_INVALIDCERTSTATUS, -EPROTO},
        {CURLE_SSL_CRL_BADFILE, -EPROTO},
        {CURLE_SSL_SHUTDOWN_FAILED, -EPROTO},
        {CURLE_SSL_ENGINE_NOTFOUND, -EPROTO},
        {CURLE_SSL_ENGINE_SETFAILED, -EPROTO},
        {CURLE_SSL_ENGINE_INITFAILED, -EPROTO},
        {CURLE_USE_SSL_FAILED, -EPROTO},
        {CURLE_ABORTED_BY_CALLBACK, -ECANCELED},
        {CURLE_OUT_OF_MEMORY, -ENOMEM},
        {CURLE_SEND_ERROR, -ECONNRESET},
        {CURLE_RECV_ERROR, -ECONNRESET},
        {CURLE_GOT_NOTHING, -ECONNRESET},
        {CURLE_PARTIAL_FILE, -ECONNRESET},
        {CURLE_HTTP2, -ECONNRESET},
        {CURLE_HTTP2_STREAM, -ECONNRESET},
        {CURLE_URL_MALFORMAT, -EINVAL},
        {CURLE_UNSUPPORTED_PROTOCOL, -EINVAL},
        {CURLE_BAD_FUNCTION_ARGUMENT, -EINVAL},
};

int kc__curl_errno(int curl_code, int overflow)
{
	if (curl_code == CURLE_WRITE_ERROR)
		return overflow ? -EMSGSIZE : -EIO;
	for (size_t i = 0; i < sizeof(CURL_ERRNO) / sizeof(CURL_ERRNO[0]); i++)
		if ((int)CURL_ERRNO[i].curl == curl_code)
			return CURL_ERRNO[i].err;
	return -EIO;
}

/* The reasons client-go gives answers that carry no metav1.Status. */
static const char *reason_for(long code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 406:
		return "NotAcceptable";
	case 409:
		return "Conflict";
	case 410:
		return "Gone";
	case 413:
		return "RequestEntityTooLarge";
	case 415:
		return "UnsupportedMediaType";
	case 422:
		return "Invalid";
	case 429:
		return "TooManyRequests";
	case 500:
		return "InternalError";
	case 503:
		return "ServiceUnavailable";
	case 504:
		return "Timeout";
	default:
		return code >= 500 ? "InternalError" : "";
	}
}

static void copy_str(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

void kc__trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

void kc__parse_status(const json_t *body, long http_status, const char *raw, size_t raw_len,
                      struct kc_status *out)
{
	const char *s;

	memset(out, 0, sizeof(*out));
	s = jx_str(body, "kind", NULL);
	if (s && strcmp(s, "Status") == 0) {
		out->code = (int)jx_int(body, http_status, "code", NULL);
		s = jx_str(body, "reason", NULL);
		if (s == NULL || *s == '\0')
			s = reason_for(http_status);
		copy_str(out->reason, sizeof(out->reason), s, strlen(s));
		s = jx_str(body, "message", NULL);
		if (s)
			copy_str(out->message, sizeof(out->message), s, strlen(s));
		return;
	}
	if (http_status < 400)
		return;
	out->code = (int)http_status;
	s = reason_for(http_status);
	copy_str(out->reason, sizeof(out->reason), s, strlen(s));
	if (raw && raw_len)
		copy_str(out->message, sizeof(out->message), raw,
		         raw_len < STATUS_MESSAGE_RAW ? raw_len : STATUS_MESSAGE_RAW);
	kc__trim_end(out->message);
	if (out->message[0] == '\0')
		snprintf(out->message, sizeof(out->message), "HTTP %ld", http_status);
}
