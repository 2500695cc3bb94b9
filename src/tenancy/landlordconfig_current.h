/*
 * current.h - the LandlordConfig in force, shared by every controller of the process.
 *
 * The LandlordConfig controller is the only writer: it installs each configuration it accepts
 * (and, at start-up, the one persisted in the ConfigMap landlord-config-accepted). Readers take
 * a reference for the length of one reconcile, so a configuration never changes under them.
 *
 * Invariants:
 *  - lcfg_current() never returns NULL: until something is installed it is lcfg_defaults().
 *  - Subscribers are called after every install whose configuration differs from the previous
 *    one (lcfg_to_json() compared), on the installing thread, with no lock held; they must be
 *    quick (enqueue keys).
 * All functions are thread-safe.
 */
#ifndef LANDLORD_CONFIG_CURRENT_H
#define LANDLORD_CONFIG_CURRENT_H

#include "tenancy/landlordconfig.h"

/** lcfg_current() - the configuration in force (a new reference: lcfg_unref() it). */
struct lcfg *lcfg_current(void);
/** lcfg_install() - put @cfg in force (takes its own reference). Return: true if it changed. */
bool lcfg_install(struct lcfg *cfg);
/** lcfg_subscribe() - call @fn(@ud) after each change. At most LCFG_MAX_SUBSCRIBERS. */
#define LCFG_MAX_SUBSCRIBERS 8
int lcfg_subscribe(void (*fn)(void *ud), void *ud);
/** lcfg_current_reset() - back to the defaults, no subscribers (tests only). */
void lcfg_current_reset(void);

#endif
