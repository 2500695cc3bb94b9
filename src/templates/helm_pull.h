/*
 * helm_pull.h - the chart pull cache: each chart version is pulled once, with `helm pull`, into
 * a file every namespace installs from (issue 14; docs/helm.md "Pulling charts").
 *
 * A struct helm_pull_cache is a directory of packaged charts, <key>.tgz, where the key is the hex
 * SHA-256 of a source's repository URL, chart and version (its credentials do not change the
 * chart). helm_pull() hands back the cached file's path, and pulls it first when it is not there:
 * `helm pull oci://...` or `helm pull CHART --repo URL`, with the borrowed runner's binary,
 * process group (its concurrency bound) and time-out. The caller reads the source's credentials
 * (a Secret's username, password and optional ca.crt) and passes their bytes; this module never
 * talks to the API server.
 *
 * Invariants:
 * - The password is never in helm's argument vector or environment: it goes on stdin to
 *   `helm registry login --password-stdin` (OCI) or `helm repo add --password-stdin` (http(s)),
 *   which write it into Helm's configuration in a directory of mode 0700 private to that pull
 *   (helm_private_dir(), helm_environment()); the CA bundle goes into a 0600 file there. The
 *   directory is removed after the pull, whatever its outcome. The username may be an argument.
 * - The cache holds only whole charts: the pulled .tgz is copied into a temporary file in the
 *   cache directory and renamed to <key>.tgz, so a reader sees the whole file or none. A chart
 *   larger than HELM_CHART_BYTES_MAX is refused and never cached.
 * - A cached file is reused without running helm. Pulls of one key are done once at a time: a
 *   caller that finds a pull of its key under way waits for it and gets its result; pulls of
 *   different keys run in parallel (up to the runner's concurrency).
 * - Inputs are checked before anything runs: an https://, http:// or oci:// URL with a host, a
 *   chart (http(s) only) and version that cannot be read as flags, no control characters.
 *
 * Thread-safety: a cache is shared by many threads between init and release.
 */
#ifndef LANDLORD_HELM_PULL_H
#define LANDLORD_HELM_PULL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include "templates/helm_run.h"

#define HELM_PULL_KEY_LEN     64         /* hex SHA-256 */
#define HELM_PULL_URL_MAX     2048       /* a source's repoUrl, as the CRD bounds it */
#define HELM_PULL_CHART_MAX   253        /* its chart */
#define HELM_PULL_VERSION_MAX 128        /* its version */
#define HELM_PULL_CA_MAX      (1u << 20) /* bytes of a CA bundle */
#define HELM_PULL_REPO_NAME   "source"   /* the repository's name in a pull's private Helm */

struct helm_pull_flight; /* a pull under way, private to helm_pull.c */

struct helm_pull_cache {
	char *dir;                        /* absolute; mode 0700 when created here */
	struct helm_runner *runner;       /* borrowed: binary, process group, time-out */
	pthread_mutex_t lock;             /* guards @flights */
	pthread_cond_t landed;            /* broadcast when a pull ends */
	struct helm_pull_flight *flights; /* the pulls under way */
};

/* Where a chart comes from. Everything borrowed for the call. */
struct helm_source {
	const char *repo_url; /* https://, http:// (with @chart) or oci://host[:port]/path/chart */
	const char *chart;    /* the chart's name in an http(s) repository; NULL with oci:// */
	const char *version;  /* its exact version */
	const char *username; /* NULL, or with @password: the repository's credentials */
	const char *password; /* a secret */
	const char *ca_pem;   /* NULL, or a CA bundle to verify the repository with */
	size_t ca_pem_len;
};

/**
 * helm_pull_cache_init() - a cache in the absolute directory @dir (created with mode 0700 when
 * missing), pulling with @runner, which must outlive the cache. Return: 0, or -errno with @err.
 */
int helm_pull_cache_init(struct helm_pull_cache *c, const char *dir, struct helm_runner *runner,
                         struct ll_err *err);
/** helm_pull_cache_release() - free @c; no helm_pull() may be under way. Cached files stay. */
void helm_pull_cache_release(struct helm_pull_cache *c);

/**
 * helm_pull() - the absolute path of @src's chart in the cache, into @path, pulled first when it
 * is not cached (see the invariants). @res is filled as the runner's functions fill it (release
 * it with helm_result_release()); its message is Helm's own on failure.
 * Return: 0; -EINVAL for a bad @src (nothing runs; @res says why); -ENOENT when Helm says the
 * chart or version does not exist; -EACCES when the repository refused the credentials (or
 * demanded some); -EFBIG for a chart over HELM_CHART_BYTES_MAX; -EIO when helm failed otherwise;
 * -ETIMEDOUT, -EBUSY, -ECANCELED as helm_upgrade(); another -errno when the cache cannot be
 * written. A caller that waited for another's pull of the same key gets that pull's return and
 * message.
 */
int helm_pull(struct helm_pull_cache *c, const struct helm_source *src, char path[PATH_MAX],
              struct helm_result *res);

/* ---- the pure parts, for the pulls and their tests ---- */

/**
 * helm_pull_check() - whether @src may be pulled (the invariants' last point). Return: 0, or
 * -EINVAL with one line in @msg that names the field.
 */
int helm_pull_check(const struct helm_source *src, char msg[HELM_MESSAGE_MAX + 1]);
/** helm_pull_key() - @src's cache key: hex SHA-256 of its URL, chart and version. */
void helm_pull_key(const struct helm_source *src, char key[HELM_PULL_KEY_LEN + 1] /* OUT */);

/* The two helm commands of a pull: logging in (only with credentials), then fetching. */
enum helm_pull_step { HELM_PULL_LOGIN, HELM_PULL_FETCH };

/* An argument vector and the strings it points into. */
struct helm_pull_argv {
	char *v[20];
	char out[PATH_MAX], ca[PATH_MAX];
	char host[HELM_PULL_URL_MAX + 1];                                /* login: host[:port] */
	char ref[sizeof(HELM_PULL_REPO_NAME) + HELM_PULL_CHART_MAX + 1]; /* fetch: source/CHART */
};

/**
 * helm_pull_build_argv() - the arguments of @step for a checked @src whose pull has the private
 * directory @dir (the chart goes to @dir/out, a CA bundle is @dir/ca.crt). Never reads
 * @src->password. Return: 0; -ENOENT when @step is HELM_PULL_LOGIN and @src has no credentials
 * (no such step); -ENAMETOOLONG.
 */
int helm_pull_build_argv(enum helm_pull_step step, const struct helm_source *src, const char *dir,
                         struct helm_pull_argv *out /* OUT */);
/**
 * helm_pull_classify() - what helm's failure means, from its stderr @err (@len bytes), by its
 * last "Error: " line: -EACCES for an authentication or authorisation failure (401, 403,
 * "unauthorized", no credential), -ENOENT for a chart, version or tag that does not exist,
 * else -EIO.
 */
int helm_pull_classify(const char *err, size_t len);

#endif
