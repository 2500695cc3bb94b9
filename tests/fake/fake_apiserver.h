/*
 * fake_apiserver.h - an in-process fake Kubernetes API server for unit tests (libmicrohttpd,
 * plain HTTP on 127.0.0.1, an ephemeral port). Controllers and the client library talk to it
 * as to a real one; tests seed, read and change its objects directly and steer chosen requests.
 *
 * What it serves:
 *  - discovery: /api, /apis, /api/v1, /apis/<group>, /apis/<group>/<version> for the resources it
 * knows (the built-in kinds landlord uses; more with fake_api_add_resource());
 *  - GET of one object, LIST with limit/continue paging, label selectors (=, ==, !=, in, notin,
 *    exists, !exists) and field selectors on metadata.name and metadata.namespace (=, ==, !=);
 *    metadata-only answers (PartialObjectMetadata[List]) when the Accept header asks for them;
 *  - WATCH from a resourceVersion (or from now): ADDED, MODIFIED, DELETED in order; an object
 *    entering or leaving the selector is ADDED or DELETED; from a resourceVersion older than the
 *    last fake_api_compact() the answer is an ERROR event with a 410 Expired Status;
 *  - CREATE (409 AlreadyExists, generateName, uid, resourceVersion, creationTimestamp,
 *    generation), UPDATE (409 Conflict on a stale resourceVersion), PATCH as merge patch,
 *    JSON patch (add, remove, replace, test) and server-side apply (creates, or merges into the
 *    object), DELETE with uid/resourceVersion preconditions; finalizers keep an object with a
 *    deletionTimestamp until they are gone; a deleted namespace deletes its contents (without
 *    waiting for their finalizers), or stays Terminating until fake_api_finish_namespace() when
 *    fake_api_hold_namespaces() says so;
 *  - the status subresource: writes to /status change only status, other writes never do;
 *  - SelfSubjectAccessReviews (authorization.k8s.io/v1): a POST is answered 201 with
 *    status.allowed as the access hook decides (fake_api_set_access_hook(); without one, every
 *    review is allowed), and nothing is stored; other verbs are 405. A review is in the request
 *    log but is not a write (fake_api_writes()). TokenReviews (authentication.k8s.io/v1) the
 *    same way, their status from the token hook (fake_api_set_token_hook(); without one, no
 *    token is authenticated).
 * A single global resourceVersion counter orders every change, as etcd's revision does.
 *
 * NOT implemented (a test that needs one of these needs a real cluster, tests/cluster):
 *  - authentication, authorization (no request is ever refused for who sent it; access reviews
 *    answer only what the access hook says), admission (no webhooks, no quota enforcement, no
 *    validation beyond a name; CRD schemas are not checked, unknown fields are kept);
 *  - field ownership: apply merges like a merge patch; managedFields is never written, there
 *    are no apply conflicts, and fields another manager set are never removed by apply;
 *  - strategic merge patch (treated as a merge patch: lists are replaced, not merged);
 *  - apply bodies in YAML (JSON only; the client library sends JSON);
 *  - watch bookmarks, resourceVersionMatch, consistent list snapshots (a continued list reads
 *    the current objects, not those at the first page's resourceVersion), sendInitialEvents;
 *  - garbage collection by ownerReferences, propagationPolicy, grace periods;
 *  - namespace existence checks on create (objects may live in a namespace that is not there),
 *    except that creating in a Terminating namespace is 403 Forbidden;
 *  - subresources other than status, protobuf, table output, dry run, HTTP/2, TLS.
 *
 * Resources are named like kubectl names them: "namespaces",
 * "rolebindings.rbac.authorization.k8s.io", "tenants.landlord.dev" (plural, then the group when it
 * is not core). Objects handed out are copies (json_decref() them); objects handed in are copied.
 * All functions are thread-safe. Hooks and conditions run on the fake's threads or the
 * caller's: they must not block.
 */
#ifndef LANDLORD_FAKE_APISERVER_H
#define LANDLORD_FAKE_APISERVER_H

#include <jansson.h>
#include <stdbool.h>

struct fake_api;

/** fake_api_start() - a running fake on 127.0.0.1; aborts the test process if it cannot start. */
struct fake_api *fake_api_start(void);
/** fake_api_stop() - end open watches, release held requests, stop and free. NULL is a no-op. */
void fake_api_stop(struct fake_api *f);
int fake_api_port(const struct fake_api *f);
/** fake_api_url() - "http://127.0.0.1:<port>" (lent, lives as long as @f). */
const char *fake_api_url(const struct fake_api *f);

/** fake_api_add_resource() - serve one more resource, e.g. a CRD's. @has_status: a /status
 * subresource (then ordinary writes keep status and /status writes keep the rest). */
void fake_api_add_resource(struct fake_api *f, const char *group, const char *version,
                           const char *resource, const char *kind, bool namespaced,
                           bool has_status);

/* ---- direct access (no HTTP, not in the request log; watches see the changes) ---- */

/** fake_api_get() - a copy of the object, or NULL. @ns NULL for cluster-scoped objects. */
json_t *fake_api_get(struct fake_api *f, const char *res, const char *ns, const char *name);
/** fake_api_list() - a new array of copies of every object of @res (in @ns, or all: NULL). */
json_t *fake_api_list(struct fake_api *f, const char *res, const char *ns);
/** fake_api_put() - create or replace @obj (metadata.name, metadata.namespace), status
 * included; fills in uid, resourceVersion, creationTimestamp. Return: the stored resourceVersion.
 */
long long fake_api_put(struct fake_api *f, const char *res, const json_t *obj);
/** fake_api_delete() - delete as an API DELETE would (finalizers, namespaces). false: absent. */
bool fake_api_delete(struct fake_api *f, const char *res, const char *ns, const char *name);
/** fake_api_resource_version() - the current (last written) resourceVersion. */
long long fake_api_resource_version(struct fake_api *f);
/** fake_api_compact() - forget all history up to now: watches from older resourceVersions and
 * continue tokens issued before get 410; open watches end (clients resume and meet the 410). */
void fake_api_compact(struct fake_api *f);

/* ---- namespaces ---- */

/** fake_api_hold_namespaces() - while on, a deleted namespace stays Terminating with its
 * contents until fake_api_finish_namespace(). */
void fake_api_hold_namespaces(struct fake_api *f, bool hold);
/** fake_api_finish_namespace() - delete a Terminating namespace's contents, then it. */
void fake_api_finish_namespace(struct fake_api *f, const char *name);

/* ---- steering requests ---- */

enum fake_action {
	FAKE_ANSWER,  /* answer with .status and a Status body (reason from the code) */
	FAKE_HOLD,    /* block the request until fake_api_release() (or stop), then serve it */
	FAKE_CORRUPT, /* serve it (a write happens), then cut the answer's last two bytes and
	               * append ",nope": not JSON, though what comes first (a list's metadata)
	               * reads as usual; watches are never corrupted */
};

/** A rule matches a request when every set field matches; the first matching rule acts. */
struct fake_rule {
	const char *method;         /* "GET", "POST", "PUT", "PATCH", "DELETE"; NULL: any */
	const char *path_contains;  /* substring of the path (no query); NULL: any */
	const char *query_contains; /* substring of the query string; NULL: any */
	bool watch;                 /* match only watches (otherwise only non-watches) */
	enum fake_action action;
	int status; /* FAKE_ANSWER: the HTTP status */
	int times;  /* act this many times, then the rule is spent; 0: forever */
};

/** How list bodies are written: as the API server does (metadata before items, compact), items
 * before metadata and indented, or with every "/" escaped as "\/" (valid JSON all three; for
 * clients that scan bodies before parsing them). */
enum fake_list_layout { FAKE_LIST_USUAL, FAKE_LIST_ITEMS_FIRST, FAKE_LIST_ESCAPED };
void fake_api_set_list_layout(struct fake_api *f, enum fake_list_layout layout);

/** fake_api_rule_add() - install a rule (copied); returns its id. */
int fake_api_rule_add(struct fake_api *f, const struct fake_rule *rule);
/** fake_api_rule_hits() - how many requests the rule acted on. */
int fake_api_rule_hits(struct fake_api *f, int id);
/** fake_api_rule_remove() - remove a rule; requests it holds are released. */
void fake_api_rule_remove(struct fake_api *f, int id);
/** fake_api_release() - release the requests rule @id holds (and those it will hold: the rule
 * stops holding). */
void fake_api_release(struct fake_api *f, int id);

/**
 * A write hook runs after every write that stored an object (API or direct), under the fake's
 * lock, before watchers see it; it may change @obj in place (not its metadata), as a controller
 * of the cluster would shortly afterwards (e.g. the quota controller filling ResourceQuota
 * status.hard). @verb: "create", "update", "patch", "apply", "put" (direct), "delete" (a
 * deletionTimestamp set).
 */
typedef void (*fake_write_hook)(const char *verb, const char *res, json_t *obj, void *ud);
void fake_api_set_write_hook(struct fake_api *f, fake_write_hook hook, void *ud);
/**
 * An access hook answers SelfSubjectAccessReviews: @spec is the review's spec as sent (borrowed;
 * e.g. {"resourceAttributes": {"verb": "bind", "group": "rbac.authorization.k8s.io",
 * "resource": "clusterroles", "name": "admin"}}); return status.allowed. It runs under the
 * fake's lock on the fake's thread: it must not block or call the fake.
 */
typedef bool (*fake_access_hook)(const json_t *spec, void *ud);
/** fake_api_set_access_hook() - install @hook (NULL: every review is allowed again). */
void fake_api_set_access_hook(struct fake_api *f, fake_access_hook hook, void *ud);

/**
 * A token hook answers TokenReviews: @spec is the review's spec as sent (borrowed; e.g.
 * {"token": "...", "audiences": ["a"]}); return the review's status (a new reference, e.g.
 * {"authenticated": true, "user": {"username": "u", "groups": ["g"]}}), or NULL for
 * {"authenticated": false}. It runs under the fake's lock on the fake's thread: it must not
 * block or call the fake.
 */
typedef json_t *(*fake_token_hook)(const json_t *spec, void *ud);
/** fake_api_set_token_hook() - install @hook (NULL: no token is authenticated again). */
void fake_api_set_token_hook(struct fake_api *f, fake_token_hook hook, void *ud);

/** fake_api_quota_hook - a write hook that sets a ResourceQuota's status.hard to its spec.hard
 * (and status.used to zero for resources it has not seen). */
void fake_api_quota_hook(const char *verb, const char *res, json_t *obj, void *ud);

/* ---- request log ---- */

/** fake_api_requests() - requests received so far (held ones too) whose method matches (NULL:
 * any) and whose path contains @path_contains (NULL: any). A watch counts once. */
int fake_api_requests(struct fake_api *f, const char *method, const char *path_contains);
/** fake_api_writes() - POST, PUT, PATCH and DELETE requests answered so far; access and token
 * reviews (POSTs that store nothing) are not counted. */
int fake_api_writes(struct fake_api *f);
/** fake_api_log() - a new array of {method, path, query, status} in arrival order; status is 0
 * while a request is not answered yet. The query holds the parameters the fake reads. */
json_t *fake_api_log(struct fake_api *f);

/* ---- waiting ---- */

typedef bool (*fake_cond)(struct fake_api *f, void *ud);
/**
 * fake_api_wait() - wait until @cond holds, re-checking after every request and change, and at
 * least every 20 ms (for conditions on something else, such as the manager's metrics).
 * Return: true when it holds; false after FAKE_WAIT_MS (the test then fails instead of hanging).
 */
bool fake_api_wait(struct fake_api *f, fake_cond cond, void *ud);
#define FAKE_WAIT_MS 20000

#endif
