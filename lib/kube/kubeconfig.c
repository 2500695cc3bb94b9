/* kubeconfig.c - where the API server is and how to authenticate (see kubeconfig.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libfyaml.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "kube/kubeconfig.h"

#define KCFG_FILE_MAX (16u << 20) /* a kubeconfig file */
#define KCFG_REF_MAX  (4u << 20)  /* a file it references: PEM bundle, token */
#define KCFG_NS_MAX   4096u       /* the in-cluster namespace file */
#define KCFG_SA_DIR   "/var/run/secrets/kubernetes.io/serviceaccount"

/* One kubeconfig being read: where it came from and which entry is being read, for messages. */
struct ld {
	const char *src;      /* kubeconfig path or "(buffer)" */
	const char *base_dir; /* relative paths resolve here; NULL leaves them relative */
	char who[160];        /* e.g. `user "bob"`, or "" at the top level */
	struct ll_err *err;
};

static int fail(const struct ld *ld, int rc, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(const struct ld *ld, int rc, const char *fmt, ...)
{
	char msg[LL_ERR_MSG_MAX];
	va_list ap;

	if (ld->err == NULL)
		return rc;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ll_err_set(ld->err, rc, "kubeconfig %s: %s%s%s", ld->src, ld->who,
	                  ld->who[0] ? ": " : "", msg);
}

static void set_who(struct ld *ld, const char *kind, const char *name)
{
	if (kind)
		snprintf(ld->who, sizeof(ld->who), "%s \"%s\"", kind, name);
	else
		ld->who[0] = '\0';
}

/*
 * Read all of @path into @out (whose cap bounds the size). @flags are extra open(2) flags.
 * Return: 0, -EMSGSIZE past the cap, or -errno.
 */
static const char *read_error(int rc)
{
	return rc == -EMSGSIZE ? "file too large" : strerror(-rc);
}

/* A file the kubeconfig names: never a blocking read (a FIFO path fails instead of hanging). */
static int read_ref(const struct ld *ld, const char *key, const char *path, struct buf *out)
{
	int rc;

	buf_init(out, KCFG_REF_MAX);
	rc = buf_read_file(out, path, false);
	if (rc == 0 && out->len == 0)
		rc = fail(ld, -EINVAL, "%s \"%s\": file is empty", key, path);
	else if (rc)
		rc = fail(ld, -EIO, "%s \"%s\": %s", key, path, read_error(rc));
	if (rc)
		buf_release(out);
	return rc;
}

static char *resolve_path(const struct ld *ld, const char *path)
{
	if (path[0] == '/' || ld->base_dir == NULL)
		return xstrdup(path);
	return xasprintf("%s/%s", ld->base_dir, path);
}

/* Decode standard base64 (line breaks allowed, padding required). Zero bytes out is an error. */
static int b64_decode(const char *in, char **out, size_t *out_len)
{
	size_t len = strlen(in);
	EVP_ENCODE_CTX *ctx = EVP_ENCODE_CTX_new();
	unsigned char *p = xmalloc(len / 4 * 3 + 4);
	int n1 = 0, n2 = 0, rc = -EINVAL;

	if (ctx == NULL)
		goto out;
	EVP_DecodeInit(ctx);
	if (EVP_DecodeUpdate(ctx, p, &n1, (const unsigned char *)in, (int)len) < 0)
		goto out;
	if (EVP_DecodeFinal(ctx, p + n1, &n2) < 0 || n1 + n2 == 0)
		goto out;
	p[n1 + n2] = '\0';
	*out = (char *)p;
	*out_len = (size_t)(n1 + n2);
	p = NULL;
	rc = 0;
out:
	EVP_ENCODE_CTX_free(ctx);
	free(p);
	return rc;
}

/* --- the YAML tree --- */

/* Value of @key in mapping @map with aliases followed; an unresolvable alias comes back as is. */
static struct fy_node *lookup(struct fy_node *map, const char *key)
{
	struct fy_node *v = fy_node_mapping_lookup_value_by_simple_key(map, key, FY_NT);
	struct fy_node *r = v && fy_node_is_alias(v) ? fy_node_resolve_alias(v) : NULL;

	return r ? r : v;
}

static bool is_null(struct fy_node *fyn)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	const char *s;
	size_t len, i;

	if (fyn == NULL)
		return true;
	if (!fy_node_is_scalar(fyn) || fy_node_get_style(fyn) != FYNS_PLAIN)
		return false;
	s = fy_node_get_scalar(fyn, &len);
	for (i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (len == strlen(nulls[i]) && memcmp(s, nulls[i], len) == 0)
			return true;
	return false;
}

/* Text of a scalar; NULL for an alias that did not resolve or a non-scalar. */
static const char *scalar_text(struct fy_node *fyn, size_t *len)
{
	if (!fy_node_is_scalar(fyn) || fy_node_is_alias(fyn))
		return NULL;
	return fy_node_get_scalar(fyn, len);
}

/* String field: *out is a copy, or NULL when absent, null or empty. */
static int get_str(const struct ld *ld, struct fy_node *map, const char *key, char **out)
{
	struct fy_node *v = lookup(map, key);
	const char *s;
	size_t len;

	*out = NULL;
	if (is_null(v))
		return 0;
	s = scalar_text(v, &len);
	if (s == NULL || memchr(s, '\0', len))
		return fail(ld, -EINVAL, "%s is not a string", key);
	if (len)
		*out = xstrndup(s, len);
	return 0;
}

static int get_bool(const struct ld *ld, struct fy_node *map, const char *key, bool *out)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	struct fy_node *v = lookup(map, key);
	const char *s;
	size_t len, i;

	*out = false;
	if (is_null(v))
		return 0;
	s = scalar_text(v, &len);
	for (i = 0; s && fy_node_get_style(v) == FYNS_PLAIN && i < sizeof(yes) / sizeof(yes[0]);
	     i++) {
		if (len == strlen(yes[i]) && memcmp(s, yes[i], len) == 0) {
			*out = true;
			return 0;
		}
		if (len == strlen(no[i]) && memcmp(s, no[i], len) == 0)
			return 0;
	}
	return fail(ld, -EINVAL, "%s is not a boolean", key);
}

/* Entry @name of the list @list_key ("clusters"): *out is its @kind ("cluster") mapping. */
static int find_named(struct ld *ld, struct fy_node *root, const char *list_key, const char *kind,
                      const char *name, struct fy_node **out)
{
	struct fy_node *list = lookup(root, list_key), *item, *v;
	const char *s;
	void *iter = NULL;
	size_t len;

	set_who(ld, NULL, NULL);
	if (!is_null(list) && !fy_node_is_sequence(list))
		return fail(ld, -EINVAL, "%s is not a list", list_key);
	while (list && (item = fy_node_sequence_iterate(list, &iter)) != NULL) {
		if (fy_node_is_alias(item))
			item = fy_node_resolve_alias(item);
		if (item == NULL || !fy_node_is_mapping(item))
			continue;
		v = lookup(item, "name");
		s = v ? scalar_text(v, &len) : NULL;
		if (s == NULL || len != strlen(name) || memcmp(s, name, len) != 0)
			continue;
		set_who(ld, kind, name);
		*out = lookup(item, kind);
		if (*out == NULL || !fy_node_is_mapping(*out))
			return fail(ld, -EINVAL, "%s is missing or not a mapping", kind);
		return 0;
	}
	return fail(ld, -EINVAL, "%s \"%s\" not found", kind, name);
}

/* PEM from @data_key (base64; wins, as in client-go) or else from the file @file_key names. */
static int load_pem(const struct ld *ld, struct fy_node *map, const char *data_key,
                    const char *file_key, char **pem, size_t *pem_len)
{
	char *data = NULL, *file = NULL, *path = NULL;
	struct buf b;
	int rc;

	rc = get_str(ld, map, data_key, &data);
	if (rc)
		goto out;
	if (data) {
		if (b64_decode(data, pem, pem_len))
			rc = fail(ld, -EINVAL, "%s is not valid base64", data_key);
		goto out;
	}
	rc = get_str(ld, map, file_key, &file);
	if (rc || file == NULL)
		goto out;
	path = resolve_path(ld, file);
	rc = read_ref(ld, file_key, path, &b);
	if (rc)
		goto out;
	*pem_len = b.len;
	*pem = buf_detach(&b);
out:
	free(data);
	free(file);
	free(path);
	return rc;
}

/* Default a missing scheme to https and drop trailing slashes, so callers append "/api". */
static char *normalise_server(const char *s)
{
	char *url = strstr(s, "://") ? xstrdup(s) : xasprintf("https://%s", s);
	size_t len = strlen(url);

	while (len > 0 && url[len - 1] == '/')
		url[--len] = '\0';
	return url;
}

static int load_cluster(struct ld *ld, struct fy_node *root, const char *name, struct kcfg *out)
{
	struct fy_node *c;
	char *server = NULL;
	int rc;

	rc = find_named(ld, root, "clusters", "cluster", name, &c);
	if (rc == 0)
		rc = get_str(ld, c, "server", &server);
	if (rc == 0 && server == NULL)
		rc = fail(ld, -EINVAL, "server is not set");
	if (rc)
		goto out;
	out->server = normalise_server(server);
	rc = get_bool(ld, c, "insecure-skip-tls-verify", &out->insecure);
	if (rc == 0)
		rc = get_str(ld, c, "tls-server-name", &out->tls_server_name);
	if (rc == 0)
		rc = load_pem(ld, c, "certificate-authority-data", "certificate-authority",
		              &out->ca_pem, &out->ca_pem_len);
out:
	free(server);
	return rc;
}

/* Credentials landlord cannot use; ignoring them would silently change who we act as. */
static int reject_unsupported(const struct ld *ld, struct fy_node *u)
{
	static const struct {
		const char *key, *what;
	} bad[] = {
	        {"exec", "exec credential plugins"},
	        {"auth-provider", "auth-provider plugins"},
	        {"username", "basic authentication (username/password)"},
	        {"password", "basic authentication (username/password)"},
	        {"as", "impersonation"},
	        {"as-uid", "impersonation"},
	        {"as-groups", "impersonation"},
	        {"as-user-extra", "impersonation"},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!is_null(lookup(u, bad[i].key)))
			return fail(ld, -EINVAL,
			            "%s: %s not supported; use a client certificate or a token",
			            bad[i].key, bad[i].what);
	return 0;
}

/* tokenFile: checked readable now (as client-go does) unless a static token is also set. */
static int load_token_file(const struct ld *ld, struct fy_node *u, struct kcfg *out)
{
	char *file = NULL;
	struct buf b;
	int rc;

	rc = get_str(ld, u, "tokenFile", &file);
	if (rc || file == NULL)
		goto out;
	out->token_file = resolve_path(ld, file);
	if (out->token == NULL) {
		rc = read_ref(ld, "tokenFile", out->token_file, &b);
		if (rc == 0)
			buf_release(&b);
	}
out:
	free(file);
	return rc;
}

static int load_user(struct ld *ld, struct fy_node *root, const char *name, struct kcfg *out)
{
	struct fy_node *u;
	int rc;

	rc = find_named(ld, root, "users", "user", name, &u);
	if (rc == 0)
		rc = reject_unsupported(ld, u);
	if (rc == 0)
		rc = load_pem(ld, u, "client-certificate-data", "client-certificate",
		              &out->cert_pem, &out->cert_pem_len);
	if (rc == 0)
		rc = load_pem(ld, u, "client-key-data", "client-key", &out->key_pem,
		              &out->key_pem_len);
	if (rc == 0 && (out->cert_pem == NULL) != (out->key_pem == NULL))
		rc = fail(ld, -EINVAL, "client certificate and client key must be set together");
	if (rc == 0)
		rc = get_str(ld, u, "token", &out->token);
	if (rc == 0)
		rc = load_token_file(ld, u, out);
	return rc;
}

/* The context named @want, or current-context: its cluster (required), user and namespace. */
static int load_context(struct ld *ld, struct fy_node *root, const char *want, char **cluster,
                        char **user, struct kcfg *out)
{
	char *name = NULL;
	struct fy_node *ctx;
	int rc = 0;

	if (want && want[0])
		name = xstrdup(want);
	else
		rc = get_str(ld, root, "current-context", &name);
	if (rc == 0 && name == NULL)
		rc = fail(ld, -EINVAL, "no context selected and current-context is not set");
	if (rc == 0)
		rc = find_named(ld, root, "contexts", "context", name, &ctx);
	if (rc == 0)
		rc = get_str(ld, ctx, "cluster", cluster);
	if (rc == 0 && *cluster == NULL)
		rc = fail(ld, -EINVAL, "cluster is not set");
	if (rc == 0)
		rc = get_str(ld, ctx, "user", user);
	if (rc == 0)
		rc = get_str(ld, ctx, "namespace", &out->namespace);
	free(name);
	return rc;
}

static int yaml_error(const struct ld *ld, struct fy_diag *diag)
{
	struct fy_diag_error *e;
	void *iter = NULL;

	while ((e = fy_diag_errors_iterate(diag, &iter)) != NULL)
		if (e->type == FYET_ERROR)
			return fail(ld, -EINVAL, "invalid YAML at line %d column %d: %s", e->line,
			            e->column, e->msg);
	return fail(ld, -EINVAL, "no YAML document");
}

/* Build the document; diagnostics are collected for the message instead of going to stderr. */
static int parse_yaml(const struct ld *ld, const char *yaml, size_t len, struct fy_document **out)
{
	struct fy_diag_cfg dcfg;
	struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG};
	struct fy_diag *diag;
	struct fy_node *root;
	int rc = 0;

	*out = NULL;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	diag = fy_diag_create(&dcfg);
	if (diag == NULL)
		return fail(ld, -ENOMEM, "cannot create a YAML diagnostic object");
	fy_diag_set_collect_errors(diag, true);
	pcfg.diag = diag;
	*out = fy_document_build_from_string(&pcfg, yaml, len);
	root = *out ? fy_document_root(*out) : NULL;
	if (*out == NULL)
		rc = yaml_error(ld, diag);
	else if (root == NULL || !fy_node_is_mapping(root))
		rc = fail(ld, -EINVAL, "top level is not a mapping");
	if (rc) {
		fy_document_destroy(*out);
		*out = NULL;
	}
	fy_diag_destroy(diag);
	return rc;
}

static int load_yaml(struct ld *ld, const char *yaml, size_t len, const char *context,
                     struct kcfg *out)
{
	struct fy_document *fyd = NULL;
	char *cluster = NULL, *user = NULL;
	struct fy_node *root;
	json_t *text = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->source = xstrdup(ld->src);
	if (len > KCFG_FILE_MAX) {
		rc = fail(ld, -EINVAL, "larger than %u bytes", KCFG_FILE_MAX);
		goto out;
	}
	/*
	 * libfyaml 0.7.12 can loop forever on invalid UTF-8 (upstream issue #101), so validate
	 * first. jansson's string constructor checks UTF-8 and keeps a NUL-terminated copy, which
	 * the parser reads; it must outlive the document.
	 */
	text = json_stringn(yaml, len);
	if (text == NULL) {
		rc = fail(ld, -EINVAL, "not valid UTF-8");
		goto out;
	}
	rc = parse_yaml(ld, json_string_value(text), json_string_length(text), &fyd);
	if (rc)
		goto out;
	root = fy_document_root(fyd);
	rc = load_context(ld, root, context, &cluster, &user, out);
	if (rc == 0)
		rc = load_cluster(ld, root, cluster, out);
	if (rc == 0 && user)
		rc = load_user(ld, root, user, out);
out:
	if (rc)
		kcfg_release(out);
	fy_document_destroy(fyd);
	json_decref(text);
	free(cluster);
	free(user);
	return rc;
}

int kcfg_load_buf(const char *yaml, size_t len, const char *base_dir, const char *context,
                  struct kcfg *out, struct ll_err *err)
{
	struct ld ld = {.src = "(buffer)", .base_dir = base_dir, .err = err};

	return load_yaml(&ld, yaml, len, context, out);
}

/* -ENOENT only when the kubeconfig itself is missing, so callers can try the next source. */
static int file_error_code(int rc)
{
	if (rc == -ENOENT)
		return -ENOENT;
	return rc == -EMSGSIZE ? -EINVAL : -EIO;
}

int kcfg_load_file(const char *path, const char *context, struct kcfg *out, struct ll_err *err)
{
	struct ld ld = {.src = path, .err = err};
	struct buf b = BUF_INIT(KCFG_FILE_MAX);
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
	int rc;

	memset(out, 0, sizeof(*out));
	ld.base_dir = dir; /* "" for a file in "/", which still yields "/x" */
	rc = buf_read_file(&b, path, true);
	if (rc)
		rc = fail(&ld, file_error_code(rc), "%s", read_error(rc));
	else
		rc = load_yaml(&ld, buf_cstr(&b), b.len, context, out);
	buf_release(&b);
	free(dir);
	return rc;
}

/* The namespace file, trimmed; a missing file leaves *out NULL. */
static int read_namespace(const char *path, char **out)
{
	struct buf b = BUF_INIT(KCFG_NS_MAX);
	int rc = buf_read_file(&b, path, false);

	*out = NULL;
	while (b.len > 0 && strchr(" \t\r\n", b.p[b.len - 1]))
		b.p[--b.len] = '\0';
	if (rc == 0 && b.len > 0)
		*out = buf_detach(&b);
	buf_release(&b);
	return rc == -ENOENT ? 0 : rc;
}

/* ca.crt; a missing file means the system trust store, as in client-go. */
static int read_ca(const char *path, struct kcfg *out)
{
	struct buf b = BUF_INIT(KCFG_REF_MAX);
	int rc = buf_read_file(&b, path, false);

	if (rc == 0 && b.len > 0) {
		out->ca_pem_len = b.len;
		out->ca_pem = buf_detach(&b);
	}
	buf_release(&b);
	return rc == -ENOENT ? 0 : rc;
}

int kcfg_load_incluster(const char *sa_dir, struct kcfg *out, struct ll_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *ca = NULL, *ns = NULL;
	struct buf b = BUF_INIT(KCFG_REF_MAX);
	int rc;

	memset(out, 0, sizeof(*out));
	if (sa_dir == NULL)
		sa_dir = KCFG_SA_DIR;
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return ll_err_set(err, -ENOENT,
		                  "in-cluster: KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT "
		                  "is not set");
	out->source = xstrdup("in-cluster");
	out->token_file = xasprintf("%s/token", sa_dir);
	ca = xasprintf("%s/ca.crt", sa_dir);
	ns = xasprintf("%s/namespace", sa_dir);
	/* Without a token this is not a usable in-cluster setup: the next source gets a turn. */
	rc = buf_read_file(&b, out->token_file, false);
	if (rc) {
		rc = ll_err_set(err, rc == -ENOENT ? -ENOENT : -EIO, "in-cluster: %s: %s",
		                out->token_file, read_error(rc));
		goto out;
	}
	rc = read_ca(ca, out);
	if (rc) {
		rc = ll_err_set(err, -EIO, "in-cluster: %s: %s", ca, read_error(rc));
		goto out;
	}
	rc = read_namespace(ns, &out->namespace);
	if (rc) {
		rc = ll_err_set(err, -EIO, "in-cluster: %s: %s", ns, read_error(rc));
		goto out;
	}
	/* IPv6 literals need brackets in a URL, as net.JoinHostPort adds them. */
	out->server =
	        xasprintf(strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
out:
	if (rc)
		kcfg_release(out);
	buf_release(&b);
	free(ca);
	free(ns);
	return rc;
}

/* The first existing file of the colon-separated $KUBECONFIG; -ENOENT when none exists. */
static int load_env_list(const char *list, const char *context, struct kcfg *out,
                         struct ll_err *err)
{
	const char *p = list, *end;
	char *path;
	int rc = -ENOENT;

	while (rc == -ENOENT && p && *p) {
		end = strchrnul(p, ':');
		if (end > p) {
			path = xstrndup(p, (size_t)(end - p));
			rc = kcfg_load_file(path, context, out, err);
			free(path);
		}
		p = *end ? end + 1 : end;
	}
	return rc;
}

int kcfg_load_default(const char *explicit_path, const char *context, struct kcfg *out,
                      struct ll_err *err)
{
	const char *home = getenv("HOME");
	char *path;
	int rc;

	if (explicit_path && explicit_path[0])
		return kcfg_load_file(explicit_path, context, out, err);
	rc = load_env_list(getenv("KUBECONFIG"), context, out, err);
	if (rc != -ENOENT)
		return rc;
	rc = kcfg_load_incluster(NULL, out, err);
	if (rc != -ENOENT)
		return rc;
	if (home && home[0]) {
		path = xasprintf("%s/.kube/config", home);
		rc = kcfg_load_file(path, context, out, err);
		free(path);
		if (rc != -ENOENT)
			return rc;
	}
	memset(out, 0, sizeof(*out));
	return ll_err_set(err, -ENOENT,
	                  "no kubeconfig: no --kubeconfig, no existing file in $KUBECONFIG, not "
	                  "in a cluster, no ~/.kube/config");
}

void kcfg_release(struct kcfg *c)
{
	if (c == NULL)
		return;
	free(c->server);
	free(c->ca_pem);
	free(c->tls_server_name);
	free(c->cert_pem);
	free(c->key_pem);
	free(c->token);
	free(c->token_file);
	free(c->namespace);
	free(c->source);
	memset(c, 0, sizeof(*c));
}
