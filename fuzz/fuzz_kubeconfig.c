/* fuzz_kubeconfig.c - kcfg_load_buf() on arbitrary bytes, with and without a named context. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Relative paths in the input resolve into a directory that does not exist. */
	static const char base[] = "/nonexistent/fuzz_kubeconfig";
	struct ll_err err;
	struct kcfg c;

	if (kcfg_load_buf((const char *)data, size, base, NULL, &c, &err) == 0) {
		/* Invariants the client relies on. */
		if (c.server == NULL || c.source == NULL ||
		    (c.server[0] && c.server[strlen(c.server) - 1] == '/') ||
		    (c.cert_pem == NULL) != (c.key_pem == NULL))
			__builtin_trap();
		kcfg_release(&c);
	}
	if (kcfg_load_buf((const char *)data, size, base, "a", &c, &err) == 0)
		kcfg_release(&c);
	return 0;
}
