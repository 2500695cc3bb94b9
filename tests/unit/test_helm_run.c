/*
 * test_helm_run.c - the Helm runner without a cluster: the argument vectors of upgrade, status
 * and uninstall (no token, never --wait and the like), the digest's stability, Helm's message
 * from stderr samples, `helm get metadata` parsed, and whole runs of a "helm" shell script
 * written here: its environment, its private files (modes, the token only in the kubeconfig),
 * the outcomes, and the private directory removed afterwards.
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
#include "templates/helm_run.h"

#define TOKEN  "eyJhbGciOiJSUzI1NiJ9.secret-token-for-tests.c2lnbmF0dXJl"
#define DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

static char dir[] = "/tmp/test-helm-run-XXXXXX";

static const struct helm_release REL = {.name = "web",
                                        .ns = "team-a",
                                        .chart = "/charts/web-1.2.3.tgz",
                                        .digest = DIGEST,
                                        .token = TOKEN};

/* @a's vector joined by spaces; caller frees. */
static char *joined(const struct helm_argv *a)
{
	struct buf b = BUF_INIT(1 << 16);

	for (size_t i = 0; a->v[i] != NULL; i++)
		buf_appendf(&b, "%s%s", i ? " " : "", a->v[i]);
	return b.p;
}

static void test_helm_run__argument_vectors_hold_no_secret(void **state)
{
	struct helm_argv a;
	char *s;

	assert_int_equal(helm_build_argv(HELM_UPGRADE, &REL, "/tmp/d", 300000, &a), 0);
	s = joined(&a);
	assert_string_equal(s, "helm upgrade --install web /charts/web-1.2.3.tgz -f "
	                       "/tmp/d/values.json --timeout 270000ms --history-max 10 --labels "
	                       "landlord.dev/digest=" DIGEST " -n team-a --kubeconfig "
	                       "/tmp/d/kubeconfig");
	assert_null(strstr(s, "secret-token"));
	free(s);
	assert_int_equal(helm_build_argv(HELM_STATUS, &REL, "/tmp/d", 20000, &a), 0);
	s = joined(&a);
	assert_string_equal(s, "helm get metadata web -o json -n team-a --kubeconfig "
	                       "/tmp/d/kubeconfig");
	free(s);
	assert_int_equal(helm_build_argv(HELM_UNINSTALL, &REL, "/tmp/d", 20000, &a), 0);
	s = joined(&a);
	assert_string_equal(s, "helm uninstall web -n team-a --kubeconfig /tmp/d/kubeconfig");
	free(s);
	/* a short time-out: helm gets half of it */
	assert_int_equal(helm_build_argv(HELM_UPGRADE, &REL, "/tmp/d", 20000, &a), 0);
	assert_string_equal(a.timeout, "10000ms");
	s = xasprintf("/%0*d", PATH_MAX, 0);
	assert_int_equal(helm_build_argv(HELM_UPGRADE, &REL, s, 20000, &a), -ENAMETOOLONG);
	free(s);
}

static void test_helm_run__the_environment_is_home_path_helm_dirs_and_collector_only(void **state)
{
	char *env[HELM_ENV_MAX];

	helm_environment("/tmp/d", NULL, env);
	assert_string_equal(env[0], "HOME=/tmp/d");
	assert_string_equal(env[1], "PATH=/nonexistent");
	assert_string_equal(env[2], "HELM_CACHE_HOME=/tmp/d/cache");
	assert_string_equal(env[3], "HELM_CONFIG_HOME=/tmp/d/config");
	assert_string_equal(env[4], "HELM_DATA_HOME=/tmp/d/data");
	assert_string_equal(env[5], "GOGC=off");
	assert_string_equal(env[6], "GOMEMLIMIT=" HELM_MEMORY_LIMIT);
	assert_null(env[7]);
	helm_env_free(env);
	assert_null(env[0]);
	/* with a shared discovery cache */
	helm_environment("/tmp/d", "/tmp/k", env);
	assert_string_equal(env[7], "KUBECACHEDIR=/tmp/k");
	assert_null(env[HELM_ENV_MAX - 1]);
	helm_env_free(env);
}

/* A first install is `helm install`: no --install, no history, no taking fields back. */
static void test_helm_run__a_first_install_is_helm_install(void **state)
{
	struct helm_release rel = REL;
	struct helm_argv a;
	char *s;

	rel.force = true;
	assert_int_equal(helm_build_argv(HELM_INSTALL, &rel, "/tmp/d", 300000, &a), 0);
	s = joined(&a);
	assert_string_equal(s, "helm install web /charts/web-1.2.3.tgz -f /tmp/d/values.json "
	                       "--timeout 270000ms --labels landlord.dev/digest=" DIGEST
	                       " -n team-a --kubeconfig /tmp/d/kubeconfig");
	free(s);
	helm_argv_release(&a);
}

/* Helm's words for a release that existed before its install. */
static void test_helm_run__a_name_in_use_is_told_apart(void **state)
{
	struct helm_result res = {.outcome = HELM_FAILED};

	snprintf(res.message, sizeof(res.message), "%s",
	         "INSTALLATION FAILED: cannot re-use a name that is still in use");
	assert_true(helm_name_in_use(&res));
	snprintf(res.message, sizeof(res.message), "%s",
	         "INSTALLATION FAILED: release: already exists");
	assert_true(helm_name_in_use(&res));
	snprintf(res.message, sizeof(res.message), "%s",
	         "INSTALLATION FAILED: Unable to continue with install: ConfigMap \"web\" in "
	         "namespace \"team-a\" exists and cannot be imported into the current release");
	assert_false(helm_name_in_use(&res));
	res.outcome = HELM_OK;
	snprintf(res.message, sizeof(res.message), "%s",
	         "cannot re-use a name that is still in use");
	assert_false(helm_name_in_use(&res));
}

/* @path gets @text. */
static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_helm_run__the_digest_is_stable_and_covers_chart_and_values(void **state)
{
	char *chart = xasprintf("%s/chart", dir), *sub = xasprintf("%s/chart/templates", dir);
	char *file = xasprintf("%s/chart/templates/cm.yaml", dir), *link;
	char d1[HELM_DIGEST_LEN + 1], d2[HELM_DIGEST_LEN + 1], d3[HELM_DIGEST_LEN + 1];
	json_t *v1 = json_pack("{s:i,s:s}", "a", 1, "b", "x");
	json_t *v2 = json_pack("{s:s,s:i}", "b", "x", "a", 1);
	struct ll_err err;

	assert_int_equal(mkdir(chart, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	put(file, "kind: ConfigMap\n");
	assert_int_equal(helm_digest(chart, v1, d1, &err), 0);
	assert_int_equal(strlen(d1), HELM_DIGEST_LEN);
	assert_int_equal(helm_digest(chart, v2, d2, &err), 0);
	assert_string_equal(d1, d2); /* the keys' order does not matter */
	assert_int_equal(helm_digest(chart, NULL, d3, &err), 0);
	assert_string_not_equal(d1, d3);
	put(file, "kind: ConfigMap \n");
	assert_int_equal(helm_digest(chart, v1, d2, &err), 0);
	assert_string_not_equal(d1, d2);
	assert_int_equal(helm_digest(file, v1, d3, &err), 0); /* an archive: its bytes */
	assert_string_not_equal(d2, d3);
	link = xasprintf("%s/chart/link", dir);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	assert_int_equal(helm_digest(chart, v1, d3, &err), -EINVAL);
	assert_string_equal(d3, "");
	assert_int_equal(unlink(link), 0);
	assert_int_equal(helm_digest("/nonexistent/chart", v1, d3, &err), -ENOENT);
	json_decref(v1);
	json_decref(v2);
	free(link);
	free(file);
	free(sub);
	free(chart);
}

static void test_helm_run__set_values_and_rollback_arguments(void **state)
{
	json_t *set =
	        json_pack("[{s:s,s:s},{s:s,s:s,s:b},{s:s}]", "name", "image.tag", "value", "v1,2",
	                  "name", "team", "value", "007", "forceString", 1, "name", "skipped");
	struct helm_release rel = REL;
	struct helm_argv a;
	char *s;

	rel.set = set;
	assert_int_equal(helm_build_argv(HELM_UPGRADE, &rel, "/tmp/d", 300000, &a), 0);
	s = joined(&a);
	assert_non_null(strstr(s, "--labels landlord.dev/digest=" DIGEST
	                          " --set image.tag=v1,2 --set-string team=007 -n team-a"));
	free(s);
	helm_argv_release(&a);
	rel.revision = 3;
	assert_int_equal(helm_build_argv(HELM_ROLLBACK, &rel, "/tmp/d", 300000, &a), 0);
	s = joined(&a);
	assert_string_equal(s, "helm rollback web 3 --timeout 270000ms --history-max 10 -n team-a "
	                       "--kubeconfig /tmp/d/kubeconfig");
	free(s);
	helm_argv_release(&a);
	json_decref(set);
	set = json_array();
	for (int i = 0; i <= HELM_SET_MAX; i++)
		json_array_append_new(set, json_pack("{s:s,s:s}", "name", "a", "value", "b"));
	rel.set = set;
	assert_int_equal(helm_build_argv(HELM_UPGRADE, &rel, "/tmp/d", 300000, &a), -E2BIG);
	helm_argv_release(&a);
	json_decref(set);
}

static void test_helm_run__the_release_digest_covers_set_values(void **state)
{
	char *chart = xasprintf("%s/setchart", dir);
	char d1[HELM_DIGEST_LEN + 1], d2[HELM_DIGEST_LEN + 1], d3[HELM_DIGEST_LEN + 1];
	json_t *set = json_pack("[{s:s,s:s}]", "name", "a", "value", "b");
	struct helm_release rel = {.chart = chart};
	struct ll_err err;

	put(chart, "archive bytes");
	assert_int_equal(helm_digest(chart, NULL, d1, &err), 0);
	assert_int_equal(helm_release_digest(&rel, d2, &err), 0);
	assert_string_equal(d1, d2); /* no setValues: the digest of chart and values */
	rel.set = set;
	assert_int_equal(helm_release_digest(&rel, d3, &err), 0);
	assert_string_not_equal(d2, d3);
	json_decref(set);
	free(chart);
}

static void expect_message(const char *err, const char *want)
{
	char out[HELM_MESSAGE_MAX + 1];

	helm_error_message(err, strlen(err), out);
	assert_string_equal(out, want);
}

static void test_helm_run__helms_message_is_its_last_error_line(void **state)
{
	char *lng = xasprintf("Error: %0300d\n", 7), out[HELM_MESSAGE_MAX + 1];
	char utf[400] = "Error: ", as[221] = "", nested[300], want[300];

	expect_message("walk.go:75: found symbolic link\nError: INSTALL FAILED: clusterroles is "
	               "forbidden\n",
	               "INSTALL FAILED: clusterroles is forbidden");
	expect_message("Error: first\r\nnoise\r\nError: second\r\n\r\n", "second");
	expect_message("no error line here\nlast words  \n\n", "last words");
	expect_message("", "");
	expect_message(" \n\t\n", "");
	/* a long message keeps its end, the innermost cause, after "..." */
	helm_error_message(lng, strlen(lng), out);
	assert_int_equal(strlen(out), HELM_MESSAGE_KEPT);
	assert_memory_equal(out, "...000", 6);
	assert_string_equal(out + HELM_MESSAGE_KEPT - 2, "07");
	memset(as, 'a', 220);
	snprintf(nested, sizeof(nested), "Error: UPGRADE FAILED: %s: is forbidden\n", as);
	snprintf(want, sizeof(want), "...D: %s: is forbidden", as); /* 250 bytes: the last 237 */
	expect_message(nested, want);
	for (size_t i = strlen(utf); i + 3 < sizeof(utf) - 1; i += 2)
		memcpy(utf + i, "\xc3\xa9", 2); /* é */
	helm_error_message(utf, strlen(utf), out);
	assert_true(strlen(out) <= HELM_MESSAGE_KEPT && strlen(out) >= HELM_MESSAGE_KEPT - 1);
	assert_memory_equal(out, "...\xc3\xa9", 5); /* cut on a character boundary */
	assert_memory_equal(out + strlen(out) - 2, "\xc3\xa9", 2);
	free(lng);
}

static void test_helm_run__metadata_is_parsed(void **state)
{
	const char *ok =
	        "{\"name\":\"web\",\"chart\":\"hello\",\"version\":\"0.1.0\",\"appVersion\":"
	        "\"1.0\",\"labels\":{\"landlord.dev/digest\":\"" DIGEST "\",\"owner\":"
	        "\"helm\"},\"namespace\":\"a\",\"revision\":3,\"status\":\"deployed\"}";
	struct helm_release_status st;

	assert_int_equal(helm_parse_status(ok, strlen(ok), &st), 0);
	assert_string_equal(st.status, "deployed");
	assert_int_equal(st.revision, 3);
	assert_string_equal(st.chart_version, "0.1.0");
	assert_string_equal(st.digest, DIGEST);
	assert_int_equal(helm_parse_status("{\"status\":\"deployed\"}", 21, &st), -EPROTO);
	assert_int_equal(helm_parse_status("not json", 8, &st), -EPROTO);
	assert_string_equal(st.status, "");
}

/* A runner of the script @body (as "helm" in the test's directory). */
static char *runner_of(struct helm_runner *r, const char *name, const char *body,
                       int64_t timeout_ms)
{
	char *path = xasprintf("%s/%s", dir, name);
	struct kcfg cfg = {
	        .server = "https://127.0.0.1:6443", .ca_pem = "CA PEM\n", .ca_pem_len = 7};

	put(path, body);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(helm_runner_init(r, path, &cfg, 2, timeout_ms, NULL), 0);
	return path;
}

/* The test's TMPDIR holds nothing: every run's directory is gone. */
static void assert_tmp_empty(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *e;
	int entries = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	assert_int_equal(entries, 0);
}

static void test_helm_run__a_run_gets_private_files_and_no_secret_in_argv_or_env(void **state)
{
	char *tmp = xasprintf("%s/tmp", dir), *log = xasprintf("%s/log", dir), *body, *p;
	struct helm_runner r;
	struct helm_result res;
	struct buf got = BUF_INIT(1 << 16);
	json_t *values = json_pack("{s:s}", "k", "v");

	assert_int_equal(mkdir(tmp, 0700), 0);
	setenv("TMPDIR", tmp, 1);
	body = xasprintf("#!/bin/sh\n{ echo \"$*\"; /usr/bin/env; cd \"$HOME\";"
	                 " /usr/bin/stat -c '%%n %%a' . kubeconfig values.json ca.crt;"
	                 " /bin/cat values.json; echo; /bin/cat kubeconfig; } > %s\n",
	                 log);
	p = runner_of(&r, "helm", body, 20000);
	r.kube_cache_dir = "/var/cache/landlord-kube"; /* shared by runs: API discovery only */
	assert_int_equal(helm_upgrade(&r,
	                              &(struct helm_release){.name = "web",
	                                                     .ns = "a",
	                                                     .chart = "/c",
	                                                     .digest = DIGEST,
	                                                     .token = TOKEN,
	                                                     .values = values},
	                              &res),
	                 0);
	assert_int_equal(res.outcome, HELM_OK);
	assert_int_equal(buf_read_file(&got, log, false), 0);
	buf_append(&got, "", 1);
	/* the token is in the kubeconfig only: the last line */
	assert_non_null(strstr(got.p, "\"token\":\"" TOKEN "\""));
	assert_true(strstr(got.p, "secret-token") > strstr(got.p, "\"users\""));
	assert_non_null(strstr(got.p, "\n. 700\nkubeconfig 600\nvalues.json 600\nca.crt 600\n"));
	assert_non_null(strstr(got.p, "\n{\"k\":\"v\"}\n"));
	assert_non_null(strstr(got.p, "PATH=/nonexistent\n"));
	assert_non_null(strstr(got.p, "KUBECACHEDIR=/var/cache/landlord-kube\n"));
	assert_null(strstr(got.p, "KUBECONFIG"));
	assert_tmp_empty(tmp);
	helm_result_release(&res);
	helm_runner_release(&r);
	buf_release(&got);
	json_decref(values);
	unsetenv("TMPDIR");
	free(body);
	free(p);
	free(log);
	free(tmp);
}

static void test_helm_run__outcomes(void **state)
{
	struct helm_runner r;
	struct helm_result res;
	struct helm_release_status st;
	struct helm_release rel = REL;
	char *p;

	p = runner_of(&r, "fails", "#!/bin/sh\necho 'Error: UPGRADE FAILED: boom' >&2\nexit 1\n",
	              20000);
	assert_int_equal(helm_upgrade(&r, &rel, &res), -EIO);
	assert_int_equal(res.outcome, HELM_FAILED);
	assert_string_equal(res.message, "UPGRADE FAILED: boom");
	helm_result_release(&res);
	helm_runner_release(&r);
	free(p);
	p = runner_of(&r, "gone", "#!/bin/sh\necho 'Error: release: not found' >&2\nexit 1\n",
	              20000);
	assert_int_equal(helm_status(&r, &rel, &st, &res), -ENOENT);
	helm_result_release(&res);
	assert_int_equal(helm_uninstall(&r, &rel, &res), -ENOENT);
	helm_result_release(&res);
	helm_runner_release(&r);
	free(p);
	p = runner_of(&r, "hangs", "#!/bin/sh\nexec /bin/sleep 30\n", 300);
	assert_int_equal(helm_upgrade(&r, &rel, &res), -ETIMEDOUT);
	assert_int_equal(res.outcome, HELM_TIMED_OUT);
	helm_result_release(&res);
	rel.token = NULL; /* no identity: nothing runs */
	assert_int_equal(helm_upgrade(&r, &rel, &res), -EINVAL);
	assert_int_equal(res.outcome, HELM_NOT_STARTED);
	helm_result_release(&res);
	helm_runner_release(&r);
	free(p);
}

struct busy_run {
	struct helm_runner *r;
	struct helm_result res;
	int rc;
};

static void *run_upgrade(void *arg)
{
	struct busy_run *b = arg;
	struct helm_release rel = REL;

	b->rc = helm_upgrade(b->r, &rel, &b->res);
	return NULL;
}

/*
 * Beyond the concurrency a run waits for a slot. Closing the group and killing what runs (as a
 * lost Lease does) ends the running ones and cancels the waiting one, which never starts; the
 * runner is released once no call is in progress.
 */
static void test_helm_run__beyond_the_concurrency_a_run_waits(void **state)
{
	struct helm_runner r;
	struct busy_run b[3] = {{.r = &r}, {.r = &r}, {.r = &r}};
	pthread_t t[3];
	char *p = runner_of(&r, "slow", "#!/bin/sh\nexec /bin/sleep 30\n", 3000);

	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, run_upgrade, &b[i]), 0);
	while (proc_group_running(&r.group) < 2 || proc_group_waiting(&r.group) < 1)
		usleep(2000);
	assert_int_equal(proc_group_running(&r.group), 2);
	assert_int_equal(r.peak, 2);
	proc_group_set_open(&r.group, false);
	assert_int_equal(proc_group_kill_all(&r.group), 2);
	int timed_out = 0, cancelled = 0;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		timed_out += b[i].rc == -ETIMEDOUT;
		cancelled += b[i].rc == -ECANCELED && b[i].res.outcome == HELM_NOT_STARTED;
		helm_result_release(&b[i].res);
	}
	assert_int_equal(timed_out, 2);
	assert_int_equal(cancelled, 1);
	helm_runner_release(&r);
	free(p);
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
	        cmocka_unit_test(test_helm_run__argument_vectors_hold_no_secret),
	        cmocka_unit_test(
	                test_helm_run__the_environment_is_home_path_helm_dirs_and_collector_only),
	        cmocka_unit_test(test_helm_run__a_first_install_is_helm_install),
	        cmocka_unit_test(test_helm_run__a_name_in_use_is_told_apart),
	        cmocka_unit_test(test_helm_run__the_digest_is_stable_and_covers_chart_and_values),
	        cmocka_unit_test(test_helm_run__set_values_and_rollback_arguments),
	        cmocka_unit_test(test_helm_run__the_release_digest_covers_set_values),
	        cmocka_unit_test(test_helm_run__helms_message_is_its_last_error_line),
	        cmocka_unit_test(test_helm_run__metadata_is_parsed),
	        cmocka_unit_test(
	                test_helm_run__a_run_gets_private_files_and_no_secret_in_argv_or_env),
	        cmocka_unit_test(test_helm_run__outcomes),
	        cmocka_unit_test(test_helm_run__beyond_the_concurrency_a_run_waits),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
