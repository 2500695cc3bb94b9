/*
 * auth.c - who is calling the tenant proxy, and whether it is a member of the URL's tenant
 * (proxy.h, steps 2 and 3).
 *
 * Credentials, in order:
 *  - a client certificate that verifies against the proxy's CAs (pki_verify_client()): CN the
 *    user, O the groups, OU the tenant, which must be the URL's (else 403);
 *  - otherwise a bearer token, reviewed by the API server (tokens.h);
 *  - otherwise 401, naming what was wrong with the certificate when one was sent.
 * The client's own Impersonate-* headers are never forwarded; a request carrying them is
 * refused (403) until the proxy checks the caller's right to impersonate. Credentials are copied
 * off the server thread by px_credentials_take() and judged on the job's thread: a token review
 * waits on the API server, which the server thread must never do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/mem.h"
#include "http/server.h"
#include "pki/pki.h"
#include "proxy/proxy_internal.h"
#include "proxy/view.h"

#define SA_USER "system:serviceaccount:"

void px_credentials_take(struct px_job *j, struct http_req *req)
{
	const char *pem = http_req_peer_cert(req);
	const char *auth = http_req_header(req, "Authorization");

	j->peer_pem = pem ? xstrdup(pem) : NULL;
	if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
		j->bearer = xstrdup(auth + 7);
	j->impersonating = http_req_header(req, "Impersonate-User") ||
	                   http_req_header(req, "Impersonate-Group") ||
	                   http_req_header(req, "Impersonate-Uid");
}

void px_credentials_release(struct px_job *j)
{
	if (j->bearer) {
		explicit_bzero(j->bearer, strlen(j->bearer));
		free(j->bearer);
		j->bearer = NULL;
	}
	free(j->peer_pem);
	j->peer_pem = NULL;
}

static int refuse(struct px_job *j, int code, const char *msg)
{
	px_job_status(j, code, code == 401 ? "Unauthorized" : "Forbidden", "%s", msg);
	return -1;
}

/* The certificate's identity into j->who. 0; 1 (no valid certificate: @why says why). */
static int from_certificate(struct px_job *j, char *why, size_t size)
{
	struct px *p = j->px;
	struct pki_subject s;
	struct ll_err err = {{0}};
	int rc;

	pthread_rwlock_rdlock(&p->ca_lock);
	rc = pki_verify_client(j->peer_pem, p->client_cas, 0, &err);
	pthread_rwlock_unlock(&p->ca_lock);
	if (rc == 0)
		rc = pki_read_subject(j->peer_pem, strlen(j->peer_pem), &s, &err);
	if (rc == 0 && !s.cn[0])
		rc = ll_err_set(&err, -EINVAL, "the certificate names no user (CN)");
	if (rc < 0) {
		snprintf(why, size, "client certificate refused: %s", err.msg);
		return 1;
	}
	snprintf(j->who.user, sizeof(j->who.user), "%s", s.cn);
	for (size_t i = 0; i < s.n_orgs; i++)
		snprintf(j->who.groups[i], sizeof(j->who.groups[i]), "%s", s.orgs[i]);
	j->who.n_groups = s.n_orgs;
	if (strcmp(s.ou, j->route.tenant) != 0) {
		snprintf(why, size, "this certificate is for tenant \"%.64s\", not \"%s\"", s.ou,
		         j->route.tenant);
		return -1;
	}
	return 0;
}

/* The token's identity into j->who. 0, or -1 with the answer sent. */
static int from_token(struct px_job *j)
{
	struct px_token_user u = {0};
	struct ll_err err = {{0}};
	int rc = px_tokens_review(j->px->tokens, j->bearer, &u, &err);

	if (rc == -EINVAL || rc == -EACCES)
		return refuse(j, 401, "the bearer token was not accepted");
	if (rc < 0) {
		px_job_status(j, 503, "ServiceUnavailable", "the token could not be reviewed: %s",
		              err.msg);
		return -1;
	}
	snprintf(j->who.user, sizeof(j->who.user), "%s", u.name);
	for (size_t i = 0; i < u.n_groups; i++)
		snprintf(j->who.groups[i], sizeof(j->who.groups[i]), "%s", u.groups[i]);
	j->who.n_groups = u.n_groups;
	j->who.service_account = strncmp(u.name, SA_USER, strlen(SA_USER)) == 0;
	px_token_user_release(&u);
	return 0;
}

static int authenticate(struct px_job *j)
{
	char why[600] = "no credentials: use a kubeconfig from `landlord kubeconfig`, or a token";
	int rc = j->peer_pem ? from_certificate(j, why, sizeof(why)) : 1;

	if (rc < 0)
		return refuse(j, 403, why);
	if (rc == 0)
		return 0;
	if (j->bearer)
		return from_token(j);
	return refuse(j, 401, why);
}

static int admit(struct px_job *j)
{
	const char *groups[PX_TOKEN_GROUPS_MAX];
	struct px_identity id = {
	        .user = j->who.user, .groups = groups, .n_groups = j->who.n_groups};
	char msg[PX_TOKEN_NAME_MAX + 128];

	for (size_t i = 0; i < j->who.n_groups; i++)
		groups[i] = j->who.groups[i];
	if (px_view_is_member(j->px->view, j->route.tenant, &id))
		return 0;
	snprintf(msg, sizeof(msg), "user \"%s\" is not a member of tenant \"%s\"", j->who.user,
	         j->route.tenant);
	return refuse(j, 403, msg);
}

int px_authorize(struct px_job *j)
{
	if (j->impersonating)
		return refuse(j, 403,
		              "impersonation (--as) through the tenant proxy is not served");
	if (authenticate(j) < 0)
		return -1;
	px_credentials_release(j); /* nothing keeps a token longer than it needs */
	return admit(j);
}
