/* test_tenant_model.c - the desired state of a Tenant: names, metadata, access, policies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testjson.h"

#include "base/err.h"
#include "base/json.h"
#include "controllers/controllers.h"
#include "tenancy/landlordconfig.h"
#include "tenancy/tenant_model.h"

static struct lcfg *config(const char *spec)
{
	json_t *obj = js(spec);
	struct lcfg *cfg = NULL;

	assert_int_equal(lcfg_parse(obj, &cfg, NULL), 0);
	json_decref(obj);
	return cfg;
}

static const char *ACME =
        "{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
        "\"accessControl\":{\"owners\":{\"users\":[\"alice\",\"a@b.com\"],"
        "\"groups\":[\"ops\"]},\"editors\":{\"users\":[\"bob\",\"alice\"],"
        "\"serviceAccounts\":[{\"namespace\":\"ci\",\"name\":\"deployer\"}]},"
        "\"viewers\":{\"groups\":[\"auditors\"]}},"
        "\"namespaces\":{\"withTenantPrefix\":[\"dev\",\"prod\"],"
        "\"withoutTenantPrefix\":[\"tools\"],\"sandboxes\":{\"enabled\":true},"
        "\"metadata\":{\"common\":{\"labels\":{\"team\":\"{{ TENANT.NAME }}\"},"
        "\"annotations\":{\"owner\":\"{{TENANT.NAME}}-ops\"}},"
        "\"sandbox\":{\"labels\":{\"user\":\"{{ TENANT.USERNAME }}\"}},"
        "\"specific\":[{\"namespaces\":[\"acme-prod\"],\"labels\":{\"tier\":\"prod\","
        "\"team\":\"payments\"}}]}}}}";

/* tm_claims_build() on the document the informer would cache for @t; the claims borrow from it. */
static struct jdoc *claims_of(const json_t *t, struct tm_claims *c)
{
	struct jdoc *d = NULL;

	assert_int_equal(jdoc_from_json(t, NULL, &d, NULL), 0);
	assert_int_equal(tm_claims_build(jdoc_root(d), c), 0);
	return d;
}

static void test_tenant_model__claims_cover_prefixed_plain_and_sandboxes(void **state)
{
	json_t *t = js(ACME);
	struct tm_claims c;

	(void)state;
	struct jdoc *d = claims_of(t, &c);

	/* dev, prod, tools, and sandboxes for alice, a@b.com, bob (alice once) */
	assert_int_equal(c.n, 6);
	assert_string_equal(c.ns[0].name, "acme-dev");
	assert_string_equal(c.ns[0].kind, "dev");
	assert_string_equal(c.ns[2].name, "tools");
	assert_string_equal(c.ns[3].name, "acme-alice-sandbox");
	assert_string_equal(c.ns[3].kind, "sandbox");
	assert_string_equal(c.ns[3].user, "alice");
	/* a user that is not a valid name gets a sanitised name with a hash */
	assert_non_null(strstr(c.ns[4].name, "acme-a-b-com-sandbox-"));
	assert_string_equal(c.ns[5].name, "acme-bob-sandbox");
	for (size_t i = 0; i < c.n; i++)
		assert_false(c.ns[i].collides);
	assert_non_null(tm_claims_find(&c, "tools"));
	assert_null(tm_claims_find(&c, "acme-tools"));
	tm_claims_release(&c);
	jdoc_unref(d);
	json_decref(t);
}

static void test_tenant_model__a_sandbox_and_a_prefixed_name_collide(void **state)
{
	json_t *t = js("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"plan\":\"p\","
	               "\"accessControl\":{\"owners\":{\"users\":[\"dev\"]}},"
	               "\"namespaces\":{\"withTenantPrefix\":[\"dev-sandbox\",\"x\"],"
	               "\"sandboxes\":{\"enabled\":true}}}}");
	struct tm_claims c;

	(void)state;
	struct jdoc *d = claims_of(t, &c);

	assert_int_equal(c.n, 3);
	assert_string_equal(c.ns[0].name, "a-dev-sandbox");
	assert_string_equal(c.ns[2].name, "a-dev-sandbox");
	assert_true(c.ns[0].collides);
	assert_false(c.ns[1].collides);
	assert_true(c.ns[2].collides);
	tm_claims_release(&c);
	jdoc_unref(d);
	json_decref(t);
}

static void test_tenant_model__metadata_layers_and_landlord_keys_win(void **state)
{
	json_t *t = js(ACME), *m;
	struct lcfg *cfg = config("{\"spec\":{\"namespaceMetadata\":{\"labels\":{\"org\":\"x\","
	                          "\"team\":\"platform\"}},\"defaults\":{\"podSecurity\":"
	                          "\"baseline\"}}}");
	struct tm_claims c;
	json_t *managed;

	(void)state;
	struct jdoc *d = claims_of(t, &c);

	m = tm_namespace_metadata(jdoc_root(d), cfg, "gold", "acme-prod", &c.ns[1], NULL);
	assert_string_equal(jx_str(m, "labels", "org", NULL), "x");
	/* specific beats common beats the configuration */
	assert_string_equal(jx_str(m, "labels", "team", NULL), "payments");
	assert_string_equal(jx_str(m, "labels", "tier", NULL), "prod");
	assert_string_equal(jx_str(m, "annotations", "owner", NULL), "acme-ops");
	assert_string_equal(jx_str(m, "labels", LABEL_TENANT, NULL), "acme");
	assert_string_equal(jx_str(m, "labels", LABEL_KIND, NULL), "prod");
	assert_string_equal(jx_str(m, "labels", LABEL_PLAN, NULL), "gold");
	assert_string_equal(jx_str(m, "labels", "pod-security.kubernetes.io/enforce", NULL),
	                    "baseline");
	assert_null(jx_get(m, "labels", LABEL_USERNAME, NULL));
	assert_null(jx_get(m, "labels", LABEL_CORDONED, NULL));
	assert_string_equal(jx_str(m, "annotations", ANNOT_SOURCE, NULL), SOURCE_SPEC);
	managed = js(jx_str(m, "annotations", ANNOT_MANAGED_METADATA, NULL));
	assert_string_equal(jx_str(managed, "tenant", NULL), "acme");
	assert_int_equal(json_array_size(json_object_get(managed, "labels")),
	                 json_object_size(json_object_get(m, "labels")));
	json_decref(managed);
	json_decref(m);

	/* sandboxes get the user, as a valid label value, and the raw user in an annotation */
	m = tm_namespace_metadata(jdoc_root(d), cfg, "gold", c.ns[4].name, &c.ns[4], NULL);
	assert_string_equal(jx_str(m, "annotations", ANNOT_USERNAME_RAW, NULL), "a@b.com");
	assert_non_null(strstr(jx_str(m, "labels", LABEL_USERNAME, NULL), "a-b.com-"));
	assert_string_equal(jx_str(m, "labels", "user", NULL),
	                    jx_str(m, "labels", LABEL_USERNAME, NULL));
	json_decref(m);
	tm_claims_release(&c);
	jdoc_unref(d);
	lcfg_unref(cfg);
	json_decref(t);
}

/* A cordoned tenant's namespaces carry the label the webhook's configuration selects. */
static void test_tenant_model__a_cordoned_tenant_labels_its_namespaces(void **state)
{
	struct jdoc *d = jd("{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
	                    "\"cordoned\":true}}");
	struct lcfg *cfg = config("{\"spec\":{}}");
	json_t *m = tm_namespace_metadata(jdoc_root(d), cfg, "gold", "acme-dev", NULL, "adopted");

	(void)state;
	assert_string_equal(jx_str(m, "labels", LABEL_CORDONED, NULL), "true");
	json_decref(m);
	lcfg_unref(cfg);
	jdoc_unref(d);
}

static void test_tenant_model__metadata_patch_removes_only_what_landlord_set(void **state)
{
	struct jdoc *nsd =
	        jd("{\"metadata\":{\"name\":\"acme-dev\",\"resourceVersion\":\"7\","
	           "\"labels\":{\"landlord.dev/tenant\":\"acme\",\"team\":\"a\","
	           "\"mine\":\"keep\"},\"annotations\":{\"landlord.dev/managed-metadata\":"
	           "\"{\\\"tenant\\\":\\\"acme\\\",\\\"labels\\\":[\\\"landlord.dev/tenant\\\","
	           "\\\"team\\\"],\\\"annotations\\\":[]}\"}}}");
	struct jval ns = jdoc_root(nsd);
	json_t *want = js("{\"labels\":{\"landlord.dev/tenant\":\"acme\"},\"annotations\":{}}");
	json_t *p = tm_metadata_patch(ns, want);
	struct jdoc *released;

	(void)state;
	assert_non_null(p);
	assert_string_equal(jx_str(p, "metadata", "resourceVersion", NULL), "7");
	assert_true(json_is_null(jx_get(p, "metadata", "labels", "team", NULL)));
	assert_null(jx_get(p, "metadata", "labels", "mine", NULL));
	/* the bookkeeping annotation goes too when landlord no longer writes it */
	assert_true(
	        json_is_null(jx_get(p, "metadata", "annotations", ANNOT_MANAGED_METADATA, NULL)));
	json_decref(p);

	/* releasing removes every landlord.dev label, recorded or not */
	p = tm_metadata_patch(ns, NULL);
	assert_true(json_is_null(jx_get(p, "metadata", "labels", "landlord.dev/tenant", NULL)));
	assert_true(json_is_null(jx_get(p, "metadata", "labels", "team", NULL)));
	assert_null(jx_get(p, "metadata", "labels", "mine", NULL));
	json_decref(p);

	/* a release records where the namespace came from; joining a tenant again drops that */
	p = tm_release_patch(ns, "acme");
	assert_string_equal(jx_str(p, "metadata", "annotations", ANNOT_RELEASED_FROM, NULL),
	                    "acme");
	assert_true(json_is_null(jx_get(p, "metadata", "labels", "team", NULL)));
	json_decref(p);
	released = jd("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"8\","
	              "\"annotations\":{\"landlord.dev/released-from\":\"acme\"}}}");
	p = tm_metadata_patch(jdoc_root(released), want);
	assert_true(json_is_null(jx_get(p, "metadata", "annotations", ANNOT_RELEASED_FROM, NULL)));
	assert_string_equal(jx_str(p, "metadata", "labels", LABEL_TENANT, NULL), "acme");
	json_decref(p);
	jdoc_unref(released);

	/* nothing to change: no patch at all */
	json_decref(want);
	want = js("{\"labels\":{\"landlord.dev/tenant\":\"acme\",\"team\":\"a\"},"
	          "\"annotations\":{\"landlord.dev/managed-metadata\":\"{\\\"tenant\\\":"
	          "\\\"acme\\\",\\\"labels\\\":[\\\"landlord.dev/tenant\\\",\\\"team\\\"],"
	          "\\\"annotations\\\":[]}\"}}");
	assert_null(tm_metadata_patch(ns, want));
	json_decref(want);
	jdoc_unref(nsd);
}

/* The bookkeeping annotation counts only for the tenant the protected label names. */
static void test_tenant_model__a_forged_bookkeeping_annotation_is_ignored(void **state)
{
	/* written by someone who may patch the namespace: names another tenant and the labels
	 * that would detach the namespace */
	struct jdoc *forged = jd("{\"metadata\":{\"name\":\"acme-dev\",\"resourceVersion\":\"3\","
	                         "\"labels\":{\"landlord.dev/tenant\":\"acme\","
	                         "\"pod-security.kubernetes.io/enforce\":\"restricted\"},"
	                         "\"annotations\":{\"landlord.dev/managed-metadata\":"
	                         "\"{\\\"tenant\\\":\\\"globex\\\",\\\"labels\\\":"
	                         "[\\\"landlord.dev/tenant\\\",\\\"pod-security.kubernetes.io/"
	                         "enforce\\\"]}\"}}}");
	struct jdoc *unlabelled = jd("{\"metadata\":{\"name\":\"kube-system\",\"annotations\":{"
	                             "\"landlord.dev/managed-metadata\":\"{\\\"tenant\\\":"
	                             "\\\"globex\\\",\\\"labels\\\":[]}\"}}}");
	json_t *p;

	(void)state;
	assert_null(tm_managed_keys(jdoc_root(forged)));
	assert_true(tm_managed_metadata_ignored(jdoc_root(forged)));
	assert_null(tm_managed_keys(jdoc_root(unlabelled)));
	assert_true(tm_managed_metadata_ignored(jdoc_root(unlabelled)));
	/* the record of another tenant removes nothing it lists */
	p = tm_metadata_patch(jdoc_root(forged), NULL);
	assert_null(jx_get(p, "metadata", "labels", "pod-security.kubernetes.io/enforce", NULL));
	json_decref(p);
	jdoc_unref(forged);
	jdoc_unref(unlabelled);
}

/* A release keeps the Pod Security level and takes every landlord.dev annotation. */
static void test_tenant_model__a_release_quarantines_the_namespace(void **state)
{
	struct jdoc *ns = jd("{\"metadata\":{\"name\":\"acme-dev\",\"resourceVersion\":\"7\","
	                     "\"labels\":{\"landlord.dev/tenant\":\"acme\",\"team\":\"a\","
	                     "\"pod-security.kubernetes.io/enforce\":\"restricted\","
	                     "\"pod-security.kubernetes.io/warn\":\"restricted\"},"
	                     "\"annotations\":{\"landlord.dev/source\":\"spec\","
	                     "\"landlord.dev/managed-metadata\":\"{\\\"tenant\\\":\\\"acme\\\","
	                     "\\\"labels\\\":[\\\"landlord.dev/tenant\\\",\\\"team\\\","
	                     "\\\"pod-security.kubernetes.io/enforce\\\",\\\"pod-security."
	                     "kubernetes.io/warn\\\"],\\\"annotations\\\":[]}\"}}}");
	json_t *p = tm_release_patch(jdoc_root(ns), "acme");

	(void)state;
	assert_null(jx_get(p, "metadata", "labels", "pod-security.kubernetes.io/enforce", NULL));
	assert_null(jx_get(p, "metadata", "labels", "pod-security.kubernetes.io/warn", NULL));
	assert_true(json_is_null(jx_get(p, "metadata", "labels", "team", NULL)));
	assert_true(json_is_null(jx_get(p, "metadata", "labels", LABEL_TENANT, NULL)));
	assert_true(json_is_null(jx_get(p, "metadata", "annotations", ANNOT_SOURCE, NULL)));
	assert_true(
	        json_is_null(jx_get(p, "metadata", "annotations", ANNOT_MANAGED_METADATA, NULL)));
	assert_string_equal(jx_str(p, "metadata", "annotations", ANNOT_RELEASED_FROM, NULL),
	                    "acme");
	json_decref(p);
	jdoc_unref(ns);
}

static void test_tenant_model__system_and_privileged_namespaces_are_protected(void **state)
{
	struct lcfg *cfg = config("{\"spec\":{\"privileged\":{\"namespaces\":[\"monitoring\"]}}}");
	static const char *const protected_ns[] = {"kube-system", "kube-public",     "kube-x",
	                                           "default",     "landlord-system", "monitoring"};
	static const char *const free_ns[] = {"acme-dev", "kube", "defaults", "monitoring-2",
	                                      "my-kube-system"};

	(void)state;
	for (size_t i = 0; i < sizeof(protected_ns) / sizeof(*protected_ns); i++)
		if (!tm_namespace_protected(cfg, protected_ns[i]))
			fail_msg("%s is not protected", protected_ns[i]);
	for (size_t i = 0; i < sizeof(free_ns) / sizeof(*free_ns); i++)
		if (tm_namespace_protected(cfg, free_ns[i]))
			fail_msg("%s is protected", free_ns[i]);
	lcfg_unref(cfg);
}

static void test_tenant_model__rolebindings_follow_the_role_mapping(void **state)
{
	json_t *t = js(ACME), *rbs, *prod_labels = js("{\"landlord.dev/kind\":\"prod\"}");
	struct lcfg *cfg = config(
	        "{\"spec\":{\"tenantRoles\":{\"custom\":[{\"labelSelector\":{\"matchLabels\":"
	        "{\"landlord.dev/kind\":\"prod\"}},\"owner\":\"edit\"}]}}}");
	const json_t *subjects;
	struct tm_claims c;

	(void)state;
	struct jdoc *d = claims_of(t, &c);

	rbs = tm_rolebindings(jdoc_root(d), cfg, "acme-dev", NULL, &c.ns[0], false);
	assert_int_equal(json_object_size(rbs), 3);
	subjects = jx_get(rbs, "landlord-owners-admin", "subjects", NULL);
	/* users sorted, then groups */
	assert_int_equal(json_array_size(subjects), 3);
	assert_string_equal(jx_str(json_array_get(subjects, 0), "name", NULL), "a@b.com");
	assert_string_equal(jx_str(json_array_get(subjects, 1), "name", NULL), "alice");
	assert_string_equal(jx_str(json_array_get(subjects, 2), "kind", NULL), "Group");
	subjects = jx_get(rbs, "landlord-editors-edit", "subjects", NULL);
	assert_string_equal(jx_str(json_array_get(subjects, 2), "kind", NULL), "ServiceAccount");
	assert_string_equal(jx_str(json_array_get(subjects, 2), "namespace", NULL), "ci");
	assert_string_equal(jx_str(rbs, "landlord-viewers-view", "roleRef", "name", NULL), "view");
	assert_string_equal(
	        jx_str(rbs, "landlord-owners-admin", "metadata", "labels", LABEL_MANAGED_BY, NULL),
	        "landlord");
	json_decref(rbs);

	/* a custom mapping renames the binding, since roleRef cannot change */
	rbs = tm_rolebindings(jdoc_root(d), cfg, "acme-prod", prod_labels, &c.ns[1], false);
	assert_null(json_object_get(rbs, "landlord-owners-admin"));
	assert_non_null(json_object_get(rbs, "landlord-owners-edit"));
	json_decref(rbs);

	/* a private sandbox is its user's alone */
	rbs = tm_rolebindings(jdoc_root(d), cfg, c.ns[5].name, NULL, &c.ns[5], true);
	assert_int_equal(json_object_size(rbs), 1);
	subjects = jx_get(rbs, "landlord-owners-admin", "subjects", NULL);
	assert_int_equal(json_array_size(subjects), 1);
	assert_string_equal(jx_str(json_array_get(subjects, 0), "name", NULL), "bob");
	json_decref(rbs);
	tm_claims_release(&c);
	jdoc_unref(d);
	lcfg_unref(cfg);
	json_decref(prod_labels);
	json_decref(t);
}

static void test_tenant_model__policies_and_quota_are_canonical(void **state)
{
	struct jdoc *td = jd(ACME);
	struct jval t = jdoc_root(td);
	struct jdoc *plan = jd("{\"spec\":{\"limitRange\":{\"limits\":[{\"type\":\"Container\","
	                       "\"default\":{\"cpu\":\"0.5\",\"memory\":\"1024Mi\"}}]}}}");
	json_t *hard = js("{\"requests.cpu\":\"1.5\",\"pods\":10}");
	struct jdoc *hard_doc = jd("{\"requests.cpu\":\"1.5\",\"pods\":10}");
	json_t *priv = js("[\"kube-system\",\"monitoring\"]"), *empty = json_array();
	json_t *lr = tm_limitrange(t, jdoc_root(plan), "acme-dev"), *rq, *np, *rule, *canon;

	(void)state;
	assert_string_equal(jx_str(json_array_get(jx_get(lr, "spec", "limits", NULL), 0), "default",
	                           "cpu", NULL),
	                    "500m");
	assert_string_equal(jx_str(json_array_get(jx_get(lr, "spec", "limits", NULL), 0), "default",
	                           "memory", NULL),
	                    "1Gi");
	rq = tm_resourcequota(t, "acme-dev", hard);
	assert_string_equal(jx_str(rq, "spec", "hard", "requests.cpu", NULL), "1500m");
	assert_string_equal(jx_str(rq, "spec", "hard", "pods", NULL), "10");
	assert_string_equal(jx_str(rq, "metadata", "name", NULL), QUOTA_NAME);
	np = tm_networkpolicy(t, "acme-dev", priv);
	assert_int_equal(json_array_size(jx_get(np, "spec", "ingress", NULL)), 2);
	rule = json_array_get(jx_get(np, "spec", "ingress", NULL), 0);
	assert_string_equal(jx_str(json_array_get(json_object_get(rule, "from"), 0),
	                           "namespaceSelector", "matchLabels", LABEL_TENANT, NULL),
	                    "acme");
	rule = json_array_get(jx_get(np, "spec", "ingress", NULL), 1);
	rule = json_array_get(json_object_get(rule, "from"), 0);
	rule = json_array_get(jx_get(rule, "namespaceSelector", "matchExpressions", NULL), 0);
	assert_true(json_equal(json_object_get(rule, "values"), priv));
	assert_string_equal(jx_str(rule, "key", NULL), "kubernetes.io/metadata.name");
	json_decref(np);
	np = tm_networkpolicy(t, "acme-dev", empty);
	assert_int_equal(json_array_size(jx_get(np, "spec", "ingress", NULL)), 1);
	assert_null(tm_limitrange(t, jdoc_root(hard_doc), "acme-dev"));
	/* a cached ResourceList in canonical form, as the Tenant's status reports the plan's */
	canon = tm_canonical_quantities(jdoc_root(hard_doc));
	assert_true(json_equal(canon, jx_get(rq, "spec", "hard", NULL)));
	json_decref(canon);
	json_decref(np);
	json_decref(rq);
	json_decref(lr);
	json_decref(priv);
	json_decref(empty);
	json_decref(hard);
	jdoc_unref(hard_doc);
	jdoc_unref(plan);
	jdoc_unref(td);
}

static void test_tenant_model__tenant_role_grants_get_and_watch_on_itself(void **state)
{
	struct jdoc *t = jd(ACME);
	json_t *cr = tm_clusterrole(jdoc_root(t), TM_ROLE_MEMBERS, NULL);
	json_t *crb = tm_clusterrolebinding(jdoc_root(t), TM_ROLE_MEMBERS);
	struct jdoc *lonely = jd("{\"metadata\":{\"name\":\"empty\"},\"spec\":{\"plan\":\"p\"}}");
	json_t *rule = json_array_get(json_object_get(cr, "rules"), 0);

	(void)state;
	assert_string_equal(jx_str(cr, "metadata", "name", NULL), "landlord:tenant:acme");
	assert_string_equal(
	        json_string_value(json_array_get(json_object_get(rule, "resourceNames"), 0)),
	        "acme");
	assert_int_equal(json_array_size(json_object_get(rule, "verbs")), 2);
	/* every member once: 3 users, 2 groups, 1 service account */
	assert_int_equal(json_array_size(json_object_get(crb, "subjects")), 6);
	assert_null(tm_clusterrolebinding(jdoc_root(lonely), TM_ROLE_MEMBERS));
	jdoc_unref(lonely);
	json_decref(crb);
	json_decref(cr);
	jdoc_unref(t);
}

/* Owners alone hold "own" on their Tenant: the policy lets them label new namespaces with it. */
static void test_tenant_model__owners_role_grants_own_to_owners_only(void **state)
{
	struct jdoc *t = jd(ACME);
	json_t *cr = tm_clusterrole(jdoc_root(t), TM_ROLE_OWNERS, NULL);
	json_t *crb = tm_clusterrolebinding(jdoc_root(t), TM_ROLE_OWNERS);
	json_t *rule = json_array_get(json_object_get(cr, "rules"), 0), *owners;
	struct jdoc *no_owner = jd("{\"metadata\":{\"name\":\"v\"},\"spec\":{\"plan\":\"p\","
	                           "\"accessControl\":{\"viewers\":{\"users\":[\"x\"]}}}}");

	(void)state;
	assert_string_equal(jx_str(cr, "metadata", "name", NULL), "landlord:tenant:acme:owners");
	assert_string_equal(jx_str(crb, "roleRef", "name", NULL), "landlord:tenant:acme:owners");
	assert_string_equal(
	        json_string_value(json_array_get(json_object_get(rule, "resourceNames"), 0)),
	        "acme");
	assert_string_equal(json_string_value(json_array_get(json_object_get(rule, "verbs"), 0)),
	                    "own");
	assert_int_equal(json_array_size(json_object_get(rule, "verbs")), 1);
	owners = tm_subjects(jdoc_root(t), "owners");
	assert_int_equal(json_array_size(json_object_get(crb, "subjects")),
	                 json_array_size(owners));
	assert_null(tm_clusterrolebinding(jdoc_root(no_owner), TM_ROLE_OWNERS));
	json_decref(owners);
	jdoc_unref(no_owner);
	json_decref(crb);
	json_decref(cr);
	jdoc_unref(t);
}

/* Owners create namespaces anywhere (the webhook judges names) and delete only the tenant's. */
static void test_tenant_model__owners_create_namespaces_and_delete_only_theirs(void **state)
{
	struct jdoc *t = jd(ACME);
	json_t *ns = json_pack("{s:b,s:b}", "acme-prod", 1, "acme-dev", 1), *none = json_object();
	json_t *cr = tm_clusterrole(jdoc_root(t), TM_ROLE_OWNERS, ns);
	json_t *bare = tm_clusterrole(jdoc_root(t), TM_ROLE_OWNERS, none);
	json_t *members = tm_clusterrole(jdoc_root(t), TM_ROLE_MEMBERS, ns);
	json_t *want = json_loads(
	        "[{\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"],\"verbs\":[\"create\"]},"
	        "{\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"],"
	        "\"resourceNames\":[\"acme-dev\",\"acme-prod\"],\"verbs\":[\"delete\"]}]",
	        0, NULL);
	json_t *rules = json_object_get(cr, "rules");

	(void)state;
	assert_int_equal(json_array_size(rules), 3);
	assert_true(json_equal(json_array_get(rules, 1), json_array_get(want, 0)));
	assert_true(json_equal(json_array_get(rules, 2), json_array_get(want, 1)));
	/* no namespace yet: no delete rule at all (empty resourceNames would mean every one) */
	assert_int_equal(json_array_size(json_object_get(bare, "rules")), 2);
	assert_int_equal(json_array_size(json_object_get(members, "rules")), 1);
	json_decref(want);
	json_decref(members);
	json_decref(bare);
	json_decref(cr);
	json_decref(none);
	json_decref(ns);
	jdoc_unref(t);
}

/* ---- spec.hibernation ---- */

#define HIB_TENANT(hibernation)                                                 \
	"{\"metadata\":{\"name\":\"acme\",\"uid\":\"u-1\"},\"spec\":{\"plan\":" \
	"\"gold\"" hibernation "}}"

static void test_tenant_model__no_hibernation_makes_no_supervisor(void **state)
{
	struct jdoc *t = jd(HIB_TENANT(""));
	struct jdoc *not_object = jd(HIB_TENANT(",\"hibernation\":true"));
	struct jdoc *stand_in = jd("{\"metadata\":{\"name\":\"acme\"},\"spec\":{\"plan\":\"gold\","
	                           "\"hibernation\":{}}}");
	struct tm_hibernation h;

	(void)state;
	tm_hibernation_parse(jdoc_root(t), &h);
	assert_false(h.set);
	assert_null(h.timezone);
	assert_null(tm_resourcesupervisor(jdoc_root(t), false));
	tm_hibernation_parse(jdoc_root(not_object), &h);
	assert_false(h.set);
	assert_null(tm_resourcesupervisor(jdoc_root(not_object), false));
	/* without a uid (a stand-in for a Tenant that is gone) there is nothing to own it */
	assert_null(tm_resourcesupervisor(jdoc_root(stand_in), false));
	jdoc_unref(stand_in);
	jdoc_unref(not_object);
	jdoc_unref(t);
}

/* An empty spec.hibernation: asleep at once, in UTC, advisory, no exclusion. */
static void test_tenant_model__empty_hibernation_is_read_with_the_crds_defaults(void **state)
{
	struct jdoc *t = jd(HIB_TENANT(",\"hibernation\":{\"sleepSchedule\":\"\"}"));
	struct tm_hibernation h;

	(void)state;
	tm_hibernation_parse(jdoc_root(t), &h);
	assert_true(h.set);
	assert_null(h.sleep); /* empty is none, as the supervisor reads it */
	assert_null(h.wake);
	assert_string_equal(h.timezone, "UTC");
	assert_false(h.enforce);
	assert_false(h.allow_exclusion);
	jdoc_unref(t);
}

/* Everything landlord owns of the supervisor, and nothing else (no annotations, finalizers or
 * status: the owners' override and the supervisor controller's). */
static void test_tenant_model__hibernation_becomes_the_tenants_supervisor(void **state)
{
	struct jdoc *t = jd(
	        HIB_TENANT(",\"hibernation\":{\"sleepSchedule\":\"0 20 * * 1-5\",\"wakeSchedule\":"
	                   "\"0 8 * * 1-5\",\"timezone\":\"Europe/Berlin\",\"enforce\":true,"
	                   "\"allowWorkloadExclusion\":true}"));
	struct jdoc *bare = jd(HIB_TENANT(",\"hibernation\":{}"));
	json_t *rs = tm_resourcesupervisor(jdoc_root(t), false), *sleep_now;
	json_t *want =
	        js("{\"apiVersion\":\"landlord.dev/v1alpha1\",\"kind\":\"ResourceSupervisor\","
	           "\"metadata\":{\"name\":\"acme\",\"labels\":{\"app.kubernetes.io/managed-by\":"
	           "\"landlord\",\"landlord.dev/tenant\":\"acme\"},\"ownerReferences\":[{"
	           "\"apiVersion\":\"landlord.dev/v1alpha1\",\"kind\":\"Tenant\",\"name\":\"acme\","
	           "\"uid\":\"u-1\",\"controller\":true}]},"
	           "\"spec\":{\"namespaces\":{\"labelSelector\":{\"matchLabels\":{"
	           "\"landlord.dev/tenant\":\"acme\"}}},\"schedule\":{\"sleepSchedule\":"
	           "\"0 20 * * 1-5\",\"wakeSchedule\":\"0 8 * * 1-5\",\"timezone\":"
	           "\"Europe/Berlin\"},\"enforce\":true,\"allowWorkloadExclusion\":true}}");
	json_t *want_now = js("{\"namespaces\":{\"labelSelector\":{\"matchLabels\":{"
	                      "\"landlord.dev/tenant\":\"acme\"}}},\"schedule\":{\"timezone\":"
	                      "\"UTC\"},\"enforce\":false,\"allowWorkloadExclusion\":false}");

	(void)state;
	assert_true(json_equal(rs, want));
	sleep_now = tm_resourcesupervisor(jdoc_root(bare), false);
	assert_true(json_equal(json_object_get(sleep_now, "spec"), want_now));
	json_decref(sleep_now);
	/* With Argo CD configured, the tenant's AppProject gets the window while asleep. */
	sleep_now = tm_resourcesupervisor(jdoc_root(bare), true);
	json_object_set_new(want_now, "argocd", json_pack("{s:[s]}", "appProjects", "acme"));
	assert_true(json_equal(json_object_get(sleep_now, "spec"), want_now));
	json_decref(want_now);
	json_decref(sleep_now);
	json_decref(want);
	json_decref(rs);
	jdoc_unref(bare);
	jdoc_unref(t);
}

/* A supervisor is the tenant's only by an ownerReference to its uid: a name or labels are not
 * enough (an administrator's supervisor of the same name is never taken over). */
static void test_tenant_model__a_supervisor_is_the_tenants_by_its_uid_only(void **state)
{
	struct jdoc *ours = jd("{\"metadata\":{\"name\":\"acme\",\"ownerReferences\":["
	                       "{\"kind\":\"Other\",\"uid\":\"x\"},{\"kind\":\"Tenant\","
	                       "\"name\":\"acme\",\"uid\":\"u-1\"}]}}");
	struct jdoc *labelled = jd("{\"metadata\":{\"name\":\"acme\",\"labels\":{"
	                           "\"landlord.dev/tenant\":\"acme\",\"app.kubernetes.io/"
	                           "managed-by\":\"landlord\"},\"ownerReferences\":[{\"kind\":"
	                           "\"Tenant\",\"name\":\"acme\",\"uid\":\"u-0\"}]}}");
	struct jdoc *bare = jd("{\"metadata\":{\"name\":\"acme\"}}");

	(void)state;
	assert_true(tm_supervisor_owned_by(jdoc_root(ours), "u-1"));
	assert_false(tm_supervisor_owned_by(jdoc_root(ours), "u-2"));
	assert_false(tm_supervisor_owned_by(jdoc_root(ours), NULL));
	assert_false(tm_supervisor_owned_by(jdoc_root(labelled), "u-1"));
	assert_false(tm_supervisor_owned_by(jdoc_root(bare), "u-1"));
	jdoc_unref(bare);
	jdoc_unref(labelled);
	jdoc_unref(ours);
}

/* The owners' rule: their own supervisor by name, and only the verbs an override needs. */
static void test_tenant_model__owners_may_change_their_supervisor_by_name(void **state)
{
	struct jdoc *t = jd(HIB_TENANT(",\"hibernation\":{}"));
	json_t *rule = tm_supervisor_owner_rule(jdoc_root(t));
	json_t *want = js("{\"apiGroups\":[\"landlord.dev\"],\"resources\":"
	                  "[\"resourcesupervisors\"],\"resourceNames\":[\"acme\"],"
	                  "\"verbs\":[\"get\",\"patch\",\"update\"]}");

	(void)state;
	assert_true(json_equal(rule, want));
	json_decref(want);
	json_decref(rule);
	jdoc_unref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tenant_model__claims_cover_prefixed_plain_and_sandboxes),
	        cmocka_unit_test(test_tenant_model__a_sandbox_and_a_prefixed_name_collide),
	        cmocka_unit_test(test_tenant_model__metadata_layers_and_landlord_keys_win),
	        cmocka_unit_test(test_tenant_model__a_cordoned_tenant_labels_its_namespaces),
	        cmocka_unit_test(test_tenant_model__metadata_patch_removes_only_what_landlord_set),
	        cmocka_unit_test(test_tenant_model__a_forged_bookkeeping_annotation_is_ignored),
	        cmocka_unit_test(test_tenant_model__a_release_quarantines_the_namespace),
	        cmocka_unit_test(test_tenant_model__system_and_privileged_namespaces_are_protected),
	        cmocka_unit_test(test_tenant_model__rolebindings_follow_the_role_mapping),
	        cmocka_unit_test(test_tenant_model__policies_and_quota_are_canonical),
	        cmocka_unit_test(test_tenant_model__tenant_role_grants_get_and_watch_on_itself),
	        cmocka_unit_test(test_tenant_model__owners_role_grants_own_to_owners_only),
	        cmocka_unit_test(
	                test_tenant_model__owners_create_namespaces_and_delete_only_theirs),
	        cmocka_unit_test(test_tenant_model__no_hibernation_makes_no_supervisor),
	        cmocka_unit_test(
	                test_tenant_model__empty_hibernation_is_read_with_the_crds_defaults),
	        cmocka_unit_test(test_tenant_model__hibernation_becomes_the_tenants_supervisor),
	        cmocka_unit_test(test_tenant_model__a_supervisor_is_the_tenants_by_its_uid_only),
	        cmocka_unit_test(test_tenant_model__owners_may_change_their_supervisor_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
