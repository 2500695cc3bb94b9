/*
 * landlordconfig.c - parse and query the LandlordConfig singleton (see landlordconfig.h).
 *
 * Parsing walks the spec once, appending every problem to one array and building the
 * normalized spec alongside; the struct is handed out only when the array stays empty.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "tenancy/landlordconfig.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/k8sname.h"
#include "kube/selector.h"
#include "tenancy/regexset.h"

_Static_assert(LCFG_PATTERN_MAX <= RXS_PATTERN_MAX && LCFG_LIST_MAX <= RXS_SET_MAX,
               "every privileged list fits a regexset");

#define SA_PREFIX       "system:serviceaccount:"
#define RESERVED_DOMAIN LANDLORD_GROUP
#define FRACTION_DIGITS 6

struct lcfg_roles {
	char *owner, *editor, *viewer;
};

struct lcfg_custom {
	struct sel *sel;
	struct lcfg_roles roles;
};

struct lcfg {
	atomic_size_t refs;
	struct lcfg_roles dflt;
	struct lcfg_custom *custom;
	size_t n_custom;
	const char **role_names; /* sorted, distinct; point into dflt and custom */
	size_t n_role_names;
	struct rxs *priv_namespaces, *priv_users, *priv_groups, *priv_sas;
	json_t *labels, *annotations, *argocd; /* argocd NULL when not configured */
	const char *pod_security;              /* static string */
	bool network_isolation;
	char currency[4];
	int64_t prices[3]; /* cpuCoreHour, memoryGiBHour, storageGiBMonth */
	json_t *spec;      /* normalized */
};

/* One parse: the problems found so far and the configuration being built. */
struct pctx {
	json_t *invalid;
	struct lcfg *cfg;
};

static const char *const pod_security_levels[] = {"privileged", "baseline", "restricted"};
static const char *const price_keys[] = {"cpuCoreHour", "memoryGiBHour", "storageGiBMonth"};

static void bad(struct pctx *p, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void bad(struct pctx *p, const char *field, const char *fmt, ...)
{
	char msg[LL_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(p->invalid, json_pack("{s:s,s:s}", "field", field, "message", msg));
}

static bool is_absent(const json_t *v)
{
	return v == NULL || json_is_null(v);
}

/* The member @key of @parent when it is an object; NULL when absent or of the wrong type. */
static const json_t *section(struct pctx *p, const json_t *parent, const char *key,
                             const char *base)
{
	const json_t *v = parent != NULL ? json_object_get(parent, key) : NULL;
	char *field;

	if (is_absent(v) || json_is_object(v))
		return is_absent(v) ? NULL : v;
	field = base[0] != '\0' ? xasprintf("%s.%s", base, key) : xstrdup(key);
	bad(p, field, "must be an object");
	free(field);
	return NULL;
}

/* @v as a C string; NULL (reported) when it is not a string or holds a NUL character. */
static const char *string_value(struct pctx *p, const json_t *v, const char *field)
{
	if (!json_is_string(v)) {
		bad(p, field, "must be a string");
		return NULL;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		bad(p, field, "must not contain a NUL character");
		return NULL;
	}
	return json_string_value(v);
}

/* ---- names and labels ---- */

/* Why @key (of @len bytes) is not a usable metadata key, or NULL when it is. */
static const char *key_problem(const char *key, size_t len)
{
	const char *slash = memchr(key, '/', len);
	size_t plen = slash != NULL ? (size_t)(slash - key) : 0;
	size_t dlen = strlen(RESERVED_DOMAIN);
	const char *why = k8s_label_key_problem(key, len);

	if (why != NULL || slash == NULL)
		return why;
	if ((plen == dlen || (plen > dlen && key[plen - dlen - 1] == '.')) &&
	    memcmp(key + plen - dlen, RESERVED_DOMAIN, dlen) == 0)
		return "the prefix " RESERVED_DOMAIN "/ is reserved for landlord";
	return NULL;
}

/* A ClusterRole name: a path segment name as the API server accepts it. */
static bool is_role_name(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && len <= K8S_DNS_SUBDOMAIN_MAX && k8s_path_segment_problem(s, len) == NULL;
}

/* ---- tenantRoles ---- */

/* One role of @obj, or @fallback when absent or empty; a new string, or NULL when invalid. */
static char *parse_role(struct pctx *p, const json_t *obj, const char *key, const char *base,
                        const char *fallback, json_t *out)
{
	const json_t *v = obj != NULL ? json_object_get(obj, key) : NULL;
	char *field = xasprintf("%s.%s", base, key);
	const char *s = NULL;
	char *role = NULL;

	if (!is_absent(v))
		s = string_value(p, v, field);
	if (!is_absent(v) && s == NULL)
		goto out;
	if (s == NULL || s[0] == '\0') {
		role = xstrdup(fallback);
		goto out;
	}
	if (!is_role_name(s)) {
		bad(p, field,
		    "invalid ClusterRole name \"%.64s\": must be 1-253 characters without "
		    "'/' or '%%', and not \".\" or \"..\"",
		    s);
		goto out;
	}
	role = xstrdup(s);
	if (out != NULL)
		json_object_set_new(out, key, json_string(s));
out:
	free(field);
	return role;
}

/* @out receives the roles given in @obj (the default entry fills in all three itself). */
static void parse_roles(struct pctx *p, const json_t *obj, const char *base,
                        const struct lcfg_roles *fallback, struct lcfg_roles *roles, json_t *out)
{
	roles->owner = parse_role(p, obj, "owner", base, fallback->owner, out);
	roles->editor = parse_role(p, obj, "editor", base, fallback->editor, out);
	roles->viewer = parse_role(p, obj, "viewer", base, fallback->viewer, out);
}

static void parse_custom_entry(struct pctx *p, const json_t *entry, const char *base,
                               struct lcfg_custom *c, json_t *out_arr)
{
	const json_t *ls = json_object_get(entry, "labelSelector");
	json_t *out = json_object();
	char *field = xasprintf("%s.labelSelector", base);
	struct ll_err err = {{0}};

	if (is_absent(ls))
		bad(p, field, "is required");
	else if (!json_is_object(ls))
		bad(p, field, "must be an object");
	else if (sel_from_json(ls, &c->sel, &err) != 0)
		bad(p, field, "%s", err.msg);
	else
		json_object_set_new(out, "labelSelector", json_deep_copy(ls));
	parse_roles(p, entry, base, &p->cfg->dflt, &c->roles, out);
	json_array_append_new(out_arr, out);
	free(field);
}

static void parse_custom(struct pctx *p, const json_t *tr, json_t *out)
{
	const char *base = "spec.tenantRoles.custom";
	const json_t *arr = tr != NULL ? json_object_get(tr, "custom") : NULL;
	json_t *out_arr = json_array();
	size_t i;

	json_object_set_new(out, "custom", out_arr);
	if (is_absent(arr))
		return;
	if (!json_is_array(arr)) {
		bad(p, base, "must be an array");
		return;
	}
	if (json_array_size(arr) > LCFG_CUSTOM_MAX) {
		bad(p, base, "at most %d entries", LCFG_CUSTOM_MAX);
		return;
	}
	p->cfg->n_custom = json_array_size(arr);
	p->cfg->custom = xcalloc(p->cfg->n_custom + 1, sizeof(*p->cfg->custom));
	for (i = 0; i < p->cfg->n_custom; i++) {
		const json_t *entry = json_array_get(arr, i);
		char *field = xasprintf("%s[%zu]", base, i);

		if (json_is_object(entry))
			parse_custom_entry(p, entry, field, &p->cfg->custom[i], out_arr);
		else
			bad(p, field, "must be an object");
		free(field);
	}
}

static void parse_tenant_roles(struct pctx *p, const json_t *spec, json_t *out)
{
	static const struct lcfg_roles builtin = {"admin", "edit", "view"};
	const char *base = "spec.tenantRoles";
	const json_t *tr = section(p, spec, "tenantRoles", "spec");
	const json_t *dflt = section(p, tr, "default", base);
	json_t *tr_out = json_object(), *dflt_out = json_object();
	struct lcfg_roles *d = &p->cfg->dflt;

	parse_roles(p, dflt, "spec.tenantRoles.default", &builtin, d, NULL);
	/* Later fallbacks need a role even where this one was invalid (already reported). */
	d->owner = d->owner != NULL ? d->owner : xstrdup(builtin.owner);
	d->editor = d->editor != NULL ? d->editor : xstrdup(builtin.editor);
	d->viewer = d->viewer != NULL ? d->viewer : xstrdup(builtin.viewer);
	json_object_set_new(dflt_out, "owner", json_string(d->owner));
	json_object_set_new(dflt_out, "editor", json_string(d->editor));
	json_object_set_new(dflt_out, "viewer", json_string(d->viewer));
	json_object_set_new(tr_out, "default", dflt_out);
	parse_custom(p, tr, tr_out);
	json_object_set_new(out, "tenantRoles", tr_out);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void collect_role_names(struct lcfg *cfg)
{
	const char **all = xcalloc(3 * (cfg->n_custom + 1), sizeof(*all));
	size_t i, n = 0, out = 0;

	for (i = 0; i <= cfg->n_custom; i++) {
		const struct lcfg_roles *r = i == 0 ? &cfg->dflt : &cfg->custom[i - 1].roles;

		all[n++] = r->owner;
		all[n++] = r->editor;
		all[n++] = r->viewer;
	}
	qsort(all, n, sizeof(*all), cmp_str);
	for (i = 0; i < n; i++)
		if (out == 0 || strcmp(all[out - 1], all[i]) != 0)
			all[out++] = all[i];
	cfg->role_names = all;
	cfg->n_role_names = out;
}

/* ---- privileged ---- */

static void parse_patterns(struct pctx *p, const json_t *priv, const char *key, struct rxs *list,
                           json_t *out)
{
	const json_t *arr = priv != NULL ? json_object_get(priv, key) : NULL;
	char *base = xasprintf("spec.privileged.%s", key);
	json_t *out_arr = json_array();
	size_t i;

	json_object_set_new(out, key, out_arr);
	if (is_absent(arr))
		goto out;
	if (!json_is_array(arr)) {
		bad(p, base, "must be an array of regular expressions");
		goto out;
	}
	if (json_array_size(arr) > LCFG_LIST_MAX) {
		bad(p, base, "at most %d patterns", LCFG_LIST_MAX);
		goto out;
	}
	for (i = 0; i < json_array_size(arr); i++) {
		char *field = xasprintf("%s[%zu]", base, i);
		const char *s = string_value(p, json_array_get(arr, i), field);
		struct ll_err err;

		if (s != NULL && strlen(s) > LCFG_PATTERN_MAX)
			bad(p, field, "longer than %d bytes", LCFG_PATTERN_MAX);
		else if (s != NULL && rxs_add(list, s, strlen(s), &err) < 0)
			bad(p, field, "%s", err.msg);
		else if (s != NULL)
			json_array_append_new(out_arr, json_string(s));
		free(field);
	}
out:
	free(base);
}

static void parse_privileged(struct pctx *p, const json_t *spec, json_t *out)
{
	const json_t *priv = section(p, spec, "privileged", "spec");
	json_t *priv_out = json_object();

	parse_patterns(p, priv, "namespaces", p->cfg->priv_namespaces, priv_out);
	parse_patterns(p, priv, "users", p->cfg->priv_users, priv_out);
	parse_patterns(p, priv, "groups", p->cfg->priv_groups, priv_out);
	parse_patterns(p, priv, "serviceAccounts", p->cfg->priv_sas, priv_out);
	json_object_set_new(out, "privileged", priv_out);
}

/* ---- namespaceMetadata ---- */

static void parse_map(struct pctx *p, const json_t *md, const char *key, bool labels, json_t **out)
{
	const json_t *map = md != NULL ? json_object_get(md, key) : NULL;
	char *base = xasprintf("spec.namespaceMetadata.%s", key);
	const char *k;
	size_t klen;
	json_t *v;

	*out = json_object();
	if (is_absent(map))
		goto out;
	if (!json_is_object(map)) {
		bad(p, base, "must be an object");
		goto out;
	}
	if (json_object_size(map) > LCFG_METADATA_MAX) {
		bad(p, base, "at most %d keys", LCFG_METADATA_MAX);
		goto out;
	}
	json_object_keylen_foreach((json_t *)map, k, klen, v) {
		char *field = xasprintf("%s[%.*s]", base, (int)klen, k);
		const char *why = key_problem(k, klen);
		const char *s = string_value(p, v, field);

		if (why != NULL)
			bad(p, field, "invalid key: %s", why);
		else if (s != NULL && labels && !k8s_is_label_value(s))
			bad(p, field,
			    "invalid label value \"%.64s\": must be at most 63 characters of "
			    "[A-Za-z0-9._-], alphanumeric at both ends",
			    s);
		else if (s != NULL)
			json_object_setn_new_nocheck(*out, k, klen, json_string(s));
		free(field);
	}
out:
	free(base);
}

static void parse_metadata(struct pctx *p, const json_t *spec, json_t *out)
{
	const json_t *md = section(p, spec, "namespaceMetadata", "spec");

	parse_map(p, md, "labels", true, &p->cfg->labels);
	parse_map(p, md, "annotations", false, &p->cfg->annotations);
	json_object_set_new(out, "namespaceMetadata",
	                    json_pack("{s:O,s:O}", "labels", p->cfg->labels, "annotations",
	                              p->cfg->annotations));
}

/* ---- defaults ---- */

static void parse_defaults(struct pctx *p, const json_t *spec, json_t *out)
{
	const json_t *d = section(p, spec, "defaults", "spec");
	const json_t *ps = d != NULL ? json_object_get(d, "podSecurity") : NULL;
	const json_t *ni = d != NULL ? json_object_get(d, "networkIsolation") : NULL;
	const char *s = NULL;
	size_t i;

	p->cfg->pod_security = "restricted";
	p->cfg->network_isolation = true;
	if (!is_absent(ps))
		s = string_value(p, ps, "spec.defaults.podSecurity");
	for (i = 0; s != NULL && i < sizeof(pod_security_levels) / sizeof(*pod_security_levels);
	     i++)
		if (strcmp(s, pod_security_levels[i]) == 0)
			p->cfg->pod_security = pod_security_levels[i];
	if (s != NULL && strcmp(s, p->cfg->pod_security) != 0)
		bad(p, "spec.defaults.podSecurity",
		    "must be one of privileged, baseline, restricted (got \"%.64s\")", s);
	if (!is_absent(ni) && !json_is_boolean(ni))
		bad(p, "spec.defaults.networkIsolation", "must be a boolean");
	else if (!is_absent(ni))
		p->cfg->network_isolation = json_is_true(ni);
	json_object_set_new(out, "defaults",
	                    json_pack("{s:s,s:b}", "podSecurity", p->cfg->pod_security,
	                              "networkIsolation", p->cfg->network_isolation));
}

/* ---- integrations ---- */

static void parse_integrations(struct pctx *p, const json_t *spec, json_t *out)
{
	static const char *const lists[] = {"clusterResourceWhitelist",
	                                    "namespaceResourceBlacklist"};
	const json_t *in = section(p, spec, "integrations", "spec");
	const json_t *argo = section(p, in, "argocd", "spec.integrations");
	const json_t *ns = argo != NULL ? json_object_get(argo, "namespace") : NULL;
	json_t *in_out = json_object();
	size_t i;

	json_object_set_new(out, "integrations", in_out);
	if (argo == NULL)
		return;
	if (!is_absent(ns))
		string_value(p, ns, "spec.integrations.argocd.namespace");
	for (i = 0; i < sizeof(lists) / sizeof(*lists); i++) {
		const json_t *l = json_object_get(argo, lists[i]);
		char *field = xasprintf("spec.integrations.argocd.%s", lists[i]);

		if (!is_absent(l) && !json_is_array(l))
			bad(p, field, "must be an array");
		free(field);
	}
	p->cfg->argocd = json_deep_copy(argo);
	json_object_set(in_out, "argocd", p->cfg->argocd);
}

/* ---- showback ---- */

/* "12.0345" -> 12034500 micro-units. Return: 0, or -EINVAL with the reason in @why. */
static int parse_price(const char *s, int64_t *out, const char **why)
{
	int64_t units = 0, frac = 0;
	size_t i = 0, digits;

	*why = "must be a decimal number such as \"0.031\"";
	for (digits = 0; s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		units = units * 10 + (s[i] - '0');
		if (units > LCFG_PRICE_MAX_MICROS / LCFG_MICROS) {
			*why = "too large";
			return -EINVAL;
		}
	}
	if (digits == 0)
		return -EINVAL;
	if (s[i] == '.') {
		for (i++, digits = 0; s[i] >= '0' && s[i] <= '9'; i++, digits++)
			if (digits < FRACTION_DIGITS)
				frac = frac * 10 + (s[i] - '0');
		if (digits > FRACTION_DIGITS)
			*why = "at most 6 digits after the decimal point";
		if (digits == 0 || digits > FRACTION_DIGITS)
			return -EINVAL;
		for (; digits < FRACTION_DIGITS; digits++)
			frac *= 10;
	}
	if (s[i] != '\0')
		return -EINVAL;
	if (units * LCFG_MICROS + frac > LCFG_PRICE_MAX_MICROS) {
		*why = "too large";
		return -EINVAL;
	}
	*out = units * LCFG_MICROS + frac;
	return 0;
}

/* The canonical string of @micros: "0", "2", "0.031". */
static json_t *price_string(int64_t micros)
{
	char text[48];
	int n = snprintf(text, sizeof(text), "%" PRId64, micros / LCFG_MICROS);

	if (micros % LCFG_MICROS != 0) {
		snprintf(text + n, sizeof(text) - (size_t)n, ".%06" PRId64, micros % LCFG_MICROS);
		for (n = (int)strlen(text); text[n - 1] == '0'; n--)
			text[n - 1] = '\0';
	}
	return json_string(text);
}

static void parse_currency(struct pctx *p, const json_t *sb)
{
	const json_t *v = sb != NULL ? json_object_get(sb, "currency") : NULL;
	const char *s = NULL;

	memcpy(p->cfg->currency, "USD", 4);
	if (!is_absent(v))
		s = string_value(p, v, "spec.showback.currency");
	if (s == NULL)
		return;
	if (strlen(s) != 3 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' || s[2] < 'A' ||
	    s[2] > 'Z')
		bad(p, "spec.showback.currency",
		    "must be an ISO 4217 code of three upper-case letters (got \"%.64s\")", s);
	else
		memcpy(p->cfg->currency, s, 4);
}

static void parse_showback(struct pctx *p, const json_t *spec, json_t *out)
{
	const json_t *sb = section(p, spec, "showback", "spec");
	json_t *sb_out = json_object();
	const char *why;
	size_t i;

	parse_currency(p, sb);
	json_object_set_new(sb_out, "currency", json_string(p->cfg->currency));
	for (i = 0; i < sizeof(price_keys) / sizeof(*price_keys); i++) {
		const json_t *v = sb != NULL ? json_object_get(sb, price_keys[i]) : NULL;
		char *field = xasprintf("spec.showback.%s", price_keys[i]);
		const char *s = NULL;

		if (!is_absent(v))
			s = string_value(p, v, field);
		if (s != NULL && parse_price(s, &p->cfg->prices[i], &why) != 0)
			bad(p, field, "invalid price \"%.64s\": %s", s, why);
		json_object_set_new(sb_out, price_keys[i], price_string(p->cfg->prices[i]));
		free(field);
	}
	json_object_set_new(out, "showback", sb_out);
}

/* ---- lifecycle ---- */

static void roles_release(struct lcfg_roles *r)
{
	free(r->owner);
	free(r->editor);
	free(r->viewer);
}

static void lcfg_free(struct lcfg *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_custom; i++) {
		sel_free(cfg->custom[i].sel);
		roles_release(&cfg->custom[i].roles);
	}
	free(cfg->custom);
	roles_release(&cfg->dflt);
	free(cfg->role_names);
	rxs_free(cfg->priv_namespaces);
	rxs_free(cfg->priv_users);
	rxs_free(cfg->priv_groups);
	rxs_free(cfg->priv_sas);
	json_decref(cfg->labels);
	json_decref(cfg->annotations);
	json_decref(cfg->argocd);
	json_decref(cfg->spec);
	free(cfg);
}

static struct lcfg *lcfg_alloc(void)
{
	struct lcfg *cfg = xcalloc(1, sizeof(*cfg));

	atomic_init(&cfg->refs, 1);
	cfg->priv_namespaces = rxs_new();
	cfg->priv_users = rxs_new();
	cfg->priv_groups = rxs_new();
	cfg->priv_sas = rxs_new();
	cfg->spec = json_object();
	return cfg;
}

int lcfg_parse(const json_t *obj, struct lcfg **out, json_t **invalid)
{
	struct pctx p = {.invalid = json_array(), .cfg = lcfg_alloc()};
	const json_t *spec = NULL;
	int rc = 0;

	if (obj != NULL && !json_is_object(obj))
		bad(&p, "", "must be a LandlordConfig object");
	else if (obj != NULL)
		spec = section(&p, obj, "spec", "");
	parse_tenant_roles(&p, spec, p.cfg->spec);
	parse_privileged(&p, spec, p.cfg->spec);
	parse_metadata(&p, spec, p.cfg->spec);
	parse_defaults(&p, spec, p.cfg->spec);
	parse_integrations(&p, spec, p.cfg->spec);
	parse_showback(&p, spec, p.cfg->spec);
	if (json_array_size(p.invalid) > 0) {
		lcfg_free(p.cfg);
		p.cfg = NULL;
		rc = -EINVAL;
	} else {
		collect_role_names(p.cfg);
		json_decref(p.invalid);
		p.invalid = NULL;
	}
	*out = p.cfg;
	if (invalid != NULL)
		*invalid = p.invalid;
	else
		json_decref(p.invalid);
	return rc;
}

struct lcfg *lcfg_defaults(void)
{
	struct lcfg *cfg = NULL;

	lcfg_parse(NULL, &cfg, NULL);
	return cfg;
}

struct lcfg *lcfg_ref(struct lcfg *cfg)
{
	atomic_fetch_add_explicit(&cfg->refs, 1, memory_order_relaxed);
	return cfg;
}

void lcfg_unref(struct lcfg *cfg)
{
	if (cfg != NULL && atomic_fetch_sub_explicit(&cfg->refs, 1, memory_order_acq_rel) == 1)
		lcfg_free(cfg);
}

json_t *lcfg_to_json(const struct lcfg *cfg)
{
	return json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", LANDLORD_API_VERSION, "kind",
	                 "LandlordConfig", "metadata", "name", LANDLORD_CONFIG_NAME, "spec",
	                 json_deep_copy(cfg->spec));
}

/* ---- queries ---- */

void lcfg_roles_for_namespace(const struct lcfg *cfg, const json_t *ns_labels, const char **owner,
                              const char **editor, const char **viewer)
{
	const struct lcfg_roles *r = &cfg->dflt;
	size_t i;

	for (i = 0; i < cfg->n_custom; i++) {
		if (sel_matches(cfg->custom[i].sel, ns_labels)) {
			r = &cfg->custom[i].roles;
			break;
		}
	}
	if (owner != NULL)
		*owner = r->owner;
	if (editor != NULL)
		*editor = r->editor;
	if (viewer != NULL)
		*viewer = r->viewer;
}

void lcfg_role_names(const struct lcfg *cfg, const char *const **names, size_t *n)
{
	*names = cfg->role_names;
	*n = cfg->n_role_names;
}

/* Does @subject match a privileged pattern of @set? A match stopped by a limit counts as none. */
static bool privileged_match(const struct rxs *set, const char *subject)
{
	bool limited = false;
	int i;

	if (subject == NULL)
		return false;
	i = rxs_match(set, subject, strlen(subject), &limited);
	if (limited)
		log_warn("privileged pattern hit its match limit; counted as no match", "{s:s}",
		         "subject", subject);
	return i >= 0;
}

bool lcfg_is_privileged_user(const struct lcfg *cfg, const char *username,
                             const char *const *groups, size_t n_groups)
{
	size_t i;

	if (privileged_match(cfg->priv_users, username))
		return true;
	if (username != NULL && strncmp(username, SA_PREFIX, strlen(SA_PREFIX)) == 0 &&
	    strchr(username + strlen(SA_PREFIX), ':') != NULL &&
	    privileged_match(cfg->priv_sas, username + strlen(SA_PREFIX)))
		return true;
	for (i = 0; groups != NULL && i < n_groups; i++)
		if (privileged_match(cfg->priv_groups, groups[i]))
			return true;
	return false;
}

bool lcfg_is_privileged_namespace(const struct lcfg *cfg, const char *name)
{
	return privileged_match(cfg->priv_namespaces, name);
}

const char *lcfg_default_pod_security(const struct lcfg *cfg)
{
	return cfg->pod_security;
}

bool lcfg_default_network_isolation(const struct lcfg *cfg)
{
	return cfg->network_isolation;
}

const json_t *lcfg_namespace_labels(const struct lcfg *cfg)
{
	return cfg->labels;
}

const json_t *lcfg_namespace_annotations(const struct lcfg *cfg)
{
	return cfg->annotations;
}

const json_t *lcfg_argocd(const struct lcfg *cfg)
{
	return cfg->argocd;
}

void lcfg_showback(const struct lcfg *cfg, struct lcfg_prices *out)
{
	out->currency = cfg->currency;
	out->cpu_core_hour = cfg->prices[0];
	out->memory_gib_hour = cfg->prices[1];
	out->storage_gib_month = cfg->prices[2];
}
