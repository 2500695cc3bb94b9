/*
 * fuzz_pem_bundle.c - the PEM bundle parser (pki_bundle_split) on any bytes: it never reads
 * past @size, never keeps more than PKI_BUNDLE_CERTS_MAX certificates, leaves an empty bundle
 * on every error, and what it keeps is stable: joining the bundle and splitting it again gives
 * the same certificates, each of which reads back. Also base64 decoding of the same bytes.
 * Input: the bundle's bytes, NULs included.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "pki/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
