/* helm_pull.c - the chart pull cache (see helm_pull.h). */
#include "templates/helm_pull.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/err.h"
#include "base/mem.h"
#include "tenancy/tplstatus.h"

/* A pull under way, and its result for the callers that waited for it. */
struct helm_pull_flight {
	struct helm_pull_flight *next;
	char key[HELM_PULL_KEY_LEN + 1];
	bool done;
	int waiters;
	int rc;
	enum helm_outcome outcome;
	char message[HELM_MESSAGE_MAX + 1];
};

/* ===== checking a source ===== */

/* @s holds a byte below 0x20, DEL or a space. */
static bool has_control(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* What is wrong with a word (chart, version, username) of at most @max bytes, or NULL. */
static const char *word_fault(const char *s, size_t max)
{
	if (s == NULL || *s == '\0')
		return "required";
	if (strlen(s) > max)
		return "too long";
	if (has_control(s))
		return "holds a space or a control character";
	return *s == '-' ? "may not start with \"-\"" : NULL;
}

/* What is wrong with @url, or NULL; *@oci tells its kind. */
static const char *url_fault(const char *url, bool *oci)
{
	const char *rest = NULL;

	*oci = false;
	if (url == NULL || *url == '\0')
		return "required";
	if (strlen(url) > HELM_PULL_URL_MAX)
		return "longer than 2048 bytes";
	if (has_control(url))
		return "holds a space or a control character";
	if (strncmp(url, "oci://", 6) == 0)
		*oci = true, rest = url + 6;
	else if (strncmp(url, "https://", 8) == 0)
		rest = url + 8;
	else if (strncmp(url, "http://", 7) == 0)
		rest = url + 7;
	if (rest == NULL)
		return "must start with https://, http:// or oci://";
	if (*rest == '\0' || *rest == '/')
		return "names no host";
	if (*oci && strchr(rest, '/') == NULL)
		return "an oci:// reference names the chart after its host";
	return NULL;
}

/* What is wrong with @src's credentials and CA, into @field, or NULL. */
static const char *secret_fault(const struct helm_source *src, const char **field)
{
	const char *why = NULL;

	if (src->ca_pem != NULL && (src->ca_pem_len == 0 || src->ca_pem_len > HELM_PULL_CA_MAX))
		*field = "ca.crt", why = "empty, or larger than 1 MiB";
	else if ((src->username == NULL) != (src->password == NULL))
		*field = "credentials", why = "a username and a password go together";
	else if (src->username != NULL && (why = word_fault(src->username, 256)) != NULL)
		*field = "username";
	else if (src->password != NULL &&
	         (*src->password == '\0' || strpbrk(src->password, "\r\n")))
		*field = "password", why = "empty, or holds a line break";
	return why;
}

int helm_pull_check(const struct helm_source *src, char msg[HELM_MESSAGE_MAX + 1])
{
	const char *field = "repoUrl", *why;
	bool oci;

	msg[0] = '\0';
	why = url_fault(src->repo_url, &oci);
	if (why == NULL && oci && src->chart != NULL)
		field = "chart", why = "not with an oci:// reference, which names the chart";
	else if (why == NULL && !oci && (why = word_fault(src->chart, HELM_PULL_CHART_MAX)) != NULL)
		field = "chart";
	else if (why == NULL && !oci && strchr(src->chart, '/') != NULL)
		field = "chart", why = "holds \"/\"";
	if (why == NULL && (why = word_fault(src->version, HELM_PULL_VERSION_MAX)) != NULL)
		field = "version";
	if (why == NULL)
		why = secret_fault(src, &field);
	if (why == NULL)
		return 0;
	snprintf(msg, HELM_MESSAGE_MAX + 1, "chart source: %s: %s", field, why);
	return -EINVAL;
}

void helm_pull_key(const struct helm_source *src, char key[HELM_PULL_KEY_LEN + 1])
{
	static const char tag[] = "landlord helm pull v1";
	const char *parts[] = {src->repo_url, src->chart, src->version};
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		abort();                        /* out of memory, fatal as in mem.h */
	EVP_DigestUpdate(md, tag, sizeof(tag)); /* its NUL included: a separator */
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const char *s = parts[i] != NULL ? parts[i] : "";

		EVP_DigestUpdate(md, s, strlen(s) + 1);
	}
	EVP_DigestFinal_ex(md, sum, &n);
	EVP_MD_CTX_free(md);
	for (unsigned int i = 0; i < n && i * 2 < HELM_PULL_KEY_LEN; i++)
		snprintf(key + i * 2, 3, "%02x", sum[i]);
}

/* ===== the argument vectors ===== */

/* `helm registry login HOST` or `helm repo add NAME URL`, with the username. */
static size_t login_args(const struct helm_source *src, bool oci, struct helm_pull_argv *a)
{
	size_t i = 0;

	a->v[i++] = "helm";
	if (oci) {
		const char *host = src->repo_url + 6;

		snprintf(a->host, sizeof(a->host), "%.*s", (int)strcspn(host, "/"), host);
		a->v[i++] = "registry";
		a->v[i++] = "login";
		a->v[i++] = a->host;
	} else {
		a->v[i++] = "repo";
		a->v[i++] = "add";
		a->v[i++] = HELM_PULL_REPO_NAME;
		a->v[i++] = (char *)src->repo_url;
	}
	a->v[i++] = "--username";
	a->v[i++] = (char *)src->username;
	a->v[i++] = "--password-stdin";
	return i;
}

/* `helm pull REF --version V -d OUT`, REF an OCI reference, CHART --repo URL or source/CHART. */
static size_t fetch_args(const struct helm_source *src, bool oci, struct helm_pull_argv *a)
{
	size_t i = 0;

	a->v[i++] = "helm";
	a->v[i++] = "pull";
	if (oci)
		a->v[i++] = (char *)src->repo_url;
	else if (src->username != NULL) {
		snprintf(a->ref, sizeof(a->ref), HELM_PULL_REPO_NAME "/%s", src->chart);
		a->v[i++] = a->ref;
	} else {
		a->v[i++] = (char *)src->chart;
		a->v[i++] = "--repo";
		a->v[i++] = (char *)src->repo_url;
	}
	a->v[i++] = "--version";
	a->v[i++] = (char *)src->version;
	a->v[i++] = "-d";
	a->v[i++] = a->out;
	return i;
}

int helm_pull_build_argv(enum helm_pull_step step, const struct helm_source *src, const char *dir,
                         struct helm_pull_argv *a)
{
	bool oci = strncmp(src->repo_url, "oci://", 6) == 0;
	size_t i;
	int n1, n2;

	memset(a, 0, sizeof(*a));
	if (step == HELM_PULL_LOGIN && src->username == NULL)
		return -ENOENT;
	n1 = snprintf(a->out, sizeof(a->out), "%s/out", dir);
	n2 = snprintf(a->ca, sizeof(a->ca), "%s/ca.crt", dir);
	if (n1 < 0 || (size_t)n1 >= sizeof(a->out) || n2 < 0 || (size_t)n2 >= sizeof(a->ca))
		return -ENAMETOOLONG;
	i = step == HELM_PULL_LOGIN ? login_args(src, oci, a) : fetch_args(src, oci, a);
	if (src->ca_pem != NULL) {
		a->v[i++] = "--ca-file";
		a->v[i++] = a->ca;
	}
	a->v[i] = NULL;
	return 0;
}

/* ===== what helm said ===== */

/* The text of the last "Error: " line of @err, else its last line, lower-cased; caller frees. */
static char *error_line(const char *err, size_t len)
{
	const char *line = err, *end = err;
	bool seen_error = false;
	char *copy;
	size_t i = 0;

	while (i < len) {
		const char *s = err + i, *e = memchr(s, '\n', len - i);
		size_t n = e != NULL ? (size_t)(e - s) : len - i;
		bool is_error = n >= 7 && memcmp(s, "Error: ", 7) == 0;

		if (is_error || (!seen_error && n > 0))
			line = s, end = s + n;
		seen_error = seen_error || is_error;
		i += n + 1;
	}
	copy = xstrndup(line, (size_t)(end - line));
	for (char *p = copy; *p != '\0'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return copy;
}

/* @s holds one of the NULL-terminated @needles. */
static bool holds_any(const char *s, const char *const *needles)
{
	for (; *needles != NULL; needles++)
		if (strstr(s, *needles) != NULL)
			return true;
	return false;
}

int helm_pull_classify(const char *err, size_t len)
{
	static const char *const denied[] = {"unauthorized",
	                                     "forbidden",
	                                     "status code 401",
	                                     "status code 403",
	                                     "authentication required",
	                                     "credential not found",
	                                     "denied",
	                                     NULL};
	static const char *const missing[] = {"no chart version found",
	                                      "no chart name found",
	                                      "not found in",
	                                      "status code 404",
	                                      ": 404 ",
	                                      NULL};
	char *line = error_line(err != NULL ? err : "", err != NULL ? len : 0);
	size_t n = strlen(line);
	int rc = -EIO;

	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' '))
		line[--n] = '\0';
	if (holds_any(line, denied))
		rc = -EACCES;
	else if (holds_any(line, missing) ||
	         (n >= 11 && strcmp(line + n - 11, ": not found") == 0)) /* an OCI tag or chart */
		rc = -ENOENT;
	free(line);
	return rc;
}

/* ===== the cache ===== */

int helm_pull_cache_init(struct helm_pull_cache *c, const char *dir, struct helm_runner *runner,
                         struct ll_err *err)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	if (dir == NULL || dir[0] != '/' || runner == NULL || runner->helm == NULL)
		return ll_err_set(err, -EINVAL,
		                  "helm pull cache: an absolute directory and a runner "
		                  "are needed");
	if (strlen(dir) + HELM_PULL_KEY_LEN + 8 >= PATH_MAX)
		return ll_err_set(err, -ENAMETOOLONG, "helm pull cache %s: path too long", dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int rc = -errno;

		return ll_err_set(err, rc, "helm pull cache %s: cannot create it: %s", dir,
		                  strerror(-rc));
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return ll_err_set(err, -ENOTDIR, "helm pull cache %s: not a directory", dir);
	c->dir = xstrdup(dir);
	c->runner = runner;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->landed, NULL);
	return 0;
}

void helm_pull_cache_release(struct helm_pull_cache *c)
{
	if (c->dir == NULL)
		return;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->landed);
	free(c->dir);
	memset(c, 0, sizeof(*c));
}

/* @path is a regular file (not followed when a symbolic link). */
static bool cached(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Copy @in to @out, at most @max bytes (-EFBIG beyond). Return: 0 or -errno. */
static int copy_fd(int in, int out, size_t max)
{
	char chunk[16384];
	size_t total = 0;
	ssize_t n;

	while ((n = read(in, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		total += (size_t)n;
		if (total > max)
			return -EFBIG;
		for (ssize_t done = 0, w; done < n; done += w)
			if ((w = write(out, chunk + done, (size_t)(n - done))) < 0)
				return -errno;
	}
	return 0;
}

/* The regular file @from (at most HELM_CHART_BYTES_MAX) into @to by way of a temporary file in
 * @dir (the same filesystem), renamed: @to is whole or absent. Return: 0 or -errno. */
static int install_file(const char *dir, const char *from, const char *to)
{
	char *tmp = xasprintf("%s/.pull-XXXXXX", dir);
	int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1, rc = 0;
	struct stat st;

	if (in < 0)
		rc = -errno;
	else if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode))
		rc = -EIO;
	else if ((uintmax_t)st.st_size > HELM_CHART_BYTES_MAX)
		rc = -EFBIG;
	else if ((out = mkostemp(tmp, O_CLOEXEC)) < 0)
		rc = -errno;
	else
		rc = copy_fd(in, out, HELM_CHART_BYTES_MAX);
	if (out >= 0 && rc == 0 && fsync(out) != 0)
		rc = -errno;
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = -errno;
	if (out >= 0 && rc == 0 && rename(tmp, to) != 0)
		rc = -errno;
	if (out >= 0 && rc != 0)
		unlink(tmp);
	if (in >= 0)
		close(in);
	free(tmp);
	return rc;
}

/* The one chart helm left in @out, into *@tgz (caller frees). Return: 0 or -EIO. */
static int find_chart(const char *out, char **tgz)
{
	DIR *d = opendir(out);
	struct dirent *e;
	int entries = 0;

	*tgz = NULL;
	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		entries++;
		if (n > 4 && strcmp(e->d_name + n - 4, ".tgz") == 0 && *tgz == NULL)
			*tgz = xasprintf("%s/%s", out, e->d_name);
	}
	if (d != NULL)
		closedir(d);
	if (entries == 1 && *tgz != NULL)
		return 0;
	free(*tgz);
	*tgz = NULL;
	return -EIO;
}

/* The chart helm pulled into @dir/out, into the cache at @path. Return: 0 or -errno, @err. */
static int land(const struct helm_pull_cache *c, const char *dir, const char *path,
                struct ll_err *err)
{
	char *out = xasprintf("%s/out", dir), *tgz = NULL;
	int rc = find_chart(out, &tgz);

	if (rc != 0)
		ll_err_set(err, rc, "helm pull left no single chart archive");
	else if ((rc = install_file(c->dir, tgz, path)) == -EFBIG)
		ll_err_set(err, rc, "the chart is larger than %u MiB", HELM_CHART_BYTES_MAX >> 20);
	else if (rc != 0)
		ll_err_set(err, rc, "cannot write the chart into the cache %s: %s", c->dir,
		           strerror(-rc));
	free(out);
	free(tgz);
	return rc;
}

/* What the run of @rc and @pr means, into @res; a failure classified. Return as helm_pull(). */
static int judge(int rc, struct proc_result *pr, const struct ll_err *err, struct helm_result *res)
{
	rc = helm_judge(rc, pr, err, res);
	return rc == -EIO ? helm_pull_classify(pr->err.p, pr->err.len) : rc;
}

/* One helm command of a pull in @dir with the environment @env; the password on its stdin when
 * it logs in. */
static int run_step(struct helm_pull_cache *c, enum helm_pull_step step,
                    const struct helm_source *src, const char *dir, char **env,
                    struct helm_result *res)
{
	struct helm_pull_argv a;
	struct proc_result pr = {0};
	struct ll_err err = {{0}};
	bool login = step == HELM_PULL_LOGIN;
	int rc = helm_pull_build_argv(step, src, dir, &a);

	if (rc != 0) {
		ll_err_set(&err, rc, "helm pull: the private directory's path is too long");
	} else {
		rc = proc_run(&(struct proc_spec){.path = c->runner->helm,
		                                  .argv = a.v,
		                                  .envp = env,
		                                  .cwd = dir,
		                                  .input = login ? src->password : NULL,
		                                  .input_len = login ? strlen(src->password) : 0,
		                                  .timeout_ms = c->runner->timeout_ms,
		                                  .out_max = HELM_OUTPUT_MAX,
		                                  .err_max = HELM_OUTPUT_MAX,
		                                  .err_tail = true,
		                                  .group = &c->runner->group,
		                                  .wait_slot = true},
		              &pr, &err);
	}
	rc = judge(rc, &pr, &err, res);
	proc_result_release(&pr);
	return rc;
}

/* The pull's files in @dir: out/ for the chart, and ca.crt. Return: 0 or -errno, @err. */
static int prepare(const struct helm_source *src, const char *dir, struct ll_err *err)
{
	char *out = xasprintf("%s/out", dir);
	int rc = mkdir(out, 0700) == 0 ? 0 : -errno;

	if (rc == 0 && src->ca_pem != NULL)
		rc = helm_write_private(dir, "ca.crt", src->ca_pem, src->ca_pem_len);
	free(out);
	return rc != 0 ? ll_err_set(err, rc, "helm pull: cannot write its files in %s: %s", dir,
	                            strerror(-rc))
	               : 0;
}

/* The whole pull of @src into @path, in a private directory removed afterwards. */
static int pull(struct helm_pull_cache *c, const struct helm_source *src, const char *path,
                struct helm_result *res)
{
	struct ll_err err = {{0}};
	char *env[HELM_ENV_MAX] = {NULL};
	char *dir = helm_private_dir();
	int rc = dir != NULL ? 0 : -errno;

	if (rc != 0)
		ll_err_set(&err, rc, "helm pull: no private directory: %s", strerror(-rc));
	else if ((rc = prepare(src, dir, &err)) == 0) {
		helm_environment(dir, NULL, env);
		if (src->username != NULL)
			rc = run_step(c, HELM_PULL_LOGIN, src, dir, env, res);
		if (rc == 0)
			rc = run_step(c, HELM_PULL_FETCH, src, dir, env, res);
		if (rc == 0 && (rc = land(c, dir, path, &err)) != 0)
			res->outcome = HELM_FAILED;
		helm_env_free(env);
	}
	if (rc != 0 && err.msg[0] != '\0') {
		res->outcome = res->outcome == HELM_OK ? HELM_NOT_STARTED : res->outcome;
		tpl_clip(res->message, HELM_MESSAGE_MAX, err.msg);
	}
	if (dir != NULL)
		helm_remove_dir(dir);
	free(dir);
	return rc;
}

/* The flight of @key, or NULL. Under c->lock. */
static struct helm_pull_flight *find_flight(const struct helm_pull_cache *c, const char *key)
{
	struct helm_pull_flight *f = c->flights;

	while (f != NULL && strcmp(f->key, key) != 0)
		f = f->next;
	return f;
}

/* Wait for @f to land and take its result; the last waiter frees it. Under c->lock. */
static int wait_flight(struct helm_pull_cache *c, struct helm_pull_flight *f,
                       struct helm_result *res)
{
	int rc;

	f->waiters++;
	while (!f->done)
		pthread_cond_wait(&c->landed, &c->lock);
	rc = f->rc;
	res->outcome = f->outcome;
	memcpy(res->message, f->message, sizeof(res->message));
	if (--f->waiters == 0)
		free(f);
	return rc;
}

/* Pull @src into @path unless a pull of @key is under way (then its result) or has landed. */
static int pull_once(struct helm_pull_cache *c, const struct helm_source *src, const char *key,
                     const char *path, struct helm_result *res)
{
	struct helm_pull_flight *f, **p;
	int rc;

	pthread_mutex_lock(&c->lock);
	f = find_flight(c, key);
	if (f != NULL || cached(path)) {
		rc = f != NULL ? wait_flight(c, f, res) : 0;
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	f = xcalloc(1, sizeof(*f));
	memcpy(f->key, key, sizeof(f->key));
	f->next = c->flights;
	c->flights = f;
	pthread_mutex_unlock(&c->lock);

	rc = pull(c, src, path, res);

	pthread_mutex_lock(&c->lock);
	for (p = &c->flights; *p != f; p = &(*p)->next)
		;
	*p = f->next;
	f->rc = rc;
	f->outcome = res->outcome;
	memcpy(f->message, res->message, sizeof(f->message));
	f->done = true;
	pthread_cond_broadcast(&c->landed);
	if (f->waiters == 0)
		free(f);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int helm_pull(struct helm_pull_cache *c, const struct helm_source *src, char path[PATH_MAX],
              struct helm_result *res)
{
	char key[HELM_PULL_KEY_LEN + 1];
	int rc;

	memset(res, 0, sizeof(*res));
	path[0] = '\0';
	rc = helm_pull_check(src, res->message);
	if (rc != 0) {
		res->outcome = HELM_NOT_STARTED;
		return rc;
	}
	helm_pull_key(src, key);
	snprintf(path, PATH_MAX, "%s/%s.tgz", c->dir, key); /* fits: helm_pull_cache_init() */
	rc = cached(path) ? 0 : pull_once(c, src, key, path, res);
	if (rc != 0)
		path[0] = '\0';
	return rc;
}
