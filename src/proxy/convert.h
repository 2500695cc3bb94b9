/*
 * convert.h - bodies between a tenant's view and the API server: every field that names a
 * namespace is converted, in requests (shown name to upstream) and in answers (upstream to
 * shown), as docs/proxy.md lists them.
 *
 * What is converted is one table of rules (px_conv_rules()), by the body's kind (apiVersion is
 * not needed: kinds are matched by name, with the core and group kinds that share a name
 * treated alike; a request body without a kind, a patch, takes the kind of the request's
 * resource, px_resource_kind()):
 *   - any object: metadata.namespace;
 *   - Namespace: metadata.name and the label kubernetes.io/metadata.name;
 *   - Event (core/v1 and events.k8s.io/v1): involvedObject.namespace, regarding.namespace,
 *     related.namespace;
 *   - SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview:
 *     spec.resourceAttributes.namespace; SelfSubjectRulesReview: spec.namespace;
 *   - RoleBinding: subjects[].namespace, and the namespace inside the subject names
 *     "system:serviceaccounts:<ns>" (the group of a namespace's ServiceAccounts) and
 *     "system:serviceaccount:<ns>:<name>" (one ServiceAccount as a user);
 *   - every pod spec (Pod; the pod template of Deployment, ReplicaSet, StatefulSet, DaemonSet,
 *     Job, ReplicationController, PodTemplate; CronJob's spec.jobTemplate.spec.template):
 *     the pod affinity and anti-affinity terms (required, and preferred[].podAffinityTerm):
 *     namespaces[], and namespaceSelector, which towards upstream must select by
 *     kubernetes.io/metadata.name only (matchLabels, or matchExpressions with In), with values
 *     that are all the tenant's, converted; anything else (an empty selector selects every
 *     namespace) is refused, so that no term reaches another tenant's pods;
 *   - NetworkPolicy: spec.ingress[].from[] and spec.egress[].to[] namespaceSelector: the
 *     values of kubernetes.io/metadata.name (matchLabels, and matchExpressions of any operator)
 *     that are shown names of the tenant are converted, every other value kept as it is, an
 *     upstream name (a policy may admit traffic from a platform namespace, ingress-nginx),
 *     except the upstream name of one of the tenant's own namespaces, refused (it would come
 *     back under its shown name); answers show the tenant's namespaces under their shown names
 *     and other namespaces under their real ones;
 *   - a claim template's spec.volumeName (StatefulSet volumeClaimTemplates, a pod's
 *     ephemeral volumes) is refused when set: the claims get names of their own, which no
 *     PersistentVolume can be checked to be pre-bound to; a PersistentVolumeClaim's own
 *     metadata.name and spec.volumeName are reported (claim_name, claim_volume) for the
 *     caller to check (upstream.c);
 *   - a list (kind ending in "List" with items): each item, with the list's own kind for
 *     items that carry none (NamespaceList items are Namespaces);
 *   - a Table: each row's object (PartialObjectMetadata or the object), and for namespaces
 *     (@resource "namespaces") the row's first cell, the name;
 *   - a watch event ({type, object}): its object (an ERROR's object is a Status); a request
 *     body for a resource with a kind of its own is never read as one;
 *   - Status: message, details.name for namespaces, details.causes[].message, by whole names
 *     (nsmap.h px_nsmap_text()), never by deleting each "<tenant>-" substring.
 *
 * Towards upstream a namespace the table does not show is not the tenant's: the body is
 * refused (PX_CONV_FOREIGN) and the field named, so that no body can retarget another
 * namespace. Towards the user a namespace not in the table is left as it is: answers only come
 * from the tenant's namespaces, and a merged list never holds another's objects.
 *
 * Protobuf request bodies are converted by the same rules (px_convert_pb(), on pbconv.h).
 *
 * Invariants: the conversion is in place on a jansson tree the caller owns (or from one
 * protobuf body into a buffer); nothing else is read or written; pure and thread-safe on
 * distinct trees.
 */
#ifndef LANDLORD_PROXY_CONVERT_H
#define LANDLORD_PROXY_CONVERT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct px_nsmap;

enum px_dir {
	PX_TO_USER,     /* an answer: upstream names become shown names */
	PX_TO_UPSTREAM, /* a request body: shown names become upstream names */
};

enum px_conv_result {
	PX_CONV_OK = 0,
	PX_CONV_FOREIGN = -1,  /* a namespace outside the tenant's view, or a field that would
	                        * reach one (@field names it, @why says why when not a name) */
	PX_CONV_INVALID = -2,  /* a field of the wrong type (@field names it) */
	PX_CONV_TOO_LONG = -3, /* a converted text over its cap */
};

struct px_conv {
	const struct px_nsmap *map;
	enum px_dir dir;
	const char *resource; /* the request's resource ("namespaces", "pods"), or NULL */
	const char *group;    /* @resource's API group ("" core), or NULL: any group */
	char field[256];      /* OUT: the field a failure is about ("metadata.namespace") */
	const char *why;      /* OUT: a failure's reason when it is not "not a namespace of this
	                       * tenant" (static), or NULL */
	/* OUT: a PersistentVolumeClaim's metadata.name and spec.volumeName when the body sets
	 * them (strings of the body), else NULL */
	const char *claim_name, *claim_volume;
};

/* What a rule's field is. */
enum px_rule_kind {
	PX_RULE_NS,           /* a namespace's name: a string, or each string of a list ("[]") */
	PX_RULE_SUBJECT,      /* an RBAC subject's name: system:serviceaccount(s):<ns>... */
	PX_RULE_SELECTOR,     /* a namespaceSelector confined to the tenant's namespaces */
	PX_RULE_PEER,         /* a NetworkPolicy peer's namespaceSelector: the tenant's converted */
	PX_RULE_NO_VOLUME,    /* a claim template's spec.volumeName: refused when set */
	PX_RULE_CLAIM_NAME,   /* a PersistentVolumeClaim's metadata.name: reported */
	PX_RULE_CLAIM_VOLUME, /* a PersistentVolumeClaim's spec.volumeName: reported */
};

/*
 * A field of a kind, in pbconv.h's path syntax ("subjects[].namespace",
 * "metadata.labels{kubernetes.io/metadata.name}"): @base "." @path, or @path alone when @base
 * is "" (@base is where a pod spec is: "spec.template.spec").
 */
struct px_rule {
	const char *base;
	const char *path;
	enum px_rule_kind kind;
};

#define PX_RULES_MAX  32
#define PX_NAME_LABEL "kubernetes.io/metadata.name"

/* Why a field is refused (px_conv.why), when it is not for naming another namespace. */
#define PX_WHY_SELECTOR_EMPTY                                                                    \
	"a namespaceSelector without requirements selects every namespace, other tenants' too: " \
	"select the tenant's namespaces by " PX_NAME_LABEL ", or name them in namespaces"
#define PX_WHY_SELECTOR_KEY                                                      \
	"through the tenant proxy a namespaceSelector selects by " PX_NAME_LABEL \
	" only (matchLabels, or matchExpressions with In)"
#define PX_WHY_SELECTOR_OP \
	"only the In operator keeps a namespaceSelector to the tenant's namespaces"
#define PX_WHY_SELECTOR_VALUES "a requirement on " PX_NAME_LABEL " needs values"
#define PX_WHY_UPSTREAM_NAME                                                                     \
	"names one of the tenant's namespaces by its upstream name: write the name it is shown " \
	"under"
#define PX_WHY_TEMPLATE_VOLUME                                                                    \
	"a claim template cannot name a PersistentVolume through the tenant proxy (pre-bind the " \
	"volume with its spec.claimRef instead)"

/**
 * px_conv_rules() - the rules px_convert() applies to an object of @kind ("" for none: those of
 * any object), into @out (PX_RULES_MAX entries). Return: their count.
 */
size_t px_conv_rules(const char *kind, struct px_rule *out /* PX_RULES_MAX */);

/** px_rule_path() - @r's whole path ("spec.template.spec.affinity..."), into @out. */
void px_rule_path(const struct px_rule *r, char *out, size_t size);

/**
 * px_resource_kind() - the kind of the objects of @resource in @group (NULL: any group), when
 * rules need it, else NULL. A request body without a kind (a patch) is converted as that kind,
 * and one of another kind gets that kind's rules too.
 */
const char *px_resource_kind(const char *group, const char *resource);

/**
 * px_path_segment() - the next segment of a rule's path at *@p (pbconv.h's syntax), *@p moved
 * past it: '.' a field (its name in @name), '[' each element of a list ("[]"), '{' a map's
 * value (its key in @name), or '\0' at the end.
 */
char px_path_segment(const char **p, char *name, size_t size);

/**
 * px_subject_namespace() - where the namespace is in an RBAC subject name: "system:
 * serviceaccounts:<ns>" or "system:serviceaccount:<ns>:<name>". Return: its offset in @name,
 * and its length in *@len; -1 when @name names no namespace.
 */
long px_subject_namespace(const char *name, size_t *len /* OUT */);

/**
 * px_convert() - convert @body (an object, list, Table, watch event or Status) in place.
 * Return: PX_CONV_OK, or a failure with c->field set; on failure @body is partly converted
 * and must not be sent.
 */
enum px_conv_result px_convert(struct px_conv *c, json_t *body);

/* A PersistentVolumeClaim's metadata.name and spec.volumeName as a body sets them. */
struct px_claim {
	char name[256];
	char volume[256];
	bool set; /* the body sets spec.volumeName (maybe to "") */
};

struct buf;

/**
 * px_convert_pb() - a protobuf request body (pbconv.h: the envelope @body, @len bytes, whose
 * kind pb_kind() read as @kind) converted to upstream by the same rules as px_convert(),
 * appended to @out. @c gives the map (@c->dir is upstream's); @claim, when not NULL, gets a
 * PersistentVolumeClaim's name and volume. A namespaceSelector is judged from its parts as
 * the walk meets them: a requirement's key must come before its operator and values (as Go
 * writes them; what Go never writes is refused), and an affinity term's selector must be
 * whole (at least one complete requirement on the name) once the body is walked.
 * Return: pb_rewrite()'s: 0; -EPERM (refused: @c->field names the field, @c->why says why,
 * NULL meaning "not a namespace of this tenant"); -ENOENT, -EINVAL, -EMSGSIZE (@c->field
 * where, or "").
 */
int px_convert_pb(struct px_conv *c, const char *kind, const char *body, size_t len,
                  struct buf *out, struct px_claim *claim);

#endif
