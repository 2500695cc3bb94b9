/*
 * mem.h - allocation wrappers.
 *
 * Running out of memory is fatal in landlord (as in git and Redis): these wrappers never return
 * NULL, they log and abort. That keeps every other error path about real, recoverable failures.
 * Growth driven by network input is bounded separately (see buf.h), so an OOM here means the
 * process is genuinely out of memory, not that a peer sent a huge body.
 *
 * This file and mem.c are the only places that call malloc, calloc, realloc, strdup or
 * asprintf (scripts/checksrc.sh enforces it); growable arrays are vec.h, strings buf.h.
 */
#ifndef LANDLORD_MEM_H
#define LANDLORD_MEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/** xreallocarray() - xrealloc() to @count * @size bytes; a product that overflows aborts too. */
void *xreallocarray(void *p, size_t count, size_t size);
/** xstrdup() - duplicate @s; NULL in gives NULL out. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/** xasprintf() - allocate a formatted string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/**
 * mem_trim() - hand freed heap back to the kernel (glibc's malloc_trim), one caller at a time.
 * A no-op under ASan and TSan: they replace the allocator, and glibc's trim of its own unused,
 * uninitialised arenas from two threads at once crashes.
 */
void mem_trim(void);

#endif
