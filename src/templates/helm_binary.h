/*
 * helm_binary.h - the Helm binary landlord is given (--helm-binary), checked once at start.
 *
 * landlord installs charts with the real helm (issue 14), and only with Helm 4: its flags and
 * its release records are what landlord is written against. helm_binary_check() runs
 * "<path> version --template {{.Version}}" through proc.h and accepts the binary when it prints
 * a v4 version; landlord refuses to start otherwise, with the one line it returns.
 *
 * Invariants:
 * - helm runs with an argument vector (no shell) and an environment of exactly HOME,
 *   HELM_CACHE_HOME, HELM_CONFIG_HOME and HELM_DATA_HOME, all inside a directory of mode 0700
 *   made for that run and removed after it: nothing of the caller's environment (proxies,
 *   tokens, KUBECONFIG, a user's Helm repositories or plugins) reaches it.
 * - Bounded: at most @timeout_ms, then its process group is killed; its output is capped.
 * - Messages are one line that names the flag and the path, and says what to do.
 * Thread-safe; no state between calls.
 */
#ifndef LANDLORD_TEMPLATES_HELM_BINARY_H
#define LANDLORD_TEMPLATES_HELM_BINARY_H

#include <stddef.h>
#include <stdint.h>

struct ll_err;

/* The Helm major version landlord is written against. */
#define HELM_BINARY_MAJOR 4
/* How long landlord waits for "helm version" at start. */
#define HELM_BINARY_CHECK_TIMEOUT_MS 10000
/* Room for the version helm prints (e.g. "v4.3.1") and its NUL. */
#define HELM_BINARY_VERSION_MAX 64

/**
 * helm_binary_check() - whether @path is a Helm 4 binary that runs.
 * @version: OUT, on success the version it printed, e.g. "v4.3.1".
 * Return: 0; -EINVAL for a path that is not absolute; the errno of starting it (-ENOENT,
 * -EACCES, -ENOEXEC...); -EIO when it failed or timed out; -EPROTO when it printed no version;
 * -ENOTSUP for another major version, e.g. "--helm-binary /x: helm v3.15.0, landlord needs
 * Helm 4 (v4.x): give a Helm 4 binary". @err gets the line.
 */
int helm_binary_check(const char *path, int64_t timeout_ms,
                      char version[HELM_BINARY_VERSION_MAX] /* OUT */, struct ll_err *err);

#endif
