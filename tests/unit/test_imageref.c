/*
 * test_imageref.c - image references read as Docker reads them (distribution/reference's
 * ParseNormalizedNamed, whose own test tables many cases come from), allowed-registry matching
 * on a '/' boundary, and the denial message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "tenancy/denial.h"
#include "tenancy/imageref.h"

#define H64  "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
#define H32  "0123456789abcdef0123456789abcdef"
#define H96  H64 H32
#define H128 H64 H64
#define ID   "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a"

/* A reference, what it normalises to, and whether it named no registry. */
struct ref_case {
	const char *in;
	const char *want;
	bool implicit;
};

static const struct ref_case VALID[] = {
        /* R3, R4: Docker Hub, implied or written, and its official images */
        {"nginx", "docker.io/library/nginx", true},
        {"nginx:1.25", "docker.io/library/nginx:1.25", true},
        {"library/nginx", "docker.io/library/nginx", true},
        {"bitnami/redis:7", "docker.io/bitnami/redis:7", true},
        {"docker.io/nginx", "docker.io/library/nginx", false},
        {"docker.io/library/nginx", "docker.io/library/nginx", false},
        {"docker.io/library/foo/bar", "docker.io/library/foo/bar", false},
        {"index.docker.io/nginx", "docker.io/library/nginx", false},
        {"index.docker.io/bitnami/redis", "docker.io/bitnami/redis", false},
        {"docker/migrator", "docker.io/docker/migrator", true},
        {"test_com/foo", "docker.io/test_com/foo", true},
        /* a single component is always a repository on Docker Hub, even one that looks like
         * a host: ":5000" is then its tag */
        {"localhost", "docker.io/library/localhost", true},
        {"localhost:5000", "docker.io/library/localhost:5000", true},
        {"test.com:5000", "docker.io/library/test.com:5000", true},
        {"ghcr.io", "docker.io/library/ghcr.io", true},
        {"192.168.0.1", "docker.io/library/192.168.0.1", true},
        /* R3, R5: hosts, ports, IPv4 and [IPv6], kept as written */
        {"ghcr.io/acme/api:1.4", "ghcr.io/acme/api:1.4", false},
        {"quay.io/a/b/c/d/e", "quay.io/a/b/c/d/e", false},
        {"registry.example.com:5000/team/app", "registry.example.com:5000/team/app", false},
        {"example.com:05000/x", "example.com:05000/x", false},
        {"localhost/app", "localhost/app", false},
        {"localhost:5000/app:dev", "localhost:5000/app:dev", false},
        {"127.0.0.1:5000/debian", "127.0.0.1:5000/debian", false},
        {"192.168.0.1:8/debian", "192.168.0.1:8/debian", false},
        {"[fc00::1]:5000/docker/docker", "[fc00::1]:5000/docker/docker", false},
        {"[fc00:1:2:3:4:5:6:7]:5000/library/debian", "[fc00:1:2:3:4:5:6:7]:5000/library/debian",
         false},
        {"[::1]/app", "[::1]/app", false},
        {"xn--n3h.com:18080/foo", "xn--n3h.com:18080/foo", false},
        {"LOCALDOMAIN/debian", "LOCALDOMAIN/debian", false},
        {"Docker/docker", "Docker/docker", false},
        {"DOCKER.IO/nginx", "DOCKER.IO/nginx", false}, /* not Docker Hub's name */
        {"index.docker.io:443/nginx", "index.docker.io:443/nginx", false}, /* nor this */
        {"a-b.c-d.e/x", "a-b.c-d.e/x", false},
        /* R6: separators */
        {"docker---rules/docker", "docker.io/docker---rules/docker", true},
        {"dock__er/docker", "docker.io/dock__er/docker", true},
        {"d/docker", "docker.io/d/docker", true},
        {"foo/bar.baz_qux-x", "docker.io/foo/bar.baz_qux-x", true},
        {"docker.io/" ID, "docker.io/library/" ID, false}, /* R2 applies only alone */
        {ID ":tag", "docker.io/library/" ID ":tag", true},
        /* R7: tags */
        {"nginx:V1.0_RC-1", "docker.io/library/nginx:V1.0_RC-1", true},
        {"nginx:_x", "docker.io/library/nginx:_x", true},
        {"nginx:latest", "docker.io/library/nginx:latest", true},
        /* R8: digests, with and without a tag */
        {"ghcr.io/acme/api@sha256:" H64, "ghcr.io/acme/api@sha256:" H64, false},
        {"ghcr.io/acme/api:1.4@sha256:" H64, "ghcr.io/acme/api:1.4@sha256:" H64, false},
        {"busybox:latest@sha256:" H64, "docker.io/library/busybox:latest@sha256:" H64, true},
        {"nginx@sha384:" H96, "docker.io/library/nginx@sha384:" H96, true},
        {"nginx@sha512:" H128, "docker.io/library/nginx@sha512:" H128, true},
        {"test:5000/repo@sha256:" H64, "test:5000/repo@sha256:" H64, false},
};

/* A reference that must be refused, and words its reason must hold. */
struct bad_case {
	const char *in;
	const char *why;
};

static const struct bad_case INVALID[] = {
        {"Nginx", "must be lowercase"},
        {"docker/Docker", "must be lowercase"},
        {"docker.io/docker/Docker", "must be lowercase"},
        {"ghcr.io/Acme/api", "must be lowercase"},
        {"https://github.com/docker/docker", "registry host"},
        {"-docker", "repository name"},
        {"-docker/docker", "repository name"},
        {"docker-/docker", "repository name"},
        {"-docker-/docker", "repository name"},
        {"-docker.io/docker/docker", "registry host"},
        {"docker///docker", "repository name"},
        {"docker.io/docker///docker", "repository name"},
        {"____/____", "repository name"},
        {"_docker/_docker", "repository name"},
        {"dock..er/docker", "registry host"},
        {"dock_.er/docker", "registry host"},
        {"dock-.er/docker", "registry host"},
        {"dock___er/docker", "repository name"},
        {"docker/", "repository name"},
        {"/nginx", "repository name"},
        {"ghcr.io/", "repository name"},
        {"[fc00::1]", "repository name"},
        {"[fc00::1]:5000", "repository name"},
        {"fc00::1:5000/debian", "registry host"},
        {"[fe80::1%eth0]:5000/debian", "registry host"},
        {"[2001:db8:3:4::192.0.2.33]:5000/debian", "registry host"},
        {"[]:5000/x", "registry host"},
        {"ghcr.io:/x", "registry host"},
        {"ghcr.io:abc/x", "registry host"},
        {"ghcr..io/x", "registry host"},
        {"ghcr-.io/x", "registry host"},
        {"a_b.com/x", "registry host"}, /* R9: Docker would read it with no host */
        {ID, "image ID"},
        {"nginx:", "tag"},
        {"nginx:-x", "tag"},
        {"nginx:.x", "tag"},
        {"ghcr.io/acme/api:1.4:5", "tag"},
        {"nginx:a/b", "registry host"},
        {"nginx@sha256:abc", "number of hex digits"},
        {"nginx@sha256:" H64 "f", "number of hex digits"},
        {"nginx@sha256:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
         "lowercase hex"},
        {"nginx@sha256:" H32 "0123456789abcdef0123456789abcdeg", "lowercase hex"},
        {"nginx@md5:" H32, "sha256:"},
        {"nginx@SHA256:" H64, "sha256:"},
        {"nginx@sha256", "sha256:"},
        {"nginx@", "sha256:"},
        {"nginx@@sha256:" H64, "sha256:"},
        {"nginx:1@sha256:" H64 "@x", "hex"},
        {"", "empty"},
        {" nginx", "repository name"},
        {"nginx ", "repository name"},
        {"ng inx", "repository name"},
        {"nginx\n", "repository name"},
        {"nginx\t", "repository name"},
        {"ghcr.io /x", "registry host"},
        {"h\xc3\xa9llo", "repository name"},
        {"caf\xc3\xa9.io/x", "registry host"},
};

static void check_valid(const struct ref_case *c)
{
	struct ll_err err = {{0}};
	struct imageref ref, again;
	char out[IMAGEREF_STR_MAX + 1], out2[IMAGEREF_STR_MAX + 1];

	if (imageref_parse(c->in, strlen(c->in), &ref, &err) != 0)
		fail_msg("\"%s\" refused: %s", c->in, err.msg);
	imageref_format(&ref, out);
	if (strcmp(out, c->want) != 0 || ref.implicit_domain != c->implicit)
		fail_msg("\"%s\" gave \"%s\" (implicit %d), want \"%s\"", c->in, out,
		         ref.implicit_domain, c->want);
	/* the normalised form reads back as itself */
	assert_int_equal(imageref_parse(out, strlen(out), &again, NULL), 0);
	assert_false(again.implicit_domain);
	imageref_format(&again, out2);
	assert_string_equal(out2, out);
	assert_memory_equal(again.domain, ref.domain, sizeof(ref.domain));
	assert_memory_equal(again.path, ref.path, sizeof(ref.path));
	assert_memory_equal(again.tag, ref.tag, sizeof(ref.tag));
	assert_memory_equal(again.digest, ref.digest, sizeof(ref.digest));
}

static void test_imageref__valid_references_normalise_as_docker_does(void **state)
{
	for (size_t i = 0; i < sizeof(VALID) / sizeof(*VALID); i++)
		check_valid(&VALID[i]);
}

static void test_imageref__the_parts_are_split_at_the_first_at_and_colon(void **state)
{
	const char *full = "registry.example.com:5000/team/app:v2@sha256:" H64;
	struct imageref ref;

	assert_int_equal(imageref_parse(full, strlen(full), &ref, NULL), 0);
	assert_string_equal(ref.domain, "registry.example.com:5000");
	assert_string_equal(ref.path, "team/app");
	assert_string_equal(ref.tag, "v2");
	assert_string_equal(ref.digest, "sha256:" H64);
	assert_int_equal(imageref_parse("nginx", 5, &ref, NULL), 0);
	assert_string_equal(ref.domain, "docker.io");
	assert_string_equal(ref.path, "library/nginx");
	assert_string_equal(ref.tag, "");
	assert_string_equal(ref.digest, "");
	/* a length, not a NUL, ends the input */
	assert_int_equal(imageref_parse("nginx:1.25 trailing", 10, &ref, NULL), 0);
	assert_string_equal(ref.tag, "1.25");
}

static void test_imageref__invalid_references_are_refused_with_a_reason(void **state)
{
	for (size_t i = 0; i < sizeof(INVALID) / sizeof(*INVALID); i++) {
		const struct bad_case *c = &INVALID[i];
		struct ll_err err = {{0}};
		struct imageref ref;

		if (imageref_parse(c->in, strlen(c->in), &ref, &err) != -EINVAL)
			fail_msg("\"%s\" accepted", c->in);
		if (strstr(err.msg, c->why) == NULL || strchr(err.msg, '\n') != NULL)
			fail_msg("\"%s\": reason \"%s\" does not say \"%s\"", c->in, err.msg,
			         c->why);
		assert_string_equal(ref.domain, "");
		assert_string_equal(ref.path, "");
	}
}

static void test_imageref__nul_bytes_and_lengths_are_checked(void **state)
{
	char big[IMAGEREF_INPUT_MAX + 2], path[300];
	struct ll_err err = {{0}};
	struct imageref ref;

	assert_int_equal(imageref_parse("ngi\0nx", 6, &ref, &err), -EINVAL);
	assert_int_equal(imageref_parse("nginx\0", 6, &ref, &err), -EINVAL);
	assert_int_equal(imageref_parse("ghcr.io\0/x", 10, &ref, &err), -EINVAL);
	memset(big, 'a', sizeof(big));
	assert_int_equal(imageref_parse(big, IMAGEREF_INPUT_MAX + 1, &ref, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "longer than 1024 bytes"));
	/* 255 bytes of path, "library/" included, and not one more */
	memset(path, 'a', sizeof(path));
	assert_int_equal(imageref_parse(path, 247, &ref, &err), 0);
	assert_int_equal(strlen(ref.path), 255);
	assert_int_equal(imageref_parse(path, 248, &ref, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 255 bytes"));
	memcpy(path, "ghcr.io/", 8);
	assert_int_equal(imageref_parse(path, 8 + 255, &ref, &err), 0);
	assert_int_equal(imageref_parse(path, 8 + 256, &ref, &err), -EINVAL);
	/* the host is not counted in the path, and has its own cap */
	memset(big, 'a', sizeof(big));
	memcpy(big + 250, ".io:5000/x", 10);
	assert_int_equal(imageref_parse(big + 5, 245 + 10, &ref, &err), 0);
	assert_int_equal(strlen(ref.domain), 253);
	assert_int_equal(imageref_parse(big, 250 + 10, &ref, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 255 bytes"));
	/* a 128-character tag, not 129 */
	memcpy(big, "nginx:", 6);
	assert_int_equal(imageref_parse(big, 6 + 128, &ref, &err), 0);
	assert_int_equal(imageref_parse(big, 6 + 129, &ref, &err), -EINVAL);
}

static void test_imageref__registry_entries_normalise(void **state)
{
	static const char *const ok[][2] = {
	        {"ghcr.io/acme", "ghcr.io/acme"},
	        {"ghcr.io", "ghcr.io"},
	        {"registry.example.com:5000", "registry.example.com:5000"},
	        {"docker.io/library", "docker.io/library"},
	        {"docker.io", "docker.io"},
	        {"index.docker.io", "docker.io"},
	        {"index.docker.io/bitnami", "docker.io/bitnami"},
	        {"docker.io/nginx", "docker.io/nginx"}, /* M1: never "library/" */
	        {"localhost", "localhost"},
	        {"localhost:5000/team", "localhost:5000/team"},
	        {"[fc00::1]:5000", "[fc00::1]:5000"},
	        {"", ""},
	};
	static const char *const bad[] = {
	        "nginx",
	        "acme/app",
	        "ghcr.io/Acme",
	        "ghcr.io/acme:1",
	        ("ghcr.io/acme@sha256:" H64),
	        "ghcr.io/acme/",
	        "ghcr.io//acme",
	        "/acme",
	        "ghcr.io:x",
	        "-ghcr.io",
	        " ghcr.io",
	        "ghcr.io/acme ",
	        "https://ghcr.io",
	};
	char out[IMAGEREF_NAME_MAX + 1];
	struct ll_err err = {{0}};

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		if (imageref_registry_normalize(ok[i][0], strlen(ok[i][0]), out, &err) != 0)
			fail_msg("entry \"%s\" refused: %s", ok[i][0], err.msg);
		assert_string_equal(out, ok[i][1]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (imageref_registry_normalize(bad[i], strlen(bad[i]), out, &err) == 0)
			fail_msg("entry \"%s\" accepted as \"%s\"", bad[i], out);
		assert_string_equal(out, "");
	}
	assert_int_equal(imageref_registry_normalize("nginx", 5, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "starts with a host"));
}

/* "\xHH" escapes of docker.txt back to bytes; returns the length. */
static size_t unescape(const char *s, char *out)
{
	size_t n = 0;
	unsigned int byte;

	while (*s != '\0') {
		if (s[0] == '\\' && sscanf(s, "\\x%2x", &byte) == 1) {
			out[n++] = (char)byte;
			s += 4;
		} else {
			out[n++] = *s++;
		}
	}
	return n;
}

static void check_golden(const char *verdict, const char *ref, size_t len, const char *want)
{
	char out[IMAGEREF_STR_MAX + 1];
	struct imageref r;
	int rc = imageref_parse(ref, len, &r, NULL);

	if (strcmp(verdict, "ok") == 0) {
		if (rc != 0)
			fail_msg("Docker reads \"%s\", landlord refuses it", ref);
		imageref_format(&r, out);
		if (strcmp(out, want) != 0)
			fail_msg("\"%s\": Docker reads \"%s\", landlord \"%s\"", ref, want, out);
	} else if (rc == 0) {
		fail_msg("\"%s\" (%s) accepted", ref, verdict);
	}
}

/*
 * tests/data/imageref/docker.txt: what distribution/reference itself made of ~490 references
 * (recorded once with the Go library; the file says how).
 */
static void test_imageref__agrees_with_distribution_reference_on_recorded_cases(void **state)
{
	const char *root = getenv("LANDLORD_TEST_DATA");
	char path[4096], line[4096], ref[2048];
	size_t cases = 0;
	FILE *f;

	assert_non_null(root);
	snprintf(path, sizeof(path), "%s/imageref/docker.txt", root);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *in = strchr(line, '\t'), *want;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || in == NULL)
			continue;
		*in++ = '\0';
		want = strchr(in, '\t');
		if (want != NULL)
			*want++ = '\0';
		check_golden(line, ref, unescape(in, ref), want ? want : "");
		cases++;
	}
	fclose(f);
	assert_true(cases > 400);
}

struct match_case {
	const char *image, *entry;
	bool want;
};

static const struct match_case MATCHES[] = {
        {"ghcr.io/acme/api:1", "ghcr.io/acme", true},
        {"ghcr.io/acme", "ghcr.io/acme", true},
        {"ghcr.io/acme/team/api@sha256:" H64, "ghcr.io/acme", true},
        {"ghcr.io/acme-evil/x", "ghcr.io/acme", false}, /* a '/' boundary, not a prefix */
        {"ghcr.io/acmex", "ghcr.io/acme", false},
        {"ghcr.io/acme.x/y", "ghcr.io/acme", false},
        {"ghcr.io/x", "ghcr.io", true},
        {"ghcr.io.evil.com/x", "ghcr.io", false},
        {"ghcr.io-evil.com/x", "ghcr.io", false},
        {"ghcr.io:443/x", "ghcr.io", false}, /* a port is part of its host */
        {"registry.example.com:5000/x", "registry.example.com:5000", true},
        {"registry.example.com:50000/x", "registry.example.com:5000", false},
        {"registry.example.com/x", "registry.example.com:5000", false},
        {"evil.com/ghcr.io/acme/x", "ghcr.io/acme", false},
        {"ghcr.io/acme/api", "ghcr.io/acme/api/v2", false},
        {"nginx", "docker.io/library", true},
        {"nginx:1.25", "docker.io", true},
        {"docker.io/nginx", "docker.io/library/nginx", true},
        {"index.docker.io/nginx", "docker.io/library/nginx", true},
        {"bitnami/redis", "docker.io/library", false},
        {"bitnami/redis", "docker.io/bitnami", true},
        {"docker.io/bitnami/redis", "index.docker.io/bitnami", true},
        {"nginx", "docker.io/nginx", false}, /* the entry means the user "nginx" */
        {"nginx", "", true},                 /* M3 */
        {"bitnami/redis", "", true},
        {"docker.io/bitnami/redis", "", false},
        {"ghcr.io/x", "", false},
        {"GHCR.IO/acme/x", "ghcr.io/acme", false},
        {"localhost/x", "localhost", true},
        {"localhost:5000/x", "localhost", false},
        {"[fc00::1]:5000/x", "[fc00::1]:5000", true},
        {"[fc00::1]:5000/x", "[fc00::1]", false},
        {"nginx", "nginx", false}, /* invalid entries allow nothing */
        {"ghcr.io/acme/x", "ghcr.io/acme/", false},
        {"ghcr.io/acme/x", "ghcr.io/Acme", false},
};

static void test_imageref__matching_respects_the_slash_boundary(void **state)
{
	for (size_t i = 0; i < sizeof(MATCHES) / sizeof(*MATCHES); i++) {
		const struct match_case *c = &MATCHES[i];
		struct imageref ref;

		assert_int_equal(imageref_parse(c->image, strlen(c->image), &ref, NULL), 0);
		if (imageref_allowed(&ref, &c->entry, 1) != c->want)
			fail_msg("\"%s\" against \"%s\": want %s", c->image, c->entry,
			         c->want ? "allowed" : "refused");
	}
}

static void test_imageref__any_entry_of_a_list_allows(void **state)
{
	const char *const entries[] = {"nginx", NULL, "quay.io/acme", "ghcr.io/acme"};
	struct imageref ref;

	assert_int_equal(imageref_parse("ghcr.io/acme/x", 14, &ref, NULL), 0);
	assert_true(imageref_allowed(&ref, entries, 4));
	assert_false(imageref_allowed(&ref, entries, 3));
	assert_false(imageref_allowed(&ref, entries, 0));
	assert_false(imageref_allowed(&ref, NULL, 0));
}

static void test_imageref__denials_name_the_image_the_tenant_and_the_allowed(void **state)
{
	const char *const one[] = {"ghcr.io/acme"};
	const char *const many[] = {"ghcr.io/a", "nginx",  "quay.io/b", "index.docker.io/c",
	                            "",          "r.io/d", "r.io/e",    "r.io/f",
	                            "r.io/g"};
	char msg[DENIAL_MSG_MAX];

	assert_false(imageref_check("docker.io/x:1", 13, "acme", one, 1, msg, sizeof(msg)));
	assert_string_equal(msg, "image \"docker.io/x:1\" is not from a registry allowed for "
	                         "tenant \"acme\" (allowed: ghcr.io/acme)");
	assert_false(imageref_check("ghcr.io/x", 9, "acme", many, 9, msg, sizeof(msg)));
	assert_string_equal(msg,
	                    "image \"ghcr.io/x\" is not from a registry allowed for tenant "
	                    "\"acme\" (allowed: ghcr.io/a, quay.io/b, docker.io/c, \"\" (images "
	                    "naming no registry), r.io/d and 3 more)");
	assert_true(imageref_check("ghcr.io/acme/x", 14, "acme", one, 1, msg, sizeof(msg)));
	assert_false(imageref_check("ghcr.io/acme/x", 14, "acme", NULL, 0, msg, sizeof(msg)));
	assert_string_equal(msg, "image \"ghcr.io/acme/x\" is not from a registry allowed for "
	                         "tenant \"acme\" (allowed: none)");
}

static void test_imageref__unparsable_images_are_denied_with_the_reason(void **state)
{
	const char *const one[] = {"ghcr.io/acme"};
	char msg[DENIAL_MSG_MAX], big[600];

	assert_false(imageref_check("Nginx", 5, "acme", one, 1, msg, sizeof(msg)));
	assert_string_equal(msg, "image \"Nginx\" is not a valid image reference: the repository "
	                         "name must be lowercase");
	assert_false(imageref_check("", 0, "acme", one, 1, msg, sizeof(msg)));
	assert_string_equal(msg, "image \"\" is not a valid image reference: it is empty");
	/* a hostile value stays inside its quotes, on one line */
	assert_false(imageref_check("a\"b\n\\", 5, "acme", one, 1, msg, sizeof(msg)));
	assert_string_equal(msg, "image \"a\\\"b\\x0a\\\\\" is not a valid image reference: the "
	                         "repository name must be lowercase letters and digits separated "
	                         "by '/', '.', '_', '__' or '-'");
	memset(big, 'a', sizeof(big));
	assert_false(imageref_check(big, sizeof(big), "acme", one, 1, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "aaaa...\" is not a valid image reference: the repository "
	                            "name is longer than 255 bytes"));
	assert_true(strlen(msg) < 400);
	/* a small array gets a cut message, never an overflow */
	assert_false(imageref_check("Nginx", 5, "acme", one, 1, msg, 12));
	assert_string_equal(msg, "image \"N...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_imageref__valid_references_normalise_as_docker_does),
	        cmocka_unit_test(test_imageref__the_parts_are_split_at_the_first_at_and_colon),
	        cmocka_unit_test(test_imageref__invalid_references_are_refused_with_a_reason),
	        cmocka_unit_test(test_imageref__nul_bytes_and_lengths_are_checked),
	        cmocka_unit_test(
	                test_imageref__agrees_with_distribution_reference_on_recorded_cases),
	        cmocka_unit_test(test_imageref__registry_entries_normalise),
	        cmocka_unit_test(test_imageref__matching_respects_the_slash_boundary),
	        cmocka_unit_test(test_imageref__any_entry_of_a_list_allows),
	        cmocka_unit_test(test_imageref__denials_name_the_image_the_tenant_and_the_allowed),
	        cmocka_unit_test(test_imageref__unparsable_images_are_denied_with_the_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
