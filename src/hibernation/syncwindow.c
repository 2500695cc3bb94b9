/*
 * syncwindow.c - the Argo CD deny sync window a supervisor holds on its AppProjects while
 * asleep, so that Argo CD does not scale back up what landlord put to sleep (docs/argocd.md).
 *
 * The window is exactly WINDOW below. Each AppProject's annotation landlord.dev/sleep-window
 * lists the supervisors that hold it (sorted, comma-separated; supervisor names have no comma).
 * The first holder adds the window, the last one to wake removes it; both in one JSON patch
 * that tests metadata.resourceVersion (syncWindows has no list-map keys, so server-side apply
 * would own the whole list). A window that was there with no holder is someone else's: it is
 * left alone and never removed.
 *
 * Invariant (with supervisor.c's order): the window is held before any namespace of the
 * supervisor is marked asleep, and released only once none is.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/log.h"
#include "hibernation/supervisor_internal.h"
#include "tenancy/hibernation.h"

#define WINDOW_PATH_ANNOTATION "/metadata/annotations/landlord.dev~1sleep-window"
#define HOLDERS_MAX            1024 /* the annotation's length landlord writes at most */

/* The window, as the issue and docs/argocd.md give it. */
static json_t *window_new(void)
{
	return json_pack("{s:s,s:s,s:s,s:[s],s:[s],s:[s],s:b}", "kind", "deny", "schedule",
	                 "* * * * *", "duration", "1h", "applications", "*", "namespaces", "*",
	                 "clusters", "*", "manualSync", 0);
}

/* The index of WINDOW in @project's spec.syncWindows, or -1. */
static long window_index(const struct jdoc *project, const json_t *window)
{
	struct jval list = jd_get(project, "spec", "syncWindows", NULL), v;
	size_t i;

	jval_foreach(list, i, v)
		if (jval_equal_json(v, window))
			return (long)i;
	return -1;
}

bool win_holder(const char *holders, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = holders; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* @holders with @name added (@add) or removed, sorted; "" when none is left. */
static void holders_with(const char *holders, const char *name, bool add, char *out, size_t len)
{
	char copy[HOLDERS_MAX + 1], *save = NULL;
	const char *names[64];
	size_t n = 0;

	snprintf(copy, sizeof(copy), "%s", holders ? holders : "");
	for (char *t = strtok_r(copy, ",", &save); t && n < 63; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, name) != 0)
			names[n++] = t;
	if (add)
		names[n++] = name;
	for (size_t i = 1; i < n; i++) /* insertion sort: a handful of names */
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *t = names[j];

			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", names[i]);
}

static json_t *guarded(const struct jdoc *project)
{
	return json_pack("[{s:s,s:s,s:s}]", "op", "test", "path", "/metadata/resourceVersion",
	                 "value", jd_str(project, "metadata", "resourceVersion", NULL));
}

static void set_holders(json_t *body, const struct jdoc *project, const char *holders)
{
	if (holders[0] == '\0')
		json_array_append_new(body, json_pack("{s:s,s:s}", "op", "remove", "path",
		                                      WINDOW_PATH_ANNOTATION));
	else if (jval_type(jd_get(project, "metadata", "annotations", NULL)) != JT_OBJECT)
		json_array_append_new(body, json_pack("{s:s,s:s,s:{s:s}}", "op", "add", "path",
		                                      "/metadata/annotations", "value",
		                                      SLEEP_WINDOW_ANNOTATION, holders));
	else
		json_array_append_new(body, json_pack("{s:s,s:s,s:s}", "op", "add", "path",
		                                      WINDOW_PATH_ANNOTATION, "value", holders));
}

/* Hold the window on @project: add it (first holder) and this supervisor to the holders. */
static bool hold_one(struct sup_rec *r, const char *argo_ns, const struct jdoc *project,
                     const json_t *window)
{
	const char *holders = jd_annotation(project, SLEEP_WINDOW_ANNOTATION);
	long at = window_index(project, window);
	char after[HOLDERS_MAX + 1];
	json_t *body;
	bool ok;

	if (holders && win_holder(holders, r->name))
		return true;
	if (at >= 0 && (holders == NULL || holders[0] == '\0'))
		return true; /* someone else's window: it denies already, and it stays theirs */
	holders_with(holders, r->name, true, after, sizeof(after));
	body = guarded(project);
	if (at < 0 && jval_type(jd_get(project, "spec", "syncWindows", NULL)) == JT_ARRAY)
		json_array_append_new(body, json_pack("{s:s,s:s,s:O}", "op", "add", "path",
		                                      "/spec/syncWindows/-", "value", window));
	else if (at < 0)
		json_array_append_new(body, json_pack("{s:s,s:s,s:[O]}", "op", "add", "path",
		                                      "/spec/syncWindows", "value", window));
	set_holders(body, project, after);
	ok = sup_patch(r, &ARGOCD_APPPROJECTS, argo_ns, jd_name(project), KC_PATCH_JSON, body,
	               NULL);
	json_decref(body);
	if (ok)
		log_info("hibernation: sync window held", "{s:s,s:s}", "supervisor", r->name,
		         "appProject", jd_name(project));
	return ok;
}

/* Release this supervisor's hold on @project; the last holder removes the window. */
static bool release_one(struct sup_rec *r, const struct jdoc *project, const json_t *window)
{
	const char *holders = jd_annotation(project, SLEEP_WINDOW_ANNOTATION);
	long at = window_index(project, window);
	char after[HOLDERS_MAX + 1], path[64];
	json_t *body;
	bool ok;

	if (holders == NULL || !win_holder(holders, r->name))
		return true;
	holders_with(holders, r->name, false, after, sizeof(after));
	body = guarded(project);
	if (after[0] == '\0' && at >= 0) { /* the last holder; a window removed by hand stays so */
		snprintf(path, sizeof(path), "/spec/syncWindows/%ld", at);
		json_array_append_new(body, json_pack("{s:s,s:s,s:O}", "op", "test", "path", path,
		                                      "value", window));
		json_array_append_new(body, json_pack("{s:s,s:s}", "op", "remove", "path", path));
	}
	set_holders(body, project, after);
	ok = sup_patch(r, &ARGOCD_APPPROJECTS, jd_namespace(project), jd_name(project),
	               KC_PATCH_JSON, body, NULL);
	json_decref(body);
	if (ok)
		log_info("hibernation: sync window released", "{s:s,s:s,s:b}", "supervisor",
		         r->name, "appProject", jd_name(project), "removed", after[0] == '\0');
	return ok;
}

/* Argo CD's namespace for @r: the supervisor's spec.argocd.namespace, else the config's. */
static const char *argo_namespace(const struct sup_rec *r)
{
	const char *ns = jd_str(r->sup, "spec", "argocd", "namespace", NULL);
	const json_t *cfg = ns ? NULL : lcfg_argocd(r->cfg);

	return ns ? ns : cfg ? json_string_value(json_object_get(cfg, "namespace")) : NULL;
}

bool win_hold_all(struct sup_rec *r)
{
	struct jval names = jd_get(r->sup, "spec", "argocd", "appProjects", NULL), v;
	const char *argo_ns = argo_namespace(r);
	json_t *window;
	struct inf *projects;
	bool all = true;
	size_t i;

	if (jval_size(names) == 0)
		return true;
	if (argo_ns == NULL) {
		wl_report(r, "", "AppProject", "", "skipped", "ArgoCDNotConfigured",
		          "no Argo CD namespace: set spec.argocd.namespace or the LandlordConfig's "
		          "spec.integrations.argocd.namespace");
		return true;
	}
	projects = hib_projects(r);
	if (projects == NULL) /* not installed: nothing syncs; installed, not read: r->retry */
		return !r->retry;
	window = window_new();
	jval_foreach(names, i, v) {
		const struct jdoc *p = inf_get_ref(projects, argo_ns, jval_str(v));

		if (p == NULL)
			wl_report(r, argo_ns, "AppProject", jval_str(v), "skipped",
			          "AppProjectNotFound",
			          "no AppProject %s in namespace %s: no window", jval_str(v),
			          argo_ns);
		else if (!hold_one(r, argo_ns, p, window))
			all = false;
		jdoc_unref(p);
	}
	json_decref(window);
	return all;
}

bool win_release_all(struct sup_rec *r)
{
	struct inf *projects = hib_projects(r);
	struct jdoc_list held;
	json_t *window;
	bool all = true;

	if (projects == NULL)
		return !r->retry;
	held = inf_list_ref(projects, NULL);
	window = window_new();
	for (size_t i = 0; i < held.n; i++)
		if (!release_one(r, held.items[i], window))
			all = false;
	json_decref(window);
	jdoc_list_release(&held);
	return all;
}
