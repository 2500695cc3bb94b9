/* helm_run.c - one helm command for one release, as one identity (see helm_run.h). */
#include "templates/helm_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "kube/kubeconfig.h"
#include "tenancy/tplstatus.h"

/* Helm's own --timeout is this much shorter than the runner's. */
#define HELM_TIMEOUT_MARGIN_MS 30000
/* Directory depth a chart may have. */
#define CHART_DEPTH_MAX 32

/* ===== the private directory ===== */

char *helm_private_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = xasprintf("%s/landlord-helm-XXXXXX", tmp != NULL && *tmp == '/' ? tmp : "/tmp");
	int saved;

	if (mkdtemp(dir) != NULL)
		return dir;
	saved = errno;
	free(dir);
	errno = saved;
	return NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void helm_remove_dir(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void helm_environment(const char *dir, const char *kube_cache_dir, char *env[HELM_ENV_MAX])
{
	env[0] = xasprintf("HOME=%s", dir);
	env[1] = xstrdup("PATH=/nonexistent");
	env[2] = xasprintf("HELM_CACHE_HOME=%s/cache", dir);
	env[3] = xasprintf("HELM_CONFIG_HOME=%s/config", dir);
	env[4] = xasprintf("HELM_DATA_HOME=%s/data", dir);
	env[5] = xstrdup("GOGC=off");
	env[6] = xstrdup("GOMEMLIMIT=" HELM_MEMORY_LIMIT);
	env[7] = kube_cache_dir ? xasprintf("KUBECACHEDIR=%s", kube_cache_dir) : NULL;
	env[8] = NULL;
}

void helm_env_free(char *env[HELM_ENV_MAX])
{
	for (size_t i = 0; i < HELM_ENV_MAX; i++) {
		free(env[i]);
		env[i] = NULL;
	}
}

/* ===== the digest ===== */

/* Hash the bytes of the open file @fd, at most *@budget of them. Return: 0 or -errno. */
static int hash_fd(EVP_MD_CTX *md, int fd, size_t *budget)
{
	char chunk[16384];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if ((size_t)n > *budget)
			return -EFBIG;
		*budget -= (size_t)n;
		EVP_DigestUpdate(md, chunk, (size_t)n);
	}
	return n < 0 ? -errno : 0;
}

/* Hash "f <rel>\0<size>\0" and the bytes of regular file @path. */
static int hash_file(EVP_MD_CTX *md, const char *path, const char *rel, size_t *budget)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char head[64];
	int rc;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	EVP_DigestUpdate(md, "f ", 2);
	EVP_DigestUpdate(md, rel, strlen(rel) + 1);
	snprintf(head, sizeof(head), "%lld", (long long)st.st_size);
	EVP_DigestUpdate(md, head, strlen(head) + 1);
	rc = hash_fd(md, fd, budget);
	close(fd);
	return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int hash_tree(EVP_MD_CTX *md, const char *path, const char *rel, int depth, size_t *budget);

/* Hash the entries of directory @path (relative path @rel) in bytewise order of their names. */
static int hash_dir(EVP_MD_CTX *md, const char *path, const char *rel, int depth, size_t *budget)
{
	struct dirent **names = NULL;
	int n = scandir(path, &names, NULL, by_name), rc = n < 0 ? -errno : 0;

	EVP_DigestUpdate(md, "d ", 2);
	EVP_DigestUpdate(md, rel, strlen(rel) + 1);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;

		if (rc == 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
			char *sub = xasprintf("%s/%s", path, name);
			char *subrel = xasprintf("%s%s%s", rel, *rel ? "/" : "", name);

			rc = hash_tree(md, sub, subrel, depth + 1, budget);
			free(sub);
			free(subrel);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

static int hash_tree(EVP_MD_CTX *md, const char *path, const char *rel, int depth, size_t *budget)
{
	struct stat st;

	if (depth > CHART_DEPTH_MAX)
		return -ELOOP;
	if (lstat(path, &st) != 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return hash_dir(md, path, rel, depth, budget);
	return S_ISREG(st.st_mode) ? hash_file(md, path, rel, budget) : -EINVAL;
}

/* @values as canonical JSON: sorted keys, compact; "{}" for NULL. Caller frees. */
static char *canonical_values(const json_t *values)
{
	return values != NULL ? json_dumps(values, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY)
	                      : xstrdup("{}");
}

/* The digest of @path, @values and, when not empty, @set. */
static int digest(const char *path, const json_t *values, const json_t *set,
                  char out[HELM_DIGEST_LEN + 1], struct ll_err *err)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	size_t budget = HELM_CHART_BYTES_MAX;
	char *json = canonical_values(values);
	int rc;

	out[0] = '\0';
	if (md == NULL || json == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		rc = ll_err_set(err, -ENOMEM, "chart %s: no digest", path);
		goto out;
	}
	rc = hash_tree(md, path, "", 0, &budget);
	if (rc != 0) {
		ll_err_set(err, rc, "chart %s: cannot read it: %s", path, strerror(-rc));
		goto out;
	}
	EVP_DigestUpdate(md, "values\0", 7);
	EVP_DigestUpdate(md, json, strlen(json));
	if (json_array_size(set) > 0) {
		free(json);
		json = canonical_values(set);
		EVP_DigestUpdate(md, "\0set\0", 5);
		EVP_DigestUpdate(md, json, strlen(json));
	}
	EVP_DigestFinal_ex(md, sum, &n);
	for (unsigned int i = 0; i < n && i * 2 < HELM_DIGEST_LEN; i++)
		snprintf(out + i * 2, 3, "%02x", sum[i]);
out:
	EVP_MD_CTX_free(md);
	free(json);
	return rc;
}

int helm_digest(const char *path, const json_t *values, char out[HELM_DIGEST_LEN + 1],
                struct ll_err *err)
{
	return digest(path, values, NULL, out, err);
}

int helm_release_digest(const struct helm_release *rel, char out[HELM_DIGEST_LEN + 1],
                        struct ll_err *err)
{
	return digest(rel->chart, rel->values, rel->set, out, err);
}

/* ===== the argument vector ===== */

/* Helm's own --timeout: the runner's less the margin, at least half of it, in ms. */
static long long helm_timeout(int64_t timeout_ms)
{
	int64_t t = timeout_ms - HELM_TIMEOUT_MARGIN_MS;

	return t >= timeout_ms / 2 ? t : timeout_ms / 2;
}

/* The arguments that follow "upgrade" (or "install": the first revision, no history yet). */
static size_t upgrade_args(const struct helm_release *rel, bool install, struct helm_argv *a,
                           size_t i)
{
	char **v = a->v;

	if (!install)
		v[i++] = "--install";
	v[i++] = (char *)rel->name;
	v[i++] = (char *)rel->chart;
	v[i++] = "-f";
	v[i++] = a->values;
	v[i++] = "--timeout";
	v[i++] = a->timeout;
	if (!install) {
		v[i++] = "--history-max";
		v[i++] = "10";
	}
	v[i++] = "--labels";
	v[i++] = a->labels;
	if (rel->force && !install)
		v[i++] = "--force-conflicts";
	return i;
}

/* --set and --set-string of @rel->set. Return: the next index, or 0 past HELM_SET_MAX. */
static size_t set_args(const struct helm_release *rel, struct helm_argv *a, size_t i)
{
	const json_t *e;
	size_t k, n = 0;

	json_array_foreach(rel->set, k, e) {
		const char *name = jx_str(e, "name", NULL), *value = jx_str(e, "value", NULL);

		if (name == NULL || value == NULL)
			continue;
		if (n == HELM_SET_MAX)
			return 0;
		a->set[n] = xasprintf("%s=%s", name, value);
		a->v[i++] =
		        json_is_true(json_object_get(e, "forceString")) ? "--set-string" : "--set";
		a->v[i++] = a->set[n++];
	}
	return i;
}

/* The arguments that follow "rollback": the release, its revision, and the rules of upgrade. */
static size_t rollback_args(const struct helm_release *rel, struct helm_argv *a, size_t i)
{
	snprintf(a->revision, sizeof(a->revision), "%ld", rel->revision);
	a->v[i++] = (char *)rel->name;
	a->v[i++] = a->revision;
	a->v[i++] = "--timeout";
	a->v[i++] = a->timeout;
	a->v[i++] = "--history-max";
	a->v[i++] = "10";
	return i;
}

void helm_argv_release(struct helm_argv *a)
{
	for (size_t i = 0; i < HELM_SET_MAX; i++) {
		free(a->set[i]);
		a->set[i] = NULL;
	}
}

int helm_build_argv(enum helm_verb verb, const struct helm_release *rel, const char *dir,
                    int64_t timeout_ms, struct helm_argv *a)
{
	static const char *const verbs[] = {"upgrade", "get", "uninstall", "rollback", "install"};
	size_t i = 0;
	int n1, n2;

	memset(a, 0, sizeof(*a));
	n1 = snprintf(a->kubeconfig, sizeof(a->kubeconfig), "%s/kubeconfig", dir);
	n2 = snprintf(a->values, sizeof(a->values), "%s/values.json", dir);
	if (n1 < 0 || (size_t)n1 >= sizeof(a->kubeconfig) || n2 < 0 ||
	    (size_t)n2 >= sizeof(a->values))
		return -ENAMETOOLONG;
	snprintf(a->timeout, sizeof(a->timeout), "%lldms", helm_timeout(timeout_ms));
	snprintf(a->labels, sizeof(a->labels), HELM_LABEL_DIGEST "=%.*s", HELM_DIGEST_LEN,
	         rel->digest != NULL ? rel->digest : "");
	a->v[i++] = "helm";
	a->v[i++] = (char *)verbs[verb];
	if (verb == HELM_STATUS)
		a->v[i++] = "metadata";
	if (verb == HELM_UPGRADE || verb == HELM_INSTALL)
		i = set_args(rel, a, upgrade_args(rel, verb == HELM_INSTALL, a, i));
	else if (verb == HELM_ROLLBACK)
		i = rollback_args(rel, a, i);
	else
		a->v[i++] = (char *)rel->name;
	if (i == 0)
		return -E2BIG;
	if (verb == HELM_STATUS) {
		a->v[i++] = "-o";
		a->v[i++] = "json";
	}
	a->v[i++] = "-n";
	a->v[i++] = (char *)rel->ns;
	a->v[i++] = "--kubeconfig";
	a->v[i++] = a->kubeconfig;
	a->v[i] = NULL;
	return 0;
}

/* ===== what helm said ===== */

/* @s (@n bytes) holds only spaces, tabs and carriage returns. */
static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

void helm_error_message(const char *err, size_t len, char out[HELM_MESSAGE_MAX + 1])
{
	const char *line = NULL, *end = NULL, *last = NULL, *last_end = NULL;
	char *copy;
	size_t i = 0;

	while (i < len) {
		const char *s = err + i, *e = memchr(s, '\n', len - i);
		size_t n = e != NULL ? (size_t)(e - s) : len - i;

		if (n >= 7 && memcmp(s, "Error: ", 7) == 0)
			line = s + 7, end = s + n;
		if (!blank(s, n))
			last = s, last_end = s + n;
		i += n + 1;
	}
	if (line == NULL)
		line = last, end = last_end;
	while (end != NULL && end > line && (end[-1] == '\r' || end[-1] == ' '))
		end--;
	if (line != NULL && (size_t)(end - line) > HELM_MESSAGE_KEPT) {
		line = end - (HELM_MESSAGE_KEPT - 3); /* its end: the innermost cause */
		while (line < end && ((unsigned char)*line & 0xc0) == 0x80)
			line++; /* on a character boundary */
		copy = xasprintf("...%.*s", (int)(end - line), line);
	} else {
		copy = line != NULL ? xstrndup(line, (size_t)(end - line)) : NULL;
	}
	tpl_clip(out, HELM_MESSAGE_MAX, copy);
	free(copy);
}

int helm_parse_status(const char *json, size_t len, struct helm_release_status *st)
{
	json_t *doc = json_loadb(json, len, 0, NULL);
	const char *status = jx_str(doc, "status", NULL);
	const char *version = jx_str(doc, "version", NULL);
	const char *digest = jx_str(doc, "labels", HELM_LABEL_DIGEST, NULL);
	const json_t *revision = jx_get(doc, "revision", NULL);
	int rc = -EPROTO;

	memset(st, 0, sizeof(*st));
	if (status != NULL && version != NULL && json_is_integer(revision)) {
		tpl_clip(st->status, sizeof(st->status) - 1, status);
		tpl_clip(st->chart_version, sizeof(st->chart_version) - 1, version);
		if (digest != NULL && strlen(digest) == HELM_DIGEST_LEN)
			memcpy(st->digest, digest, HELM_DIGEST_LEN + 1);
		st->revision = (long)json_integer_value(revision);
		rc = 0;
	}
	json_decref(doc);
	return rc;
}

/* ===== the runner ===== */

/* The group's count changed (under its lock): the gauges. */
static void gauge(int running, void *ud)
{
	struct helm_runner *r = ud;

	if (running > r->peak)
		r->peak = running;
	metrics_set("landlord_helm_processes", "", running);
	metrics_set("landlord_helm_processes_peak", "", r->peak);
}

int helm_runner_init(struct helm_runner *r, const char *helm, const struct kcfg *cfg,
                     int concurrency, int64_t timeout_ms, struct ll_err *err)
{
	memset(r, 0, sizeof(*r));
	if (helm == NULL || helm[0] != '/' || cfg->server == NULL || concurrency <= 0 ||
	    timeout_ms <= 0)
		return ll_err_set(err, -EINVAL,
		                  "helm: an absolute binary, a server, a concurrency > 0 and a "
		                  "time-out > 0 are needed");
	r->helm = xstrdup(helm);
	r->server = xstrdup(cfg->server);
	if (cfg->ca_pem != NULL) {
		r->ca_pem = xmalloc(cfg->ca_pem_len);
		memcpy(r->ca_pem, cfg->ca_pem, cfg->ca_pem_len);
		r->ca_pem_len = cfg->ca_pem_len;
	}
	r->insecure = cfg->insecure;
	r->tls_server_name = xstrdup(cfg->tls_server_name);
	r->timeout_ms = timeout_ms;
	proc_group_init(&r->group, concurrency);
	r->group.on_change = gauge;
	r->group.on_change_ud = r;
	metrics_describe("landlord_helm_processes", METRIC_GAUGE,
	                 "helm processes running or starting now", NULL, 0);
	metrics_describe("landlord_helm_processes_peak", METRIC_GAUGE,
	                 "the most helm processes at once since landlord started", NULL, 0);
	metrics_describe("landlord_helm_runs_total", METRIC_COUNTER, "helm commands run", NULL, 0);
	return 0;
}

void helm_runner_release(struct helm_runner *r)
{
	if (r->helm == NULL)
		return;
	proc_group_set_open(&r->group, false);
	proc_group_kill_all(&r->group);
	proc_group_wait_idle(&r->group, INT64_MAX);
	proc_group_release(&r->group);
	free(r->helm);
	free(r->server);
	free(r->ca_pem);
	free(r->tls_server_name);
	memset(r, 0, sizeof(*r));
}

int helm_write_private(const char *dir, const char *name, const void *data, size_t len)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -errno : 0;
	size_t done = 0;

	while (rc == 0 && done < len) {
		ssize_t n = write(fd, (const char *)data + done, len - done);

		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = -errno;
	free(path);
	return rc;
}

/* Overwrite the string @s (jansson's, or ours) before it is freed. */
static void zero_string(const char *s)
{
	if (s != NULL)
		explicit_bzero((char *)s, strlen(s));
}

/* The cluster entry of a run's kubeconfig: landlord's server and CA (written to @dir/ca.crt). */
static json_t *cluster_entry(const struct helm_runner *r, const char *dir, int *rc)
{
	json_t *cluster = json_pack("{s:s}", "server", r->server);

	*rc = 0;
	if (r->ca_pem != NULL) {
		char *ca = xasprintf("%s/ca.crt", dir);

		*rc = helm_write_private(dir, "ca.crt", r->ca_pem, r->ca_pem_len);
		json_object_set_new(cluster, "certificate-authority", json_string(ca));
		free(ca);
	}
	if (r->insecure)
		json_object_set_new(cluster, "insecure-skip-tls-verify", json_true());
	if (r->tls_server_name != NULL)
		json_object_set_new(cluster, "tls-server-name", json_string(r->tls_server_name));
	return cluster;
}

/* @dir/kubeconfig (0600): the API server, and @token as the only credential. */
static int write_kubeconfig(const struct helm_runner *r, const char *dir, const char *token)
{
	int rc;
	json_t *cluster = cluster_entry(r, dir, &rc);
	json_t *user = json_pack("{s:s}", "token", token);
	json_t *cfg = json_pack("{s:s,s:s,s:[{s:s,s:o}],s:[{s:s,s:O}],s:[{s:s,s:{s:s,s:s}}],s:s}",
	                        "apiVersion", "v1", "kind", "Config", "clusters", "name", "api",
	                        "cluster", cluster, "users", "name", "helm", "user", user,
	                        "contexts", "name", "helm", "context", "cluster", "api", "user",
	                        "helm", "current-context", "helm");
	char *text = cfg != NULL ? json_dumps(cfg, JSON_COMPACT) : NULL;

	if (rc == 0)
		rc = text != NULL ? helm_write_private(dir, "kubeconfig", text, strlen(text))
		                  : -ENOMEM;
	zero_string(text);
	free(text);
	zero_string(json_string_value(json_object_get(user, "token")));
	json_decref(user);
	json_decref(cfg);
	return rc;
}

/* The run's files in @dir: the kubeconfig, and the values for an upgrade. */
static int prepare(const struct helm_runner *r, enum helm_verb verb, const struct helm_release *rel,
                   const char *dir, struct ll_err *err)
{
	int rc = rel->token != NULL && *rel->token != '\0' ? write_kubeconfig(r, dir, rel->token)
	                                                   : -EINVAL;
	char *values = NULL;

	if (rc == 0 && (verb == HELM_UPGRADE || verb == HELM_INSTALL)) {
		values = canonical_values(rel->values);
		rc = values != NULL ? helm_write_private(dir, "values.json", values, strlen(values))
		                    : -EINVAL;
	}
	zero_string(values);
	free(values);
	return rc != 0 ? ll_err_set(err, rc, "helm: cannot write its files in %s: %s", dir,
	                            strerror(-rc))
	               : 0;
}

int helm_judge(int rc, struct proc_result *pr, const struct ll_err *err, struct helm_result *res)
{
	char summary[PROC_SUMMARY_MAX];

	if (rc != 0) {
		res->outcome = HELM_NOT_STARTED;
		tpl_clip(res->message, HELM_MESSAGE_MAX, err->msg[0] ? err->msg : strerror(-rc));
		return rc < 0 ? rc : -EIO;
	}
	res->out = pr->out;
	memset(&pr->out, 0, sizeof(pr->out));
	if (proc_result_ok(pr)) {
		res->outcome = HELM_OK;
		return 0;
	}
	if (pr->timed_out || pr->cancelled) {
		res->outcome = HELM_TIMED_OUT;
		tpl_clip(res->message, HELM_MESSAGE_MAX, proc_result_summary(pr, summary));
		return -ETIMEDOUT;
	}
	res->outcome = HELM_FAILED;
	helm_error_message(pr->err.p, pr->err.len, res->message);
	if (res->message[0] == '\0')
		tpl_clip(res->message, HELM_MESSAGE_MAX, proc_result_summary(pr, summary));
	return -EIO;
}

static void count_run(enum helm_verb verb, const struct helm_result *res)
{
	static const char *const verbs[] = {"upgrade", "status", "uninstall", "rollback",
	                                    "install"};
	static const char *const outcomes[] = {"ok", "failed", "timed-out", "not-started"};
	char labels[96];

	metrics_add("landlord_helm_runs_total",
	            metrics_labels(labels, sizeof(labels), "verb", verbs[verb], "outcome",
	                           outcomes[res->outcome], NULL),
	            1);
}

/* One helm command in a private directory, removed afterwards. */
static int run(struct helm_runner *r, enum helm_verb verb, const struct helm_release *rel,
               struct helm_result *res)
{
	struct helm_argv a = {0};
	struct proc_result pr = {0};
	struct ll_err err = {{0}};
	char *env[HELM_ENV_MAX] = {NULL};
	char *dir = helm_private_dir();
	int rc = dir != NULL ? 0 : -errno;

	memset(res, 0, sizeof(*res));
	if (rc != 0)
		ll_err_set(&err, rc, "helm: no private directory: %s", strerror(-rc));
	else if ((rc = helm_build_argv(verb, rel, dir, r->timeout_ms, &a)) != 0)
		ll_err_set(&err, rc, "helm: the private directory's path is too long");
	else if ((rc = prepare(r, verb, rel, dir, &err)) == 0) {
		helm_environment(dir, r->kube_cache_dir, env);
		rc = proc_run(&(struct proc_spec){.path = r->helm,
		                                  .argv = a.v,
		                                  .envp = env,
		                                  .cwd = dir,
		                                  .timeout_ms = r->timeout_ms,
		                                  .out_max = HELM_OUTPUT_MAX,
		                                  .err_max = HELM_OUTPUT_MAX,
		                                  .err_tail = true,
		                                  .group = &r->group,
		                                  .wait_slot = true},
		              &pr, &err);
		helm_env_free(env);
	}
	helm_argv_release(&a);
	if (dir != NULL)
		helm_remove_dir(dir);
	free(dir);
	rc = helm_judge(rc, &pr, &err, res);
	count_run(verb, res);
	proc_result_release(&pr);
	return rc;
}

/* Helm's message says that the release does not exist. */
static bool not_found(const struct helm_result *res)
{
	return res->outcome == HELM_FAILED && strstr(res->message, "not found") != NULL;
}

int helm_upgrade(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res)
{
	return run(r, HELM_UPGRADE, rel, res);
}

int helm_install(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res)
{
	return run(r, HELM_INSTALL, rel, res);
}

bool helm_name_in_use(const struct helm_result *res)
{
	/* the name taken when helm looked, or its first record's when helm made it */
	return res->outcome == HELM_FAILED &&
	       (strstr(res->message, "cannot re-use a name that is still in use") != NULL ||
	        strstr(res->message, "release: already exists") != NULL);
}

int helm_status(struct helm_runner *r, const struct helm_release *rel,
                struct helm_release_status *st, struct helm_result *res)
{
	int rc = run(r, HELM_STATUS, rel, res);

	memset(st, 0, sizeof(*st));
	if (rc == -EIO && not_found(res))
		return -ENOENT;
	if (rc == 0 && helm_parse_status(res->out.p, res->out.len, st) != 0) {
		res->outcome = HELM_FAILED;
		tpl_clip(res->message, HELM_MESSAGE_MAX,
		         "helm get metadata printed no release status");
		rc = -EPROTO;
	}
	return rc;
}

int helm_uninstall(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res)
{
	int rc = run(r, HELM_UNINSTALL, rel, res);

	return rc == -EIO && not_found(res) ? -ENOENT : rc;
}

int helm_rollback(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res)
{
	int rc = run(r, HELM_ROLLBACK, rel, res);

	return rc == -EIO && not_found(res) ? -ENOENT : rc;
}

void helm_result_release(struct helm_result *res)
{
	buf_release(&res->out);
}
