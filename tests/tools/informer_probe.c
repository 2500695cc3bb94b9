/*
 * informer_probe - runs shared informers from the landlord library against a real API server,
 * for end-to-end tests and benchmarks.
 *
 *   informer_probe --kubeconfig K --resource v1/configmaps [--resource ...] [--metadata-only R]
 *                  [--namespace NS] [--sync-report]
 *
 * Default mode serves /metrics and the /debug/cache and /debug/pause-watch hooks on an
 * ephemeral loopback port (logged as "probe server listening") until SIGTERM. With --sync-report it
 * waits for the initial sync, prints one JSON line (sync time, objects, VmRSS/VmHWM/RssAnon, Pss
 * and Pss_Anon from smaps_rollup, and each informer's objects and inf_bytes()) and exits.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/ratelimit.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/manager.h"

#define MAX_RESOURCES 8

struct probe_args {
	const char *kubeconfig;
	const char *ns;
	const char *resources[MAX_RESOURCES];
	bool metadata_only[MAX_RESOURCES];
	int n;
	bool sync_report;
	long page_size;
};

/* "v1/configmaps" or "apps/v1/deployments" into a GVR (strings point into @spec). */
static int parse_resource(char *spec, struct kc_gvr *gvr)
{
	char *a = strtok_r(spec, "/", &spec), *b = strtok_r(NULL, "/", &spec);
	char *c = strtok_r(NULL, "/", &spec);

	if (a == NULL || b == NULL)
		return -EINVAL;
	*gvr = c ? (struct kc_gvr){a, b, c, NULL, true} : (struct kc_gvr){"", a, b, NULL, true};
	gvr->namespaced =
	        strcmp(gvr->resource, "namespaces") != 0 && strcmp(gvr->resource, "tenants") != 0;
	return 0;
}

static long status_kib(const char *field)
{
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* A field of /proc/self/smaps_rollup in KiB, or -1. */
static long rollup_kib(const char *field)
{
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void print_report(struct inf **infs, struct probe_args *a, double secs, long rss0)
{
	size_t objects = 0;

	for (int i = 0; i < a->n; i++)
		objects += inf_len(infs[i]);
	printf("{\"sync_seconds\":%.3f,\"objects\":%zu,\"rss_before_kib\":%ld,"
	       "\"rss_kib\":%ld,\"hwm_kib\":%ld,\"anon_kib\":%ld,\"pss_kib\":%ld,"
	       "\"pss_anon_kib\":%ld,\"informers\":[",
	       secs, objects, rss0, status_kib("VmRSS"), status_kib("VmHWM"), status_kib("RssAnon"),
	       rollup_kib("Pss"), rollup_kib("Pss_Anon"));
	for (int i = 0; i < a->n; i++)
		printf("%s{\"resource\":\"%s\",\"objects\":%zu,\"bytes\":%zu}", i ? "," : "",
		       inf_gvr(infs[i])->resource, inf_len(infs[i]), inf_bytes(infs[i]));
	printf("]}\n");
	fflush(stdout);
}

static int sync_report(struct kc_client *c, struct probe_args *a)
{
	struct inf *infs[MAX_RESOURCES];
	struct kc_gvr gvrs[MAX_RESOURCES];
	long rss0 = status_kib("VmRSS");
	int64_t t0 = clock_mono_ns();
	double secs;
	int i;

	for (i = 0; i < a->n; i++) {
		char *spec = xstrdup(a->resources[i]);
		struct inf_opts o = {.ns = a->ns,
		                     .metadata_only = a->metadata_only[i],
		                     .page_size = a->page_size};

		parse_resource(spec, &gvrs[i]);
		o.gvr = gvrs[i];
		infs[i] = inf_new(c, &o);
		inf_start(infs[i]);
		free(spec);
	}
	for (i = 0; i < a->n; i++)
		inf_wait_synced(infs[i], -1);
	secs = (double)(clock_mono_ns() - t0) / 1e9;
	print_report(infs, a, secs, rss0);
	for (i = 0; i < a->n; i++)
		inf_free(infs[i]);
	return 0;
}

static int serve(struct kc_client *c, struct probe_args *a)
{
	struct mgr *m =
	        mgr_new(&(struct mgr_opts){.client = c, .probe_port = 0, .test_hooks = true});
	char *specs[MAX_RESOURCES];
	int i, rc;

	for (i = 0; i < a->n; i++) {
		struct inf_opts o = {.ns = a->ns,
		                     .metadata_only = a->metadata_only[i],
		                     .page_size = a->page_size};

		specs[i] = xstrdup(a->resources[i]);
		parse_resource(specs[i], &o.gvr);
		mgr_informer(m, &o);
	}
	rc = mgr_run(m);
	mgr_free(m);
	for (i = 0; i < a->n; i++)
		free(specs[i]);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"kubeconfig", required_argument, NULL, 'k'},
	        {"resource", required_argument, NULL, 'r'},
	        {"metadata-only", required_argument, NULL, 'm'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"page-size", required_argument, NULL, 's'},
	        {"sync-report", no_argument, NULL, 'S'},
	        {NULL, 0, NULL, 0},
	};
	struct probe_args a = {.page_size = 500};
	struct kcfg cfg = {0};
	struct kc_client *c = NULL;
	struct ll_err err;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if ((ch == 'r' || ch == 'm') && a.n < MAX_RESOURCES) {
			a.metadata_only[a.n] = ch == 'm';
			a.resources[a.n++] = optarg;
		} else if (ch == 'k') {
			a.kubeconfig = optarg;
		} else if (ch == 'n') {
			a.ns = optarg;
		} else if (ch == 's') {
			a.page_size = strtol(optarg, NULL, 10);
		} else if (ch == 'S') {
			a.sync_report = true;
		} else {
			return 2;
		}
	}
	mgr_block_signals();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = kcfg_load_default(a.kubeconfig, NULL, &cfg, &err);
	if (rc == 0)
		rc = kc_client_new(&cfg, &(struct kc_opts){.qps = -1}, &c, &err);
	if (rc < 0)
		log_error("informer_probe: cannot start", "{s:s}", "error", err.msg);
	else
		rc = a.sync_report ? sync_report(c, &a) : serve(c, &a);
	kc_client_free(c);
	kcfg_release(&cfg);
	curl_global_cleanup();
	return rc < 0 ? 1 : 0;
}
