/*
 * kubeconfig.h - where the API server is and how to authenticate to it.
 *
 * Sources, in the order kcfg_load_default() tries them: an explicit path (--kubeconfig), the
 * first existing file of $KUBECONFIG (colon-separated), in-cluster service-account files
 * ($KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount), then
 * ~/.kube/config. A kubeconfig file is YAML (read with libfyaml). Supported: clusters with
 * server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name; users with
 * client-certificate(-data)/client-key(-data), token, tokenFile; contexts with namespace.
 * Relative file paths resolve against the kubeconfig's directory. exec/auth-provider users are
 * rejected with a clear error. All PEM material is loaded into memory at load time, except the
 * bearer token file, which is re-read by the client (tokens rotate).
 */
#ifndef LANDLORD_KUBECONFIG_H
#define LANDLORD_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct ll_err;

struct kcfg {
	char *server; /* "https://127.0.0.1:6443" (no trailing slash) */
	char *ca_pem; /* CA bundle PEM, or NULL = system trust store */
	size_t ca_pem_len;
	bool insecure;         /* insecure-skip-tls-verify */
	char *tls_server_name; /* or NULL */
	char *cert_pem;        /* client certificate PEM, or NULL */
	size_t cert_pem_len;
	char *key_pem; /* client key PEM, or NULL */
	size_t key_pem_len;
	char *token;      /* static bearer token, or NULL */
	char *token_file; /* re-read on use, or NULL */
	char *namespace;  /* context namespace / in-cluster namespace, or NULL */
	char *source;     /* where this came from, for messages: a path or "in-cluster" */
};

/**
 * kcfg_load_file() - read the kubeconfig at @path using @context (NULL: current-context).
 * Return: 0; -ENOENT (no such file), -EINVAL (malformed, missing context/cluster/user,
 * unsupported auth), -EIO (the file, or one it references, cannot be read). @err names the file
 * and the field at fault. On failure *@out is zeroed (kcfg_release() on it is harmless).
 */
int kcfg_load_file(const char *path, const char *context, struct kcfg *out /* OUT */,
                   struct ll_err *err);
/** kcfg_load_buf() - as kcfg_load_file() from memory; relative paths resolve against @base_dir. */
int kcfg_load_buf(const char *yaml, size_t len, const char *base_dir, const char *context,
                  struct kcfg *out /* OUT */, struct ll_err *err);
/**
 * kcfg_load_incluster() - service-account token file, CA and namespace from @sa_dir (NULL: the
 * standard /var/run/secrets/kubernetes.io/serviceaccount) and the server from the
 * KUBERNETES_SERVICE_HOST/PORT environment variables. -ENOENT when not in a cluster.
 */
int kcfg_load_incluster(const char *sa_dir, struct kcfg *out /* OUT */, struct ll_err *err);
/** kcfg_load_default() - the search order above; @explicit_path may be NULL. */
int kcfg_load_default(const char *explicit_path, const char *context, struct kcfg *out /* OUT */,
                      struct ll_err *err);
void kcfg_release(struct kcfg *c);

#endif
