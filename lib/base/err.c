/* err.c - caller-owned error detail. */
#include <stdarg.h>
#include <stdio.h>

#include "base/err.h"

int ll_err_set(struct ll_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}
