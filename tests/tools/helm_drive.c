/*
 * helm_drive - drive src/templates/helm_run.c and helm_pull.c from end-to-end tests
 * (tests/e2e/test_helm_run.py, test_helm_pull.py), without the instance controllers: one helm
 * command for one release, as one ServiceAccount; or one chart pulled into a cache.
 *
 *   helm_drive --kubeconfig K --helm H --sa NS/NAME --ns NS --release R [--timeout-ms T]
 *              upgrade CHART [VALUES_JSON] | status | uninstall
 *   helm_drive --helm H --cache DIR [--username U --password-file F] [--ca-file F]
 *              [--parallel N] [--timeout-ms T] pull REPO_URL [CHART] VERSION
 *
 * K's identity requests a 10-minute token for the ServiceAccount NS/NAME (TokenRequest); helm
 * runs with that token alone, against K's server and CA. VALUES_JSON is a JSON object (default
 * {}). Prints one JSON line: rc, outcome (ok, failed, timed-out, not-started), message, and
 * digest (upgrade) or status, revision, chartVersion and statusDigest (status). The token is never
 * printed. Exit status 0 when helm succeeded, 1 otherwise, 2 for bad arguments.
 *
 * pull: helm_pull() of the source into the cache DIR, with the password read from the file F
 * ("-": stdin; one trailing newline dropped; never an argument) and the CA bundle from its file;
 * --parallel N pulls it from N threads at once. Prints one JSON line: rc, outcome, message and
 * path of the first thread, reason (ChartNotFound when rc is -ENOENT), and rcs, every thread's rc.
 * No kubeconfig is needed (the runner gets a placeholder server it never uses).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
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
#include "templates/helm_pull.h"
#include "templates/helm_run.h"

static const char *const OUTCOMES[] = {"ok", "failed", "timed-out", "not-started"};

#define PARALLEL_MAX 32

struct drive {
	const char *kubeconfig, *helm, *sa, *ns, *release, *verb, *chart;
	json_t *values;
	long timeout_ms;
	/* pull */
	const char *cache, *username, *password_file, *ca_file;
	const char *repo_url, *version; /* and chart */
	long parallel;
};

static int usage(void)
{
	fprintf(stderr,
	        "usage: helm_drive --kubeconfig K --helm H --sa NS/NAME --ns NS --release R "
	        "[--timeout-ms T] upgrade CHART [VALUES_JSON] | status | uninstall\n"
	        "       helm_drive --helm H --cache DIR [--username U --password-file F] "
	        "[--ca-file F] [--parallel N] [--timeout-ms T] pull REPO_URL [CHART] VERSION\n");
	return 2;
}

/* The option @c's slot in @d, or NULL. */
static const char **slot_of(struct drive *d, int c)
{
	switch (c) {
	case 'k':
		return &d->kubeconfig;
	case 'h':
		return &d->helm;
	case 's':
		return &d->sa;
	case 'n':
		return &d->ns;
	case 'r':
		return &d->release;
	case 'c':
		return &d->cache;
	case 'u':
		return &d->username;
	case 'p':
		return &d->password_file;
	case 'a':
		return &d->ca_file;
	default:
		return NULL;
	}
}

/* pull's operands: REPO_URL [CHART] VERSION. */
static int parse_pull(int argc, char **argv, struct drive *d)
{
	int n = argc - optind - 1;

	if (!d->helm || !d->cache || n < 2 || n > 3 || d->parallel < 1 ||
	    d->parallel > PARALLEL_MAX || (d->username == NULL) != (d->password_file == NULL))
		return -EINVAL;
	d->repo_url = argv[optind + 1];
	d->chart = n == 3 ? argv[optind + 2] : NULL;
	d->version = argv[argc - 1];
	return 0;
}

static int parse(int argc, char **argv, struct drive *d)
{
	static const struct option opts[] = {{"kubeconfig", 1, NULL, 'k'},
	                                     {"helm", 1, NULL, 'h'},
	                                     {"sa", 1, NULL, 's'},
	                                     {"ns", 1, NULL, 'n'},
	                                     {"release", 1, NULL, 'r'},
	                                     {"timeout-ms", 1, NULL, 't'},
	                                     {"cache", 1, NULL, 'c'},
	                                     {"username", 1, NULL, 'u'},
	                                     {"password-file", 1, NULL, 'p'},
	                                     {"ca-file", 1, NULL, 'a'},
	                                     {"parallel", 1, NULL, 'j'},
	                                     {NULL, 0, NULL, 0}};
	int c;

	d->timeout_ms = HELM_TIMEOUT_MS_DEFAULT;
	d->parallel = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		const char **slot = slot_of(d, c);

		if (slot != NULL)
			*slot = optarg;
		else if (c == 't' || c == 'j')
			*(c == 't' ? &d->timeout_ms : &d->parallel) = strtol(optarg, NULL, 10);
		else
			return -EINVAL;
	}
	if (optind < argc && strcmp(argv[optind], "pull") == 0) {
		d->verb = argv[optind];
		return parse_pull(argc, argv, d);
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

/* ===== pull ===== */

struct puller {
	struct helm_pull_cache *cache;
	const struct helm_source *src;
	struct helm_result res;
	char path[PATH_MAX];
	int rc;
};

static void *pull_thread(void *arg)
{
	struct puller *p = arg;

	p->rc = helm_pull(p->cache, p->src, p->path, &p->res);
	return NULL;
}

/* Pull @src from d->parallel threads at once and print the result. Return: the first's rc. */
static int pull_all(const struct drive *d, struct helm_pull_cache *cache,
                    const struct helm_source *src)
{
	struct puller p[PARALLEL_MAX];
	pthread_t t[PARALLEL_MAX];
	json_t *line, *rcs = json_array();

	for (long i = 0; i < d->parallel; i++) {
		p[i] = (struct puller){.cache = cache, .src = src, .rc = -ECHILD};
		if (pthread_create(&t[i], NULL, pull_thread, &p[i]) != 0)
			pull_thread(&p[i]), t[i] = 0;
	}
	for (long i = 0; i < d->parallel; i++) {
		if (t[i] != 0)
			pthread_join(t[i], NULL);
		json_array_append_new(rcs, json_integer(p[i].rc));
	}
	line = json_pack("{s:i,s:s,s:s,s:s,s:o}", "rc", p[0].rc, "outcome",
	                 OUTCOMES[p[0].res.outcome], "message", p[0].res.message, "path", p[0].path,
	                 "rcs", rcs);
	if (p[0].rc == -ENOENT)
		json_object_set_new(line, "reason", json_string("ChartNotFound"));
	json_dumpf(line, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(line);
	for (long i = 0; i < d->parallel; i++)
		helm_result_release(&p[i].res);
	return p[0].rc;
}

/* The password (its file's bytes, one trailing newline dropped) and CA into @pw and @ca. */
static int read_secrets(const struct drive *d, struct buf *pw, struct buf *ca, struct ll_err *err)
{
	int rc = 0;

	if (d->password_file != NULL) {
		const char *path =
		        strcmp(d->password_file, "-") == 0 ? "/dev/stdin" : d->password_file;

		rc = buf_read_file(pw, path, true);
		if (rc == 0 && pw->len > 0 && pw->p[pw->len - 1] == '\n')
			pw->len--;
	}
	if (rc == 0 && d->ca_file != NULL)
		rc = buf_read_file(ca, d->ca_file, false);
	return rc != 0 ? ll_err_set(err, rc, "cannot read the password or CA file: %s",
	                            strerror(-rc))
	               : 0;
}

/* The pull verb. Return: the exit status. */
static int pull_main(const struct drive *d)
{
	struct kcfg cfg = {
	        .server = "https://pull.invalid"}; /* a runner needs one; pulls never use it */
	struct helm_runner r = {0};
	struct helm_pull_cache cache = {0};
	struct buf pw = BUF_INIT(4096), ca = BUF_INIT(HELM_PULL_CA_MAX);
	struct ll_err err = {{0}};
	int rc = 1;

	if (read_secrets(d, &pw, &ca, &err) != 0 ||
	    helm_runner_init(&r, d->helm, &cfg, HELM_CONCURRENCY_DEFAULT, d->timeout_ms, &err) !=
	            0 ||
	    helm_pull_cache_init(&cache, d->cache, &r, &err) != 0)
		fprintf(stderr, "helm_drive: %s\n", err.msg);
	else
		rc = pull_all(d, &cache,
		              &(struct helm_source){.repo_url = d->repo_url,
		                                    .chart = d->chart,
		                                    .version = d->version,
		                                    .username = d->username,
		                                    .password =
		                                            d->password_file ? buf_cstr(&pw) : NULL,
		                                    .ca_pem = d->ca_file ? buf_cstr(&ca) : NULL,
		                                    .ca_pem_len = ca.len}) == 0
		             ? 0
		             : 1;
	helm_pull_cache_release(&cache);
	helm_runner_release(&r);
	if (pw.p != NULL)
		explicit_bzero(pw.p, pw.len);
	buf_release(&pw);
	buf_release(&ca);
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
	if (strcmp(d.verb, "pull") == 0)
		return pull_main(&d);
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
