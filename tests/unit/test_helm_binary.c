/*
 * test_helm_binary.c - the Helm binary checked at start: a v4 accepted with its version, another
 * major, a binary that cannot run, fails, hangs or prints no version refused with one line; helm
 * gets its arguments, HOME, PATH=/nonexistent and HELM_* in a private directory removed
 * afterwards, nothing else.
 * The "helm" binaries are shell scripts written here.
 */
#include <errno.h>
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

#include "base/err.h"
#include "base/mem.h"
#include "templates/helm_binary.h"

static char dir[] = "/tmp/test-helm-binary-XXXXXX";

/* An executable (mode @mode) script @name in the test's directory running @body; its path. */
static char *script(const char *name, const char *body, mode_t mode)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static int check(const char *path, int64_t timeout_ms, char *version, struct ll_err *err)
{
	return helm_binary_check(path, timeout_ms, version, err);
}

static void test_helm_binary__helm_4_is_accepted_with_its_version(void **state)
{
	char *p = script("v4", "echo v4.3.1", 0755);
	char v[HELM_BINARY_VERSION_MAX];
	struct ll_err err;

	assert_int_equal(check(p, 5000, v, &err), 0);
	assert_string_equal(v, "v4.3.1");
	free(p);
	p = script("v4b", "printf 'v4.0.0-rc.1+g0a1b2c3\\n\\n'", 0755);
	assert_int_equal(check(p, 5000, v, NULL), 0);
	assert_string_equal(v, "v4.0.0-rc.1+g0a1b2c3");
	free(p);
}

static void test_helm_binary__another_major_is_refused(void **state)
{
	char *p = script("v3", "echo v3.15.0", 0755);
	char v[HELM_BINARY_VERSION_MAX], *want;
	struct ll_err err;

	assert_int_equal(check(p, 5000, v, &err), -ENOTSUP);
	want = xasprintf(
	        "--helm-binary %s: helm v3.15.0, landlord needs Helm 4 (v4.x): give a Helm "
	        "4 binary",
	        p);
	assert_string_equal(err.msg, want);
	assert_string_equal(v, "");
	free(want);
	free(p);
	p = script("v40", "echo v40.1.0", 0755);
	assert_int_equal(check(p, 5000, v, &err), -ENOTSUP);
	free(p);
}

static void test_helm_binary__a_binary_that_cannot_run_is_named_with_the_errno(void **state)
{
	char *missing = xasprintf("%s/nope", dir), *want;
	char *plain = script("plain", "echo v4.3.1", 0644);
	char v[HELM_BINARY_VERSION_MAX];
	struct ll_err err;

	assert_int_equal(check(missing, 5000, v, &err), -ENOENT);
	want = xasprintf("--helm-binary %s: cannot run it: No such file or directory (ENOENT)",
	                 missing);
	assert_string_equal(err.msg, want);
	free(want);
	assert_int_equal(check(plain, 5000, v, &err), -EACCES);
	want = xasprintf("--helm-binary %s: cannot run it: Permission denied (EACCES)", plain);
	assert_string_equal(err.msg, want);
	free(want);
	assert_int_equal(check("bin/helm", 5000, v, &err), -EINVAL);
	assert_string_equal(err.msg, "--helm-binary bin/helm: must be an absolute path");
	free(missing);
	free(plain);
}

static void test_helm_binary__failures_hangs_and_noise_are_refused(void **state)
{
	char *fails =
	        script("fails", "echo 'Error: unknown command \"version\"' >&2; exit 1", 0755);
	char *hangs = script("hangs", "exec /bin/sleep 30", 0755);
	char *noise = script("noise", "echo 'Client: &version.Version{SemVer:\"v2.17.0\"}'", 0755);
	char v[HELM_BINARY_VERSION_MAX], *want;
	struct ll_err err;

	assert_int_equal(check(fails, 5000, v, &err), -EIO);
	want = xasprintf("--helm-binary %s: \"helm version\" failed (exit status 1 after ", fails);
	assert_memory_equal(err.msg, want, strlen(want));
	assert_non_null(strstr(err.msg, "ms): \"Error: unknown command \\\"version\\\"\""));
	free(want);
	assert_int_equal(check(hangs, 200, v, &err), -EIO);
	assert_non_null(strstr(err.msg, "timed out"));
	assert_int_equal(check(noise, 5000, v, &err), -EPROTO);
	want = xasprintf("--helm-binary %s: printed no Helm version, give a Helm 4 binary: "
	                 "\"Client: &version.Version{SemVer:\\\"v2.17.0\\\"}\"",
	                 noise);
	assert_string_equal(err.msg, want);
	free(want);
	free(fails);
	free(hangs);
	free(noise);
}

/* helm's arguments and environment, as a script writes them to @out. */
static void test_helm_binary__helm_gets_its_arguments_and_a_private_home_only(void **state)
{
	char *out = xasprintf("%s/seen", dir), *body, *p;
	char v[HELM_BINARY_VERSION_MAX], line[4][512], home[512];
	struct stat st;
	FILE *f;

	setenv("KUBECONFIG", "/etc/secret-kubeconfig", 1);
	body = xasprintf("{ echo \"$#|$1|$2|$3\"; echo \"$HOME|$(/usr/bin/stat -c %%a \"$HOME\")\";"
	                 " echo \"${HELM_CACHE_HOME#$HOME}|${HELM_CONFIG_HOME#$HOME}|"
	                 "${HELM_DATA_HOME#$HOME}\"; echo \"${KUBECONFIG-unset}|$(pwd)\"; } > %s;"
	                 " /bin/mkdir -p \"$HELM_CACHE_HOME/repository\"; echo v4.1.0",
	                 out);
	p = script("env", body, 0755);
	assert_int_equal(check(p, 5000, v, NULL), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	for (int i = 0; i < 4; i++) {
		assert_non_null(fgets(line[i], sizeof(line[i]), f));
		line[i][strcspn(line[i], "\n")] = '\0';
	}
	fclose(f);
	assert_string_equal(line[0], "3|version|--template|{{.Version}}");
	snprintf(home, sizeof(home), "%.*s", (int)strcspn(line[1], "|"), line[1]);
	assert_memory_equal(home, "/tmp/landlord-helm-", strlen("/tmp/landlord-helm-"));
	assert_string_equal(line[1] + strlen(home), "|700");
	assert_string_equal(line[2], "/cache|/config|/data");
	assert_string_equal(line[3] + strlen("unset|"), home);
	assert_memory_equal(line[3], "unset|", strlen("unset|"));
	assert_int_equal(stat(home, &st), -1); /* removed, with what helm wrote there */
	unsetenv("KUBECONFIG");
	free(out);
	free(body);
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
	        cmocka_unit_test(test_helm_binary__helm_4_is_accepted_with_its_version),
	        cmocka_unit_test(test_helm_binary__another_major_is_refused),
	        cmocka_unit_test(
	                test_helm_binary__a_binary_that_cannot_run_is_named_with_the_errno),
	        cmocka_unit_test(test_helm_binary__failures_hangs_and_noise_are_refused),
	        cmocka_unit_test(test_helm_binary__helm_gets_its_arguments_and_a_private_home_only),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
