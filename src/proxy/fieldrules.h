/*
 * fieldrules.h - every field of a built-in kind that can name a namespace, and what the
 * tenant proxy does with it (docs/proxy.md, "Conversion").
 *
 * A field is listed when the kind is one a tenant reaches (apifilter.h) and the field
 *   - is named "namespace", "namespaces", "namespaceSelector" or anything else holding
 *     "namespace" (case aside: "secretNamespace", "shareProcessNamespace"), or
 *   - is of a reference type (a definition whose name ends in "Reference" or "Ref") that has
 *     no namespace field of its own (one that has is listed by that field).
 * tests/unit/test_fieldrules.c walks the OpenAPI of Kubernetes 1.33 (tests/data/fieldrules/)
 * and fails on any such field without an entry here, and checks each entry against
 * px_convert() (convert.h): a PX_FIELD_CONVERTED field must be converted both ways, a
 * PX_FIELD_GAP one must not be yet (then move it to PX_FIELD_CONVERTED). So a new Kubernetes
 * field, a new kind or a converter that stops being called cannot go unnoticed.
 *
 * An entry names a scope and a path inside it:
 *   - scope "*": the top of every kind ("metadata.namespace");
 *   - scope "<package>.<Type>": the OpenAPI definition io.k8s.api.<package>.<version>.<Type>
 *     (or ...pkg.apis.<package>.<version>.<Type>) of any version: "core.PodAffinityTerm",
 *     "rbac.Subject", "meta.ObjectMeta";
 *   - path: the fields from there, "[]" after an array ("subjects[].namespace"); "" for the
 *     type itself (a reference type without a namespace, wherever it is used).
 * A field takes the entry of the outermost scope that lists it: ("*", "metadata.namespace")
 * decides a kind's own namespace, ("meta.ObjectMeta", "namespace") an embedded template's.
 *
 * Invariants: a constant table; pure lookups.
 */
#ifndef LANDLORD_PROXY_FIELDRULES_H
#define LANDLORD_PROXY_FIELDRULES_H

#include <stddef.h>

enum px_field_fate {
	PX_FIELD_CONVERTED, /* convert.h converts it, both ways */
	PX_FIELD_GAP,       /* names a namespace of the tenant, but is not converted yet: the
	                     * tenant sees (and must write) the upstream name; a known hole */
	PX_FIELD_EXEMPT,    /* nothing to convert: @why says why */
};

struct px_field_rule {
	const char *scope;
	const char *path;
	enum px_field_fate fate;
	const char *why;
};

/** px_field_rules - the table; px_field_rules_len entries. */
extern const struct px_field_rule px_field_rules[];
extern const size_t px_field_rules_len;

/** px_field_rule_find() - the entry for @path in @scope, or NULL. */
const struct px_field_rule *px_field_rule_find(const char *scope, const char *path);

#endif
