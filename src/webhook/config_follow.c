/* config_follow.c - the LandlordConfig in force for `landlord webhook` (see config_follow.h). */
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "kube/manager.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/landlordconfig_current.h"
#include "webhook/config_follow.h"

#define ACCEPTED_KEY "config.json" /* the controller's key in the ConfigMap */

struct cfg_follow {
	struct inf *inf;
};

/* What the controllers last accepted, put in force; nothing when there is none. */
static void load_accepted(struct kc_client *kc)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	const char *text = NULL;
	json_t *obj = NULL;
	struct lcfg *cfg = NULL;

	if (kc_get(kc, &KC_CONFIGMAPS, LANDLORD_SYSTEM_NAMESPACE, ACCEPTED_CONFIG_CONFIGMAP, &resp,
	           &err) == 0 &&
	    kc_resp_ok(&resp))
		text = jx_str(resp.body, "data", ACCEPTED_KEY, NULL);
	if (text)
		obj = json_loads(text, 0, NULL);
	if (obj && lcfg_parse(obj, &cfg, NULL) == 0) {
		lcfg_install(cfg);
		log_info("webhook: the last accepted LandlordConfig is in force", "{s:s}",
		         "configmap", LANDLORD_SYSTEM_NAMESPACE "/" ACCEPTED_CONFIG_CONFIGMAP);
	} else {
		log_info("webhook: no accepted LandlordConfig persisted (or none readable); the "
		         "defaults are in force until the LandlordConfig is read",
		         "{s:i}", "code", (int)resp.http_status);
	}
	lcfg_unref(cfg);
	json_decref(obj);
	kc_resp_release(&resp);
}

static void follow(const struct jdoc *doc)
{
	json_t *obj, *invalid = NULL;
	struct lcfg *cfg = NULL;
	char *problems;

	if (strcmp(jd_name(doc) ? jd_name(doc) : "", LANDLORD_CONFIG_NAME) != 0)
		return;
	obj = jval_to_json(jdoc_root(doc));
	if (lcfg_parse(obj, &cfg, &invalid) == 0) {
		if (lcfg_install(cfg))
			log_info("webhook: LandlordConfig in force", "{s:s}", "resourceVersion",
			         jx_resource_version(obj) ? jx_resource_version(obj) : "");
	} else {
		problems = jx_dumps(invalid);
		log_warn("webhook: LandlordConfig invalid; the configuration in force is unchanged",
		         "{s:s}", "problems", problems ? problems : "");
		free(problems);
	}
	lcfg_unref(cfg);
	json_decref(invalid);
	json_decref(obj);
}

static void on_add(const struct jdoc *obj, void *ud)
{
	follow(obj);
}

static void on_update(const struct jdoc *old_obj, const struct jdoc *new_obj, void *ud)
{
	follow(new_obj);
}

static void on_delete(const struct jdoc *obj, void *ud)
{
	struct lcfg *defaults;

	if (strcmp(jd_name(obj) ? jd_name(obj) : "", LANDLORD_CONFIG_NAME) != 0)
		return;
	defaults = lcfg_defaults();
	if (lcfg_install(defaults))
		log_info("webhook: no LandlordConfig named landlord: the defaults are in force",
		         NULL);
	lcfg_unref(defaults);
}

static struct inf_handler handler(struct cfg_follow *f)
{
	return (struct inf_handler){on_add, on_update, on_delete, f};
}

struct cfg_follow *cfg_follow_new(struct mgr *m)
{
	static const char *const keep[] = {"metadata.name", "metadata.resourceVersion", "spec",
	                                   NULL};
	struct cfg_follow *f = xcalloc(1, sizeof(*f));
	struct inf_handler h = handler(f);

	load_accepted(mgr_client(m));
	f->inf = mgr_informer(m, &(struct inf_opts){.gvr = LL_LANDLORDCONFIGS,
	                                            .keep = keep,
	                                            .name = "landlordconfigs-followed"});
	if (f->inf)
		inf_add_handler(f->inf, &h);
	return f;
}

void cfg_follow_free(struct cfg_follow *f)
{
	struct inf_handler h;

	if (f == NULL)
		return;
	h = handler(f);
	if (f->inf)
		inf_remove_handler(f->inf, &h);
	free(f);
}
