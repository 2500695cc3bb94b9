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

enum verdict {
	VERDICT_ACCEPTED,
	VERDICT_INVALID,      /* lcfg_parse() listed problems */
	VERDICT_UNKNOWN_ROLE, /* valid, but names a ClusterRole that does not exist */
	VERDICT_IGNORED_NAME, /* not the singleton */
};

/*
 * lcfgctl_invalid_summary() - "2 problems: spec.a: why; spec.b: why", the first SUMMARY_SHOWN
 * problems of @invalid ([{field, message}], borrowed) and a count of the rest, at most
 * SUMMARY_MAX_BYTES. Returns a new string (free() it).
 */
char *lcfgctl_invalid_summary(const json_t *invalid);

typedef bool (*role_exists_fn)(const char *name, void *ud);
/*
 * lcfgctl_missing_roles() - a new array of {field, message} for every tenantRoles entry of @cfg
 * naming a ClusterRole for which @exists says no; empty when all exist. Fields are those of the
 * normalized spec: the default roles are always listed (spec.tenantRoles.default.owner), custom
 * entries only where they name a role of their own (spec.tenantRoles.custom[1].viewer).
 */
json_t *lcfgctl_missing_roles(const struct lcfg *cfg, role_exists_fn exists, void *ud);
/*
 * lcfgctl_spec_names_role() - does @obj (a LandlordConfig as written, borrowed, may be NULL)
 * name the ClusterRole @role in spec.tenantRoles? An unset or empty default role names the
 * built-in one; an unset custom role names nothing of its own. Works on invalid objects too.
 */
bool lcfgctl_spec_names_role(const json_t *obj, const char *role);
/*
 * lcfgctl_desired_status() - the status @v calls for on @obj (borrowed; its current conditions
 * keep their lastTransitionTime where the status stays). @invalid lists the problems for
 * VERDICT_INVALID and VERDICT_UNKNOWN_ROLE (borrowed). A null member means "remove" (merge
 * patch); see lcfgctl_status_matches(). New reference.
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
