/*
 * options.h - landlord's command-line options, declared once.
 *
 * Every option is one row of the OPTIONS table in options.c (lib/base/flags.h): its flag, its
 * environment variable, its default and its help text. The usage text is generated from the
 * table. A flag on the command line beats its variable, which beats the default. Adding an
 * option is one row there and one field here.
 */
#ifndef LANDLORD_OPTIONS_H
#define LANDLORD_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "base/flags.h"

struct config {
	const char *kubeconfig;
	const char *context;
	char probe_addr[FLAGS_HOST_MAX];
	int probe_port;
	char webhook_addr[FLAGS_HOST_MAX];
	int webhook_port;
	const char *webhook_url;
	const char *webhook_service;
	const char *webhook_cert_ip;
	char proxy_addr[FLAGS_HOST_MAX];
	int proxy_port;
	const char *proxy_kubeconfig;
	const char *proxy_url;
	const char *proxy_service;
	const char *proxy_cert_ip;
	long stream_idle_timeout_ms;
	const char *kc_tenant;
	const char *kc_user;
	const char *kc_groups[FLAGS_LIST_MAX + 1];
	size_t kc_n_groups;
	long kc_ttl_ms;
	const char *tls_cert_file;
	const char *tls_key_file;
	long shutdown_delay_ms;
	bool leader_elect;
	const char *lease_ns;
	long lease_duration_ms;
	long renew_deadline_ms;
	long retry_period_ms;
	long qps;
	long burst;
	long verbosity;
	bool test_hooks;
	bool http2;
	const char *helm_binary;
	long helm_concurrency;
	long helm_timeout_ms;
	long helm_repair_ms;
	long crash_after_writes;
	long test_ca_lifetime_ms;
	long test_serving_lifetime_ms;
	long test_publish_grace_ms;
	long test_drain_ms;
	long test_cert_period_ms;
};

/** options_usage() - the usage text, commands and every option, to @out. */
void options_usage(FILE *out);
/**
 * options_parse() - fill @cfg from defaults, the environment and argv[2..] (argv[1] is the
 * command). Return: 0, or the exit code to leave with (2 for a bad flag or value, after one
 * line on stderr naming it). --help prints the usage and exits 0.
 */
int options_parse(int argc, char **argv, struct config *cfg);

#endif
