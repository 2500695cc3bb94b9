/*
 * err.h - caller-owned error detail for fallible calls.
 *
 * Every fallible landlord function returns 0 or a negative errno and, when given a non-NULL
 * struct ll_err, writes one human-readable line into it. The buffer is fixed-size and owned by
 * the caller, so an error path never allocates. Passing NULL means "I only want the code".
 */
#ifndef LANDLORD_ERR_H
#define LANDLORD_ERR_H

#define LL_ERR_MSG_MAX 512

struct ll_err {
	char msg[LL_ERR_MSG_MAX];
};

/** ll_err_set() - format a message into @err (no-op when @err is NULL). Returns @code. */
int ll_err_set(struct ll_err *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif
