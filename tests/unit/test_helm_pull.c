/*
 * test_helm_pull.c - the chart pull cache without a repository: the argument vectors of the four
 * kinds of pull (OCI or http(s), with or without credentials; never the password), the cache key,
 * the checks of a source, what Helm's real messages mean, and whole pulls by a "helm" shell
 * script written here: the password on stdin only, the chart landed in the cache, a cached chart
 * reused without a run, one run for many threads pulling one chart, failures, and the private
 * directory removed afterwards.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testdir.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "kube/kubeconfig.h"
#include "templates/helm_pull.h"

#define PASSWORD "pa55-word-for-tests"
#define CHART    "echo chart-bytes > \"$d/web-1.2.3.tgz\""

static char dir[] = "/tmp/test-helm-pull-XXXXXX";

static const struct helm_source OCI = {.repo_url = "oci://r.example:5000/charts/web",
                                       .version = "1.2.3"};
static const struct helm_source HTTP = {
        .repo_url = "https://charts.example/stable", .chart = "web", .version = "1.2.3"};

/* @a's vector joined by spaces; caller frees. */
static char *joined(const struct helm_pull_argv *a)
{
	struct buf b = BUF_INIT(1 << 16);

	for (size_t i = 0; a->v[i] != NULL; i++)
		buf_appendf(&b, "%s%s", i ? " " : "", a->v[i]);
	return b.p;
}

/* The arguments of @step for @src, joined; caller frees. */
static char *args_of(enum helm_pull_step step, const struct helm_source *src)
{
	struct helm_pull_argv a;

	assert_int_equal(helm_pull_build_argv(step, src, "/tmp/d", &a), 0);
	return joined(&a);
}

static void expect_args(enum helm_pull_step step, const struct helm_source *src, const char *want)
{
	char *s = args_of(step, src);

	assert_string_equal(s, want);
	assert_null(strstr(s, PASSWORD));
	free(s);
}

static void test_helm_pull__argument_vectors_hold_no_password(void **state)
{
	struct helm_source oci = OCI, http = HTTP;
	struct helm_pull_argv a;
	char *s;

	assert_int_equal(helm_pull_build_argv(HELM_PULL_LOGIN, &oci, "/tmp/d", &a), -ENOENT);
	expect_args(HELM_PULL_FETCH, &oci,
	            "helm pull oci://r.example:5000/charts/web --version 1.2.3 -d /tmp/d/out");
	assert_int_equal(helm_pull_build_argv(HELM_PULL_LOGIN, &http, "/tmp/d", &a), -ENOENT);
	expect_args(HELM_PULL_FETCH, &http,
	            "helm pull web --repo https://charts.example/stable --version 1.2.3 -d "
	            "/tmp/d/out");
	oci.username = http.username = "reader";
	oci.password = http.password = PASSWORD;
	oci.ca_pem = http.ca_pem = "CA PEM\n";
	oci.ca_pem_len = http.ca_pem_len = 7;
	expect_args(HELM_PULL_LOGIN, &oci,
	            "helm registry login r.example:5000 --username reader --password-stdin "
	            "--ca-file /tmp/d/ca.crt");
	expect_args(HELM_PULL_FETCH, &oci,
	            "helm pull oci://r.example:5000/charts/web --version 1.2.3 -d /tmp/d/out "
	            "--ca-file /tmp/d/ca.crt");
	expect_args(HELM_PULL_LOGIN, &http,
	            "helm repo add source https://charts.example/stable --username reader "
	            "--password-stdin --ca-file /tmp/d/ca.crt");
	expect_args(HELM_PULL_FETCH, &http,
	            "helm pull source/web --version 1.2.3 -d /tmp/d/out --ca-file /tmp/d/ca.crt");
	s = xasprintf("/%0*d", PATH_MAX, 0);
	assert_int_equal(helm_pull_build_argv(HELM_PULL_FETCH, &oci, s, &a), -ENAMETOOLONG);
	free(s);
}

static void test_helm_pull__the_key_is_stable_and_ignores_credentials(void **state)
{
	struct helm_source a = OCI, b = HTTP;
	char k1[HELM_PULL_KEY_LEN + 1], k2[HELM_PULL_KEY_LEN + 1];

	helm_pull_key(&a, k1);
	/* SHA-256 of "landlord helm pull v1\0" URL "\0" "" "\0" version "\0" */
	assert_string_equal(k1, "54a716d04766069a46caeee1c381af6c92de7349f45c2ea92757f106037fb1e4");
	a.username = "u", a.password = PASSWORD, a.ca_pem = "x", a.ca_pem_len = 1;
	helm_pull_key(&a, k2);
	assert_string_equal(k1, k2);
	a.version = "1.2.4";
	helm_pull_key(&a, k2);
	assert_string_not_equal(k1, k2);
	helm_pull_key(&b, k1);
	b.chart = "web2";
	helm_pull_key(&b, k2);
	assert_string_not_equal(k1, k2);
	/* the separators: "web" + "1.2.3" is not "web1" + ".2.3" */
	b.chart = "web1", b.version = ".2.3";
	helm_pull_key(&b, k2);
	assert_string_not_equal(k1, k2);
}

static void expect_refused(struct helm_source src, const char *field)
{
	char msg[HELM_MESSAGE_MAX + 1];

	assert_int_equal(helm_pull_check(&src, msg), -EINVAL);
	if (strstr(msg, field) == NULL)
		fail_msg("%s: does not name %s", msg, field);
}

static void test_helm_pull__sources_are_checked(void **state)
{
	struct helm_source s = HTTP;
	char msg[HELM_MESSAGE_MAX + 1];

	assert_int_equal(helm_pull_check(&OCI, msg), 0);
	assert_int_equal(helm_pull_check(&HTTP, msg), 0);
	s.repo_url = "http://127.0.0.1:8080";
	assert_int_equal(helm_pull_check(&s, msg), 0);
	expect_refused((struct helm_source){.repo_url = "ftp://x/y", .chart = "c", .version = "1"},
	               "repoUrl: must start with");
	expect_refused((struct helm_source){.chart = "c", .version = "1"}, "repoUrl: required");
	expect_refused((struct helm_source){.repo_url = "https:///x", .chart = "c", .version = "1"},
	               "repoUrl: names no host");
	expect_refused((struct helm_source){.repo_url = "oci://host", .version = "1"},
	               "repoUrl: an oci:// reference");
	expect_refused(
	        (struct helm_source){.repo_url = "https://h/x\n", .chart = "c", .version = "1"},
	        "repoUrl: holds");
	expect_refused((struct helm_source){.repo_url = "oci://h/c", .chart = "c", .version = "1"},
	               "chart: not with an oci://");
	expect_refused((struct helm_source){.repo_url = "https://h", .version = "1"},
	               "chart: required");
	expect_refused(
	        (struct helm_source){.repo_url = "https://h", .chart = "--debug", .version = "1"},
	        "chart: may not start");
	expect_refused(
	        (struct helm_source){.repo_url = "https://h", .chart = "a/b", .version = "1"},
	        "chart: holds \"/\"");
	expect_refused((struct helm_source){.repo_url = "https://h", .chart = "c", .version = ""},
	               "version: required");
	expect_refused((struct helm_source){.repo_url = "oci://h/c", .version = "1\r"},
	               "version: holds");
	s = HTTP;
	s.username = "u";
	expect_refused(s, "credentials: a username and a password go together");
	s.password = "p\nq";
	expect_refused(s, "password: empty, or holds a line break");
	s.password = PASSWORD, s.username = "-u";
	expect_refused(s, "username: may not start");
	s.username = "u", s.ca_pem = "", s.ca_pem_len = 0;
	expect_refused(s, "ca.crt");
	s.ca_pem = "x", s.ca_pem_len = 1;
	assert_int_equal(helm_pull_check(&s, msg), 0);
}

static void expect_class(const char *stderr_text, int want)
{
	int got = helm_pull_classify(stderr_text, strlen(stderr_text));

	if (got != want)
		fail_msg("%s: %d, not %d", stderr_text, got, want);
}

/* Helm 4.3.1's own messages, as the e2e suites' registry and chart repository make it say. */
static void test_helm_pull__helms_messages_are_classified(void **state)
{
	expect_class("Error: authenticating to \"127.0.0.1:36755\": GET "
	             "\"https://127.0.0.1:36755/v2/\": response status code 401: unauthorized: "
	             "authentication required\n",
	             -EACCES);
	expect_class(
	        "Error: failed to perform \"FetchReference\" on source: GET "
	        "\"https://127.0.0.1:36755/v2/charts/hello/manifests/0.1.0\": basic credential "
	        "not found\n",
	        -EACCES);
	expect_class(
	        "Error: looks like \"http://127.0.0.1:42717\" is not a valid chart repository "
	        "or cannot be reached: failed to fetch http://127.0.0.1:42717/index.yaml : 401 "
	        "Unauthorized\n",
	        -EACCES);
	expect_class("Error: failed to fetch http://127.0.0.1:42717/hello-0.1.0.tgz : 401 "
	             "Unauthorized\n",
	             -EACCES);
	expect_class("Error: GET \"https://r/v2/\": response status code 403: denied\n", -EACCES);
	expect_class("Error: failed to perform \"FetchReference\" on source: "
	             "127.0.0.1:36755/charts/hello:9.9.9: not found\n",
	             -ENOENT);
	expect_class("Error: chart \"hello\" matching 9.9.9 not found in source index. (try 'helm "
	             "repo update'): no chart version found for hello-9.9.9\n",
	             -ENOENT);
	expect_class("Error: chart \"nope\" matching 0.1.0 not found in source index. (try 'helm "
	             "repo update'): no chart name found\n",
	             -ENOENT);
	expect_class("Error: chart \"hello\" version \"9.9.9\" not found in http://127.0.0.1:34173 "
	             "repository\n",
	             -ENOENT);
	expect_class("Error: looks like \"http://127.0.0.1:4043/sub\" is not a valid chart "
	             "repository or cannot be reached: failed to fetch "
	             "http://127.0.0.1:4043/sub/index.yaml : 404 File not found\n",
	             -ENOENT);
	expect_class("Error: looks like \"http://127.0.0.1:1\" is not a valid chart repository or "
	             "cannot be reached: Get \"http://127.0.0.1:1/index.yaml\": dial tcp "
	             "127.0.0.1:1: connect: connection refused\n",
	             -EIO);
	expect_class("Error: open /tmp/o2/hello-0.1.0.tgz2864202079: no such file or directory\n",
	             -EIO);
	/* the last Error: line counts; a warning before it does not */
	expect_class("WARNING: 401 unauthorized once\nError: tls: certificate signed by unknown "
	             "authority\n",
	             -EIO);
	expect_class("", -EIO);
	expect_class("segfault: not found", -ENOENT); /* no Error: line: the last line */
}

/* @path gets @text. */
static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A cache in @dir/cache pulling with a runner of the script @body (as "helm"). */
static void cache_of(struct helm_pull_cache *c, struct helm_runner *r, const char *body)
{
	char *path = xasprintf("%s/helm", dir), *cache = xasprintf("%s/cache", dir);
	struct kcfg cfg = {.server = "https://127.0.0.1:6443"};

	put(path, body);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(helm_runner_init(r, path, &cfg, 4, 20000, NULL), 0);
	assert_int_equal(helm_pull_cache_init(c, cache, r, NULL), 0);
	free(path);
	free(cache);
}

/* The script: logs its arguments, environment and stdin into @dir/log; `pull` sleeps @sleep,
 * then runs @chart_cmd, which writes into its -d directory, $d. */
static char *script(const char *sleep, const char *chart_cmd)
{
	return xasprintf("#!/bin/sh\n{ echo \"ARGS $*\"; /usr/bin/env; echo \"STDIN $(/bin/cat)\"; "
	                 "} >> %s/log\n"
	                 "if [ \"$1\" = pull ]; then\n"
	                 "  while [ $# -gt 0 ]; do [ \"$1\" = -d ] && d=\"$2\"; shift; done\n"
	                 "  /bin/sleep %s; %s\n"
	                 "fi\n",
	                 dir, sleep, chart_cmd);
}

/* Lines of @dir/log starting with @prefix. */
static int log_lines(const char *prefix, struct buf *got)
{
	char *log = xasprintf("%s/log", dir);
	int n = 0;

	buf_reset(got);
	if (buf_read_file(got, log, false) == 0) {
		buf_append(got, "", 1);
		for (const char *p = got->p; (p = strstr(p, prefix)) != NULL; p++)
			n += p == got->p || p[-1] == '\n';
	}
	unlink(log);
	free(log);
	return n;
}

/* How many entries the directory @path holds. */
static int entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void test_helm_pull__a_pull_lands_once_with_the_password_on_stdin(void **state)
{
	char *tmp = xasprintf("%s/tmp", dir), *body = script("0", CHART);
	struct helm_source src = OCI;
	struct helm_pull_cache c;
	struct helm_runner r;
	struct helm_result res;
	struct buf got = BUF_INIT(1 << 16);
	char path[PATH_MAX], key[HELM_PULL_KEY_LEN + 1], *want;
	const char *at;
	struct stat st;

	assert_int_equal(mkdir(tmp, 0700), 0);
	setenv("TMPDIR", tmp, 1);
	cache_of(&c, &r, body);
	src.username = "reader", src.password = PASSWORD, src.ca_pem = "CA", src.ca_pem_len = 2;
	assert_int_equal(helm_pull(&c, &src, path, &res), 0);
	assert_int_equal(res.outcome, HELM_OK);
	helm_pull_key(&src, key);
	want = xasprintf("%s/cache/%s.tgz", dir, key);
	assert_string_equal(path, want);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, strlen("chart-bytes\n"));
	assert_int_equal(log_lines("ARGS ", &got), 2);
	assert_non_null(strstr(got.p, "ARGS registry login r.example:5000 --username reader"));
	assert_non_null(strstr(got.p, "PATH=/nonexistent\n"));
	at = strstr(got.p, "STDIN " PASSWORD "\n"); /* on stdin, and nowhere else */
	assert_non_null(at);
	assert_ptr_equal(strstr(got.p, PASSWORD), at + 6);
	assert_null(strstr(at + 7, PASSWORD));
	assert_int_equal(entries(tmp), 0); /* the pull's directory is gone */
	helm_result_release(&res);
	/* cached: no run at all */
	assert_int_equal(helm_pull(&c, &src, path, &res), 0);
	assert_string_equal(path, want);
	assert_int_equal(log_lines("ARGS ", &got), 0);
	helm_result_release(&res);
	helm_pull_cache_release(&c);
	helm_runner_release(&r);
	buf_release(&got);
	unsetenv("TMPDIR");
	free(want);
	free(body);
	free(tmp);
}

struct puller {
	struct helm_pull_cache *c;
	const struct helm_source *src;
	struct helm_result res;
	char path[PATH_MAX];
	int rc;
};

static void *pull_thread(void *arg)
{
	struct puller *p = arg;

	p->rc = helm_pull(p->c, p->src, p->path, &p->res);
	return NULL;
}

/* @n threads pull @src at once; every one gets @want_rc. */
static void pull_together(struct helm_pull_cache *c, const struct helm_source *src, int n,
                          int want_rc)
{
	struct puller p[8];
	pthread_t t[8];

	for (int i = 0; i < n; i++) {
		p[i] = (struct puller){.c = c, .src = src};
		assert_int_equal(pthread_create(&t[i], NULL, pull_thread, &p[i]), 0);
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(p[i].rc, want_rc);
		assert_string_equal(p[i].path, p[0].path);
		assert_string_equal(p[i].res.message, p[0].res.message);
		helm_result_release(&p[i].res);
	}
}

static void test_helm_pull__many_threads_one_run(void **state)
{
	char *body = script("0.3", CHART);
	struct helm_source a = HTTP, b = HTTP;
	struct helm_pull_cache c;
	struct helm_runner r;
	struct buf got = BUF_INIT(1 << 16);

	cache_of(&c, &r, body);
	b.version = "2.0.0";
	pull_together(&c, &a, 8, 0);
	assert_int_equal(log_lines("ARGS pull web --repo", &got), 1);
	pull_together(&c, &b, 8, 0);
	assert_int_equal(log_lines("ARGS pull web --repo", &got), 1);
	pull_together(&c, &a, 8, 0);
	assert_int_equal(log_lines("ARGS ", &got), 0);
	helm_pull_cache_release(&c);
	helm_runner_release(&r);
	buf_release(&got);
	free(body);
}

static void test_helm_pull__failures(void **state)
{
	struct helm_source src = HTTP;
	struct helm_pull_cache c;
	struct helm_runner r;
	struct helm_result res;
	char path[PATH_MAX], *body;

	src.version = "3.0.0"; /* not cached by the tests before */
	cache_of(&c, &r,
	         "#!/bin/sh\necho 'Error: failed to fetch http://h/web-1.2.3.tgz : 401 "
	         "Unauthorized' >&2\nexit 1\n");
	pull_together(&c, &src, 4, -EACCES);
	assert_int_equal(helm_pull(&c, &src, path, &res), -EACCES);
	assert_int_equal(res.outcome, HELM_FAILED);
	assert_string_equal(res.message,
	                    "failed to fetch http://h/web-1.2.3.tgz : 401 Unauthorized");
	assert_string_equal(path, "");
	helm_result_release(&res);
	src.version = "-1";
	assert_int_equal(helm_pull(&c, &src, path, &res), -EINVAL);
	assert_int_equal(res.outcome, HELM_NOT_STARTED);
	assert_string_equal(res.message, "chart source: version: may not start with \"-\"");
	helm_result_release(&res);
	helm_pull_cache_release(&c);
	helm_runner_release(&r);
	/* helm says ok but leaves no chart; then a chart over the limit (sparse) */
	body = script("0", "echo x > \"$d/notes.txt\"");
	cache_of(&c, &r, body);
	src.version = "3.0.1";
	assert_int_equal(helm_pull(&c, &src, path, &res), -EIO);
	assert_string_equal(res.message, "helm pull left no single chart archive");
	helm_result_release(&res);
	helm_pull_cache_release(&c);
	helm_runner_release(&r);
	free(body);
	src.version = "3.0.2";
	body = script("0", "/usr/bin/truncate -s 65M \"$d/web-1.2.3.tgz\"");
	cache_of(&c, &r, body);
	assert_int_equal(helm_pull(&c, &src, path, &res), -EFBIG);
	assert_string_equal(res.message, "the chart is larger than 64 MiB");
	assert_int_equal(entries(c.dir), 3); /* the 3 charts of the tests before, nothing else */
	helm_result_release(&res);
	helm_pull_cache_release(&c);
	helm_runner_release(&r);
	free(body);
}

static void test_helm_pull__the_cache_directory(void **state)
{
	struct helm_runner r;
	struct helm_pull_cache c;
	struct kcfg cfg = {.server = "https://127.0.0.1:6443"};
	char *sub = xasprintf("%s/made", dir), *file = xasprintf("%s/file", dir);
	struct ll_err err;
	struct stat st;

	assert_int_equal(helm_runner_init(&r, "/bin/true", &cfg, 1, 1000, NULL), 0);
	assert_int_equal(helm_pull_cache_init(&c, sub, &r, NULL), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	helm_pull_cache_release(&c);
	assert_int_equal(helm_pull_cache_init(&c, "relative", &r, &err), -EINVAL);
	put(file, "x");
	assert_int_equal(helm_pull_cache_init(&c, file, &r, &err), -ENOTDIR);
	helm_runner_release(&r);
	free(sub);
	free(file);
}

static int setup(void **state)
{
	return testdir_setup(dir);
}

static int teardown(void **state)
{
	return testdir_teardown(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_helm_pull__argument_vectors_hold_no_password),
	        cmocka_unit_test(test_helm_pull__the_key_is_stable_and_ignores_credentials),
	        cmocka_unit_test(test_helm_pull__sources_are_checked),
	        cmocka_unit_test(test_helm_pull__helms_messages_are_classified),
	        cmocka_unit_test(test_helm_pull__a_pull_lands_once_with_the_password_on_stdin),
	        cmocka_unit_test(test_helm_pull__many_threads_one_run),
	        cmocka_unit_test(test_helm_pull__failures),
	        cmocka_unit_test(test_helm_pull__the_cache_directory),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
