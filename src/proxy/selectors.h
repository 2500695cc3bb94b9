/*
 * selectors.h - the label and field selectors of list, watch and delete-collection queries,
 * from a tenant's view to upstream (docs/proxy.md, "Selectors").
 *
 * Converted, shown name to upstream name:
 *   - the namespace collection (px_query_view.namespaces): labelSelector terms on
 *     kubernetes.io/metadata.name (=, ==, !=, in, notin) and fieldSelector terms on
 *     metadata.name; and the tenant's own requirement (landlord.dev/tenant=<tenant>) is ANDed
 *     into every labelSelector, or added when there is none, so that the proxy, listing
 *     namespaces as itself, never lists another tenant's;
 *   - every other query: fieldSelector terms on metadata.namespace, involvedObject.namespace
 *     (core Events) and regarding.namespace (events.k8s.io). A label selector is the caller's
 *     own: labels of other kinds are stored as written (only a Namespace's
 *     kubernetes.io/metadata.name label is converted in bodies), so selectors on them stay as
 *     written too.
 * A value that is not one of the tenant's shown names becomes PX_NO_NAMESPACE, a name no
 * namespace can have (a DNS label holds no '.'): the term then matches what Kubernetes would
 * match for a namespace that does not exist (nothing for = and in, everything for != and
 * notin), and no other tenant's namespace is ever named.
 *
 * Both grammars are Go's (k8s.io/apimachinery labels.Parse and fields.ParseSelector): the
 * label lexer and parser are mirrored token for token, so a selector is read here exactly as
 * the API server reads it; terms on other keys are copied byte for byte. The query is read as
 * Go's url.ParseQuery reads it: names and values percent-decoded ('+' is a space), so that
 * "label%53elector" is a labelSelector too; every labelSelector and fieldSelector is converted
 * (Go takes the first; all are converted), and written back percent-encoded. Other pairs are
 * copied as they are.
 *
 * Invariants: pure (no I/O, no globals), thread-safe; work linear in the query.
 */
#ifndef LANDLORD_PROXY_SELECTORS_H
#define LANDLORD_PROXY_SELECTORS_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct px_nsmap;

/* What a value that is not the tenant's becomes: a valid label value, never a namespace. */
#define PX_NO_NAMESPACE "no.such.namespace"

/**
 * px_label_selector_view() - @in, a labelSelector, with the values of its terms on
 * kubernetes.io/metadata.name converted to upstream names, appended to @out.
 * Return: 0; -EINVAL (@in does not parse as Go parses it, or compares that key as a number
 * with > or <: @why says why); -EMSGSIZE (@out's cap).
 */
int px_label_selector_view(const struct px_nsmap *map, const char *in, struct buf *out, char *why,
                           size_t why_size);

/**
 * px_field_selector_view() - @in, a fieldSelector, with the values of its terms on the fields
 * @fields (NULL-terminated) converted to upstream names, appended to @out. A term Go would
 * refuse (no operator, a bad escape) is copied as it is: the API server refuses it.
 * Return: 0; -EMSGSIZE (@out's cap).
 */
int px_field_selector_view(const struct px_nsmap *map, const char *in, const char *const *fields,
                           struct buf *out);

/* A query to convert. */
struct px_query_view {
	const struct px_nsmap *map;
	bool namespaces;          /* the namespace collection (see above) */
	const char *tenant_label; /* namespaces: the requirement ANDed in
	                             ("landlord.dev/tenant=acme") */
};

/**
 * px_query_view() - the raw (percent-encoded) query @query converted, appended to @out.
 * Return: 0; -EINVAL (a selector that is not percent-encoded correctly, or does not parse:
 * @why says why; answer 400); -EMSGSIZE (@out's cap).
 */
int px_query_view(const struct px_query_view *q, const char *query, struct buf *out, char *why,
                  size_t why_size);

#endif
