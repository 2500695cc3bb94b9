/*
 * nsmap.h - one tenant's namespaces as its users see them through the proxy: each upstream
 * (full) name with the name shown in the tenant's view (docs/proxy.md, "The namespaced view").
 *
 * The table is built from the namespaces that carry the label landlord.dev/tenant=<tenant>,
 * never from names, so a namespace of another tenant can never enter it whatever it is called.
 * Shown names:
 *   - "<tenant>-<rest>" shows as "<rest>" (acme-dev as dev, acme-alice-sandbox as
 *     alice-sandbox), unless <rest> is itself the full name of one of the tenant's namespaces:
 *     then the prefixed one keeps its full name (acme has both "dev" and "acme-dev": they show
 *     as "dev" and "acme-dev");
 *   - every other namespace (unprefixed, adopted) shows as it is.
 * So shown names are unique and the mapping is one to one (a shown name that is a stripped
 * one is never a full name of the table, and the other way round). The prefix check includes
 * the separator: tenant "a" never strips "ab-x".
 *
 * A name not shown is not the tenant's: a request for it is answered 404 (px_nsmap_full()
 * returns NULL), except for a new namespace, whose upstream name is "<tenant>-<name>"
 * (px_nsmap_new_full()).
 *
 * Invariants: a built map is immutable, so any number of threads read it at once; it owns
 * its strings; lookups are binary searches (O(log n)).
 */
#ifndef LANDLORD_PROXY_NSMAP_H
#define LANDLORD_PROXY_NSMAP_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct px_nsmap;

/**
 * px_nsmap_new() - the table of @tenant for the upstream namespace names @full[0..n) (the
 * ones labelled with the tenant; repeated names are kept once). Never NULL (aborts on
 * allocation failure, as the project's allocators do).
 */
struct px_nsmap *px_nsmap_new(const char *tenant, const char *const *full, size_t n);
void px_nsmap_free(struct px_nsmap *m);

/** px_nsmap_len() - how many namespaces the tenant has. */
size_t px_nsmap_len(const struct px_nsmap *m);
/** px_nsmap_at() - the @i-th entry in shown-name order: its full name, *@shown the shown one. */
const char *px_nsmap_at(const struct px_nsmap *m, size_t i, const char **shown /* OUT */);

/** px_nsmap_full() - the upstream name of shown name @shown, or NULL (not the tenant's). */
const char *px_nsmap_full(const struct px_nsmap *m, const char *shown);
/** px_nsmap_shown() - the shown name of upstream namespace @full, or NULL (not the tenant's). */
const char *px_nsmap_shown(const struct px_nsmap *m, const char *full);

/**
 * px_nsmap_new_full() - the upstream name a new namespace @shown gets: "<tenant>-<shown>"
 * into @out (@size bytes).
 * Return: 0; -ENAMETOOLONG (over 63 characters upstream); -EINVAL (@shown is not a DNS label).
 */
int px_nsmap_new_full(const struct px_nsmap *m, const char *shown, char *out, size_t size);

/**
 * px_nsmap_text() - @in with every upstream name of the table that stands as a whole word
 * (not preceded or followed by [a-z0-9.-]) replaced by its shown name, appended to @out.
 * Return: 0 or -EMSGSIZE (@out's cap).
 */
int px_nsmap_text(const struct px_nsmap *m, const char *in, struct buf *out);

#endif
