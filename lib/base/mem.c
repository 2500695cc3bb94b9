/* mem.c - allocation wrappers; out of memory is fatal (see mem.h). */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/vec.h"

static void oom(size_t n)
{
	char msg[128];
	int len = snprintf(msg, sizeof(msg),
	                   "{\"level\":\"error\",\"msg\":\"out of memory\",\"bytes\":%zu}\n", n);

	if (len > 0 && write(2, msg, (size_t)len) < 0)
		abort();
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);

	if (p == NULL)
		oom(count * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		oom(n);
	return q;
}

void *xreallocarray(void *p, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		oom(SIZE_MAX);
	return xrealloc(p, count * size);
}

void *vec__reserve(void *v, size_t *cap, size_t need, size_t elem)
{
	size_t grown;

	if (need <= *cap)
		return v;
	grown = *cap ? *cap : 4;
	while (grown < need)
		grown = grown > SIZE_MAX / 2 ? need : grown * 2;
	v = xreallocarray(v, grown, elem);
	*cap = grown;
	return v;
}

char *xstrdup(const char *s)
{
	return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
	char *p;

	if (s == NULL)
		return NULL;
	n = strnlen(s, n);
	p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	return s;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEM_SANITIZED 1
#endif
#endif

void mem_trim(void)
{
#ifndef MEM_SANITIZED
	static pthread_mutex_t trimming = PTHREAD_MUTEX_INITIALIZER;

	if (pthread_mutex_trylock(&trimming) != 0)
		return; /* another thread is already trimming */
	malloc_trim(0);
	pthread_mutex_unlock(&trimming);
#endif
}
