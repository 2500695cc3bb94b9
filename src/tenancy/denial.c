/* denial.c - one-line denial messages (see denial.h). */
#include "tenancy/denial.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void denial_init(struct denial *d, char *out, size_t size)
{
	assert(out != NULL && size > 0);
	d->out = out;
	d->size = size;
	d->len = 0;
	d->full = false;
	out[0] = '\0';
}

/* Append @n bytes as they are; what does not fit turns the end of the array into "...". */
static void put_raw(struct denial *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n && !d->full; i++) {
		if (d->len + 1 < d->size) {
			d->out[d->len++] = s[i];
			continue;
		}
		d->full = true;
		if (d->size >= 4) {
			memcpy(d->out + d->size - 4, "...", 3);
			d->len = d->size - 1;
		}
	}
	d->out[d->len] = '\0';
}

static void put_escaped(struct denial *d, const char *s, size_t n, bool quoted)
{
	char hex[5];

	for (size_t i = 0; i < n && !d->full; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f) {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			put_raw(d, hex, 4);
		} else if (quoted && (c == '"' || c == '\\')) {
			put_raw(d, "\\", 1);
			put_raw(d, s + i, 1);
		} else {
			put_raw(d, s + i, 1);
		}
	}
}

static void put_value(struct denial *d, const char *s, size_t len, bool quoted)
{
	size_t shown = len < DENIAL_VALUE_SHOWN ? len : DENIAL_VALUE_SHOWN;

	if (quoted)
		put_raw(d, "\"", 1);
	put_escaped(d, s != NULL ? s : "", s != NULL ? shown : 0, quoted);
	if (shown < len)
		put_raw(d, "...", 3);
	if (quoted)
		put_raw(d, "\"", 1);
}

void denial_text(struct denial *d, const char *fmt, ...)
{
	char text[DENIAL_MSG_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n > 0)
		put_escaped(d, text, strlen(text), false);
}

void denial_quote(struct denial *d, const char *value, size_t len)
{
	put_value(d, value, len, true);
}

void denial_item(struct denial *d, size_t index, const char *item, size_t len, bool quoted)
{
	if (index >= DENIAL_LIST_SHOWN)
		return;
	if (index > 0)
		put_raw(d, ", ", 2);
	put_value(d, item, len, quoted);
}

void denial_list_end(struct denial *d, size_t total)
{
	if (total == 0)
		denial_text(d, "none");
	else if (total > DENIAL_LIST_SHOWN)
		denial_text(d, " and %zu more", total - DENIAL_LIST_SHOWN);
}
