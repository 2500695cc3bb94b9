/*
 * pbconv.h - string fields rewritten inside Kubernetes protobuf bodies
 * (application/vnd.kubernetes.protobuf), everything else kept byte for byte.
 *
 * kubectl's typed clients send their request bodies as protobuf and never fall back to JSON,
 * so the tenant proxy rewrites namespace names in them as convert.h does in JSON. This module
 * knows the wire format and the schema (pb_descriptors.h, generated from k8s.io/api and
 * k8s.io/apimachinery), not the rules: a caller's callback sees each string and says what
 * becomes of it.
 *
 * A body is the 4 bytes "k8s\0" and a runtime.Unknown: typeMeta = 1 {apiVersion = 1, kind = 2},
 * raw = 2 (the object's own encoding), contentEncoding = 3, contentType = 4. The object in raw
 * is decoded as the message its (apiVersion, kind) names: "v1" "ConfigMap" is
 * k8s.io.api.core.v1.ConfigMap, "rbac.authorization.k8s.io/v1" "RoleBinding"
 * k8s.io.api.rbac.v1.RoleBinding, and the meta/v1 options kinds (DeleteOptions, CreateOptions...)
 * go with every group version, as client-go's scheme registers them.
 *
 * Paths name a string the way JSON would reach it, from the object:
 *   - fields by their JSON name, joined by "." ("metadata.namespace");
 *   - "[]" after a repeated field, for each element ("subjects[].namespace",
 *     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaces[]");
 *   - "{key}" after a map field, for the value of that key, the key as it is
 *     ("spec.podSelector.matchLabels{kubernetes.io/metadata.name}", "metadata.labels{app}");
 *   - what JSON inlines adds no segment: an embedded struct ("spec.volumes[].configMap.name",
 *     not "...volumeSource.configMap..."), and IntOrString or Quantity strings, which stand at
 *     their field's path ("spec.containers[].livenessProbe.httpGet.port").
 * Map keys, bytes and numbers are never visited. A map key holding a NUL byte, or a path over
 * PB_PATH_MAX, is refused when the walk reaches it.
 *
 * The walk follows Go's decoder (gogo-generated Unmarshal): field numbers as int32 of the tag,
 * every occurrence of a field visited (the last one wins in Go, so all are rewritten), unknown
 * fields skipped as Go skips them and copied as they are. It is stricter than Go where Go is
 * lax, so that what passes is read the same way by both: groups (wire types 3 and 4) and, in a
 * map that is walked, entries whose parts reach past the entry or have another wire type than
 * Go assumes are refused as malformed.
 *
 * Invariants: no allocation lives past a call; no global state (thread-safe); a body is read
 * only within [body, body + len); the output is the input with the rewritten strings and the
 * lengths of the messages around them changed, every other byte copied, so an unchanged body
 * comes out identical.
 */
#ifndef LANDLORD_PROXY_PBCONV_H
#define LANDLORD_PROXY_PBCONV_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

#define PB_BODY_MAX  (4u << 20) /* a body, envelope included */
#define PB_DEPTH_MAX 64         /* messages nested in a walk (the schema's deepest is less) */
#define PB_PATH_MAX  1024

/* What becomes of a string (pb_visit.leaf). */
enum pb_verdict {
	PB_KEEP = 0,
	PB_REPLACE = 1, /* by *@repl */
	PB_REFUSE = -1, /* the body is refused, the path named */
};

struct pb_visit {
	/*
	 * enter() - whether to walk into the message or map at @path ("metadata",
	 * "subjects[]", "spec.podSelector.matchLabels"): false leaves it undecoded and copied as
	 * it is. Asked for every occurrence; not asked for what JSON inlines (walked with its
	 * parent). NULL: walk everything.
	 */
	bool (*enter)(void *ud, const char *path);
	/*
	 * leaf() - a string at @path: @value (@len bytes, NUL-terminated; a protobuf string may
	 * hold NULs, @len counts them). PB_REPLACE sets *@repl to the NUL-terminated new value,
	 * which must stay valid until leaf() is called again or pb_rewrite() returns. NULL:
	 * keep every string (pb_rewrite() then only checks the walked parts).
	 */
	enum pb_verdict (*leaf)(void *ud, const char *path, const char *value, size_t len,
	                        const char **repl /* OUT */);
	void *ud;
	/* A lower bound than PB_DEPTH_MAX on nesting (0: PB_DEPTH_MAX); for tests. */
	unsigned max_depth;
};

/* The envelope's TypeMeta. */
struct pb_typemeta {
	char api_version[320]; /* "v1", "rbac.authorization.k8s.io/v1" */
	char kind[128];
};

/**
 * pb_is_envelope() - whether @body starts with the Kubernetes protobuf magic "k8s\0".
 */
bool pb_is_envelope(const char *body, size_t len);

/**
 * pb_kind() - the apiVersion and kind of the envelope @body (as Go reads it: of several
 * typeMeta fields, each part the last one given; absent parts "").
 * Return: 0; -EINVAL (not an envelope, nothing after the magic, malformed, a part holding a
 * NUL or longer than @t holds);
 * -EMSGSIZE (over PB_BODY_MAX).
 */
int pb_kind(const char *body, size_t len, struct pb_typemeta *t /* OUT */);

/**
 * pb_message_name() - the proto message (apiVersion, kind) decodes as, into @out
 * ("k8s.io.api.core.v1.ConfigMap"). Return: 0, -ENOENT (no such kind), -EMSGSIZE (@size).
 */
int pb_message_name(const char *api_version, const char *kind, char *out, size_t size);

/**
 * pb_rewrite() - walk the object of envelope @body with @v and append the body with the
 * replaced strings to @out (@out's cap applies). On failure @out may hold part of a body.
 * @field (@field_size bytes, may be NULL) gets the path a failure is about, else "".
 * Return: 0; -ENOENT (no message for the envelope's kind; pb_kind() names it); -EINVAL
 * (malformed: not an envelope, bad varint, length past its end, wrong wire type, nesting over
 * the bound; @field names the message or field where it was found); -EPERM (leaf() refused
 * @field); -EMSGSIZE (@body over PB_BODY_MAX, a path over PB_PATH_MAX or @out's cap).
 */
int pb_rewrite(const char *body, size_t len, const struct pb_visit *v, struct buf *out, char *field,
               size_t field_size);

#endif
