/*
 * landlordconfig_ctl_internal.h - the LandlordConfig controller's pure helpers, for
 * landlordconfig_ctl.c and its unit test only (tests/unit/test_landlordconfig_ctl.c).
 *
 * None makes an API call or touches global state; all build new JSON or strings and never
 * change what they are given. The controller's behaviour is described in landlordconfig_ctl.c.
 */
#ifndef LANDLORD_LANDLORDCONFIG_CTL_INTERNAL_H
#define LANDLORD_LANDLORDCONFIG_CTL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "tenancy/landlordconfig.h"

/* The data key of the accepted configuration in the ConfigMap. */
#define ACCEPTED_CONFIG_KEY "config.json"
/* Problems spelt out in the condition message (status.invalid has them all), and its size. */
#define SUMMARY_SHOWN     3
#define SUMMARY_MAX_BYTES 1024

/* While a configuration is rejected because landlord may not bind a role it maps, it is checked
 * again this often (besides ClusterRole changes): a new binding is not seen otherwise. */
#define NOT_BINDABLE_RECHECK_MS 10000

enum verdict {
	VERDICT_ACCEPTED,
	VERDICT_INVALID,      /* lcfg_parse() listed problems */
	VERDICT_UNKNOWN_ROLE, /* valid, but names a ClusterRole that does not exist */
	VERDICT_NOT_BINDABLE, /* valid, every role exists, but landlord may not bind one */
	VERDICT_IGNORED_NAME, /* not the singleton */
};

/*
 * lcfgctl_invalid_summary() - "2 problems: spec.a: why; spec.b: why", the first SUMMARY_SHOWN
 * problems of @invalid ([{field, message}], borrowed) and a count of the rest, at most
 * SUMMARY_MAX_BYTES. Returns a new string (free() it).
 */
char *lcfgctl_invalid_summary(const json_t *invalid);

/* What landlord can do with a ClusterRole a configuration maps. */
enum role_state {
	ROLE_OK,           /* it exists and landlord may bind it */
	ROLE_MISSING,      /* no such ClusterRole */
	ROLE_NOT_BINDABLE, /* it exists, but landlord may not bind it */
};
/* The message of a ROLE_NOT_BINDABLE problem: names the role and the line to add. */
#define NOT_BINDABLE_FMT                                                                         \
	"landlord may not bind ClusterRole \"%s\": add it to resourceNames of the bind rule in " \
	"ClusterRole landlord (deploy/rbac.yaml), or render it with scripts/render-rbac.py"

typedef enum role_state (*role_check_fn)(const char *name, void *ud);
/*
 * lcfgctl_judge_roles() - check every ClusterRole that a tenantRoles entry of @cfg names with
 * @check, once per entry (a role named twice is checked twice: @check caches if it must).
 * *@invalid: a new array of {field, message}, one for every entry whose role is not ROLE_OK
 * ('ClusterRole "x" does not exist', or NOT_BINDABLE_FMT), or NULL when there is none. Fields
 * are those of the normalized spec: the default roles are always checked
 * (spec.tenantRoles.default.owner), custom entries only where they name a role of their own
 * (spec.tenantRoles.custom[1].viewer).
 * Return: VERDICT_ACCEPTED when every role is ROLE_OK, else VERDICT_UNKNOWN_ROLE when one is
 * missing, else VERDICT_NOT_BINDABLE.
 */
enum verdict lcfgctl_judge_roles(const struct lcfg *cfg, role_check_fn check, void *ud,
                                 json_t **invalid /* OUT */);
/*
 * lcfgctl_spec_names_role() - does @obj (a LandlordConfig as written, borrowed, may be NULL)
 * name the ClusterRole @role in spec.tenantRoles? An unset or empty default role names the
 * built-in one; an unset custom role names nothing of its own. Works on invalid objects too.
 */
bool lcfgctl_spec_names_role(const json_t *obj, const char *role);
/*
 * lcfgctl_desired_status() - the status @v calls for on @obj (borrowed; its current conditions
 * keep their lastTransitionTime where the status stays). @invalid lists the problems for
 * VERDICT_INVALID, VERDICT_UNKNOWN_ROLE and VERDICT_NOT_BINDABLE (borrowed). A null member means
 * "remove" (merge patch); see lcfgctl_status_matches(). New reference.
 */
json_t *lcfgctl_desired_status(const json_t *obj, enum verdict v, const json_t *invalid);
/*
 * lcfgctl_status_matches() - does @have (the cached status, may be NULL) already say what @want
 * says? Members of @want that are null must be absent (or null) in @have; others must match as
 * in jx_equal_subset().
 */
bool lcfgctl_status_matches(const json_t *want, const json_t *have);
/* lcfgctl_configmap_body() - the ConfigMap holding @config_text, as landlord applies it. */
json_t *lcfgctl_configmap_body(const char *config_text);
/* lcfgctl_configmap_is_current() - @cm (may be NULL) already holds @config_text as landlord
 * writes it. */
bool lcfgctl_configmap_is_current(const json_t *cm, const char *config_text);
/*
 * lcfgctl_config_from_configmap() - the configuration persisted in @cm (borrowed).
 * Return: 0 with *@out set (lcfg_unref() it), -ENOENT when @cm has no config.json, -EINVAL when
 * it is not JSON or not a valid configuration (detail in @err).
 */
int lcfgctl_config_from_configmap(const json_t *cm, struct lcfg **out /* OUT */,
                                  struct ll_err *err);
/* lcfgctl_config_digest() - lowercase hex SHA-256 of @text, to tell configurations apart. */
void lcfgctl_config_digest(const char *text, char out[65]);

#endif
