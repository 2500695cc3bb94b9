/*
 * landlordconfig.h - the LandlordConfig singleton ("landlord", landlord.dev/v1alpha1), parsed.
 *
 * lcfg_parse() turns a LandlordConfig object into a struct lcfg that every controller and the
 * webhook share by reference. A controller keeps the last accepted struct lcfg in force while a
 * newer object is invalid; lcfg_parse() therefore either builds a complete configuration or
 * builds nothing and lists every problem it found, never a partial result.
 *
 * Invariants:
 * - A struct lcfg is immutable once built and reference-counted with atomic counts: any thread
 *   may query it, lcfg_ref() it or lcfg_unref() it without locks. Borrowed pointers it returns
 *   (role names, label maps, the argocd object) stay valid while the caller holds a reference.
 * - Every field has a default, so a missing object (NULL), a missing spec or a missing section
 *   gives the same configuration as lcfg_defaults(): roles admin/edit/view, no privileged
 *   subjects, no namespace metadata, podSecurity "restricted", networkIsolation true, no argocd
 *   integration, currency "USD" and all prices 0.
 * - lcfg_parse(lcfg_to_json(c)) builds a configuration equal to c, and lcfg_to_json() of that
 *   equals lcfg_to_json(c) (json_equal), so the accepted configuration can be persisted (the
 *   controller keeps it in the ConfigMap landlord-system/landlord-config-accepted).
 * - Privileged patterns are PCRE2 regular expressions matched against the whole string: a
 *   pattern P behaves as ^(?:P)$ where $ matches only at the very end (PCRE2_ANCHORED |
 *   PCRE2_ENDANCHORED, UTF mode; regexset.h, which compiles and matches them). "alice" does not
 *   match "malice" or "alice\n". Each match is bounded by regexset.h's limits, so a hostile pattern
 *   or subject cannot hang a worker: a match that hits a limit counts as no match (and is logged
 *   as a warning). Subjects that are not valid UTF-8 match nothing.
 * - Prices are exact: decimal strings such as "0.031" are stored as integer micro-units of the
 *   currency (31000); there is no floating point anywhere.
 *
 * What is validated (each problem becomes one {field, message} entry):
 * - Types of every field ("spec.defaults.networkIsolation": "must be a boolean").
 * - ClusterRole names: at most 253 bytes, no '/' or '%', not "." or "..". An empty role in
 *   tenantRoles.default means the built-in default; in a custom entry it means the default's.
 * - tenantRoles.custom[].labelSelector: required, a valid metav1.LabelSelector (selector.h).
 * - Patterns: compile errors with offset, more than LCFG_PATTERN_MAX bytes, more than
 *   LCFG_LIST_MAX patterns per list.
 * - namespaceMetadata: label keys and values as Kubernetes labels, annotation keys as qualified
 *   names, annotation values strings; keys with the reserved prefix landlord.dev/ (or a
 *   subdomain of landlord.dev) are rejected in both maps, because landlord writes those itself.
 * - defaults.podSecurity: privileged, baseline or restricted.
 * - integrations.argocd: an object whose namespace is a string and whose two lists are arrays;
 *   the object is otherwise kept as written.
 * - showback: currency is three upper-case letters (ISO 4217); a price is a string of digits
 *   with an optional '.' and 1..6 further digits, at most LCFG_PRICE_MAX_MICROS micro-units.
 * - No string may contain a NUL character.
 * Fields the parser does not know are ignored (the API server prunes them by the CRD schema).
 */
#ifndef LANDLORD_LANDLORDCONFIG_H
#define LANDLORD_LANDLORDCONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Micro-units per currency unit: "0.031" is 31000. */
#define LCFG_MICROS 1000000
/* Largest accepted price in micro-units (a trillion currency units). */
#define LCFG_PRICE_MAX_MICROS (1000000000000LL * LCFG_MICROS)
/* Longest privileged pattern in bytes, and most patterns in one list (regexset.h's caps). */
#define LCFG_PATTERN_MAX 1024
#define LCFG_LIST_MAX    256
/* Most tenantRoles.custom entries, and most keys in each namespaceMetadata map. */
#define LCFG_CUSTOM_MAX   128
#define LCFG_METADATA_MAX 256

struct lcfg;

/** Showback prices, in micro-units of @currency per unit. */
struct lcfg_prices {
	const char *currency; /* borrowed from the struct lcfg, e.g. "USD" */
	int64_t cpu_core_hour;
	int64_t memory_gib_hour;
	int64_t storage_gib_month;
};

/**
 * lcfg_parse() - validate a LandlordConfig object and build its configuration.
 * @obj: the LandlordConfig object (borrowed, not modified; only its spec is read), or NULL for
 *       the defaults. Also accepts what lcfg_to_json() returned.
 * @out: OUT, the new configuration (one reference, release with lcfg_unref()); NULL on error.
 * @invalid: OUT, may be NULL. On -EINVAL a new JSON array listing every problem found, each
 *       {"field": "spec.privileged.users[2]", "message": "invalid regular expression at
 *       offset 3: missing closing parenthesis"} (json_decref() it); NULL on success.
 * Return: 0, or -EINVAL when anything is invalid (then *@out is NULL).
 * Thread-safety: safe; @obj must not be modified concurrently.
 */
int lcfg_parse(const json_t *obj, struct lcfg **out /* OUT */, json_t **invalid /* OUT */);

/** lcfg_defaults() - the configuration used when no LandlordConfig exists (new reference). */
struct lcfg *lcfg_defaults(void);

/** lcfg_ref() - take another reference; returns @cfg. Any thread. */
struct lcfg *lcfg_ref(struct lcfg *cfg);
/** lcfg_unref() - drop a reference (NULL is a no-op); the last one frees. Any thread. */
void lcfg_unref(struct lcfg *cfg);

/**
 * lcfg_to_json() - the accepted configuration as a LandlordConfig object (apiVersion, kind,
 * metadata.name "landlord", spec) whose spec is normalized: every field present with its
 * default filled in, prices in canonical form ("0.031", "2", "0"). New reference, owned by the
 * caller (a copy: modifying it does not affect @cfg).
 */
json_t *lcfg_to_json(const struct lcfg *cfg);

/**
 * lcfg_roles_for_namespace() - the ClusterRoles to bind for a tenant namespace's owners,
 * editors and viewers. @ns_labels: the namespace's labels (a JSON object, or NULL for none).
 * The first tenantRoles.custom entry whose selector matches decides; its empty roles fall back
 * to tenantRoles.default, which also applies when nothing matches. The OUT strings are borrowed
 * from @cfg and never NULL; any of the OUT pointers may be NULL when not wanted.
 */
void lcfg_roles_for_namespace(const struct lcfg *cfg, const json_t *ns_labels,
                              const char **owner /* OUT */, const char **editor /* OUT */,
                              const char **viewer /* OUT */);

/**
 * lcfg_role_names() - the distinct ClusterRole names the configuration refers to, sorted, so
 * the controller can check that they exist. Sets *@names to a borrowed array of *@n strings.
 */
void lcfg_role_names(const struct lcfg *cfg, const char *const **names /* OUT */,
                     size_t *n /* OUT */);

/**
 * lcfg_is_privileged_user() - does the request's user bypass tenant restrictions?
 * True when @username matches privileged.users, any of the @n_groups @groups matches
 * privileged.groups, or @username is "system:serviceaccount:<ns>:<name>" and "<ns>:<name>"
 * matches privileged.serviceAccounts. @username may be NULL (then only groups count).
 */
bool lcfg_is_privileged_user(const struct lcfg *cfg, const char *username,
                             const char *const *groups, size_t n_groups);
/** lcfg_is_privileged_namespace() - does @name match privileged.namespaces? */
bool lcfg_is_privileged_namespace(const struct lcfg *cfg, const char *name);

/** lcfg_default_pod_security() - "privileged", "baseline" or "restricted" (static string). */
const char *lcfg_default_pod_security(const struct lcfg *cfg);
bool lcfg_default_network_isolation(const struct lcfg *cfg);

/** lcfg_namespace_labels() - labels stamped on every tenant namespace (borrowed object). */
const json_t *lcfg_namespace_labels(const struct lcfg *cfg);
/** lcfg_namespace_annotations() - annotations stamped on every tenant namespace (borrowed). */
const json_t *lcfg_namespace_annotations(const struct lcfg *cfg);

/**
 * lcfg_argocd() - integrations.argocd as written ({namespace, clusterResourceWhitelist,
 * namespaceResourceBlacklist, ...}), borrowed; NULL when the integration is not configured.
 */
const json_t *lcfg_argocd(const struct lcfg *cfg);

/** lcfg_showback() - the showback prices into @out (strings borrowed from @cfg). */
void lcfg_showback(const struct lcfg *cfg, struct lcfg_prices *out /* OUT */);

#endif
