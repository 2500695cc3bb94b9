/*
 * fuzz_pem_bundle.c - the PEM bundle parser (pki_bundle_split) on any bytes: it never reads
 * past @size, never keeps more than PKI_BUNDLE_CERTS_MAX certificates, leaves an empty bundle
 * on every error, and what it keeps is stable: joining the bundle and splitting it again gives
 * the same certificates, each of which reads back. Also base64 decoding of the same bytes, and
 * the tenant proxy's subject reader (pki_read_subject) on the bytes and on every certificate
 * kept: what it returns is always subject text that fits its field (never cut, never a control
 * character), at most PKI_ORGS_MAX groups, and the same serial and validity pki_read_cert()
 * reads; on error it returns a zeroed subject and a reason.
 * Input: the bundle's bytes, NULs included.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "pki/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* @s (a field of @cap bytes) is "" or subject text: NUL-terminated inside, no control bytes. */
static void check_text(const char *s, size_t cap, bool may_be_empty)
{
	size_t n = strnlen(s, cap);

	if (n == cap || (n == 0 && !may_be_empty))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void check_subject(const char *pem, size_t len)
{
	struct pki_subject sub;
	struct pki_cert_info info;
	struct ll_err err = {{0}};
	int rc = pki_read_subject(pem, len, &sub, &err);

	if (rc != 0) {
		/* zeroed, with a reason */
		if (sub.cn[0] || sub.ou[0] || sub.n_orgs || sub.serial_hex[0] || err.msg[0] == '\0')
			abort();
		return;
	}
	check_text(sub.cn, sizeof(sub.cn), true);
	check_text(sub.ou, sizeof(sub.ou), true);
	if (sub.n_orgs > PKI_ORGS_MAX)
		abort();
	for (size_t i = 0; i < sub.n_orgs; i++)
		check_text(sub.orgs[i], sizeof(sub.orgs[i]), false);
	check_text(sub.serial_hex, sizeof(sub.serial_hex), false);
	if (pki_read_cert(pem, len, &info, NULL) != 0 || strcmp(info.serial_hex, sub.serial_hex) ||
	    info.not_before != sub.not_before || info.not_after != sub.not_after)
		abort();
}

static void check_stable(const struct pki_bundle *b)
{
	struct pki_bundle again = {0};
	struct pki_cert_info info;
	char *joined = pki_bundle_join(b);

	if (pki_bundle_split(joined, strlen(joined), &again, NULL) != 0 || again.n != b->n)
		abort();
	for (size_t i = 0; i < b->n; i++) {
		if (strcmp(again.certs[i], b->certs[i]) != 0)
			abort();
		if (pki_read_cert(b->certs[i], strlen(b->certs[i]), &info, NULL) != 0)
			abort();
		check_subject(b->certs[i], strlen(b->certs[i]));
	}
	pki_bundle_release(&again);
	free(joined);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pki_bundle b = {0};
	struct ll_err err;
	struct buf out = BUF_INIT(1u << 16);
	char *s;
	int rc = pki_bundle_split((const char *)data, size, &b, &err);

	if (b.n > PKI_BUNDLE_CERTS_MAX || (rc != 0 && b.n != 0) || (rc != 0 && err.msg[0] == '\0'))
		abort();
	if (rc == 0)
		check_stable(&b);
	pki_bundle_release(&b);
	check_subject((const char *)data, size);
	/* the same bytes as base64 text (up to a NUL) */
	s = xstrndup((const char *)data, size);
	rc = pki_b64_decode(s, &out);
	if (rc == 0) {
		/* what decodes re-encodes to text that decodes to the same bytes */
		char *enc = pki_b64_encode(out.p ? out.p : "", out.len);
		struct buf back = BUF_INIT(1u << 16);

		if (pki_b64_decode(enc, &back) != 0 || back.len != out.len ||
		    (out.len && memcmp(back.p, out.p, out.len) != 0))
			abort();
		buf_release(&back);
		free(enc);
	}
	free(s);
	buf_release(&out);
	return 0;
}
