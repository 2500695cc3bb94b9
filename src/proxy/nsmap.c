/* nsmap.c - a tenant's namespaces under their shown names (nsmap.h). */
#include "proxy/nsmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "kube/k8sname.h"

struct entry {
	char *full;        /* owned */
	const char *shown; /* full itself, or a suffix of it */
};

struct px_nsmap {
	char *tenant;
	size_t prefix_len; /* strlen(tenant) + 1: "<tenant>-" */
	struct entry *by_full;
	struct entry *by_shown;
	size_t n;
};

static int cmp_full(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->full, ((const struct entry *)b)->full);
}

static int cmp_shown(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->shown, ((const struct entry *)b)->shown);
}

static const struct entry *find_full(const struct px_nsmap *m, const char *full)
{
	struct entry key = {.full = (char *)full};

	return bsearch(&key, m->by_full, m->n, sizeof(key), cmp_full);
}

/* Whether @full is "<tenant>-<something>". */
static bool prefixed(const struct px_nsmap *m, const char *full)
{
	return strncmp(full, m->tenant, m->prefix_len - 1) == 0 && full[m->prefix_len - 1] == '-' &&
	       full[m->prefix_len];
}

static void name_entries(struct px_nsmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct entry *e = &m->by_full[i];
		const char *rest = e->full + m->prefix_len;

		e->shown = prefixed(m, e->full) && !find_full(m, rest) ? rest : e->full;
	}
}

/* Sort by full name and keep each name once. */
static void sort_unique(struct px_nsmap *m)
{
	size_t w = 0;

	qsort(m->by_full, m->n, sizeof(*m->by_full), cmp_full);
	for (size_t i = 0; i < m->n; i++) {
		if (w && strcmp(m->by_full[w - 1].full, m->by_full[i].full) == 0) {
			free(m->by_full[i].full);
			continue;
		}
		m->by_full[w++] = m->by_full[i];
	}
	m->n = w;
}

struct px_nsmap *px_nsmap_new(const char *tenant, const char *const *full, size_t n)
{
	struct px_nsmap *m = xcalloc(1, sizeof(*m));

	m->tenant = xstrdup(tenant);
	m->prefix_len = strlen(tenant) + 1;
	m->by_full = xcalloc(n ? n : 1, sizeof(*m->by_full));
	m->by_shown = xcalloc(n ? n : 1, sizeof(*m->by_shown));
	for (size_t i = 0; i < n; i++)
		m->by_full[i].full = xstrdup(full[i]);
	m->n = n;
	sort_unique(m);
	name_entries(m);
	memcpy(m->by_shown, m->by_full, m->n * sizeof(*m->by_full));
	qsort(m->by_shown, m->n, sizeof(*m->by_shown), cmp_shown);
	return m;
}

void px_nsmap_free(struct px_nsmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->by_full[i].full);
	free(m->by_full);
	free(m->by_shown);
	free(m->tenant);
	free(m);
}

size_t px_nsmap_len(const struct px_nsmap *m)
{
	return m->n;
}

const char *px_nsmap_at(const struct px_nsmap *m, size_t i, const char **shown)
{
	*shown = m->by_shown[i].shown;
	return m->by_shown[i].full;
}

const char *px_nsmap_full(const struct px_nsmap *m, const char *shown)
{
	struct entry key = {.shown = shown};
	const struct entry *e = bsearch(&key, m->by_shown, m->n, sizeof(key), cmp_shown);

	return e ? e->full : NULL;
}

const char *px_nsmap_shown(const struct px_nsmap *m, const char *full)
{
	const struct entry *e = find_full(m, full);

	return e ? e->shown : NULL;
}

int px_nsmap_new_full(const struct px_nsmap *m, const char *shown, char *out, size_t size)
{
	int len;

	if (!k8s_is_dns_label(shown))
		return -EINVAL;
	len = snprintf(out, size, "%s-%s", m->tenant, shown);
	if (len < 0 || (size_t)len >= size || len > 63)
		return -ENAMETOOLONG;
	return 0;
}

static bool word_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* The longest word of [a-z0-9.-] at @p, trimmed of trailing '.' and '-' (a sentence's end). */
static size_t word_len(const char *p)
{
	size_t n = 0;

	while (word_byte(p[n]))
		n++;
	while (n && (p[n - 1] == '.' || p[n - 1] == '-'))
		n--;
	return n;
}

/* Append the word @p[0..n), or its shown name when it is one of the table's full names. */
static int append_word(const struct px_nsmap *m, const char *p, size_t n, struct buf *out)
{
	char word[64];
	const char *shown = NULL;

	if (n < sizeof(word)) {
		memcpy(word, p, n);
		word[n] = '\0';
		shown = px_nsmap_shown(m, word);
	}
	return shown ? buf_append_str(out, shown) : buf_append(out, p, n);
}

int px_nsmap_text(const struct px_nsmap *m, const char *in, struct buf *out)
{
	const char *p = in;
	int rc = 0;

	while (rc == 0 && *p) {
		size_t n = word_len(p);

		if (n) {
			rc = append_word(m, p, n, out);
		} else {
			n = 1; /* a byte outside any word, or a word's trailing '.' or '-' */
			rc = buf_append(out, p, n);
		}
		p += n;
	}
	return rc;
}
