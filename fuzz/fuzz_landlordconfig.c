/*
 * fuzz_landlordconfig.c - lcfg_parse() never crashes on any JSON; an invalid configuration
 * lists at least one {field, message}; a valid one answers every query and round-trips
 * through lcfg_to_json() to an equal configuration.
 * The first byte picks the form: even = the rest is the whole object, odd = the rest is the
 * spec (seeds use "0" and "1").
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenancy/landlordconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const label_sets[] = {
        "{}",
        "{\"stage\":\"prod\"}",
        "{\"stage\":\"dev\",\"team\":\"a\"}",
        "{\"a\":\"\"}",
};

static const char *const subjects[] = {
        "alice",
        "malice",
        "kube-system",
        "system:serviceaccount:argocd:app",
        "team-a",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
        "",
        "\xff",
};

static void check_invalid(const json_t *invalid)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(invalid) || json_array_size(invalid) == 0)
		abort();
	json_array_foreach(invalid, i, e)
		if (!json_is_string(json_object_get(e, "field")) ||
		    !json_is_string(json_object_get(e, "message")))
			abort();
}

static void exercise(const struct lcfg *cfg)
{
	const char *owner, *editor, *viewer;
	const char *const *names;
	struct lcfg_prices prices;
	size_t i, n;

	for (i = 0; i < sizeof(label_sets) / sizeof(*label_sets); i++) {
		json_t *labels = json_loads(label_sets[i], 0, NULL);

		lcfg_roles_for_namespace(cfg, labels, &owner, &editor, &viewer);
		if (owner == NULL || editor == NULL || viewer == NULL)
			abort();
		json_decref(labels);
	}
	for (i = 0; i < sizeof(subjects) / sizeof(*subjects); i++) {
		lcfg_is_privileged_user(cfg, subjects[i], subjects,
		                        sizeof(subjects) / sizeof(*subjects));
		lcfg_is_privileged_namespace(cfg, subjects[i]);
	}
	lcfg_role_names(cfg, &names, &n);
	if (n == 0 || n > 3 * (LCFG_CUSTOM_MAX + 1))
		abort();
	lcfg_showback(cfg, &prices);
	if (strlen(prices.currency) != 3 || prices.cpu_core_hour < 0)
		abort();
}

static void check_round_trip(const struct lcfg *cfg)
{
	json_t *first = lcfg_to_json(cfg), *second, *invalid = NULL;
	struct lcfg *again = NULL;

	if (lcfg_parse(first, &again, &invalid) != 0)
		abort();
	second = lcfg_to_json(again);
	if (!json_equal(first, second))
		abort();
	json_decref(first);
	json_decref(second);
	lcfg_unref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in, *obj, *invalid = NULL;
	struct lcfg *cfg = NULL;

	if (size == 0)
		return 0;
	in = json_loadb((const char *)data + 1, size - 1,
	                JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	if (in == NULL)
		return 0;
	obj = (data[0] & 1) != 0 ? json_pack("{s:o}", "spec", in) : in;
	if (lcfg_parse(obj, &cfg, &invalid) != 0) {
		if (cfg != NULL)
			abort();
		check_invalid(invalid);
	} else {
		if (invalid != NULL)
			abort();
		exercise(lcfg_ref(cfg));
		lcfg_unref(cfg);
		check_round_trip(cfg);
	}
	json_decref(invalid);
	json_decref(obj);
	lcfg_unref(cfg);
	return 0;
}
