"""deploy/policies: the names landlord uses are reserved for it (landlord-reserved-names), and
the cluster is protected from landlord itself (landlord-self-limits). The set-up is in
policy_env.py.
"""

import pytest
from kubernetes import client as k8s

import tenants
from kube import RBAC_GROUP, ignore_404, uniq
from policy_env import (  # noqa: F401 (env is a fixture)
    LANDLORD_USER, MANAGED, Objects, RELEASED_FROM, RESERVED, binding, denied_by, env)
from tenants import RESERVED_POLICY, SELF_POLICY


# ---------- names reserved for landlord ----------

@pytest.mark.parametrize("kind,name", [
    ("RoleBinding", "landlord-editors-edit"), ("RoleBinding", "landlord-owners-admin"),
    ("RoleBinding", "landlord-"),  # generateName: the generated name is checked
    ("NetworkPolicy", "landlord-isolation"), ("ResourceQuota", "landlord-quota"),
    ("LimitRange", "landlord-limits")])
def test_owner_cannot_take_landlords_names_in_a_tenant_namespace(env, kind, name):
    """alice (admin in the tenant namespace, and may create quotas and limits there) is refused
    a name landlord will use, and may create the same kind under another name (dry runs)."""
    objs = Objects(env.alice)
    msg = denied_by(RESERVED_POLICY, objs.create, kind, env.ns, name, dry_run="All")
    assert f"the name {name}" in msg, msg
    assert f"{RESERVED} {kind} named landlord-* in a tenant namespace ({env.ns})" in msg, msg
    assert objs.create(kind, env.ns, uniq("mine"), dry_run="All").metadata.name.startswith("mine-")


def test_names_outside_tenant_namespaces_and_other_names_stay_free(env):
    """The reservation covers only tenant namespaces and landlord's prefix: alice creates
    my-binding in the tenant namespace, and landlord-x and landlord-isolation in a plain one."""
    objs = Objects(env.alice)
    for kind, ns, name in (("RoleBinding", env.ns, "my-binding"),
                           ("RoleBinding", env.plain, "landlord-x"),
                           ("NetworkPolicy", env.plain, "landlord-isolation")):
        objs.create(kind, ns, name)
        assert objs.read(kind, ns, name).metadata.name == name
        objs.delete(kind, ns, name)
        objs.assert_gone(kind, ns, name)


def test_cluster_roles_named_landlord_are_reserved(env):
    """Someone who may create ClusterRoles and ClusterRoleBindings (and bind any role) is
    refused the name landlord:tenant:foo for either, and may use other names (dry runs)."""
    rbac = k8s.RbacAuthorizationV1Api(env.rbac_manager)
    name = "landlord:tenant:foo"
    msg = denied_by(RESERVED_POLICY, rbac.create_cluster_role, {"metadata": {"name": name}},
                    dry_run="All")
    assert f"the name {name} {RESERVED} ClusterRole named landlord:*" in msg, msg
    msg = denied_by(RESERVED_POLICY, rbac.create_cluster_role_binding,
                    binding(name, "ClusterRole", "view", "User", "rbac-manager"), dry_run="All")
    assert f"the name {name} {RESERVED} ClusterRoleBinding named landlord:*" in msg, msg
    for other in ("landlord-foo", "foo:landlord:tenant"):
        assert rbac.create_cluster_role({"metadata": {"name": other}},
                                        dry_run="All").metadata.name == other
        assert rbac.create_cluster_role_binding(
            binding(other, "ClusterRole", "view", "User", "rbac-manager"),
            dry_run="All").metadata.name == other


# ---------- what landlord itself may not do ----------
# Acting as landlord's own identity, with a test-only grant beyond deploy/rbac.yaml (escalate,
# bind on every role, every namespace), so that landlord-self-limits is the only possible reason
# for a refusal. Every request is a dry run: nothing happens even if the policy failed.
# Deleting default, kube-system and kube-public is refused by the API server's NamespaceLifecycle
# plugin before any policy runs, so landlord-system and kube-node-lease stand in for them.

SYSTEM_NS = "the namespaces default, landlord-system and kube-*, and what is in them, are the " \
    "cluster administrator's"
KUBE_RB = "system::extension-apiserver-authentication-reader"  # bootstrap RBAC, every cluster


def _tenant_label(env):
    return {"metadata": {"labels": {"landlord.dev/tenant": env.tenant}}}


SYSTEM_WRITES = {
    "label-kube-system": lambda env, core, objs: (
        "change Namespace kube-system", core.patch_namespace, ("kube-system", _tenant_label(env))),
    "label-default": lambda env, core, objs: (
        "change Namespace default", core.patch_namespace, ("default", _tenant_label(env))),
    "delete-landlord-system": lambda env, core, objs: (
        "delete Namespace landlord-system", core.delete_namespace, ("landlord-system",)),
    "delete-kube-node-lease": lambda env, core, objs: (
        "delete Namespace kube-node-lease", core.delete_namespace, ("kube-node-lease",)),
    "create-kube-namespace": lambda env, core, objs: (
        "create Namespace kube-landlord", core.create_namespace,
        ({"metadata": {"name": "kube-landlord", **_tenant_label(env)["metadata"]}},)),
    "rolebinding-in-kube-system": lambda env, core, objs: (
        "create RoleBinding kube-system/landlord-owners-admin", objs.create,
        ("RoleBinding", "kube-system", "landlord-owners-admin")),
    "change-kube-system-rolebinding": lambda env, core, objs: (
        f"change RoleBinding kube-system/{KUBE_RB}", objs.patch_labels,
        ("RoleBinding", "kube-system", KUBE_RB, {"touched": "landlord"})),
    "delete-kube-system-rolebinding": lambda env, core, objs: (
        f"delete RoleBinding kube-system/{KUBE_RB}", objs.delete,
        ("RoleBinding", "kube-system", KUBE_RB)),
    "quota-in-default": lambda env, core, objs: (
        "create ResourceQuota default/landlord-quota", objs.create,
        ("ResourceQuota", "default", "landlord-quota")),
    "limits-in-kube-public": lambda env, core, objs: (
        "create LimitRange kube-public/landlord-limits", objs.create,
        ("LimitRange", "kube-public", "landlord-limits")),
    "netpol-in-landlord-system": lambda env, core, objs: (
        "create NetworkPolicy landlord-system/landlord-isolation", objs.create,
        ("NetworkPolicy", "landlord-system", "landlord-isolation")),
}


@pytest.mark.parametrize("case", list(SYSTEM_WRITES))
def test_landlord_may_not_touch_the_clusters_own_namespaces(env, case):
    """landlord may not create, change or delete default, landlord-system or kube-*
    namespaces, nor RoleBindings, ResourceQuotas, LimitRanges or NetworkPolicies in them."""
    what, fn, args = SYSTEM_WRITES[case](env, k8s.CoreV1Api(env.landlord), Objects(env.landlord))
    msg = denied_by(SELF_POLICY, fn, *args, dry_run="All")
    assert f"landlord may not {what}: {SYSTEM_NS}" in msg, msg


TENANT_ROLE_ONLY = "its ClusterRoles and ClusterRoleBindings are named landlord:tenant:*"
READ_ONLY_ROLE = ("a tenant's ClusterRole may only get, list and watch landlord.dev objects, "
                  "and own one Tenant")


def _role(name, rules=None, **extra):
    return {"metadata": {"name": name}, "rules": rules or [], **extra}


CLUSTER_WRITES = {
    "tenant-binding-of-cluster-admin": lambda rbac: (
        "create ClusterRoleBinding landlord:tenant:x: it binds ClusterRole cluster-admin, not "
        "the ClusterRole landlord:tenant:x", rbac.create_cluster_role_binding,
        (binding("landlord:tenant:x", "ClusterRole", "cluster-admin", "User", "eve"),)),
    "tenant-binding-of-admin": lambda rbac: (
        "create ClusterRoleBinding landlord:tenant:x: it binds ClusterRole admin",
        rbac.create_cluster_role_binding,
        (binding("landlord:tenant:x", "ClusterRole", "admin", "User", "eve"),)),
    "binding-of-any-other-name": lambda rbac: (
        f"create ClusterRoleBinding evil: {TENANT_ROLE_ONLY}", rbac.create_cluster_role_binding,
        (binding("evil", "ClusterRole", "cluster-admin", "User", "eve"),)),
    "binding-of-its-own-prefix": lambda rbac: (
        f"create ClusterRoleBinding landlord:evil: {TENANT_ROLE_ONLY}",
        rbac.create_cluster_role_binding,
        (binding("landlord:evil", "ClusterRole", "landlord:evil", "User", "eve"),)),
    "role-of-any-other-name": lambda rbac: (
        f"create ClusterRole evil: {TENANT_ROLE_ONLY}", rbac.create_cluster_role,
        (_role("evil", [{"apiGroups": ["landlord.dev"], "resources": ["tenants"],
                         "verbs": ["get"]}]),)),
    "tenant-role-granting-rbac": lambda rbac: (
        f"create ClusterRole landlord:tenant:x: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x", [{"apiGroups": [RBAC_GROUP],
                                      "resources": ["clusterrolebindings"],
                                      "verbs": ["create"]}]),)),
    "tenant-role-writing-tenants": lambda rbac: (
        f"create ClusterRole landlord:tenant:x: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x", [{"apiGroups": ["landlord.dev"], "resources": ["tenants"],
                                      "verbs": ["get", "update"]}]),)),
    "owners-role-owning-every-tenant": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": ["landlord.dev"],
                                             "resources": ["tenants"], "verbs": ["own"]}]),)),
    "owners-role-owning-two-tenants": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": ["landlord.dev"],
                                             "resources": ["tenants"],
                                             "resourceNames": ["x", "y"], "verbs": ["own"]}]),)),
    "owners-role-owning-and-writing": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": ["landlord.dev"],
                                             "resources": ["tenants"], "resourceNames": ["x"],
                                             "verbs": ["own", "update"]}]),)),
    "members-role-creating-namespaces": lambda rbac: (
        f"create ClusterRole landlord:tenant:x: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x", [{"apiGroups": [""], "resources": ["namespaces"],
                                      "verbs": ["create"]}]),)),
    "owners-role-deleting-every-namespace": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": [""], "resources": ["namespaces"],
                                             "verbs": ["delete"]}]),)),
    "owners-role-deleting-kube-system": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": [""], "resources": ["namespaces"],
                                             "resourceNames": ["x-dev", "kube-system"],
                                             "verbs": ["delete"]}]),)),
    "owners-role-patching-namespaces": lambda rbac: (
        f"create ClusterRole landlord:tenant:x:owners: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x:owners", [{"apiGroups": [""], "resources": ["namespaces"],
                                             "resourceNames": ["x-dev"],
                                             "verbs": ["delete", "patch"]}]),)),
    "tenant-role-aggregating": lambda rbac: (
        f"create ClusterRole landlord:tenant:x: {READ_ONLY_ROLE}", rbac.create_cluster_role,
        (_role("landlord:tenant:x", aggregationRule={"clusterRoleSelectors": [{"matchLabels": {
            "rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}),)),
    "change-cluster-admin-binding": lambda rbac: (
        f"change ClusterRoleBinding cluster-admin: {TENANT_ROLE_ONLY}",
        rbac.patch_cluster_role_binding,
        ("cluster-admin", {"subjects": [{"apiGroup": RBAC_GROUP, "kind": "User",
                                         "name": "eve"}]})),
    "delete-admin-role": lambda rbac: (
        f"delete ClusterRole admin: {TENANT_ROLE_ONLY}", rbac.delete_cluster_role, ("admin",)),
}


@pytest.mark.parametrize("case", list(CLUSTER_WRITES))
def test_landlord_may_not_grant_cluster_wide_rights(env, case):
    """landlord's cluster-wide RBAC is the per-tenant ClusterRole landlord:tenant:<t>, which
    only reads landlord.dev objects, and the binding of the same name to it; nothing else."""
    what, fn, args = CLUSTER_WRITES[case](k8s.RbacAuthorizationV1Api(env.landlord))
    msg = denied_by(SELF_POLICY, fn, *args, dry_run="All")
    assert f"landlord may not {what}" in msg, msg


@pytest.mark.parametrize("kind,name,ns", [
    ("ServiceAccount", "landlord", "landlord-system"), ("User", LANDLORD_USER, None),
    ("Group", "system:serviceaccounts", None),
    ("Group", "system:serviceaccounts:landlord-system", None),
    ("Group", "system:authenticated", None)])
def test_landlord_may_not_bind_itself(env, kind, name, ns):
    """No RoleBinding landlord writes may grant landlord itself, by any subject that names it;
    the same binding for alice is allowed (dry runs)."""
    rbac = k8s.RbacAuthorizationV1Api(env.landlord)
    body = binding("landlord-owners-admin", "ClusterRole", "admin", kind, name, ns)
    msg = denied_by(SELF_POLICY, rbac.create_namespaced_role_binding, env.ns, body,
                    dry_run="All")
    shown = f"{kind} {ns + '/' if ns else ''}{name}"
    assert (f"landlord may not create RoleBinding {env.ns}/landlord-owners-admin: it would "
            f"bind landlord itself ({shown})") in msg, msg
    body = binding("landlord-owners-admin", "ClusterRole", "admin", "User", "alice")
    assert rbac.create_namespaced_role_binding(env.ns, body, dry_run="All").subjects[0].name \
        == "alice"


def test_landlord_may_tidy_but_not_join_a_binding_that_names_it(env):
    """A RoleBinding a tenant made that already names landlord (system:authenticated) may be
    tidied or deleted by landlord, but landlord may not add itself to one (dry runs)."""
    name = uniq("everyone")
    body = binding(name, "ClusterRole", "view", "Group", "system:authenticated")
    body["subjects"].append({"apiGroup": RBAC_GROUP, "kind": "User", "name": "bob"})
    k8s.RbacAuthorizationV1Api(env.admin).create_namespaced_role_binding(env.ns, body)
    rbac = k8s.RbacAuthorizationV1Api(env.landlord)
    out = rbac.patch_namespaced_role_binding(
        name, env.ns, [{"op": "remove", "path": "/subjects/1"}], dry_run="All")
    assert [s.name for s in out.subjects] == ["system:authenticated"]
    msg = denied_by(SELF_POLICY, rbac.patch_namespaced_role_binding, name, env.ns, [
        {"op": "add", "path": "/subjects/-",
         "value": {"kind": "ServiceAccount", "name": "landlord", "namespace": "landlord-system"}}],
        dry_run="All")
    assert (f"landlord may not change RoleBinding {env.ns}/{name}: it would bind landlord "
            "itself (ServiceAccount landlord-system/landlord)") in msg, msg
    rbac.delete_namespaced_role_binding(name, env.ns, dry_run="All")


def test_landlord_stays_in_the_namespaces_it_manages(env):
    """landlord may not take over a namespace that carries no landlord.dev key, nor write
    inside one, except deleting its own labelled objects; it creates and deletes only
    namespaces labelled landlord.dev/tenant (dry runs)."""
    core = k8s.CoreV1Api(env.landlord)
    objs = Objects(env.landlord)
    no_keys = (f"namespace {env.plain} carries no landlord.dev/ label or annotation, and there "
               "landlord may only delete objects labelled app.kubernetes.io/managed-by=landlord")
    name = uniq("unlabelled")
    for what, fn, args in (
            (f"change Namespace {env.plain}: it changes only namespaces that carry a "
             "landlord.dev/ label or annotation", core.patch_namespace,
             (env.plain, _tenant_label(env))),
            (f"delete Namespace {env.plain}: it deletes only namespaces labelled "
             "landlord.dev/tenant", core.delete_namespace, (env.plain,)),
            (f"delete Namespace {env.released}: it deletes only namespaces labelled "
             "landlord.dev/tenant", core.delete_namespace, (env.released,)),
            (f"create Namespace {name}: it creates only namespaces labelled landlord.dev/tenant",
             core.create_namespace, ({"metadata": {"name": name}},)),
            (f"create RoleBinding {env.plain}/landlord-owners-admin: {no_keys}", objs.create,
             ("RoleBinding", env.plain, "landlord-owners-admin")),
            (f"delete RoleBinding {env.plain}/alice-admin: {no_keys}", objs.delete,
             ("RoleBinding", env.plain, "alice-admin"))):
        msg = denied_by(SELF_POLICY, fn, *args, dry_run="All")
        assert f"landlord may not {what}" in msg, msg
    # its own objects left behind in a namespace an administrator took back
    own = uniq("landlord-leftover")
    Objects(env.admin).create("RoleBinding", env.plain, own, MANAGED)
    objs.delete("RoleBinding", env.plain, own, dry_run="All")


def test_landlord_may_mark_its_helm_releases_anywhere_and_gains_no_reach_by_it(env):
    """On a namespace with no landlord.dev key (a TemplateGroupInstance may install a chart
    there), landlord may add and remove landlord.dev/helm.<release> annotations and change
    nothing else with them; the mark does not let it write RoleBindings there (dry runs)."""
    core = k8s.CoreV1Api(env.landlord)
    mark = {"metadata": {"annotations": {"landlord.dev/helm.site": "tgi/site"}}}
    core.patch_namespace(env.plain, mark, dry_run="All")
    msg = denied_by(SELF_POLICY, core.patch_namespace, env.plain, {"metadata": {
        "annotations": {"landlord.dev/helm.site": "tgi/site", "team": "x"}}}, dry_run="All")
    assert ("(elsewhere only its landlord.dev/helm.* and landlord.dev/sleep-reserved "
            "annotations and its landlord.dev/sleeping label)") in msg, msg
    denied_by(SELF_POLICY, core.patch_namespace, env.plain, {"metadata": {
        "annotations": {"landlord.dev/helm.site": "tgi/site"}, "labels": {"x": "y"}}},
        dry_run="All")
    k8s.CoreV1Api(env.admin).patch_namespace(env.plain, mark)
    try:
        core.patch_namespace(env.plain, {"metadata": {"annotations": {
            "landlord.dev/helm.site": None}}}, dry_run="All")
        msg = denied_by(SELF_POLICY, Objects(env.landlord).create, "RoleBinding", env.plain,
                        "landlord-owners-admin", dry_run="All")
        assert f"namespace {env.plain} carries no landlord.dev/ label or annotation" in msg, msg
    finally:
        k8s.CoreV1Api(env.admin).patch_namespace(env.plain, {"metadata": {"annotations": {
            "landlord.dev/helm.site": None}}})


def test_landlord_may_do_its_work(env):
    """Positive controls for landlord-self-limits: the writes landlord makes for a tenant pass
    (dry runs)."""
    core = k8s.CoreV1Api(env.landlord)
    rbac = k8s.RbacAuthorizationV1Api(env.landlord)
    role = f"landlord:tenant:{env.tenant}"
    out = rbac.create_cluster_role(_role(role, [{
        "apiGroups": ["landlord.dev"], "resources": ["tenants"], "resourceNames": [env.tenant],
        "verbs": ["get", "watch"]}]), dry_run="All")
    assert out.metadata.name == role
    out = rbac.create_cluster_role_binding(binding(role, "ClusterRole", role, "User", "alice"),
                                           dry_run="All")
    assert out.role_ref.name == role
    owners = f"{role}:owners"
    out = rbac.create_cluster_role(_role(owners, [{
        "apiGroups": ["landlord.dev"], "resources": ["tenants"], "resourceNames": [env.tenant],
        "verbs": ["own"]}]), dry_run="All")
    assert out.metadata.name == owners
    out = rbac.create_namespaced_role_binding(env.ns, binding(
        "landlord-owners-admin", "ClusterRole", "admin", "User", "alice"), dry_run="All")
    assert out.metadata.name == "landlord-owners-admin"
    name = uniq("t")
    assert core.create_namespace({"metadata": {"name": name, "labels": {
        "landlord.dev/tenant": env.tenant}}}, dry_run="All").metadata.name == name
    # release: the tenant label goes, released-from comes
    out = core.patch_namespace(env.ns, {"metadata": {
        "labels": {"landlord.dev/tenant": None},
        "annotations": {RELEASED_FROM: env.tenant}}}, dry_run="All")
    assert "landlord.dev/tenant" not in out.metadata.labels
    core.delete_namespace(env.ns, dry_run="All")
    # a new namespace's default ServiceAccount (409: kube-controller-manager made it already;
    # the API server answers that only after admission)
    try:
        core.create_namespaced_service_account(env.ns, {"metadata": {"name": "default"}},
                                               dry_run="All")
    except k8s.ApiException as e:
        assert e.status == 409, e.body


PLAIN_SA_ONLY = "it only creates a namespace's plain default ServiceAccount"


def test_landlord_creates_only_plain_default_serviceaccounts(env):
    """landlord's create on ServiceAccounts (RBAC cannot narrow it by name) is limited to a
    plain default one in a namespace it manages: no other name, no secrets, no pull secrets, no
    labels, and not in the cluster's or unmanaged namespaces (dry runs)."""
    core = k8s.CoreV1Api(env.landlord)
    no_keys = (f"namespace {env.plain} carries no landlord.dev/ label or annotation, and there "
               "landlord may only delete objects labelled app.kubernetes.io/managed-by=landlord")
    for ns, body, why in (
            (env.ns, {"metadata": {"name": "builder"}}, PLAIN_SA_ONLY),
            (env.ns, {"metadata": {"name": "default"},
                      "imagePullSecrets": [{"name": "registry"}]}, PLAIN_SA_ONLY),
            (env.ns, {"metadata": {"name": "default"}, "secrets": [{"name": "token"}]},
             PLAIN_SA_ONLY),
            (env.ns, {"metadata": {"name": "default", "labels": {"team": "x"}}},
             PLAIN_SA_ONLY),
            ("kube-system", {"metadata": {"name": "default"}}, SYSTEM_NS),
            (env.plain, {"metadata": {"name": "default"}}, no_keys)):
        name = body["metadata"]["name"]
        msg = denied_by(SELF_POLICY, core.create_namespaced_service_account, ns, body,
                        dry_run="All")
        assert f"landlord may not create ServiceAccount {ns}/{name}: {why}" in msg, msg


def test_landlord_provisions_adopts_releases_and_purges_under_the_policies(env, kit):
    """With all four policies in force, landlord (its own identity and deploy/rbac.yaml) does
    all of its namespace work: creates and provisions namespaces (quota, limits, isolation,
    RoleBindings, the per-tenant ClusterRole and binding), adopts a labelled one, releases one by
    spec and one an administrator unlabelled, purges one, and removes the Tenant; none of its
    writes is refused."""
    plan = kit.plan(hard={"pods": "8"}, limits=[
        {"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}}])
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a", "b"])
    a, b = kit.expect_namespace(f"{t}-a"), kit.expect_namespace(f"{t}-b")
    kit.start()
    kit.wait_ready(t, [a, b])
    kit.wait_provisioned(a, t)
    assert kit.rbac.read_cluster_role_binding(f"landlord:tenant:{t}").role_ref.name == \
        f"landlord:tenant:{t}"
    adopted = kit.namespace(labels={tenants.TENANT_LABEL: t})
    kit.wait_provisioned(adopted, t)

    def released(ns):
        kit.wait_tenant(t, lambda o: ns in (o["status"].get("released") or []),
                        f"{ns} released")
        assert kit.read_namespace(ns).metadata.annotations[RELEASED_FROM] == t
    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": ["a"]}})
    released(b)
    kit.core.patch_namespace(adopted, {"metadata": {"labels": {tenants.TENANT_LABEL: None}}})
    released(adopted)
    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": [], "onDeletePurge": True}})
    kit.cluster.wait_for(lambda: (kit.read_namespace(a) is None or
                                  kit.read_namespace(a).metadata.deletion_timestamp),
                         tenants.TIMEOUT, interval=0.2, what=f"{a} purged")
    kit.delete_tenant(t)
    kit.cluster.wait_for(lambda: kit.get_tenant(t) is None and not ignore_404(
        kit.rbac.read_cluster_role, f"landlord:tenant:{t}"), tenants.TIMEOUT, interval=0.2,
        what=f"tenant {t} and its ClusterRole removed")
    log = kit.landlord.log_path.read_text()
    assert "ValidatingAdmissionPolicy" not in log, log[-4000:]

