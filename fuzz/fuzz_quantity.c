/* fuzz_quantity.c - qty_parse_n() never crashes; its canonical form reparses to the same value. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kube/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[QTY_STR_MAX];
	struct qty a, b, r, back;

	if (qty_parse_n((const char *)data, size, &a) != 0)
		return 0;
	qty_format(&a, out);
	if (qty_parse(out, &b) != 0 || qty_cmp(&a, &b) != 0)
		abort();
	/* Arithmetic either succeeds exactly or reports overflow. */
	if (qty_add(&a, &b, &r) == 0 && (qty_sub(&r, &b, &back) != 0 || qty_cmp(&back, &a) != 0))
		abort();
	if (qty_mul_int(&a, 3, &r) == 0 &&
	    (qty_div_int_floor(&r, 3, &back) != 0 || qty_cmp(&back, &a) != 0))
		abort();
	qty_value_ceil(&a);
	qty_milli_ceil(&a);
	return 0;
}
