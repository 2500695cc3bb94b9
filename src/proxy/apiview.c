/*
 * apiview.c - the API's own documents through the tenant proxy: /version, discovery (legacy
 * and aggregated) and OpenAPI v2 and v3, each fetched as the caller and cut to what the
 * tenant sees (apifilter.h). A document of a group the tenant does not see is 404 without an
 * upstream call where the path tells (/openapi/v3/apis/G/V); a form the proxy does not serve
 * (protobuf, aggregated v2beta1) is 406, or legacy JSON when the client also takes it.
 */
#include <stdio.h>
#include <string.h>

#include "proxy/apifilter.h"
#include "proxy/proxy_internal.h"

#define OPENAPI_V3 "/openapi/v3"

const struct px_apifilter *px_job_filter(const struct px_job *j)
{
	static const struct px_apifilter defaults = {0};

	(void)j; /* shared groups and nodes: the LandlordConfig's, once it says */
	return &defaults;
}

static int fix_discovery(const struct px_job *j, json_t *doc)
{
	switch (px_filter_discovery(px_job_filter(j), doc)) {
	case PX_FILTER_OK:
		return 0;
	case PX_FILTER_NOT_FOUND:
		return 404;
	default:
		return 502;
	}
}

static int fix_openapi(const struct px_job *j, json_t *doc)
{
	const char *rest = j->route.rest;
	enum px_filter_result r;

	if (strcmp(rest, "/openapi/v2") == 0)
		r = px_filter_openapi_v2(px_job_filter(j), doc);
	else if (strcmp(rest, OPENAPI_V3) == 0)
		r = px_filter_openapi_v3_index(px_job_filter(j), doc);
	else
		r = px_filter_openapi_v3(px_job_filter(j), rest + strlen(OPENAPI_V3 "/"), doc);
	return r == PX_FILTER_OK ? 0 : r == PX_FILTER_NOT_FOUND ? 404 : 502;
}

/* Whether @rest is a discovery path whose answer may be aggregated (/api, /apis). */
static bool aggregatable(const char *rest)
{
	return strcmp(rest, "/api") == 0 || strcmp(rest, "/apis") == 0;
}

static bool known_openapi(const char *rest)
{
	return strcmp(rest, "/openapi/v2") == 0 || strcmp(rest, OPENAPI_V3) == 0 ||
	       strncmp(rest, OPENAPI_V3 "/", strlen(OPENAPI_V3 "/")) == 0;
}

void px_api_documents(struct px_job *j)
{
	const char *rest = j->route.rest;
	bool openapi = j->route.kind == PX_OPENAPI;
	enum px_form form = px_negotiate(j->accept, !openapi && aggregatable(rest));
	struct px_call c = {.path = rest, .query = j->query};

	if (strcmp(j->method, "GET") != 0 && strcmp(j->method, "HEAD") != 0) {
		px_job_status(j, 405, "MethodNotAllowed", "discovery is read-only");
		return;
	}
	if (openapi &&
	    (!known_openapi(rest) ||
	     (strncmp(rest, OPENAPI_V3 "/", strlen(OPENAPI_V3 "/")) == 0 &&
	      !px_openapi_v3_path_visible(px_job_filter(j), rest + strlen(OPENAPI_V3 "/"))))) {
		px_job_status(j, 404, "NotFound",
		              "the server could not find the requested resource");
		return;
	}
	if (form == PX_FORM_NONE) {
		px_job_status(j, 406, "NotAcceptable",
		              "the tenant proxy serves discovery and OpenAPI as JSON only");
		return;
	}
	c.accept = form == PX_FORM_AGGREGATED ? PX_ACCEPT_AGGREGATED : PX_ACCEPT_JSON;
	if (strcmp(rest, "/version") != 0)
		c.fix = openapi ? fix_openapi : fix_discovery;
	px_job_forward(j, &c);
}
