/*
 * upstream.c - a request body on its way to the API server: every namespace field converted
 * to its upstream name, or the request refused naming the field (proxy_internal.h), by the
 * rules of convert.h (px_conv_rules()), one table for every form:
 *   - application/json, merge-patch+json, strategic-merge-patch+json: the document converted
 *     as an object (a patch is a partial object: the same fields; its kind is its resource's);
 *   - json-patch+json: each operation's value converted where it stands (a value put at
 *     "/subjects/0" is converted as a subject); an operation that moves, copies or tests a
 *     converted field, or reaches inside a namespaceSelector (whose parts are judged
 *     together), cannot be rewritten by path: PX_BODY_RMW tells the caller to read, patch in
 *     the tenant's view and write back (rmw.c). Paths are read as the API server's json-patch
 *     reads them (what stands before the first '/' is ignored);
 *   - apply-patch+yaml: the YAML read into JSON, converted, and sent as JSON (JSON is YAML);
 *   - application/vnd.kubernetes.protobuf (kubectl's typed clients never fall back to JSON):
 *     the same fields rewritten in place inside the protobuf (pbconv.h), a namespaceSelector
 *     judged from its parts as they come (a requirement's key before its values, as Go writes
 *     them); a kind the proxy's descriptors do not know is 415;
 *   - anything else (CBOR): 415.
 * A PersistentVolumeClaim that names a volume (spec.volumeName, when it is created or set) is
 * sent only when that PersistentVolume is pre-bound to it: the proxy reads the volume as
 * itself, and its spec.claimRef must name the claim's upstream namespace and name; else 422,
 * the same for a volume that does not exist, so nothing is learnt of other volumes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/mem.h"
#include "kube/yamljson.h"
#include "proxy/convert.h"
#include "proxy/nsmap.h"
#include "proxy/pbconv.h"
#include "proxy/proxy_internal.h"

static bool media(const char *ct, const char *type)
{
	size_t n = strlen(type);

	return ct && strncasecmp(ct, type, n) == 0 && (ct[n] == '\0' || ct[n] == ';');
}

static int unprocessable(struct px_job *j, const char *field, const char *why)
{
	px_job_status(j, 422, "Invalid", "%s: %s", field, why);
	return -1;
}

/* The resource a body is for: a namespace's own route names none. */
static const char *body_resource(const struct px_job *j)
{
	return j->route.kind == PX_NAMESPACE ? "namespaces" : j->route.resource;
}

static void claim_take(struct px_claim *cl, const struct px_conv *conv)
{
	if (conv->claim_name)
		snprintf(cl->name, sizeof(cl->name), "%s", conv->claim_name);
	if (conv->claim_volume)
		snprintf(cl->volume, sizeof(cl->volume), "%s", conv->claim_volume);
	cl->set = cl->set || conv->claim_volume;
}

static int refused(struct px_job *j, const struct px_conv *conv, enum px_conv_result r)
{
	if (conv->why)
		return unprocessable(j, conv->field, conv->why);
	return unprocessable(j, conv->field,
	                     r == PX_CONV_FOREIGN ? "not a namespace of this tenant"
	                                          : "cannot be converted");
}

static int object(struct px_job *j, const struct px_nsmap *map, json_t *doc, struct px_claim *cl)
{
	struct px_conv conv = {.map = map,
	                       .dir = PX_TO_UPSTREAM,
	                       .resource = body_resource(j),
	                       .group = j->route.group ? j->route.group : ""};
	enum px_conv_result r = px_convert(&conv, doc);

	if (r != PX_CONV_OK)
		return refused(j, &conv, r);
	claim_take(cl, &conv);
	return 0;
}

/* ---------- JSON patches ---------- */

#define PTR_SEGS 32
#define PTR_SEG  128

/* A JSON Pointer's segments (unescaped); @deep: more than PTR_SEGS of them. */
struct ptr {
	size_t n;
	bool deep;
	char seg[PTR_SEGS][PTR_SEG];
};

/*
 * Path @s as the API server's json-patch reads it: the segments after the first '/' ("" and
 * a path without one are the root), each with "~1" as '/' and "~0" as '~', left to right.
 */
static void ptr_read(const char *s, struct ptr *p)
{
	const char *at = s ? strchr(s, '/') : NULL;

	p->n = 0;
	p->deep = false;
	while (at && !(p->deep = p->n == PTR_SEGS)) {
		const char *seg = at + 1;
		size_t len = strcspn(seg, "/"), w = 0;
		char *out = p->seg[p->n++];

		for (size_t i = 0; i < len && w + 1 < PTR_SEG; i++) {
			bool esc = seg[i] == '~' && i + 1 < len &&
			           (seg[i + 1] == '0' || seg[i + 1] == '1');

			out[w++] = esc ? (seg[i + 1] == '1' ? '/' : '~') : seg[i];
			i += esc;
		}
		out[w] = '\0';
		at = seg[len] ? seg + len : NULL;
	}
}

enum rel {
	REL_NONE,
	REL_ABOVE,  /* the path is the field or one of its parents */
	REL_INSIDE, /* the path is inside the field */
};

/* Where @p stands to the field of rule path @path ("[]" matches any segment). */
static enum rel relation(const struct ptr *p, const char *path)
{
	char name[PTR_SEG], seg;
	size_t i = 0;

	while ((seg = px_path_segment(&path, name, sizeof(name))) != '\0') {
		if (i == p->n)
			return REL_ABOVE;
		if (seg != '[' && strcmp(name, p->seg[i]) != 0)
			return REL_NONE;
		i++;
	}
	return i == p->n ? REL_ABOVE : REL_INSIDE;
}

/*
 * What an operation on @at (from @src, or NULL) that @moves (move, copy, test) needs of rule
 * @r: *@rmw set, *@volume set (a claim's volume reached). Return: false when refused.
 */
static bool op_plan(const struct ptr *at, const struct ptr *src, bool moves, bool copies,
                    const struct px_rule *r, bool *rmw, bool *volume)
{
	char path[256];
	enum rel to, from = REL_NONE;

	px_rule_path(r, path, sizeof(path));
	to = relation(at, path);
	if (src)
		from = relation(src, path);
	if (r->kind == PX_RULE_CLAIM_VOLUME) {
		*volume = *volume || to != REL_NONE;
		return !(copies && to != REL_NONE);
	}
	if (r->kind == PX_RULE_CLAIM_NAME)
		return true;
	if (moves && (to != REL_NONE || from != REL_NONE))
		*rmw = true;
	if ((r->kind == PX_RULE_SELECTOR || r->kind == PX_RULE_PEER) &&
	    (to == REL_INSIDE || from == REL_INSIDE))
		*rmw = true;
	return true;
}

/* Whether @ops can be rewritten by path: 0, PX_BODY_RMW, or -1 with the answer sent. */
static int patch_plan(struct px_job *j, const json_t *ops, const struct px_rule *rules, size_t n)
{
	bool rmw = false, volume = false, ok = true;
	struct ptr *at = xcalloc(2, sizeof(*at)), *src = at + 1;
	size_t i;
	const json_t *op;

	json_array_foreach(ops, i, op) {
		const char *kind = json_string_value(json_object_get(op, "op"));
		const char *from = json_string_value(json_object_get(op, "from"));
		bool copies = kind && (!strcmp(kind, "move") || !strcmp(kind, "copy"));
		bool moves = copies || (kind && !strcmp(kind, "test"));

		ptr_read(json_string_value(json_object_get(op, "path")), at);
		ptr_read(from, src);
		for (size_t k = 0; ok && k < n; k++)
			ok = op_plan(at, from ? src : NULL, moves, copies, &rules[k], &rmw,
			             &volume);
	}
	free(at);
	if (!ok)
		return unprocessable(j, "spec.volumeName",
		                     "a volume is named by a value (add or replace)");
	if (rmw && volume) /* the write-back (rmw.c) would not check the volume */
		return unprocessable(j, "spec.volumeName", "set it in a patch of its own");
	return rmw ? PX_BODY_RMW : 0;
}

/* @value where pointer @p puts it, in objects and arrays as the path says. */
static json_t *skeleton(const struct ptr *p, json_t *value)
{
	json_t *v = json_incref(value);

	for (size_t i = p->n; i-- > 0;) {
		const char *s = p->seg[i];
		char *end;
		unsigned long at = strtoul(s, &end, 10);
		json_t *c;

		if (strcmp(s, "-") == 0 || (*s >= '0' && *s <= '9' && !*end)) {
			c = json_array();
			for (unsigned long k = 0; *s != '-' && at <= 1024 && k < at; k++)
				json_array_append_new(
				        c, json_null()); /* the index, for the field's name */
			json_array_append_new(c, v);
		} else {
			c = json_object();
			json_object_set_new(c, s, v);
		}
		v = c;
	}
	return v;
}

/* One operation's value converted where it goes. 0, or -1 with the answer sent. */
static int patch_op(struct px_job *j, const struct px_nsmap *map, json_t *op, struct px_claim *cl)
{
	const char *kind = json_string_value(json_object_get(op, "op"));
	const char *path = json_string_value(json_object_get(op, "path"));
	json_t *value = json_object_get(op, "value"), *doc;
	struct px_conv conv = {.map = map,
	                       .dir = PX_TO_UPSTREAM,
	                       .resource = body_resource(j),
	                       .group = j->route.group ? j->route.group : ""};
	enum px_conv_result r;
	struct ptr p;

	if (!kind || !path)
		return unprocessable(j, "patch", "an operation without op or path");
	if (!value || (strcmp(kind, "add") != 0 && strcmp(kind, "replace") != 0))
		return 0; /* no value, or one patch_plan() sent to rmw.c when it matters */
	ptr_read(path, &p);
	if (p.deep)
		return unprocessable(j, path, "a path too deep to convert");
	doc = skeleton(&p, value);
	r = px_convert(&conv, doc);
	if (r == PX_CONV_OK)
		claim_take(cl, &conv);
	json_decref(doc);
	return r == PX_CONV_OK ? 0 : refused(j, &conv, r);
}

static int json_patch(struct px_job *j, const struct px_nsmap *map, json_t *doc,
                      struct px_claim *cl)
{
	struct px_rule rules[PX_RULES_MAX];
	size_t n, i;
	json_t *op;
	int rc;

	if (!json_is_array(doc))
		return unprocessable(j, "patch", "a JSON patch must be an array");
	n = px_conv_rules(px_resource_kind(j->route.group, body_resource(j)), rules);
	rc = patch_plan(j, doc, rules, n);
	if (rc != 0)
		return rc;
	json_array_foreach(doc, i, op) {
		if (patch_op(j, map, op, cl) < 0)
			return -1;
	}
	return 0;
}

/* ---------- a claim's volume ---------- */

static bool is_string(const json_t *v, const char *s)
{
	return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/*
 * Whether PersistentVolume @volume is pre-bound to claim @name in @ns: read as the proxy
 * itself. 0, or -1 with the answer sent.
 */
static int volume_prebound(struct px_job *j, const char *ns, const char *name, const char *volume)
{
	static const struct kc_gvr pv = {
	        .group = "", .version = "v1", .resource = "persistentvolumes"};
	struct buf path = BUF_INIT(4096);
	struct kc_resp up = {0};
	struct ll_err err = {{0}};
	struct kc_request rq = {.method = "GET"};
	json_t *ref;
	int rc = -1;

	if (kc_path(&path, &pv, NULL, volume, NULL) < 0)
		return unprocessable(j, "spec.volumeName", "not a volume name");
	rq.path = buf_cstr(&path);
	if (kc_do(j->px->o.client, &rq, &up, &err) < 0) {
		px_job_status(j, 502, "InternalError", "the API server did not answer: %s",
		              err.msg);
	} else if (up.http_status != 200 && up.http_status != 404) {
		px_job_status(j, 500, "InternalError",
		              "the tenant proxy could not read PersistentVolume \"%s\" (%ld)",
		              volume, up.http_status);
	} else {
		ref = json_object_get(json_object_get(up.body, "spec"), "claimRef");
		if (up.http_status == 200 && is_string(json_object_get(ref, "namespace"), ns) &&
		    is_string(json_object_get(ref, "name"), name))
			rc = 0;
		else
			unprocessable(j, "spec.volumeName",
			              "not a PersistentVolume pre-bound to this claim (its "
			              "spec.claimRef)");
	}
	kc_resp_release(&up);
	buf_release(&path);
	return rc;
}

/* A PersistentVolumeClaim made or changed in a namespace (not a subresource). */
static bool is_claim(const struct px_job *j)
{
	const struct px_route *r = &j->route;

	return r->kind == PX_NAMESPACED && r->group && !*r->group && r->resource &&
	       strcmp(r->resource, "persistentvolumeclaims") == 0 && !r->sub &&
	       strcmp(j->method, "DELETE") != 0;
}

/* A claim that names a volume: only one pre-bound to it. 0, or -1 with the answer sent. */
static int claim_check(struct px_job *j, const struct px_nsmap *map, const struct px_claim *cl)
{
	const char *ns, *name;

	if (!cl->set || !cl->volume[0] || !is_claim(j))
		return 0;
	ns = px_nsmap_full(map, j->route.ns);
	name = j->route.name ? j->route.name : cl->name;
	if (!ns || !*name)
		return unprocessable(j, "spec.volumeName",
		                     "a claim that names a volume needs a name (metadata.name)");
	return volume_prebound(j, ns, name, cl->volume);
}
static json_t *read_body(struct px_job *j, bool yaml)
{
	json_t *doc = NULL;
	struct ll_err err = {{0}};

	if (yaml && yaml_to_json(j->body.p, j->body.len, &doc, &err) < 0)
		doc = NULL;
	else if (!yaml)
		doc = json_loadb(j->body.p, j->body.len, 0, NULL);
	if (!doc)
		px_job_status(j, 400, "BadRequest", "the request body is not valid %s%s%s",
		              yaml ? "YAML" : "JSON", err.msg[0] ? ": " : "", err.msg);
	return doc;
}

/* pb_rewrite()'s failure @rc answered. */
static int pb_failed(struct px_job *j, int rc, const struct pb_typemeta *t, const char *field,
                     const char *why)
{
	if (rc == -ENOENT)
		px_job_status(j, 415, "UnsupportedMediaType",
		              "the tenant proxy cannot read %s %s as protobuf: send it as JSON",
		              t->api_version, t->kind);
	else if (rc == -EPERM)
		return unprocessable(j, field, why ? why : "not a namespace of this tenant");
	else if (rc == -EMSGSIZE)
		px_job_status(j, 413, "RequestEntityTooLarge", "the request body is too large");
	else
		px_job_status(j, 400, "BadRequest", "the protobuf body does not parse (at %s)",
		              field[0] ? field : "the top");
	return -1;
}

static int protobuf(struct px_job *j, const struct px_nsmap *map, struct buf *out,
                    struct px_claim *cl)
{
	struct pb_typemeta t;
	struct px_conv conv = {.map = map, .dir = PX_TO_UPSTREAM};
	int rc = pb_kind(j->body.p, j->body.len, &t);

	if (rc < 0) {
		px_job_status(j, 400, "BadRequest", "the protobuf body does not parse");
		return -1;
	}
	rc = px_convert_pb(&conv, t.kind, j->body.p, j->body.len, out, cl);
	return rc < 0 ? pb_failed(j, rc, &t, conv.field, conv.why) : 0;
}

int px_body_upstream(struct px_job *j, const struct px_nsmap *map, struct buf *out)
{
	const char *ct = j->content_type;
	bool patch = media(ct, "application/json-patch+json");
	bool yaml = media(ct, "application/apply-patch+yaml");
	struct px_claim cl = {.set = false};
	json_t *doc;
	char *text;
	int rc;

	if (j->body.len == 0)
		return 0;
	if (media(ct, "application/vnd.kubernetes.protobuf")) {
		rc = protobuf(j, map, out, &cl);
		return rc == 0 ? claim_check(j, map, &cl) : rc;
	}
	if (!patch && !yaml && !media(ct, "application/json") &&
	    !media(ct, "application/merge-patch+json") &&
	    !media(ct, "application/strategic-merge-patch+json")) {
		px_job_status(j, 415, "UnsupportedMediaType",
		              "the tenant proxy takes JSON, YAML and protobuf bodies, not %s",
		              ct ? ct : "a body without a Content-Type");
		return -1;
	}
	doc = read_body(j, yaml);
	if (!doc)
		return -1;
	rc = patch ? json_patch(j, map, doc, &cl) : object(j, map, doc, &cl);
	if (rc == 0)
		rc = claim_check(j, map, &cl);
	text = rc == 0 ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (text)
		rc = buf_append_str(out, text) < 0 ? -1 : 0;
	free(text);
	json_decref(doc);
	return rc;
}
