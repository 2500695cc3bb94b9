/* helm_binary.c - the Helm binary checked at start (see helm_binary.h). */
#include "templates/helm_binary.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/proc.h"
#include "templates/helm_run.h"
#include "tenancy/denial.h"

/* Bytes of helm's stdout and stderr kept: a version, or the end of its complaint. */
#define OUTPUT_KEPT 512

/* "helm version" in a private directory, removed afterwards. Return as proc_run(). */
static int run_version(const char *path, int64_t timeout_ms, struct proc_result *res,
                       struct ll_err *err)
{
	char *argv[] = {"helm", "version", "--template", "{{.Version}}", NULL};
	char *env[HELM_ENV_MAX] = {NULL};
	char *dir = helm_private_dir();
	int rc;

	if (dir == NULL)
		return ll_err_set(err, -EIO, "--helm-binary %s: no private directory for helm: %s",
		                  path, strerror(errno));
	helm_environment(dir, NULL, env);
	rc = proc_run(&(struct proc_spec){.path = path,
	                                  .argv = argv,
	                                  .envp = env,
	                                  .cwd = dir,
	                                  .timeout_ms = timeout_ms,
	                                  .out_max = OUTPUT_KEPT,
	                                  .err_max = OUTPUT_KEPT,
	                                  .err_tail = true},
	              res, err);
	helm_remove_dir(dir);
	helm_env_free(env);
	free(dir);
	return rc;
}

/* @s (@n bytes) without trailing white space is "v<major>.<rest>": its major, else -1. */
static long major_of(const char *s, size_t *n)
{
	size_t i;

	while (*n > 0 && isspace((unsigned char)s[*n - 1]))
		(*n)--;
	if (*n < 2 || *n >= HELM_BINARY_VERSION_MAX || s[0] != 'v' || !isdigit((unsigned char)s[1]))
		return -1;
	for (i = 1; i < *n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr(".+-", s[i]) == NULL)
			return -1;
	return strtol(s + 1, NULL, 10);
}

/* "--helm-binary <path>: <what>" and the end of helm's stderr (or stdout) quoted. */
static int failed(const char *path, const char *what, const struct buf *out, int rc,
                  struct ll_err *err)
{
	struct denial d;
	size_t n = out->len;

	denial_init(&d, err->msg, sizeof(err->msg));
	denial_text(&d, "--helm-binary %s: %s", path, what);
	while (n > 0 && isspace((unsigned char)out->p[n - 1]))
		n--;
	if (n > 0) {
		denial_text(&d, ": ");
		denial_quote(&d, out->p, n);
	}
	return rc;
}

/* What the run says about the binary: 0 and @version for Helm 4. */
static int judge(const char *path, const struct proc_result *res, char *version, struct ll_err *err)
{
	char summary[PROC_SUMMARY_MAX], what[PROC_SUMMARY_MAX + 32];
	size_t n = res->out.len;
	long major = res->out.p != NULL ? major_of(res->out.p, &n) : -1;

	if (!proc_result_ok(res)) {
		snprintf(what, sizeof(what), "\"helm version\" failed (%s)",
		         proc_result_summary(res, summary));
		return failed(path, what, res->err.len > 0 ? &res->err : &res->out, -EIO, err);
	}
	if (major < 0)
		return failed(path, "printed no Helm version, give a Helm 4 binary", &res->out,
		              -EPROTO, err);
	if (major != HELM_BINARY_MAJOR)
		return ll_err_set(
		        err, -ENOTSUP,
		        "--helm-binary %s: helm %.*s, landlord needs Helm %d (v%d.x): give "
		        "a Helm %d binary",
		        path, (int)n, res->out.p, HELM_BINARY_MAJOR, HELM_BINARY_MAJOR,
		        HELM_BINARY_MAJOR);
	memcpy(version, res->out.p, n);
	version[n] = '\0';
	return 0;
}

int helm_binary_check(const char *path, int64_t timeout_ms, char version[HELM_BINARY_VERSION_MAX],
                      struct ll_err *err)
{
	struct proc_result res = {0};
	struct ll_err spare;
	int rc;

	if (err == NULL)
		err = &spare;
	version[0] = '\0';
	if (path[0] != '/')
		return ll_err_set(err, -EINVAL, "--helm-binary %s: must be an absolute path", path);
	rc = run_version(path, timeout_ms, &res, err);
	if (rc < 0 && rc != -EINVAL && rc != -EIO)
		ll_err_set(err, rc, "--helm-binary %s: cannot run it: %s (%s)", path, strerror(-rc),
		           strerrorname_np(-rc) != NULL ? strerrorname_np(-rc) : "?");
	else if (rc == 0)
		rc = judge(path, &res, version, err);
	proc_result_release(&res);
	return rc;
}
