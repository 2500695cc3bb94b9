/*
 * landlordconfig_ctl.c - the LandlordConfig controller: validates the singleton "landlord", puts
 * the accepted configuration in force (config/current.h) and persists it.
 *
 * What is in force, and when (docs/config.md is the user's view):
 *  - At start-up (setup(), on every replica, before informers sync) the configuration persisted
 *    in the ConfigMap landlord-system/landlord-config-accepted (data "config.json", what
 *    lcfg_to_json() gave) is installed, so the last accepted configuration survives restarts
 *    even while the current object is invalid. No ConfigMap: the defaults.
 *  - A valid "landlord" is installed, persisted (server-side apply, only when the stored text
 *    differs) and reported Accepted=True with lastAppliedGeneration = generation.
 *  - An invalid one changes nothing in force; status lists every problem (status.invalid) and
 *    says Accepted=False, reason Invalid (lcfg_parse() failed), UnknownClusterRole (it parsed,
 *    but tenantRoles names a ClusterRole the clusterroles cache does not hold) or
 *    RoleNotBindable (every role exists, but the API server says landlord may not bind one).
 *  - Bindability is asked with a SelfSubjectAccessReview (verb bind, clusterroles, the role's
 *    name, cluster-wide) per mapped role in each reconcile of "landlord", and only there: the
 *    answers live for that reconcile (role_probe), the Tenant controller never asks. A review
 *    without an answer leaves everything as it is and retries with back-off.
 *  - No "landlord" object (deleted, or never created): the defaults are in force and persisted,
 *    exactly as if an empty LandlordConfig had been accepted.
 *  - Any other name is never read; its status says Accepted=False, reason IgnoredName.
 * Ready mirrors Accepted. Each status change is also recorded as an Event (Normal Accepted, or
 * Warning with the reason), in "default" as for every cluster-scoped object (events.h).
 *
 * Keys: landlordconfigs are primary. ClusterRoles (a metadata-only informer) are a second
 * primary rather than a mapped source: the manager enqueues only primary objects when leadership
 * starts, and when no LandlordConfig exists, nothing else would ever reconcile "landlord" (the
 * defaults must replace a configuration persisted before the object was deleted). A ClusterRole
 * key enqueues "landlord" (de-duplicated by the work queue) only when the configuration in force
 * or the current object names that role, or it is landlord's own ClusterRole (its bind rule may
 * have changed), so the per-tenant ClusterRoles the Tenant controller creates cost no reconcile
 * of "landlord"; admin, edit and view, which the defaults name, start one on every leadership.
 * While "landlord" is rejected as RoleNotBindable, any other ClusterRole re-checks it too (the
 * bind may come from a new role), and it is requeued every NOT_BINDABLE_RECHECK_MS: a new
 * ClusterRoleBinding, or the authorizer's cache catching up, changes no ClusterRole. One worker:
 * "landlord" is the only key that writes the ConfigMap and installs configuration.
 *
 * The ConfigMap is read with a GET in each reconcile of "landlord" that would write it: landlord
 * may get it by name but not list or watch ConfigMaps, and a copy in memory could be stale after
 * another replica led for a while.
 *
 * Followers keep what they loaded at start-up; they pick up later changes when they lead.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/controllers.h"
#include "controllers/landlordconfig_ctl_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/status.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/landlordconfig_current.h"

/* ---- Pure helpers (landlordconfig_ctl_internal.h): no API calls, no global state ---- */

static const char *verdict_reason(enum verdict v)
{
	switch (v) {
	case VERDICT_ACCEPTED:
		return "Accepted";
	case VERDICT_INVALID:
		return "Invalid";
	case VERDICT_UNKNOWN_ROLE:
		return "UnknownClusterRole";
	case VERDICT_NOT_BINDABLE:
		return "RoleNotBindable";
	case VERDICT_IGNORED_NAME:
		return "IgnoredName";
	}
	return "Invalid";
}

/* Cut @s to at most @max bytes on a UTF-8 character boundary, ending in "..." when cut. */
static void truncate_utf8(char *s, size_t max)
{
	size_t len = strlen(s), cut;

	if (len <= max || max < 4)
		return;
	cut = max - 3;
	while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	memcpy(s + cut, "...", 4);
}

/*
 * lcfgctl_invalid_summary() - "2 problems: spec.a: why; spec.b: why", the first SUMMARY_SHOWN
 * problems of @invalid ([{field, message}], borrowed) and a count of the rest, at most
 * SUMMARY_MAX_BYTES. Returns a new string (free() it).
 */
char *lcfgctl_invalid_summary(const json_t *invalid)
{
	struct buf b = BUF_INIT(BUF_MAX_INTERNAL);
	size_t n = json_array_size(invalid), i;
	char *out;

	buf_appendf(&b, "%zu problem%s: ", n, n == 1 ? "" : "s");
	for (i = 0; i < n && i < SUMMARY_SHOWN; i++) {
		const json_t *p = json_array_get(invalid, i);
		const char *field = jx_str(p, "field", NULL), *msg = jx_str(p, "message", NULL);

		buf_appendf(&b, "%s%s: %s", i > 0 ? "; " : "",
		            field != NULL && *field != '\0' ? field : "(object)",
		            msg != NULL ? msg : "invalid");
	}
	if (n > SUMMARY_SHOWN)
		buf_appendf(&b, "; and %zu more in status.invalid", n - SUMMARY_SHOWN);
	out = buf_detach(&b);
	truncate_utf8(out, SUMMARY_MAX_BYTES);
	return out;
}

static void check_role(const json_t *roles, const char *key, const char *field, role_check_fn check,
                       void *ud, json_t *out, bool *missing)
{
	const char *name = jx_str(roles, key, NULL);
	enum role_state state;
	char *path, *msg;

	if (name == NULL || *name == '\0')
		return;
	state = check(name, ud);
	if (state == ROLE_OK)
		return;
	*missing |= state == ROLE_MISSING;
	path = xasprintf("%s.%s", field, key);
	msg = state == ROLE_MISSING ? xasprintf("ClusterRole \"%s\" does not exist", name)
	                            : xasprintf(NOT_BINDABLE_FMT, name);
	json_array_append_new(out, json_pack("{s:s,s:s}", "field", path, "message", msg));
	free(path);
	free(msg);
}

/*
 * lcfgctl_judge_roles() - check every ClusterRole a tenantRoles entry of @cfg names; *@invalid
 * lists those that are not ROLE_OK (NULL when none). See landlordconfig_ctl_internal.h.
 */
enum verdict lcfgctl_judge_roles(const struct lcfg *cfg, role_check_fn check, void *ud,
                                 json_t **invalid)
{
	static const char *const keys[] = {"owner", "editor", "viewer"};
	json_t *doc = lcfg_to_json(cfg), *out = json_array(), *entry;
	const json_t *tr = jx_get(doc, "spec", "tenantRoles", NULL);
	bool missing = false;
	size_t i, k;

	for (k = 0; k < 3; k++)
		check_role(jx_get(tr, "default", NULL), keys[k], "spec.tenantRoles.default", check,
		           ud, out, &missing);
	json_array_foreach(jx_get(tr, "custom", NULL), i, entry) {
		char *field = xasprintf("spec.tenantRoles.custom[%zu]", i);

		for (k = 0; k < 3; k++)
			check_role(entry, keys[k], field, check, ud, out, &missing);
		free(field);
	}
	json_decref(doc);
	*invalid = NULL;
	if (json_array_size(out) == 0) {
		json_decref(out);
		return VERDICT_ACCEPTED;
	}
	*invalid = out;
	return missing ? VERDICT_UNKNOWN_ROLE : VERDICT_NOT_BINDABLE;
}

/*
 * lcfgctl_spec_names_role() - does @obj (a LandlordConfig as written, borrowed, may be NULL) name
 * the ClusterRole @role in spec.tenantRoles? An unset or empty default role names the built-in one;
 * an unset custom role names nothing of its own. Works on invalid objects too.
 */
bool lcfgctl_spec_names_role(const json_t *obj, const char *role)
{
	static const char *const keys[] = {"owner", "editor", "viewer"};
	static const char *const builtin[] = {"admin", "edit", "view"};
	const json_t *tr = jx_get(obj, "spec", "tenantRoles", NULL), *entry;
	size_t i, k;

	for (k = 0; k < 3; k++) {
		const char *name = jx_str(tr, "default", keys[k], NULL);

		if (strcmp(name != NULL && *name != '\0' ? name : builtin[k], role) == 0)
			return true;
	}
	json_array_foreach(jx_get(tr, "custom", NULL), i, entry) {
		for (k = 0; k < 3; k++) {
			const char *name = jx_str(entry, keys[k], NULL);

			if (name != NULL && strcmp(name, role) == 0)
				return true;
		}
	}
	return false;
}

/*
 * lcfgctl_desired_status() - the status @v calls for on @obj (borrowed; its current conditions keep
 * their lastTransitionTime where the status stays). @invalid lists the problems for
 * VERDICT_INVALID and VERDICT_UNKNOWN_ROLE (borrowed). A null member means "remove" (merge
 * patch); see lcfgctl_status_matches(). New reference.
 */
json_t *lcfgctl_desired_status(const json_t *obj, enum verdict v, const json_t *invalid)
{
	long long gen = jx_generation(obj);
	const json_t *current = jx_get(obj, "status", "conditions", NULL);
	const char *reason = verdict_reason(v), *cond_status = "False";
	json_t *status = json_object(), *accepted, *conds;
	char *msg = NULL, *summary;

	switch (v) {
	case VERDICT_ACCEPTED:
		cond_status = "True";
		msg = xasprintf("generation %lld is in force", gen);
		json_object_set_new(status, "lastAppliedGeneration", json_integer(gen));
		json_object_set_new(status, "invalid", json_null());
		break;
	case VERDICT_INVALID:
	case VERDICT_UNKNOWN_ROLE:
	case VERDICT_NOT_BINDABLE:
		summary = lcfgctl_invalid_summary(invalid);
		msg = xasprintf("generation %lld is not in force; the configuration in force is "
		                "unchanged. %s",
		                gen, summary);
		free(summary);
		truncate_utf8(msg, SUMMARY_MAX_BYTES);
		json_object_set(status, "invalid", (json_t *)invalid);
		break;
	case VERDICT_IGNORED_NAME:
		msg = xstrdup("only the LandlordConfig named landlord is read");
		break;
	}
	json_object_set_new(status, "observedGeneration", json_integer(gen));
	accepted = cond_set(current, "Accepted", cond_status, reason, msg, gen);
	conds = cond_set(accepted, "Ready", cond_status, reason, msg, gen);
	json_object_set_new(status, "conditions", conds);
	json_decref(accepted);
	free(msg);
	return status;
}

/*
 * lcfgctl_status_matches() - does @have (the cached status, may be NULL) already say what @want
 * says? Members of @want that are null must be absent (or null) in @have; others must match as in
 * jx_equal_subset().
 */
bool lcfgctl_status_matches(const json_t *want, const json_t *have)
{
	const char *key;
	json_t *value;

	json_object_foreach((json_t *)want, key, value) {
		json_t *h = json_object_get(have, key);

		if (json_is_null(value) ? h != NULL && !json_is_null(h)
		                        : !jx_equal_subset(value, h))
			return false;
	}
	return true;
}

/* lcfgctl_configmap_body() - the ConfigMap holding @config_text, as landlord applies it. New ref.
 */
json_t *lcfgctl_configmap_body(const char *config_text)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
	                 "ConfigMap", "metadata", "name", ACCEPTED_CONFIG_CONFIGMAP, "namespace",
	                 LANDLORD_SYSTEM_NAMESPACE, "labels", LABEL_MANAGED_BY, MANAGED_BY_VALUE,
	                 "data", ACCEPTED_CONFIG_KEY, config_text);
}

/* lcfgctl_configmap_is_current() - @cm (may be NULL) already holds @config_text as landlord writes
 * it. */
bool lcfgctl_configmap_is_current(const json_t *cm, const char *config_text)
{
	const char *stored = jx_str(cm, "data", ACCEPTED_CONFIG_KEY, NULL);
	const char *label = jx_label(cm, LABEL_MANAGED_BY);

	return stored != NULL && strcmp(stored, config_text) == 0 && label != NULL &&
	       strcmp(label, MANAGED_BY_VALUE) == 0;
}

/*
 * lcfgctl_config_from_configmap() - the configuration persisted in @cm (borrowed).
 * Return: 0 with *@out set (lcfg_unref() it), -ENOENT when @cm has no config.json, -EINVAL when
 * it is not JSON or not a valid configuration (detail in @err).
 */
int lcfgctl_config_from_configmap(const json_t *cm, struct lcfg **out /* OUT */, struct ll_err *err)
{
	const char *text = jx_str(cm, "data", ACCEPTED_CONFIG_KEY, NULL);
	json_t *doc = NULL, *invalid = NULL;
	char *summary;
	int rc;

	*out = NULL;
	if (text == NULL)
		return ll_err_set(err, -ENOENT, "no data key %s", ACCEPTED_CONFIG_KEY);
	doc = jx_loads(text, strlen(text), err);
	if (doc == NULL)
		return -EINVAL;
	rc = lcfg_parse(doc, out, &invalid);
	if (rc < 0) {
		summary = lcfgctl_invalid_summary(invalid);
		ll_err_set(err, rc, "%s", summary);
		free(summary);
	}
	json_decref(invalid);
	json_decref(doc);
	return rc;
}

/* lcfgctl_config_digest() - lowercase hex SHA-256 of @text, to tell configurations apart in logs.
 */
void lcfgctl_config_digest(const char *text, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;

	out[0] = '\0';
	if (EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL) != 1)
		return;
	for (i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* ---- The controller ---- */

struct lcfg_ctl {
	struct inf *configs;
	struct inf *roles;  /* metadata only: existence is all that is read */
	atomic_bool loaded; /* the persisted configuration was read (or found absent) */
	/* "landlord" was last judged VERDICT_NOT_BINDABLE: any ClusterRole change re-checks it */
	atomic_bool not_bindable;
};

static void log_rejected_answer(const char *msg, const struct kc_resp *resp)
{
	log_warn(msg, "{s:s,s:i,s:s,s:s}", "configmap",
	         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "code",
	         (int)resp->http_status, "reason", resp->status.reason, "message",
	         resp->status.message);
}

/*
 * Install the configuration persisted in the ConfigMap. Return: 0 once the ConfigMap has been
 * read or found absent (an unusable one is logged and leaves the configuration in force as it
 * is), or a negative errno when it could not be read (the caller tries again later).
 */
/*
 * GET the ConfigMap into @resp. Return: 0 with a 200 or 404 answer; -EIO (logged) when there is
 * no answer or another one.
 */
static int read_accepted(struct kc_client *kc, struct kc_resp *resp /* OUT */)
{
	struct ll_err err = {{0}};
	int rc = kc_get(kc, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, ACCEPTED_CONFIG_CONFIGMAP,
	                resp, &err);

	if (rc < 0) {
		log_warn("cannot read the accepted LandlordConfig", "{s:s,s:s}", "configmap",
		         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "error", err.msg);
		return -EIO;
	}
	if (resp->http_status != 404 && !kc_resp_ok(resp)) {
		log_rejected_answer("cannot read the accepted LandlordConfig", resp);
		return -EIO;
	}
	return 0;
}

static int load_persisted(struct kc_client *kc, struct lcfg_ctl *ctl)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	struct lcfg *cfg = NULL;
	char digest[65];
	int rc;

	rc = read_accepted(kc, &resp);
	if (rc < 0)
		goto out;
	if (resp.http_status == 404) {
		log_info("no accepted LandlordConfig persisted yet; the defaults are in force",
		         "{s:s}", "configmap",
		         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP);
		goto loaded;
	}
	if (lcfgctl_config_from_configmap(resp.body, &cfg, &err) < 0) {
		log_warn("the persisted LandlordConfig is unusable; the configuration in force is "
		         "unchanged until one is accepted",
		         "{s:s,s:s}", "configmap",
		         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "error", err.msg);
		goto loaded;
	}
	lcfg_install(cfg);
	lcfgctl_config_digest(jx_str(resp.body, "data", ACCEPTED_CONFIG_KEY, NULL), digest);
	log_info("loaded the last accepted LandlordConfig", "{s:s,s:s,s:s}", "configmap",
	         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "resourceVersion",
	         jx_resource_version(resp.body) ? jx_resource_version(resp.body) : "", "digest",
	         digest);
loaded:
	atomic_store(&ctl->loaded, true);
	rc = 0;
out:
	lcfg_unref(cfg);
	kc_resp_release(&resp);
	return rc;
}

/* Store @cfg in the ConfigMap unless it already holds exactly that. */
static struct ctrl_result persist(struct kc_client *kc, const struct lcfg *cfg)
{
	json_t *doc = lcfg_to_json(cfg), *body = NULL;
	char *text = jx_dumps(doc), digest[65];
	struct ctrl_result r = CTRL_RESULT_RETRY;
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc;

	if (read_accepted(kc, &resp) < 0)
		goto out;
	if (kc_resp_ok(&resp) && lcfgctl_configmap_is_current(resp.body, text)) {
		r = CTRL_RESULT_DONE;
		goto out;
	}
	kc_resp_release(&resp);
	body = lcfgctl_configmap_body(text);
	rc = kc_apply(kc, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, ACCEPTED_CONFIG_CONFIGMAP,
	              NULL, body, LANDLORD_FIELD_MANAGER, true, &resp, &err);
	if (rc < 0) {
		log_warn("cannot persist the accepted LandlordConfig", "{s:s,s:s}", "configmap",
		         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "error", err.msg);
		goto out;
	}
	if (!kc_resp_ok(&resp)) {
		log_rejected_answer("cannot persist the accepted LandlordConfig", &resp);
		goto out;
	}
	lcfgctl_config_digest(text, digest);
	log_info("persisted the accepted LandlordConfig", "{s:s,s:s,s:s}", "configmap",
	         LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP, "resourceVersion",
	         jx_resource_version(resp.body) ? jx_resource_version(resp.body) : "", "digest",
	         digest);
	r = CTRL_RESULT_DONE;
out:
	kc_resp_release(&resp);
	json_decref(body);
	json_decref(doc);
	free(text);
	return r;
}

static struct ctrl_result write_status(struct kc_client *kc, const char *name, json_t *status)
{
	char why[512];

	/* merged: lastAppliedGeneration stays while a newer object is rejected */
	if (status_write(kc, &LL_LANDLORDCONFIGS, name, status, STATUS_MERGE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) == 0)
		return CTRL_RESULT_DONE;
	log_warn("LandlordConfig status write failed", "{s:s,s:s}", "landlordconfig", name, "error",
	         why);
	return CTRL_RESULT_RETRY;
}

/* An Event saying what the new @status (about to be written on @obj) means, from its message. */
static void record_verdict(struct kc_client *kc, const json_t *obj, enum verdict v,
                           const json_t *status)
{
	const char *msg = jx_str(cond_find(json_object_get(status, "conditions"), "Accepted"),
	                         "message", NULL);

	/* cached objects carry apiVersion and kind, which the Event's involvedObject needs */
	event_record(kc, LANDLORD_COMPONENT, obj,
	             v == VERDICT_ACCEPTED ? EVENT_NORMAL : EVENT_WARNING, verdict_reason(v), "%s",
	             msg ? msg : "");
}

static bool role_in_cache(const char *name, void *ud)
{
	const struct jdoc *role = inf_get_key_ref(ud, name);
	bool found = role != NULL;

	jdoc_unref(role);
	return found;
}

/*
 * A jansson copy of the cached LandlordConfig @key, or NULL: the one primary object of a
 * reconcile, which lcfg_parse() and the status builders read as jansson (documented in
 * docs/internals/informer.md).
 */
static json_t *config_copy(struct lcfg_ctl *ctl, const char *key)
{
	const struct jdoc *doc = inf_get_key_ref(ctl->configs, key);
	json_t *obj = jval_to_json(jdoc_root(doc));

	jdoc_unref(doc);
	return obj;
}

/*
 * Ask the API server whether landlord may bind ClusterRole @role (cluster-wide, as deploy/rbac.yaml
 * grants it). Return: true with *@allowed set when it answered; false (logged) when it did not.
 */
static bool may_bind(struct kc_client *kc, const char *role, bool *allowed /* OUT */)
{
	struct kc_access a = {.verb = "bind",
	                      .group = "rbac.authorization.k8s.io",
	                      .resource = "clusterroles",
	                      .name = role};
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	bool answered = false;

	if (kc_self_review(kc, &a, allowed, &resp, &err) < 0)
		log_warn("cannot ask whether landlord may bind a ClusterRole", "{s:s,s:s}",
		         "clusterrole", role, "error", err.msg);
	else if (!kc_resp_ok(&resp))
		log_warn("cannot ask whether landlord may bind a ClusterRole", "{s:s,s:i,s:s,s:s}",
		         "clusterrole", role, "code", (int)resp.http_status, "reason",
		         resp.status.reason, "message", resp.status.message);
	else
		answered = true;
	kc_resp_release(&resp);
	return answered;
}

/* One reconcile's view of the ClusterRoles a configuration maps. */
struct role_probe {
	struct lcfg_ctl *ctl;
	struct kc_client *kc;
	json_t *answers; /* role name -> may bind (true/false): one review per role per reconcile */
	bool failed;     /* a review got no answer: no verdict this time */
};

/* role_check_fn: existence from the cache, bindability from one review per role. After a review
 * failed, no more are asked and unknown roles pass (the verdict is dropped anyway). */
static enum role_state probe_role(const char *name, void *ud)
{
	struct role_probe *p = ud;
	const json_t *known;
	bool allowed;

	if (!role_in_cache(name, p->ctl->roles))
		return ROLE_MISSING;
	known = json_object_get(p->answers, name);
	if (known == NULL && !p->failed) {
		if (may_bind(p->kc, name, &allowed))
			json_object_set_new(p->answers, name, json_boolean(allowed));
		else
			p->failed = true;
		known = json_object_get(p->answers, name);
	}
	return known == NULL || json_is_true(known) ? ROLE_OK : ROLE_NOT_BINDABLE;
}

/*
 * Parse @obj and check its ClusterRoles into *@v; *@cfg is set only when accepted. Return: false
 * when there is no verdict (a review got no answer; logged): try again later.
 */
static bool judge(struct lcfg_ctl *ctl, struct kc_client *kc, const json_t *obj,
                  enum verdict *v /* OUT */, struct lcfg **cfg /* OUT */,
                  json_t **invalid /* OUT */)
{
	struct role_probe p = {ctl, kc, json_object(), false};

	*v = VERDICT_INVALID;
	if (lcfg_parse(obj, cfg, invalid) == 0) {
		*v = lcfgctl_judge_roles(*cfg, probe_role, &p, invalid);
		if (*v != VERDICT_ACCEPTED) {
			lcfg_unref(*cfg);
			*cfg = NULL;
		}
	}
	json_decref(p.answers);
	return !p.failed;
}

static struct ctrl_result worst(struct ctrl_result a, struct ctrl_result b)
{
	return a.outcome == CTRL_RETRY ? a : b;
}

static void log_rejected(const json_t *obj, enum verdict v, const json_t *invalid)
{
	char *summary = lcfgctl_invalid_summary(invalid);

	log_warn("LandlordConfig rejected; the configuration in force is unchanged",
	         "{s:I,s:s,s:s}", "generation", (json_int_t)jx_generation(obj), "reason",
	         verdict_reason(v), "problems", summary);
	free(summary);
}

/* What a reconcile that wrote everything it had to returns: a rejection for a role landlord may
 * not bind is checked again after a while (a new binding is noticed no other way). */
static struct ctrl_result settled(enum verdict v)
{
	return v == VERDICT_NOT_BINDABLE ? CTRL_RESULT_AFTER(NOT_BINDABLE_RECHECK_MS)
	                                 : CTRL_RESULT_DONE;
}

static struct ctrl_result reconcile_singleton(struct controller *c, struct lcfg_ctl *ctl)
{
	struct kc_client *kc = mgr_client(ctrl_mgr(c));
	struct ctrl_result r = CTRL_RESULT_RETRY, written;
	json_t *obj = NULL, *invalid = NULL, *status = NULL;
	struct lcfg *cfg = NULL;
	enum verdict v;

	if (!atomic_load(&ctl->loaded) && load_persisted(kc, ctl) < 0)
		return CTRL_RESULT_RETRY;
	obj = config_copy(ctl, LANDLORD_CONFIG_NAME);
	if (obj == NULL) {
		atomic_store(&ctl->not_bindable, false);
		cfg = lcfg_defaults();
		if (lcfg_install(cfg))
			log_info("no LandlordConfig named landlord: the defaults are in force",
			         NULL);
		r = persist(kc, cfg);
		goto out;
	}
	if (!judge(ctl, kc, obj, &v, &cfg, &invalid))
		goto out; /* retried: nothing changes without a verdict */
	atomic_store(&ctl->not_bindable, v == VERDICT_NOT_BINDABLE);
	r = settled(v);
	if (v == VERDICT_ACCEPTED) {
		if (lcfg_install(cfg))
			log_info("LandlordConfig accepted and in force", "{s:I}", "generation",
			         (json_int_t)jx_generation(obj));
		/* In force now, whatever happens to the copy; a failed write is retried. */
		r = persist(kc, cfg);
	}
	status = lcfgctl_desired_status(obj, v, invalid);
	if (lcfgctl_status_matches(status, jx_get(obj, "status", NULL)))
		goto out;
	if (v != VERDICT_ACCEPTED)
		log_rejected(obj, v, invalid);
	written = write_status(kc, LANDLORD_CONFIG_NAME, status);
	if (written.outcome == CTRL_DONE)
		record_verdict(kc, obj, v, status);
	r = worst(r, written);
out:
	json_decref(status);
	json_decref(invalid);
	json_decref(obj);
	lcfg_unref(cfg);
	return r;
}

/*
 * Could ClusterRole @name coming, changing or going change the verdict on "landlord"? Yes for the
 * roles it maps and for landlord's own ClusterRole (its bind rule); while it is rejected for a
 * role landlord may not bind, for any role but the per-tenant ones (the bind may come from any).
 */
static bool role_matters(struct lcfg_ctl *ctl, const char *name)
{
	struct lcfg *cur;
	const char *const *names;
	json_t *obj = NULL;
	bool found = false;
	size_t n, i;

	if (strcmp(name, LANDLORD_CLUSTERROLE) == 0 ||
	    (atomic_load(&ctl->not_bindable) &&
	     strncmp(name, TENANT_CLUSTERROLE_PREFIX, strlen(TENANT_CLUSTERROLE_PREFIX)) != 0))
		return true;
	cur = lcfg_current();
	lcfg_role_names(cur, &names, &n);
	for (i = 0; i < n && !found; i++)
		found = strcmp(names[i], name) == 0;
	lcfg_unref(cur);
	if (!found) {
		obj = config_copy(ctl, LANDLORD_CONFIG_NAME);
		found = lcfgctl_spec_names_role(obj, name);
		json_decref(obj);
	}
	return found;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct lcfg_ctl *ctl = ud;
	struct ctrl_result r = CTRL_RESULT_DONE;
	json_t *obj, *status = NULL;

	if (strcmp(key, LANDLORD_CONFIG_NAME) == 0)
		return reconcile_singleton(c, ctl);
	/* A ClusterRole key (or another LandlordConfig's): does "landlord" care about the role? */
	if (role_matters(ctl, key))
		ctrl_enqueue(c, LANDLORD_CONFIG_NAME);
	obj = config_copy(ctl, key);
	if (obj == NULL)
		goto out;
	status = lcfgctl_desired_status(obj, VERDICT_IGNORED_NAME, NULL);
	if (!lcfgctl_status_matches(status, jx_get(obj, "status", NULL))) {
		r = write_status(mgr_client(ctrl_mgr(c)), key, status);
		if (r.outcome == CTRL_DONE)
			record_verdict(mgr_client(ctrl_mgr(c)), obj, VERDICT_IGNORED_NAME, status);
	}
out:
	json_decref(status);
	json_decref(obj);
	return r;
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct lcfg_ctl *ctl = ud;
	/* LandlordConfigs: whole (the spec is parsed, the status compared before writing). */
	struct inf_opts configs = {.gvr = LL_LANDLORDCONFIGS};
	/* ClusterRoles: only whether one exists (the names the configuration maps roles to). */
	static const char *const role_keep[] = {"metadata.name", NULL};
	struct inf_opts roles = {.gvr = KC_CLUSTERROLES, .metadata_only = true, .keep = role_keep};

	atomic_store(&ctl->loaded, false);
	atomic_store(&ctl->not_bindable, false);
	/* Before anything else reads the configuration; a failure is retried by reconcile. */
	load_persisted(mgr_client(m), ctl);
	ctl->configs = mgr_informer(m, &configs);
	ctl->roles = mgr_informer(m, &roles);
	ctrl_watch_primary(c, ctl->configs);
	ctrl_watch_primary(c, ctl->roles);
	return 0;
}

struct controller_def landlordconfig_controller_def(void)
{
	static struct lcfg_ctl ctl;

	return (struct controller_def){
	        .name = "landlordconfig",
	        .workers = 1,
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
