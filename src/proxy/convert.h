/*
 * convert.h - bodies between a tenant's view and the API server: every field that names a
 * namespace is converted, in requests (shown name to upstream) and in answers (upstream to
 * shown), as docs/proxy.md lists them.
 *
 * What is converted, by the body's kind (apiVersion is not needed: kinds are matched by name,
 * with the core and group kinds that share a name treated alike):
 *   - any object: metadata.namespace;
 *   - Namespace: metadata.name and the label kubernetes.io/metadata.name;
 *   - Event (core/v1 and events.k8s.io/v1): involvedObject.namespace, regarding.namespace,
 *     related.namespace;
 *   - SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview:
 *     spec.resourceAttributes.namespace; SelfSubjectRulesReview: spec.namespace;
 *   - a list (kind ending in "List" with items): each item, with the list's own kind for
 *     items that carry none (NamespaceList items are Namespaces);
 *   - a Table: each row's object (PartialObjectMetadata or the object), and for namespaces
 *     (@resource "namespaces") the row's first cell, the name;
 *   - a watch event ({type, object}): its object (an ERROR's object is a Status);
 *   - Status: message, details.name for namespaces, details.causes[].message, by whole names
 *     (nsmap.h px_nsmap_text()), never by deleting each "<tenant>-" substring.
 *
 * Towards upstream a namespace the table does not show is not the tenant's: the body is
 * refused (PX_CONV_FOREIGN) and the field named, so that no body can retarget another
 * namespace. Towards the user a namespace not in the table is left as it is: answers only come
 * from the tenant's namespaces, and a merged list never holds another's objects.
 *
 * Invariants: the conversion is in place on a jansson tree the caller owns; nothing else is
 * read or written; pure and thread-safe on distinct trees.
 */
#ifndef LANDLORD_PROXY_CONVERT_H
#define LANDLORD_PROXY_CONVERT_H

#include <jansson.h>

struct px_nsmap;

enum px_dir {
	PX_TO_USER,     /* an answer: upstream names become shown names */
	PX_TO_UPSTREAM, /* a request body: shown names become upstream names */
};

enum px_conv_result {
	PX_CONV_OK = 0,
	PX_CONV_FOREIGN = -1,  /* a namespace outside the tenant's view (@field names it) */
	PX_CONV_INVALID = -2,  /* a field of the wrong type (@field names it) */
	PX_CONV_TOO_LONG = -3, /* a converted text over its cap */
};

struct px_conv {
	const struct px_nsmap *map;
	enum px_dir dir;
	const char *resource; /* the request's resource ("namespaces", "pods"), or NULL */
	char field[128];      /* OUT: the field a failure is about ("metadata.namespace") */
};

/**
 * px_convert() - convert @body (an object, list, Table, watch event or Status) in place.
 * Return: PX_CONV_OK, or a failure with c->field set; on failure @body is partly converted
 * and must not be sent.
 */
enum px_conv_result px_convert(struct px_conv *c, json_t *body);

#endif
