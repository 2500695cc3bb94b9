/*
 * config_follow.h - the LandlordConfig in force for `landlord webhook`, which runs no
 * controller: read-only, from an informer of its own.
 *
 * In `landlord run` the LandlordConfig controller installs the configuration in force
 * (tenancy/landlordconfig_current.h) and the webhook reads it. `landlord webhook` has no such
 * controller, so the follower installs it instead, by the controller's rules but without
 * writing anything (it never leads, never writes status, never persists):
 *
 *  - at start, the configuration the controllers last accepted (the ConfigMap
 *    landlord-system/landlord-config-accepted, one GET; none or unreadable: the defaults);
 *  - then each version of the LandlordConfig "landlord" that lcfg_parse() accepts, from its
 *    informer, as soon as it arrives; an invalid version changes nothing (logged); no "landlord"
 *    any more: the defaults. Other names are ignored.
 *
 * The webhook reads privileged subjects, RoleBinding exceptions and the rest from it; the rule
 * modes come from the same object through the admission view (webhook/cacheview.h). The one
 * difference from the controllers: a version they refuse only for its roles (a ClusterRole
 * missing, or one landlord may not bind) is followed here, since the webhook binds no role.
 */
#ifndef LANDLORD_WEBHOOK_CONFIG_FOLLOW_H
#define LANDLORD_WEBHOOK_CONFIG_FOLLOW_H

struct mgr;
struct cfg_follow;

/**
 * cfg_follow_new() - load what was accepted and follow "landlord" through @m's informer (made
 * here; started by mgr_run()). Before mgr_run(), as a controller's setup(). Never NULL.
 */
struct cfg_follow *cfg_follow_new(struct mgr *m);
/** cfg_follow_free() - remove the handler (the configuration in force stays). NULL is fine. */
void cfg_follow_free(struct cfg_follow *f);

#endif
