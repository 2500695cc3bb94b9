/*
 * helm_drive - drive src/templates/helm_run.c from end-to-end tests (tests/e2e/test_helm_run.py),
 * without the instance controllers: one helm command for one release, as one ServiceAccount.
 *
 *   helm_drive --kubeconfig K --helm H --sa NS/NAME --ns NS --release R [--timeout-ms T]
 *              upgrade CHART [VALUES_JSON] | status | uninstall
 *
 * K's identity requests a 10-minute token for the ServiceAccount NS/NAME (TokenRequest); helm
 * runs with that token alone, against K's server and CA. VALUES_JSON is a JSON object (default
 * {}). Prints one JSON line: rc, outcome (ok, failed, timed-out, not-started), message, and
 * digest (upgrade) or status, revision, chartVersion and statusDigest (status). The token is never
 * printed. Exit status 0 when helm succeeded, 1 otherwise, 2 for bad arguments.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "templates/helm_run.h"

static const char *const OUTCOMES[] = {"ok", "failed", "timed-out", "not-started"};

struct drive {
	const char *kubeconfig, *helm, *sa, *ns, *release, *verb, *chart;
	json_t *values;
	long timeout_ms;
};

static int usage(void)
{
	fprintf(stderr,
	        "usage: helm_drive --kubeconfig K --helm H --sa NS/NAME --ns NS --release R "
	        "[--timeout-ms T] upgrade CHART [VALUES_JSON] | status | uninstall\n");
	return 2;
}

static int parse(int argc, char **argv, struct drive *d)
{
	static const struct option opts[] = {{"kubeconfig", 1, NULL, 'k'},
	                                     {"helm", 1, NULL, 'h'},
	                                     {"sa", 1, NULL, 's'},
	                                     {"ns", 1, NULL, 'n'},
	                                     {"release", 1, NULL, 'r'},
	                                     {"timeout-ms", 1, NULL, 't'},
	                                     {NULL, 0, NULL, 0}};
	int c;

	d->timeout_ms = HELM_TIMEOUT_MS_DEFAULT;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		const char **slot = c == 'k'   ? &d->kubeconfig
		                    : c == 'h' ? &d->helm
		                    : c == 's' ? &d->sa
		                    : c == 'n' ? &d->ns
		                    : c == 'r' ? &d->release
		                               : NULL;
		if (slot != NULL)
			*slot = optarg;
		else if (c == 't')
			d->timeout_ms = strtol(optarg, NULL, 10);
		else
			return -EINVAL;
	}
	if (optind >= argc || !d->kubeconfig || !d->helm || !d->sa || !strchr(d->sa, '/') ||
	    !d->ns || !d->release)
		return -EINVAL;
	d->verb = argv[optind];
	d->chart = optind + 1 < argc ? argv[optind + 1] : NULL;
	d->values = json_loads(optind + 2 < argc ? argv[optind + 2] : "{}", 0, NULL);
	if (strcmp(d->verb, "upgrade") == 0 && (d->chart == NULL || !json_is_object(d->values)))
		return -EINVAL;
	return 0;
}

/* A token for d->sa, requested as the kubeconfig's identity; NULL with @err. */
static char *token_for(const struct drive *d, struct kc_client *kc, struct ll_err *err)
{
	char *ns = xstrndup(d->sa, (size_t)(strchr(d->sa, '/') - d->sa)), *token = NULL;
	struct kc_resp resp = {0};
	int rc = kc_token_request(kc, ns, strchr(d->sa, '/') + 1, 600, &token, &resp, err);

	if (rc == 0 && token == NULL)
		ll_err_set(err, -EACCES, "TokenRequest %s: %ld %s", d->sa, resp.http_status,
		           resp.status.message);
	kc_resp_release(&resp);
	free(ns);
	return token;
}

/* The verb's run, its result printed. Return: helm's rc. */
static int act(const struct drive *d, struct helm_runner *r, const char *token)
{
	struct helm_release rel = {.name = d->release,
	                           .ns = d->ns,
	                           .chart = d->chart,
	                           .values = d->values,
	                           .token = token};
	struct helm_release_status st = {0};
	struct helm_result res = {0};
	char digest[HELM_DIGEST_LEN + 1] = "";
	struct ll_err err = {{0}};
	json_t *line;
	int rc;

	if (strcmp(d->verb, "upgrade") == 0) {
		rc = helm_digest(d->chart, d->values, digest, &err);
		rel.digest = digest;
		rc = rc != 0 ? rc : helm_upgrade(r, &rel, &res);
	} else if (strcmp(d->verb, "status") == 0)
		rc = helm_status(r, &rel, &st, &res);
	else
		rc = helm_uninstall(r, &rel, &res);
	line = json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "rc", rc, "outcome",
	                 OUTCOMES[res.outcome], "message", err.msg[0] ? err.msg : res.message,
	                 "digest", digest, "status", st.status, "revision", (json_int_t)st.revision,
	                 "chartVersion", st.chart_version, "statusDigest", st.digest);
	json_dumpf(line, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(line);
	helm_result_release(&res);
	return rc;
}

int main(int argc, char **argv)
{
	struct drive d = {0};
	struct kcfg cfg = {0};
	struct kc_client *kc = NULL;
	struct helm_runner r = {0};
	struct ll_err err = {{0}};
	char *token = NULL;
	int rc = 1;

	if (parse(argc, argv, &d) != 0)
		return usage();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (kcfg_load_file(d.kubeconfig, NULL, &cfg, &err) != 0 ||
	    kc_client_new(&cfg, NULL, &kc, &err) != 0 ||
	    helm_runner_init(&r, d.helm, &cfg, HELM_CONCURRENCY_DEFAULT, d.timeout_ms, &err) != 0 ||
	    (token = token_for(&d, kc, &err)) == NULL)
		fprintf(stderr, "helm_drive: %s\n", err.msg);
	else
		rc = act(&d, &r, token) == 0 ? 0 : 1;
	if (token != NULL)
		explicit_bzero(token, strlen(token));
	free(token);
	helm_runner_release(&r);
	if (kc != NULL)
		kc_client_free(kc);
	kcfg_release(&cfg);
	json_decref(d.values);
	curl_global_cleanup();
	return rc;
}
