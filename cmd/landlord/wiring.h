/*
 * wiring.h - what the command files of cmd/landlord share: connecting to the API server, and
 * the commands main() dispatches to besides its own.
 */
#ifndef LANDLORD_CMD_WIRING_H
#define LANDLORD_CMD_WIRING_H

#include "options.h"

struct kcfg;
struct kc_client;
struct mgr;
struct proxy_role;

/* main.c: a client named @name (a metrics label) for @kc with the options' limits; logs why
 * not. */
int new_client(const struct kcfg *kc, const struct config *cfg, const char *name,
               struct kc_client **out);
/* main.c: the kubeconfig, the main client, and proof that the server takes its credentials. */
int connect_server(const struct config *cfg, struct kcfg *kc, struct kc_client **client);

/* proxy_cmd.c: the proxy's own client, from --proxy-kubeconfig; logs why not. */
int proxy_client_new(const struct config *cfg, struct kcfg *kc, struct kc_client **out);
/*
 * proxy_cmd.c: the proxy role on @m's informers (before mgr_run()): its signing Secret, its
 * serving certificate, its server listening. Logs why not. proxy_role_stop(NULL) is fine.
 */
int proxy_role_start(const struct config *cfg, struct kc_client *client, struct mgr *m,
                     struct proxy_role **out);
void proxy_role_stop(struct proxy_role *r);
/* proxy_cmd.c: `landlord proxy` and `landlord kubeconfig`; the process's exit code. */
int cmd_proxy(const struct config *cfg);
int cmd_kubeconfig(const struct config *cfg);

#endif
