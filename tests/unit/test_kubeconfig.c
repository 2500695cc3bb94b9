/* test_kubeconfig.c - kubeconfig files, in-cluster configuration and the default search order. */
#include <errno.h>
#include <ftw.h>
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

#include "base/err.h"
#include "base/mem.h"
#include "kube/kubeconfig.h"

/* The kubeconfig fixture directory: $LANDLORD_TEST_DATA/kubeconfig. */
static char *fixture_dir(void)
{
	const char *root = getenv("LANDLORD_TEST_DATA");

	assert_non_null(root);
	return xasprintf("%s/kubeconfig", root);
}

static char *fixture(const char *name)
{
	char *dir = fixture_dir();
	char *p = xasprintf("%s/%s", dir, name);

	free(dir);
	return p;
}

/* Whole file; *len set. The file must exist. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	p = xmalloc((size_t)n + 1);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	p[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* Assert that @pem/@len hold exactly the bytes of fixture @name. */
static void assert_same_as_fixture(const char *pem, size_t len, const char *name)
{
	char *path = fixture(name);
	size_t want_len;
	char *want = slurp(path, &want_len);

	assert_non_null(pem);
	assert_int_equal(len, want_len);
	assert_memory_equal(pem, want, len);
	assert_int_equal(pem[len], '\0');
	free(want);
	free(path);
}

static void write_file(const char *dir, const char *name, const char *content)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(content, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	free(path);
}

static char *make_tmpdir(void)
{
	char *dir = xstrdup("/tmp/test_kubeconfig.XXXXXX");

	assert_non_null(mkdtemp(dir));
	return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tmpdir(char *dir)
{
	assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(dir);
}

/* Every test starts with no kubeconfig-related environment. */
static int clear_env(void **state)
{
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	return 0;
}

/* Load @yaml from memory, expect failure @code and an error containing @needle. */
static void expect_buf_error(const char *yaml, const char *context, int code, const char *needle)
{
	struct kcfg c;
	struct ll_err err = {""};
	int rc = kcfg_load_buf(yaml, strlen(yaml), "/base", context, &c, &err);

	if (rc != code || strstr(err.msg, needle) == NULL)
		fail_msg("rc %d (want %d), message \"%s\" (want \"%s\")", rc, code, err.msg,
		         needle);
	assert_null(c.server);
	assert_null(c.source);
	kcfg_release(&c);
}

static void test_kubeconfig__data_fields_decode_to_pem(void **state)
{
	char *path = fixture("data.yaml");
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, &err), 0);
	assert_string_equal(c.server, "https://127.0.0.1:6443");
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	assert_same_as_fixture(c.cert_pem, c.cert_pem_len, "pki/client.crt");
	assert_same_as_fixture(c.key_pem, c.key_pem_len, "pki/client.key");
	assert_string_equal(c.tls_server_name, "kubernetes.default.svc");
	assert_false(c.insecure);
	assert_null(c.token);
	assert_null(c.token_file);
	assert_string_equal(c.namespace, "team-a");
	assert_string_equal(c.source, path);
	kcfg_release(&c);
	assert_null(c.server);
	free(path);
}

static void test_kubeconfig__relative_paths_resolve_against_file_dir(void **state)
{
	char *path = fixture("relative.yaml");
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, NULL), 0);
	assert_string_equal(c.server, "https://[::1]:6443");
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	assert_same_as_fixture(c.cert_pem, c.cert_pem_len, "pki/client.crt");
	assert_same_as_fixture(c.key_pem, c.key_pem_len, "pki/client.key");
	assert_null(c.namespace);
	kcfg_release(&c);
	free(path);
}

/* The same file read from a relative path, from memory with a base_dir, and from cwd. */
static void test_kubeconfig__relative_paths_from_relative_file_and_buffer(void **state)
{
	char *dir = fixture_dir(), *cwd = getcwd(NULL, 0), *rel, *yaml;
	size_t len;
	struct kcfg c;

	assert_int_equal(chdir(dir), 0);
	assert_int_equal(kcfg_load_file("relative.yaml", NULL, &c, NULL), 0);
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	assert_string_equal(c.source, "relative.yaml");
	kcfg_release(&c);

	/* No base_dir: relative paths stay relative to the working directory. */
	yaml = slurp("relative.yaml", &len);
	assert_int_equal(kcfg_load_buf(yaml, len, NULL, NULL, &c, NULL), 0);
	assert_same_as_fixture(c.cert_pem, c.cert_pem_len, "pki/client.crt");
	assert_string_equal(c.source, "(buffer)");
	kcfg_release(&c);

	assert_int_equal(chdir("/"), 0);
	assert_int_equal(kcfg_load_buf(yaml, len, dir, NULL, &c, NULL), 0);
	assert_same_as_fixture(c.key_pem, c.key_pem_len, "pki/client.key");
	kcfg_release(&c);

	rel = xasprintf("%s/kubeconfig/relative.yaml", getenv("LANDLORD_TEST_DATA") + 1);
	assert_int_equal(kcfg_load_file(rel, NULL, &c, NULL), 0);
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	kcfg_release(&c);

	assert_int_equal(chdir(cwd), 0);
	free(rel);
	free(yaml);
	free(cwd);
	free(dir);
}

static void test_kubeconfig__token_file_is_resolved_and_not_read_into_token(void **state)
{
	char *path = fixture("relative.yaml"), *want = fixture("pki/token");
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, "robot", &c, NULL), 0);
	assert_null(c.token);
	assert_string_equal(c.token_file, want);
	assert_null(c.cert_pem);
	assert_null(c.key_pem);
	assert_string_equal(c.namespace, "bots");
	kcfg_release(&c);
	free(want);
	free(path);
}

static void test_kubeconfig__absolute_paths_are_kept(void **state)
{
	char *tmp = make_tmpdir(), *ca = fixture("pki/ca.crt"), *crt = fixture("pki/client.crt");
	char *key = fixture("pki/client.key"), *tok = fixture("pki/token"), *yaml, *path;
	struct kcfg c;

	yaml = xasprintf("clusters:\n- name: c\n  cluster:\n    server: https://h\n"
	                 "    certificate-authority: %s\n"
	                 "users:\n- name: u\n  user:\n    client-certificate: %s\n"
	                 "    client-key: '%s'\n    tokenFile: \"%s\"\n"
	                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	                 "current-context: x\n",
	                 ca, crt, key, tok);
	write_file(tmp, "config", yaml);
	path = xasprintf("%s/config", tmp);
	assert_int_equal(kcfg_load_file(path, NULL, &c, NULL), 0);
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	assert_same_as_fixture(c.cert_pem, c.cert_pem_len, "pki/client.crt");
	assert_same_as_fixture(c.key_pem, c.key_pem_len, "pki/client.key");
	assert_string_equal(c.token_file, tok);
	kcfg_release(&c);
	free(path);
	free(yaml);
	free(tok);
	free(key);
	free(crt);
	free(ca);
	rm_tmpdir(tmp);
}

static void test_kubeconfig__current_context_is_the_default(void **state)
{
	char *path = fixture("multi.yaml");
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, NULL), 0);
	assert_string_equal(c.server, "https://dev.example.com:8443");
	assert_true(c.insecure);
	assert_string_equal(c.token, "dev-token-abc");
	assert_null(c.token_file);
	assert_string_equal(c.namespace, "sandbox");
	assert_null(c.ca_pem);
	kcfg_release(&c);
	free(path);
}

static void test_kubeconfig__explicit_context_overrides_current(void **state)
{
	char *path = fixture("multi.yaml");
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, "prod", &c, NULL), 0);
	assert_string_equal(c.server, "https://prod.example.com");
	assert_false(c.insecure);
	assert_string_equal(c.token, "prod-token-xyz");
	/* With a static token present the file is recorded but not required to exist yet. */
	assert_string_equal(c.token_file, "/nonexistent/rotated-token");
	assert_null(c.namespace);
	kcfg_release(&c);

	/* A context without a user authenticates with nothing. */
	assert_int_equal(kcfg_load_file(path, "anonymous", &c, NULL), 0);
	assert_string_equal(c.server, "https://prod.example.com");
	assert_null(c.token);
	assert_null(c.token_file);
	assert_null(c.cert_pem);
	kcfg_release(&c);

	/* "" means current-context, like NULL. */
	assert_int_equal(kcfg_load_file(path, "", &c, NULL), 0);
	assert_string_equal(c.token, "dev-token-abc");
	kcfg_release(&c);
	free(path);
}

static void test_kubeconfig__data_wins_over_file(void **state)
{
	char *path = fixture("precedence.yaml");
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, &err), 0);
	assert_same_as_fixture(c.ca_pem, c.ca_pem_len, "pki/ca.crt");
	assert_same_as_fixture(c.cert_pem, c.cert_pem_len, "pki/client.crt");
	assert_same_as_fixture(c.key_pem, c.key_pem_len, "pki/client.key");
	kcfg_release(&c);
	free(path);
}

static void test_kubeconfig__missing_context_names_file_and_context(void **state)
{
	char *path = fixture("multi.yaml"), *want;
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, "foo", &c, &err), -EINVAL);
	want = xasprintf("kubeconfig %s: context \"foo\" not found", path);
	assert_string_equal(err.msg, want);
	assert_null(c.server);
	assert_null(c.source);
	free(want);
	free(path);
}

static void test_kubeconfig__missing_cluster_user_or_current_context(void **state)
{
	expect_buf_error("clusters: []\ncontexts:\n- name: a\n  context: {cluster: gone}\n"
	                 "current-context: a\n",
	                 NULL, -EINVAL, "kubeconfig (buffer): cluster \"gone\" not found");
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: https://h}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c, user: ghost}\n",
	                 "a", -EINVAL, "user \"ghost\" not found");
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: https://h}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c}\n",
	                 NULL, -EINVAL, "current-context is not set");
	expect_buf_error("contexts:\n- name: a\n  context: {user: u}\n", "a", -EINVAL,
	                 "context \"a\": cluster is not set");
	expect_buf_error("contexts:\n- name: a\n", "a", -EINVAL,
	                 "context \"a\": context is missing or not a mapping");
	expect_buf_error("clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: true}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c}\n",
	                 "a", -EINVAL, "cluster \"c\": server is not set");
	expect_buf_error("contexts: {a: b}\n", "a", -EINVAL, "contexts is not a list");
}

static void test_kubeconfig__missing_kubeconfig_is_enoent(void **state)
{
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file("/nonexistent/kubeconfig", NULL, &c, &err), -ENOENT);
	assert_string_equal(err.msg,
	                    "kubeconfig /nonexistent/kubeconfig: No such file or directory");
	assert_null(c.source);
}

static void test_kubeconfig__unreadable_file_names_user_and_path(void **state)
{
	char *path = fixture("broken-missing-file.yaml"), *crt = fixture("pki/nope.crt"), *want;
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, &err), -EIO);
	want = xasprintf("kubeconfig %s: user \"bob\": client-certificate \"%s\": No such file or "
	                 "directory",
	                 path, crt);
	assert_string_equal(err.msg, want);
	assert_null(c.server);
	free(want);
	free(crt);
	free(path);

	/* A directory cannot be read as a file (and, as root, permissions would not stop us). */
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: h, certificate-authority: /}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c}\n",
	                 "a", -EIO, "cluster \"c\": certificate-authority \"/\": Is a directory");
	/* Without a static token the token file must be readable now. */
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: h}\n"
	                 "users:\n- name: u\n  user: {tokenFile: tok}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c, user: u}\n",
	                 "a", -EIO,
	                 "user \"u\": tokenFile \"/base/tok\": No such file or directory");
}

static void test_kubeconfig__oversized_files_are_rejected(void **state)
{
	char *tmp = make_tmpdir(), *big = xasprintf("%s/big", tmp), *yaml;
	struct ll_err err = {""};
	struct kcfg c;
	FILE *f = fopen(big, "w");

	/* A sparse 17 MiB file: over the kubeconfig cap and the referenced-file cap. */
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 17 << 20), 0);
	fclose(f);
	assert_int_equal(kcfg_load_file(big, NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "file too large"));

	yaml = xasprintf("clusters:\n- name: c\n  cluster: {server: h, certificate-authority: %s}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c}\n",
	                 big);
	expect_buf_error(yaml, "a", -EIO, "file too large");
	free(yaml);

	yaml = xcalloc((17u << 20) + 1, 1);
	memset(yaml, ' ', 17u << 20);
	assert_int_equal(kcfg_load_buf(yaml, 17u << 20, NULL, NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "larger than"));
	free(yaml);
	free(big);
	rm_tmpdir(tmp);
}

static void test_kubeconfig__exec_user_rejected(void **state)
{
	char *path = fixture("broken-exec.yaml"), *want;
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, &err), -EINVAL);
	want = xasprintf("kubeconfig %s: user \"bob\": exec: exec credential plugins not "
	                 "supported; use a client certificate or a token",
	                 path);
	assert_string_equal(err.msg, want);
	assert_null(c.server);
	free(want);
	free(path);
}

static void test_kubeconfig__other_unsupported_auth_rejected(void **state)
{
	static const char *const users[][2] = {
	        {"{auth-provider: {name: gcp}}", "auth-provider: auth-provider plugins"},
	        {"{username: admin, password: secret}", "username: basic authentication"},
	        {"{password: secret}", "password: basic authentication"},
	        {"{token: t, as: system:admin}", "as: impersonation"},
	        {"{token: t, as-groups: [system:masters]}", "as-groups: impersonation"},
	};
	size_t i;

	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		char *yaml =
		        xasprintf("clusters:\n- name: c\n  cluster: {server: h}\n"
		                  "users:\n- name: carol\n  user: %s\n"
		                  "contexts:\n- name: a\n  context: {cluster: c, user: carol}\n",
		                  users[i][0]);
		char *needle = xasprintf("user \"carol\": %s", users[i][1]);

		expect_buf_error(yaml, "a", -EINVAL, needle);
		free(needle);
		free(yaml);
	}
}

static void test_kubeconfig__malformed_yaml_rejected(void **state)
{
	char *path = fixture("broken-yaml.yaml");
	struct ll_err err = {""};
	struct kcfg c;

	assert_int_equal(kcfg_load_file(path, NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "invalid YAML at line"));
	free(path);

	expect_buf_error("", NULL, -EINVAL, "kubeconfig (buffer): no YAML document");
	expect_buf_error("# only a comment\n", NULL, -EINVAL, "no YAML document");
	expect_buf_error("- a\n- b\n", NULL, -EINVAL, "top level is not a mapping");
	expect_buf_error("just text", NULL, -EINVAL, "top level is not a mapping");
	expect_buf_error("a: 1\na: 2\n", NULL, -EINVAL, "duplicate key");
	expect_buf_error("a: [1, 2\n", NULL, -EINVAL, "invalid YAML at line");
	expect_buf_error("\t- x: y\n", NULL, -EINVAL, "invalid YAML");
	/* libfyaml 0.7.12 never returns on this one; it must be refused before parsing. */
	expect_buf_error("%\xb3\xb3\xb3", NULL, -EINVAL, "kubeconfig (buffer): not valid UTF-8");
	expect_buf_error("a: \xff\n", NULL, -EINVAL, "not valid UTF-8");
}

static void test_kubeconfig__invalid_field_values_rejected(void **state)
{
	static const char *const cases[][2] = {
	        {"{server: h, insecure-skip-tls-verify: maybe}",
	         "cluster \"c\": insecure-skip-tls-verify is not a boolean"},
	        {"{server: h, insecure-skip-tls-verify: \"true\"}", "is not a boolean"},
	        {"{server: [h]}", "cluster \"c\": server is not a string"},
	        {"{server: {a: b}}", "server is not a string"},
	        {"{server: \"h\\0x\"}", "server is not a string"},
	        {"{server: h, certificate-authority-data: \"not base64!\"}",
	         "cluster \"c\": certificate-authority-data is not valid base64"},
	        {"{server: h, certificate-authority-data: aGVsbG8}", "is not valid base64"},
	        {"{server: h, certificate-authority-data: \"====\"}", "is not valid base64"},
	        {"{server: h, tls-server-name: [x]}", "tls-server-name is not a string"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *yaml = xasprintf("clusters:\n- name: c\n  cluster: %s\n"
		                       "contexts:\n- name: a\n  context: {cluster: c}\n",
		                       cases[i][0]);

		expect_buf_error(yaml, "a", -EINVAL, cases[i][1]);
		free(yaml);
	}
	/* A certificate without its key (and the reverse) is unusable. */
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: h}\n"
	                 "users:\n- name: u\n  user: {client-certificate-data: aGVsbG8=}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c, user: u}\n",
	                 "a", -EINVAL, "user \"u\": client certificate and client key");
	expect_buf_error("clusters:\n- name: c\n  cluster: {server: h}\n"
	                 "users:\n- name: u\n  user: {client-key-data: aGVsbG8=}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c, user: u}\n",
	                 "a", -EINVAL, "must be set together");
}

static void test_kubeconfig__yaml_forms_are_accepted(void **state)
{
	/* Anchors and aliases, nulls, multi-line base64, booleans in YAML 1.2 spellings. */
	static const char yaml[] = "clusters:\n"
	                           "- name: c\n"
	                           "  cluster:\n"
	                           "    server: &srv https://10.1.2.3:443\n"
	                           "    insecure-skip-tls-verify: TRUE\n"
	                           "    tls-server-name: ~\n"
	                           "    certificate-authority-data: |\n"
	                           "      aGVs\n"
	                           "      bG8=\n"
	                           "users:\n"
	                           "- &u\n"
	                           "  name: u\n"
	                           "  user: {token: *srv, client-key: null}\n"
	                           "contexts:\n"
	                           "- name: a\n"
	                           "  context: {cluster: c, user: u, namespace: ''}\n"
	                           "current-context: a\n";
	struct kcfg c;

	assert_int_equal(kcfg_load_buf(yaml, sizeof(yaml) - 1, NULL, NULL, &c, NULL), 0);
	assert_string_equal(c.server, "https://10.1.2.3:443");
	assert_string_equal(c.token, "https://10.1.2.3:443");
	assert_true(c.insecure);
	assert_null(c.tls_server_name);
	assert_int_equal(c.ca_pem_len, 5);
	assert_memory_equal(c.ca_pem, "hello", 5);
	assert_null(c.namespace);
	kcfg_release(&c);

	expect_buf_error("clusters:\n- name: c\n  cluster: {server: *nowhere}\n"
	                 "contexts:\n- name: a\n  context: {cluster: c}\n",
	                 "a", -EINVAL, "server is not a string");
}

static void write_sa_dir(const char *dir, const char *ns)
{
	write_file(dir, "token", "sa-token\n");
	write_file(dir, "ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	if (ns)
		write_file(dir, "namespace", ns);
}

static void test_kubeconfig__incluster_reads_sa_dir(void **state)
{
	char *dir = make_tmpdir(), *tok = xasprintf("%s/token", dir), *ca;
	size_t ca_len;
	struct kcfg c;

	write_sa_dir(dir, "tenant-x\n");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kcfg_load_incluster(dir, &c, NULL), 0);
	assert_string_equal(c.server, "https://10.96.0.1:443");
	assert_string_equal(c.token_file, tok);
	assert_null(c.token);
	ca = xasprintf("%s/ca.crt", dir);
	free(tok);
	tok = slurp(ca, &ca_len);
	assert_int_equal(c.ca_pem_len, ca_len);
	assert_memory_equal(c.ca_pem, tok, ca_len);
	assert_string_equal(c.namespace, "tenant-x");
	assert_string_equal(c.source, "in-cluster");
	assert_false(c.insecure);
	kcfg_release(&c);

	/* No ca.crt: the system trust store; no namespace file: no namespace. */
	assert_int_equal(unlink(ca), 0);
	free(ca);
	ca = xasprintf("%s/namespace", dir);
	assert_int_equal(unlink(ca), 0);
	assert_int_equal(kcfg_load_incluster(dir, &c, NULL), 0);
	assert_null(c.ca_pem);
	assert_null(c.namespace);
	kcfg_release(&c);
	free(ca);
	free(tok);
	rm_tmpdir(dir);
}

static void test_kubeconfig__incluster_ipv6_host_is_bracketed(void **state)
{
	char *dir = make_tmpdir();
	struct kcfg c;

	write_sa_dir(dir, NULL);
	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	assert_int_equal(kcfg_load_incluster(dir, &c, NULL), 0);
	assert_string_equal(c.server, "https://[fd00:10:96::1]:6443");
	kcfg_release(&c);
	rm_tmpdir(dir);
}

static void test_kubeconfig__incluster_without_env_or_token_is_enoent(void **state)
{
	char *dir = make_tmpdir(), *tok = xasprintf("%s/token", dir);
	struct ll_err err = {""};
	struct kcfg c;

	write_sa_dir(dir, NULL);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kcfg_load_incluster(dir, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	assert_null(c.server);

	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_int_equal(kcfg_load_incluster(dir, &c, &err), -ENOENT);

	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(unlink(tok), 0);
	assert_int_equal(kcfg_load_incluster(dir, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, tok));
	assert_null(c.source);
	assert_null(c.token_file);
	free(tok);
	rm_tmpdir(dir);
}

static void test_kubeconfig__default_explicit_path_wins(void **state)
{
	char *multi = fixture("multi.yaml"), *data = fixture("data.yaml");
	struct kcfg c;

	setenv("KUBECONFIG", data, 1);
	assert_int_equal(kcfg_load_default(multi, "prod", &c, NULL), 0);
	assert_string_equal(c.source, multi);
	assert_string_equal(c.token, "prod-token-xyz");
	kcfg_release(&c);

	/* An explicit path that does not exist is an error, not a reason to look elsewhere. */
	assert_int_equal(kcfg_load_default("/nonexistent/config", NULL, &c, NULL), -ENOENT);

	/* NULL and "" mean "not given". */
	assert_int_equal(kcfg_load_default("", NULL, &c, NULL), 0);
	assert_string_equal(c.source, data);
	kcfg_release(&c);
	free(data);
	free(multi);
}

static void test_kubeconfig__default_uses_first_existing_kubeconfig_entry(void **state)
{
	char *multi = fixture("multi.yaml"), *data = fixture("data.yaml"), *list;
	struct kcfg c;

	list = xasprintf("/nonexistent/a::%s:%s:", multi, data);
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(kcfg_load_default(NULL, NULL, &c, NULL), 0);
	assert_string_equal(c.source, multi);
	kcfg_release(&c);
	free(list);

	list = xasprintf("/nonexistent/a:%s", data);
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(kcfg_load_default(NULL, NULL, &c, NULL), 0);
	assert_string_equal(c.source, data);
	kcfg_release(&c);
	free(list);
	free(data);
	free(multi);
}

/* An existing but broken file ends the search with its own error. */
static void test_kubeconfig__default_stops_at_existing_broken_file(void **state)
{
	char *home = make_tmpdir(), *exec = fixture("broken-exec.yaml"), *list;
	struct ll_err err = {""};
	struct kcfg c;

	list = xasprintf("/nonexistent:%s", exec);
	setenv("KUBECONFIG", list, 1);
	setenv("HOME", home, 1);
	assert_int_equal(kcfg_load_default(NULL, NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "exec"));
	free(list);
	free(exec);
	rm_tmpdir(home);
}

static void test_kubeconfig__default_falls_back_to_home(void **state)
{
	char *home = make_tmpdir(), *kube = xasprintf("%s/.kube", home), *cfg, *yaml, *path;
	size_t len;
	struct kcfg c;

	assert_int_equal(mkdir(kube, 0700), 0);
	path = fixture("multi.yaml");
	yaml = slurp(path, &len);
	write_file(kube, "config", yaml);
	cfg = xasprintf("%s/config", kube);
	setenv("HOME", home, 1);

	/* $KUBECONFIG naming only missing files, and in-cluster env without a token, fall through.
	 */
	setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kcfg_load_default(NULL, "prod", &c, NULL), 0);
	assert_string_equal(c.source, cfg);
	assert_string_equal(c.token, "prod-token-xyz");
	kcfg_release(&c);

	free(cfg);
	free(yaml);
	free(path);
	free(kube);
	rm_tmpdir(home);
}

static void test_kubeconfig__default_nothing_found_is_enoent(void **state)
{
	char *home = make_tmpdir();
	struct ll_err err = {""};
	struct kcfg c;

	setenv("HOME", home, 1);
	assert_int_equal(kcfg_load_default(NULL, NULL, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no kubeconfig"));
	assert_null(c.server);
	assert_null(c.source);

	unsetenv("HOME");
	assert_int_equal(kcfg_load_default(NULL, NULL, &c, &err), -ENOENT);
	rm_tmpdir(home);
}

static void test_kubeconfig__release_is_idempotent(void **state)
{
	char *path = fixture("data.yaml");
	struct kcfg c;

	kcfg_release(NULL);
	assert_int_equal(kcfg_load_file(path, NULL, &c, NULL), 0);
	kcfg_release(&c);
	kcfg_release(&c);
	assert_null(c.ca_pem);
	assert_int_equal(c.ca_pem_len, 0);
	free(path);
}

#define T(name) cmocka_unit_test_setup(test_kubeconfig__##name, clear_env)

int main(void)
{
	const struct CMUnitTest tests[] = {
	        T(data_fields_decode_to_pem),
	        T(relative_paths_resolve_against_file_dir),
	        T(relative_paths_from_relative_file_and_buffer),
	        T(token_file_is_resolved_and_not_read_into_token),
	        T(absolute_paths_are_kept),
	        T(current_context_is_the_default),
	        T(explicit_context_overrides_current),
	        T(data_wins_over_file),
	        T(missing_context_names_file_and_context),
	        T(missing_cluster_user_or_current_context),
	        T(missing_kubeconfig_is_enoent),
	        T(unreadable_file_names_user_and_path),
	        T(oversized_files_are_rejected),
	        T(exec_user_rejected),
	        T(other_unsupported_auth_rejected),
	        T(malformed_yaml_rejected),
	        T(invalid_field_values_rejected),
	        T(yaml_forms_are_accepted),
	        T(incluster_reads_sa_dir),
	        T(incluster_ipv6_host_is_bracketed),
	        T(incluster_without_env_or_token_is_enoent),
	        T(default_explicit_path_wins),
	        T(default_uses_first_existing_kubeconfig_entry),
	        T(default_stops_at_existing_broken_file),
	        T(default_falls_back_to_home),
	        T(default_nothing_found_is_enoent),
	        T(release_is_idempotent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
