/*
 * helm_run.h - one helm command for one release in one namespace, as one identity (issue 14,
 * points 3 and 4; docs/helm.md "Running helm").
 *
 * A struct helm_runner holds what every run shares: the Helm 4 binary, where the API server is
 * (landlord's own server URL and CA, never its credentials), the time-out and a proc_group that
 * bounds how many helm processes run at once. helm_upgrade(), helm_status() and helm_uninstall()
 * each run one helm command for a struct helm_release: a chart (a file or directory on this
 * filesystem: a chart's `path` now, the pull cache's file later), values, and the bearer token
 * of the identity it runs as (kc_token_request() for ti.<ns>.editor and the like).
 *
 * Invariants:
 * - The token never appears in helm's argument vector or environment: it is written into a
 *   kubeconfig file of mode 0600 in a directory of mode 0700 private to the run (mkdtemp under
 *   $TMPDIR or /tmp), with the values file (0600) and Helm's HELM_CACHE_HOME, HELM_CONFIG_HOME
 *   and HELM_DATA_HOME. The directory is removed after the run, whatever its outcome; its files
 *   are unlinked, not overwritten: on journaled, copy-on-write or tmpfs-swapped storage an
 *   overwrite erases nothing reliably, the directory is readable only by landlord's user, and the
 *   token dies after 10 minutes anyway. In-memory copies landlord makes are zeroed.
 * - helm's environment is exactly HOME (the run's directory), PATH=/nonexistent (helm starts no
 *   program: no plugins, no post-renderer), the three HELM_* directories and, with a
 *   kube_cache_dir, KUBECACHEDIR; nothing inherited.
 * - Never --wait, --rollback-on-failure (--atomic), --create-namespace or --take-ownership; helm's
 *   own --timeout is the runner's time-out less 30 s (at least half of it), so a slow hook
 *   normally ends as a failed release before the process is killed.
 * - Every release installed carries the label landlord.dev/digest=<helm_digest()> on Helm's
 *   release record, the digest of exactly the chart bytes and values helm was given.
 * - Output is capped (HELM_OUTPUT_MAX each of stdout and stderr; stderr keeps its tail, where
 *   Helm's "Error:" line is); a result's message is at most HELM_MESSAGE_MAX bytes of valid UTF-8.
 *
 * Metrics: landlord_helm_processes (helm processes running or starting now),
 * landlord_helm_processes_peak (the most at once since start), landlord_helm_runs_total{verb,
 * outcome}.
 *
 * Thread-safety: a runner is shared by many threads once initialised; each run is independent.
 */
#ifndef LANDLORD_HELM_RUN_H
#define LANDLORD_HELM_RUN_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/proc.h"

struct kcfg;
struct ll_err;

#define HELM_CONCURRENCY_DEFAULT 4
#define HELM_TIMEOUT_MS_DEFAULT  (5 * 60 * 1000)
#define HELM_OUTPUT_MAX          (64u << 10) /* bytes kept of each of stdout and stderr */
#define HELM_MESSAGE_MAX         256         /* bytes of a result's message */
#define HELM_MESSAGE_KEPT        240         /* of Helm's own: room for "helm uninstall: " */
#define HELM_DIGEST_LEN          60          /* hex: a label value holds at most 63 */
#define HELM_LABEL_DIGEST        "landlord.dev/digest"
#define HELM_CHART_BYTES_MAX     (64u << 20) /* a chart's files, hashed, at most */

struct helm_runner {
	char *helm;   /* absolute path of the Helm 4 binary */
	char *server; /* the API server's URL */
	char *ca_pem; /* its CA bundle, or NULL: the system's trust store */
	size_t ca_pem_len;
	bool insecure;           /* insecure-skip-tls-verify, as landlord's own config says */
	char *tls_server_name;   /* or NULL */
	int64_t timeout_ms;      /* each run is killed after it */
	struct proc_group group; /* every run; at most the concurrency at once */
	int peak;                /* the most helm processes at once (under the group's lock) */
	/* or NULL: a directory of landlord's own where helm keeps its API discovery cache
	 * (KUBECACHEDIR), shared by runs: a run does not ask the API server for every group and
	 * version again. No secret is in it. Set by the caller, which owns it. */
	const char *kube_cache_dir;
};

/* One release and the identity it runs as. Everything borrowed for the call. */
struct helm_release {
	const char *name;     /* the release: a DNS label of at most 53 bytes */
	const char *ns;       /* its namespace */
	const char *chart;    /* helm_upgrade(): absolute path of a chart directory or archive */
	const json_t *values; /* helm_upgrade(): an object, or NULL for none */
	const json_t *set;    /* helm_upgrade(): [{name, value, forceString}] (--set), or NULL */
	const char *digest;   /* helm_upgrade(): helm_release_digest() of the above */
	long revision;        /* helm_rollback(): the revision to return to */
	bool force;           /* helm_upgrade(): --force-conflicts (take fields back: drift) */
	const char *token;    /* the identity's bearer token: a secret */
};

enum helm_outcome {
	HELM_OK,          /* helm exited 0 */
	HELM_FAILED,      /* helm exited otherwise: its message */
	HELM_TIMED_OUT,   /* killed at the runner's time-out, or cancelled */
	HELM_NOT_STARTED, /* no run: busy group, bad input, no private directory... */
};

struct helm_result {
	enum helm_outcome outcome;
	char message[HELM_MESSAGE_MAX + 1]; /* "" when ok; Helm's error or what went wrong */
	struct buf out;                     /* helm's stdout (capped); owned */
};

/* What `helm get metadata -o json` says of a release's last revision. */
struct helm_release_status {
	char status[32];                  /* "deployed", "failed", "pending-upgrade"... */
	long revision;                    /* from 1 */
	char chart_version[129];          /* the chart's version */
	char digest[HELM_DIGEST_LEN + 1]; /* its landlord.dev/digest label, "" when none */
};

/**
 * helm_runner_init() - a runner for the binary @helm (absolute), the API server of @cfg (its
 * server, CA and TLS settings are copied; its credentials never), at most @concurrency runs at
 * once, each killed after @timeout_ms (> 0). Return: 0, or -EINVAL with @err.
 */
int helm_runner_init(struct helm_runner *r, const char *helm, const struct kcfg *cfg,
                     int concurrency, int64_t timeout_ms, struct ll_err *err);
/**
 * helm_runner_release() - kill what still runs, wait for it, free. No helm_*() call may be in
 * progress or start (the workers are joined): to stop runs under way, close the group and kill
 * its runs instead (proc_group_set_open(), proc_group_kill_all()).
 */
void helm_runner_release(struct helm_runner *r);

/**
 * helm_digest() - SHA-256, its first 240 bits in hex (a label value), over the chart @path
 * (a file's bytes, or a directory's files in bytewise order of their relative paths, each with its
 * path and size; symbolic links are not followed and other special files refused) and then @values
 * as canonical JSON (sorted keys, compact). Stable across runs and hosts. Return: 0, or -errno with
 * @err.
 */
int helm_digest(const char *path, const json_t *values, char out[HELM_DIGEST_LEN + 1],
                struct ll_err *err);
/**
 * helm_release_digest() - helm_digest() of @rel's chart and values, and then, when @rel->set is
 * a non-empty array, of it too (canonical JSON): what helm_upgrade() labels the release with.
 */
int helm_release_digest(const struct helm_release *rel, char out[HELM_DIGEST_LEN + 1],
                        struct ll_err *err);

/**
 * helm_upgrade() - `helm upgrade --install` of @rel. helm_status() - its last revision's
 * status, from `helm get metadata` (small, unlike `helm status`, which lists every object), into
 * @st when ok. helm_uninstall() - `helm uninstall`. Each fills @res (helm_result_release()
 * afterwards). Return: 0 when helm exited 0; -ENOENT when helm says the release does not exist
 * (status, uninstall); -EIO when helm failed; -ETIMEDOUT when it was killed (time-out, or
 * proc_group_kill_all()); another -errno when it did not start: a run waits for a free slot while
 * the runner runs its concurrency, -ECANCELED once its group is closed, -EINVAL without a token.
 */
int helm_upgrade(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res);
/**
 * helm_install() - `helm install`: the first install of a release landlord has no records of.
 * Unlike `upgrade --install`, helm refuses a release name in use (helm_name_in_use()): a release
 * made by someone else a moment earlier is never upgraded from. Return as helm_upgrade().
 */
int helm_install(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res);
/** helm_name_in_use() - whether failed @res says the release already existed. */
bool helm_name_in_use(const struct helm_result *res);
int helm_status(struct helm_runner *r, const struct helm_release *rel,
                struct helm_release_status *st /* OUT */, struct helm_result *res);
int helm_uninstall(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res);
/**
 * helm_rollback() - `helm rollback` of @rel to @rel->revision (helm makes it a new revision).
 * Return as helm_uninstall().
 */
int helm_rollback(struct helm_runner *r, const struct helm_release *rel, struct helm_result *res);
void helm_result_release(struct helm_result *res);

/* ---- the pure parts, for the runs and their tests ---- */

enum helm_verb { HELM_UPGRADE, HELM_STATUS, HELM_UNINSTALL, HELM_ROLLBACK, HELM_INSTALL };

#define HELM_SET_MAX 64 /* setValues entries (the CRD's bound) */

/* An argument vector and the strings it points into; helm_argv_release() frees its sets. */
struct helm_argv {
	char *v[32 + 2 * HELM_SET_MAX];
	char kubeconfig[PATH_MAX], values[PATH_MAX];
	char timeout[32];
	char labels[HELM_DIGEST_LEN + 32];
	char revision[24];
	char *set[HELM_SET_MAX]; /* "name=value" of each setValues entry; owned */
};

/**
 * helm_build_argv() - the arguments of @verb for @rel, whose files are in @dir, with helm's own
 * --timeout derived from @timeout_ms; helm_argv_release() afterwards, whatever the return.
 * setValues go as --set or --set-string (forceString) "name=value" (entries that are not
 * {name: string, value: string} are skipped; the CRD allows none). Never reads @rel->token.
 * Return: 0, -ENAMETOOLONG, or -E2BIG past HELM_SET_MAX setValues.
 */
int helm_build_argv(enum helm_verb verb, const struct helm_release *rel, const char *dir,
                    int64_t timeout_ms, struct helm_argv *out /* OUT */);
void helm_argv_release(struct helm_argv *a);
/**
 * helm_error_message() - Helm's message in its stderr @err (@len bytes): the text of its last
 * line starting "Error: ", else its last non-blank line, valid UTF-8 as tpl_clip() makes it.
 * Helm nests its causes ("UPGRADE FAILED: ...: <the API server's or a webhook's words>"), so a
 * line longer than HELM_MESSAGE_KEPT bytes keeps its end, the innermost cause: "..." and its last
 * bytes, HELM_MESSAGE_KEPT in all (a caller's "helm <verb>: " still fits a status message).
 */
void helm_error_message(const char *err, size_t len, char out[HELM_MESSAGE_MAX + 1]);
/**
 * helm_judge() - what a helm process's run means, into @res: @rc and @err from proc_run() (a
 * run that did not start: HELM_NOT_STARTED, its -errno), else @pr (its stdout moved into
 * @res): HELM_OK and 0, HELM_TIMED_OUT and -ETIMEDOUT (killed or cancelled), or HELM_FAILED
 * with Helm's message and -EIO.
 */
int helm_judge(int rc, struct proc_result *pr, const struct ll_err *err, struct helm_result *res);
/** helm_parse_status() - `helm get metadata -o json` output into @st. Return: 0 or -EPROTO. */
int helm_parse_status(const char *json, size_t len, struct helm_release_status *st /* OUT */);

/* ---- the private directory, shared with helm_binary.c ---- */

/** helm_private_dir() - a new directory of mode 0700 for one run; NULL with errno set. */
char *helm_private_dir(void);
/** helm_remove_dir() - remove @dir and everything in it (symbolic links not followed). */
void helm_remove_dir(const char *dir);
/**
 * helm_write_private() - @len bytes of @data into @dir/@name, a new file of mode 0600 (never
 * through a symbolic link, never over an existing file). Return: 0 or -errno.
 */
int helm_write_private(const char *dir, const char *name, const void *data, size_t len);
/*
 * A helm process lives a second or so: its garbage collector only runs once its heap nears
 * HELM_MEMORY_LIMIT (GOGC=off, GOMEMLIMIT), about a quarter less CPU for a small chart at ~10 MiB
 * more memory; a large chart collects as usual at the limit.
 */
#define HELM_MEMORY_LIMIT "128MiB"
#define HELM_ENV_MAX      9 /* helm_environment()'s strings and the NULL that ends them */
/**
 * helm_environment() - a run's whole environment: HOME and Helm's directories in @dir, an
 * empty PATH, the collector's settings, and KUBECACHEDIR=@kube_cache_dir unless NULL (API
 * discovery shared by the runs); helm_env_free() afterwards.
 */
void helm_environment(const char *dir, const char *kube_cache_dir,
                      char *env[HELM_ENV_MAX] /* OUT */);
void helm_env_free(char *env[HELM_ENV_MAX]);

#endif
