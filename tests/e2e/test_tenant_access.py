"""The Tenant controller as its users see it (docs/tenants.md): namespaces, roles, sandboxes,
removal and purge, collisions, drift, protection by the admission policies, adoption and a
missing Plan.

Every test starts its own landlord (`landlord run` under its least-privilege identity), creates
Plans and Tenants with names unique to the test and removes them afterwards (tenants.Kit). Users
act with their own credentials: alice, bob (team-a), carol, dave (team-b), erin, frank.
"""

import re

import pytest
from kubernetes import client as k8s

import tenants
from kube import forbidden
from tenants import MANAGED_BY, NS_POLICY, OBJ_POLICY, RBAC_GROUP, TENANT_LABEL, ignore_404

LIMITS = [{"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}}]
HARD = {"pods": "20"}
PSA_LABELS = tuple(f"pod-security.kubernetes.io/{m}" for m in ("enforce", "warn", "audit"))
LANDLORD_OBJECTS = (("ResourceQuota", "landlord-quota"), ("LimitRange", "landlord-limits"),
                    ("NetworkPolicy", "landlord-isolation"))

# (verb, resource) -> the default ClusterRoles that allow it.
CHECKS = {
    ("create", "rolebindings"): {"admin"},
    ("create", "roles"): {"admin"},
    ("create", "configmaps"): {"admin", "edit"},
    ("delete", "pods"): {"admin", "edit"},
    ("get", "secrets"): {"admin", "edit"},
    ("get", "pods"): {"admin", "edit", "view"},
    ("list", "configmaps"): {"admin", "edit", "view"},
}
USERS = ("alice", "bob", "carol", "dave", "erin", "frank")


def access_plan(kit):
    return kit.plan(hard=HARD, limits=LIMITS)


def assert_access(kit, ns, roles):
    """roles: user -> 'admin' | 'edit' | 'view' | None, checked with `kubectl auth can-i` for
    every user in USERS (missing users: None). Positives are polled (RBAC reaches the
    authorizer's cache asynchronously); negatives are checked once all positives hold."""
    for user in USERS:
        role = roles.get(user)
        for (verb, resource), allowed in CHECKS.items():
            if role in allowed:
                kit.wait_can_i(user, verb, resource, ns, True)
    wrong = []
    for user in USERS:
        role = roles.get(user)
        for (verb, resource), allowed in CHECKS.items():
            if role not in allowed and kit.can_i(user, verb, resource, ns):
                wrong.append(f"{user} ({role}) may {verb} {resource} in {ns}")
    assert not wrong, wrong


def configmap(name, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": "v"}}


def wait_gone(kit, ns, timeout=90):
    kit.cluster.wait_for(lambda: kit.read_namespace(ns) is None, timeout, interval=0.3,
                         what=f"namespace {ns} to be deleted")


def landlord_leftovers(kit, ns):
    """Everything of landlord's still in namespace ns (empty once it is released). The Pod
    Security labels are not leftovers: a release keeps them at the tenant's level
    (quarantine), which wait_released() checks."""
    left = []
    obj = kit.read_namespace(ns)
    labels = obj.metadata.labels or {}
    annotations = obj.metadata.annotations or {}
    left += [f"label {k}" for k in labels
             if k.startswith("landlord.dev/") or (k == MANAGED_BY and labels[k] == "landlord")]
    left += [f"Pod Security label {k} missing" for k in PSA_LABELS if k not in labels]
    # landlord.dev/released-from is the one record a release leaves (docs/tenants.md)
    left += [f"annotation {k}" for k in annotations
             if k.startswith("landlord.dev/") and k != "landlord.dev/released-from"]
    left += [f"RoleBinding {n}" for n in kit.landlord_rolebindings(ns)]
    if kit.quota(ns):
        left.append("ResourceQuota landlord-quota")
    if ignore_404(kit.core.read_namespaced_limit_range, "landlord-limits", ns):
        left.append("LimitRange landlord-limits")
    if ignore_404(kit.net.read_namespaced_network_policy, "landlord-isolation", ns):
        left.append("NetworkPolicy landlord-isolation")
    return left


def wait_released(kit, ns, timeout=60):
    last = {}

    def released():
        last["left"] = landlord_leftovers(kit, ns)
        return not last["left"]
    try:
        kit.cluster.wait_for(released, timeout, interval=0.3, what=f"{ns} to be released")
    except pytest.fail.Exception:
        pytest.fail(f"namespace {ns} still has {last['left']} after {timeout}s\n"
                    f"{kit.log_tail(2000)}")


def get_tenant_as(kit, user, name):
    return kit.cluster.kubectl(user, "get", "tenant", name, "-o", "name")


# ---------- roles ----------

def test_owners_editors_viewers_and_outsiders_get_exactly_their_roles(kit):
    plan = access_plan(kit)
    a = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   viewers={"groups": ["team-b"]}, prefixed=["dev", "prod"])
    b = kit.tenant(plan=plan, owners={"users": ["erin"]}, prefixed=["main"])
    a_ns = [kit.expect_namespace(f"{a}-dev"), kit.expect_namespace(f"{a}-prod")]
    b_ns = [kit.expect_namespace(f"{b}-main")]
    kit.start()
    obj = kit.wait_ready(a, a_ns)
    kit.wait_ready(b, b_ns)

    st = obj["status"]
    assert st["namespaces"] == sorted(a_ns)
    assert st["namespaceCount"] == 2
    for ctype in ("Ready", "NamespacesReady", "AccessReady", "QuotaReady", "PoliciesReady"):
        c = kit.condition_of(obj, ctype)
        assert c and c["status"] == "True", (ctype, st.get("conditions"))
    assert kit.condition_of(obj, "Ready")["reason"] == "Provisioned"

    a_bindings = ("landlord-owners-admin", "landlord-editors-edit", "landlord-viewers-view")
    for ns, kind in zip(a_ns, ("dev", "prod")):
        kit.wait_provisioned(ns, a, a_bindings)
        labels = kit.labels(ns)
        assert labels[TENANT_LABEL] == a
        assert labels["landlord.dev/kind"] == kind
        assert labels["landlord.dev/plan"] == plan
        assert labels[MANAGED_BY] == "landlord"
        for mode in ("enforce", "warn", "audit"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted", labels
        want = {"landlord-owners-admin": ("admin", [("User", "alice")]),
                "landlord-editors-edit": ("edit", [("User", "carol")]),
                "landlord-viewers-view": ("view", [("Group", "team-b")])}
        have = kit.landlord_rolebindings(ns)
        assert set(have) == set(want), sorted(have)
        for name, (role, subjects) in want.items():
            rb = have[name]
            assert (rb.role_ref.kind, rb.role_ref.name) == ("ClusterRole", role)
            assert [(s.kind, s.name) for s in rb.subjects] == subjects
            assert rb.metadata.labels[TENANT_LABEL] == a

    a_roles = {"alice": "admin", "carol": "edit", "dave": "view"}
    for ns in a_ns:
        assert_access(kit, ns, a_roles)
    kit.wait_provisioned(b_ns[0], b)
    assert_access(kit, b_ns[0], {"erin": "admin"})

    # Real requests, not only can-i.
    ns = a_ns[0]
    alice = k8s.CoreV1Api(kit.client("alice"))
    alice_rbac = k8s.RbacAuthorizationV1Api(kit.client("alice"))
    alice.create_namespaced_config_map(ns, configmap("by-alice"))
    # Her own Roles and RoleBindings work for members of the tenant (the viewers' group team-b,
    # dave's, which may not read secrets otherwise).
    alice.create_namespaced_secret(ns, {"metadata": {"name": "by-alice"},
                                        "stringData": {"k": "v"}})
    alice_rbac.create_namespaced_role(ns, {"metadata": {"name": "secret-reader"}, "rules": [{
        "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]})
    alice_rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "team-b-reads"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "secret-reader"},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "team-b"}]})
    dave_core = k8s.CoreV1Api(kit.client("dave"))
    kit.cluster.wait_for(lambda: ignore_404(dave_core.read_namespaced_secret, "by-alice", ns)
                         if kit.can_i("dave", "get", "secrets", ns) else None,
                         what="dave to read through alice's own RoleBinding")
    alice.list_namespaced_pod(ns)

    carol = k8s.CoreV1Api(kit.client("carol"))
    carol.create_namespaced_config_map(ns, configmap("by-carol"))
    forbidden(k8s.RbacAuthorizationV1Api(kit.client("carol")).create_namespaced_role_binding,
              ns, {"metadata": {"name": "carol-tries"},
                   "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "frank"}]})
    carol.delete_namespaced_config_map("by-carol", ns)

    dave = k8s.CoreV1Api(kit.client("dave"))
    dave.list_namespaced_pod(ns)
    dave.read_namespaced_config_map("by-alice", ns)
    forbidden(dave.create_namespaced_config_map, ns, configmap("by-dave"))
    forbidden(dave.delete_namespaced_config_map, "by-alice", ns)

    frank = k8s.CoreV1Api(kit.client("frank"))
    forbidden(frank.list_namespaced_pod, ns)
    forbidden(frank.read_namespaced_config_map, "by-alice", ns)

    # alice and erin cannot touch each other's tenants.
    erin = k8s.CoreV1Api(kit.client("erin"))
    erin.create_namespaced_config_map(b_ns[0], configmap("by-erin"))
    forbidden(alice.list_namespaced_pod, b_ns[0])
    forbidden(alice.create_namespaced_config_map, b_ns[0], configmap("by-alice"))
    forbidden(alice.delete_namespaced_config_map, "by-erin", b_ns[0])
    forbidden(erin.list_namespaced_pod, ns)
    forbidden(erin.delete_namespaced_config_map, "by-alice", ns)
    alice.delete_namespaced_config_map("by-alice", ns)

    # Members may get their own Tenant, not another one, and may not list tenants.
    for user, name in (("alice", a), ("carol", a), ("dave", a), ("erin", b)):
        kit.cluster.wait_for(lambda: get_tenant_as(kit, user, name).returncode == 0,
                             what=f"{user} to get tenant {name}")
    for user, name in (("alice", b), ("erin", a), ("frank", a), ("bob", a), ("carol", b)):
        r = get_tenant_as(kit, user, name)
        assert r.returncode != 0 and "Forbidden" in r.stderr, (user, name, r.stdout, r.stderr)
    r = kit.cluster.kubectl("alice", "get", "tenants")
    assert r.returncode != 0 and "Forbidden" in r.stderr, r.stdout
    cr = kit.rbac.read_cluster_role(f"landlord:tenant:{a}")
    assert cr.metadata.labels.get(MANAGED_BY) == "landlord"
    granted = {(g, res, n, v) for rule in cr.rules for g in rule.api_groups
               for res in rule.resources for n in (rule.resource_names or ["*"])
               for v in rule.verbs}
    assert granted == {("landlord.dev", "tenants", a, "get"),
                       ("landlord.dev", "tenants", a, "watch")}, granted


def test_rolebindings_come_only_after_quota_limits_and_isolation(kit):
    """The Order rule: a namespace's RoleBindings are created after its ResourceQuota is in
    force (status.hard == spec.hard) and its LimitRange and NetworkPolicy exist. Checked on the
    API server's own history (watch events replayed from before the Tenant existed); in this
    cluster resourceVersions are etcd revisions, so they order events across kinds."""
    plan = access_plan(kit)
    rv0 = kit.current_rv()
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   prefixed=["one", "two"])
    nss = [kit.expect_namespace(f"{t}-one"), kit.expect_namespace(f"{t}-two")]
    kit.start()
    kit.wait_ready(t, nss)
    for ns in nss:
        kit.wait_provisioned(ns, t, ("landlord-owners-admin", "landlord-editors-edit"))
    sel = f"{TENANT_LABEL}={t}"
    history = {
        "rq": kit.replay(kit.core.list_resource_quota_for_all_namespaces, rv0, sel),
        "lr": kit.replay(kit.core.list_limit_range_for_all_namespaces, rv0, sel),
        "np": kit.replay(kit.net.list_network_policy_for_all_namespaces, rv0, sel),
        "rb": kit.replay(kit.rbac.list_role_binding_for_all_namespaces, rv0, sel),
    }

    def first_rv(kind, ns, pred=lambda o: True):
        rvs = [int(o["metadata"]["resourceVersion"]) for typ, o in history[kind]
               if typ in ("ADDED", "MODIFIED") and o["metadata"]["namespace"] == ns and pred(o)]
        return min(rvs) if rvs else None

    def in_force(o):
        hard = (o.get("spec") or {}).get("hard") or {}
        done = (o.get("status") or {}).get("hard") or {}
        return bool(hard) and {k: tenants.q(v) for k, v in hard.items()} == {
            k: tenants.q(v) for k, v in done.items()}
    for ns in nss:
        quota, limits = first_rv("rq", ns, in_force), first_rv("lr", ns)
        isolation, binding = first_rv("np", ns), first_rv("rb", ns)
        assert None not in (quota, limits, isolation, binding), (ns, history)
        assert binding > max(quota, limits, isolation), (
            f"{ns}: first RoleBinding at {binding}, quota in force at {quota}, "
            f"LimitRange at {limits}, NetworkPolicy at {isolation}")


def test_removing_a_member_removes_their_access(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol", "bob"]},
                   viewers={"groups": ["team-b"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t, ("landlord-owners-admin", "landlord-editors-edit",
                                 "landlord-viewers-view"))
    assert_access(kit, ns, {"alice": "admin", "bob": "edit", "carol": "edit", "dave": "view"})

    # carol leaves the editors; she keeps what her group team-b gets as viewers.
    kit.patch_tenant(t, {"accessControl": {"editors": {"users": ["bob"]}}})
    kit.wait_can_i("carol", "create", "configmaps", ns, False)
    assert_access(kit, ns, {"alice": "admin", "bob": "edit", "carol": "view", "dave": "view"})
    rb = kit.rolebinding(ns, "landlord-editors-edit")
    assert [(s.kind, s.name) for s in rb.subjects] == [("User", "bob")]

    # The group goes: dave and carol lose everything, also their Tenant.
    kit.patch_tenant(t, {"accessControl": {"viewers": None}})
    kit.wait_can_i("dave", "get", "pods", ns, False)
    assert_access(kit, ns, {"alice": "admin", "bob": "edit"})
    kit.cluster.wait_for(lambda: get_tenant_as(kit, "carol", t).returncode != 0,
                         what="carol to lose get on the Tenant")
    assert get_tenant_as(kit, "bob", t).returncode == 0
    assert get_tenant_as(kit, "alice", t).returncode == 0


# ---------- sandboxes ----------

def test_sandboxes_for_owners_and_editors(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   viewers={"users": ["dave"]}, sandboxes={"enabled": True})
    alice_sb = kit.expect_namespace(f"{t}-alice-sandbox")
    carol_sb = kit.expect_namespace(f"{t}-carol-sandbox")
    kit.expect_namespace(f"{t}-dave-sandbox")
    kit.start()
    obj = kit.wait_ready(t, [alice_sb, carol_sb])
    assert obj["status"]["sandboxes"] == {"alice": alice_sb, "carol": carol_sb}
    assert kit.read_namespace(f"{t}-dave-sandbox") is None, "a viewer got a sandbox"
    for ns, user in ((alice_sb, "alice"), (carol_sb, "carol")):
        kit.wait_provisioned(ns, t)
        labels = kit.labels(ns)
        assert labels["landlord.dev/kind"] == "sandbox"
        assert labels["landlord.dev/username"] == user
        assert labels[TENANT_LABEL] == t
    # Not private: the tenant's roles apply, and the sandbox's user is an owner too.
    assert_access(kit, alice_sb, {"alice": "admin", "carol": "edit", "dave": "view"})
    assert_access(kit, carol_sb, {"alice": "admin", "carol": "admin", "dave": "view"})


def test_private_sandboxes_are_visible_only_to_their_user(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   viewers={"users": ["dave"]}, prefixed=["shared"],
                   sandboxes={"enabled": True, "private": True})
    shared = kit.expect_namespace(f"{t}-shared")
    alice_sb = kit.expect_namespace(f"{t}-alice-sandbox")
    carol_sb = kit.expect_namespace(f"{t}-carol-sandbox")
    kit.start()
    kit.wait_ready(t, [shared, alice_sb, carol_sb])
    for ns in (shared, alice_sb, carol_sb):
        kit.wait_provisioned(ns, t)
    assert_access(kit, shared, {"alice": "admin", "carol": "edit", "dave": "view"})
    assert_access(kit, alice_sb, {"alice": "admin"})
    assert_access(kit, carol_sb, {"carol": "admin"})
    forbidden(k8s.CoreV1Api(kit.client("alice")).list_namespaced_pod, carol_sb)
    forbidden(k8s.CoreV1Api(kit.client("carol")).list_namespaced_config_map, alice_sb)


def test_removing_a_user_releases_their_sandbox_and_dropped_names(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   prefixed=["dev", "old"], sandboxes={"enabled": True},
                   ns_metadata={"common": {
                       "labels": {"example.com/team": "{{ TENANT.NAME }}"},
                       "annotations": {"example.com/note": "kept by landlord"}}})
    dev, old = kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-old")
    alice_sb = kit.expect_namespace(f"{t}-alice-sandbox")
    carol_sb = kit.expect_namespace(f"{t}-carol-sandbox")
    kit.start()
    kit.wait_ready(t, [dev, old, alice_sb, carol_sb])
    for ns in (dev, old, alice_sb, carol_sb):
        kit.wait_provisioned(ns, t)
    assert kit.labels(carol_sb)["example.com/team"] == t
    k8s.CoreV1Api(kit.client("carol")).create_namespaced_config_map(carol_sb,
                                                                    configmap("carols-data"))
    # Someone else's label on the namespace, which landlord must leave alone.
    kit.core.patch_namespace(carol_sb, {"metadata": {"labels": {"example.com/owner": "ops"}}})

    kit.patch_tenant(t, {"accessControl": {"editors": None},
                         "namespaces": {"withTenantPrefix": ["dev"]}})
    # The namespaces first, then the status that reports them.
    for ns in (carol_sb, old):
        wait_released(kit, ns)
    obj = kit.wait_tenant(t, lambda o: set(o["status"].get("released") or []) >= {carol_sb, old},
                          "carol's sandbox and the dropped name listed in status.released")
    st = obj["status"]
    assert st["namespaces"] == sorted([dev, alice_sb])
    assert st.get("sandboxes") == {"alice": alice_sb}
    for ns in (carol_sb, old):
        labels = kit.labels(ns)
        assert "example.com/team" not in labels, labels
        ann = kit.read_namespace(ns).metadata.annotations or {}
        assert "example.com/note" not in ann, ann
    assert kit.labels(carol_sb)["example.com/owner"] == "ops"
    kit.core.read_namespaced_config_map("carols-data", carol_sb)
    kit.wait_can_i("carol", "get", "configmaps", carol_sb, False)
    # What stays is untouched.
    kit.wait_provisioned(dev, t)
    kit.wait_provisioned(alice_sb, t)


def test_removing_a_user_purges_their_sandbox_with_on_delete_purge(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   sandboxes={"enabled": True}, purge=True)
    alice_sb = kit.expect_namespace(f"{t}-alice-sandbox")
    carol_sb = kit.expect_namespace(f"{t}-carol-sandbox")
    kit.start()
    kit.wait_ready(t, [alice_sb, carol_sb])
    kit.wait_provisioned(carol_sb, t)
    kit.patch_tenant(t, {"accessControl": {"editors": None}})
    wait_gone(kit, carol_sb)
    obj = kit.wait_ready(t, [alice_sb])
    assert carol_sb not in (obj["status"].get("released") or [])
    kit.wait_provisioned(alice_sb, t)


# ---------- deleting a Tenant ----------

def test_deleting_a_tenant_without_purge_releases_its_namespaces(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"],
                   sandboxes={"enabled": True})
    dev, sb = kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-alice-sandbox")
    kit.start()
    obj = kit.wait_ready(t, [dev, sb])
    assert tenants.FINALIZER in obj["metadata"].get("finalizers", [])
    kit.wait_provisioned(dev, t)
    kit.delete_tenant(t)
    kit.cluster.wait_for(lambda: kit.get_tenant(t) is None, 60, what=f"tenant {t} to go")
    for ns in (dev, sb):
        assert kit.read_namespace(ns) is not None, f"{ns} was deleted without onDeletePurge"
        wait_released(kit, ns)
    kit.wait_can_i("alice", "get", "pods", dev, False)
    kit.cluster.wait_for(
        lambda: ignore_404(kit.rbac.read_cluster_role, f"landlord:tenant:{t}") is None,
        what=f"ClusterRole landlord:tenant:{t} to be removed")


def test_deleting_a_tenant_with_purge_holds_the_finalizer_until_namespaces_are_gone(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev", "prod"], purge=True)
    dev, prod = kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-prod")
    kit.start()
    obj = kit.wait_ready(t, [dev, prod])
    assert tenants.FINALIZER in obj["metadata"].get("finalizers", [])
    # An object with a finalizer of our own keeps dev in Terminating until we let it go.
    kit.core.create_namespaced_config_map(dev, {"metadata": {
        "name": "hold", "finalizers": ["e2e.landlord.dev/hold"]}})
    kit.delete_tenant(t)
    wait_gone(kit, prod)
    kit.cluster.wait_for(lambda: (kit.read_namespace(dev).status.phase == "Terminating"),
                         what=f"{dev} to be terminating")
    # A spec change makes landlord run one more (teardown) pass, and its status says when it
    # has finished: by then no pass so far let the Tenant go.
    kit.patch_tenant(t, {"accessControl": {"viewers": {"users": ["frank"]}}})
    kit.wait_tenant(t, lambda o: True, "a teardown pass after dev became Terminating")
    obj = kit.get_tenant(t)
    assert obj is not None, "the Tenant went while one of its namespaces still exists"
    assert obj["metadata"].get("deletionTimestamp")
    assert tenants.FINALIZER in obj["metadata"].get("finalizers", [])
    reasons = {c.get("reason") for c in (obj.get("status") or {}).get("conditions") or []}
    assert "Terminating" in reasons, obj.get("status")
    kit.core.patch_namespaced_config_map("hold", dev, {"metadata": {"finalizers": None}})
    wait_gone(kit, dev)
    kit.cluster.wait_for(lambda: kit.get_tenant(t) is None, 60, what=f"tenant {t} to go")


# ---------- collisions ----------

def test_existing_namespace_is_a_collision_and_never_labelled(kit):
    plan = access_plan(kit)
    taken = kit.namespace(kit.name("taken"))
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"], unprefixed=[taken])
    dev = kit.expect_namespace(f"{t}-dev")
    rv0 = kit.current_rv()
    kit.start()
    obj = kit.wait_condition(t, "NamespacesReady", "False", "Collision")
    assert taken in [c["name"] for c in obj["status"].get("collisions") or []], obj["status"]
    assert all(c.get("reason") for c in obj["status"]["collisions"])
    assert taken not in (obj["status"].get("namespaces") or [])
    kit.wait_provisioned(dev, t)
    ready = kit.condition_of(kit.get_tenant(t), "Ready")
    assert ready["status"] == "False", ready
    kit.cluster.wait_for(lambda: [e for e in kit.events_for("Tenant", t) if e.type == "Warning"
                                  and taken in (e.message or "")],
                         what=f"a Warning Event on tenant {t} naming {taken}")
    # Once a later pass has finished, no pass so far wrote to it: the namespace's history and
    # the tenant's RoleBindings' history say so.
    kit.barrier(t, ["dev"])
    assert not [k for k in kit.labels(taken) if k.startswith("landlord.dev/")]
    assert not kit.landlord_rolebindings(taken)
    ns_history = kit.replay(kit.core.list_namespace, rv0,
                            field_selector=f"metadata.name={taken}")
    assert not [o for _, o in ns_history if landlord_metadata(o)], ns_history
    rb_history = kit.replay(kit.rbac.list_role_binding_for_all_namespaces, rv0,
                            f"{TENANT_LABEL}={t}")
    assert not [o for _, o in rb_history if o["metadata"]["namespace"] == taken], rb_history


def landlord_metadata(obj):
    """The landlord.dev/ labels and annotations of an object (a raw dict)."""
    meta = obj["metadata"]
    return [k for k in {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
            if k.startswith("landlord.dev/")]


def test_two_tenants_wanting_one_name_get_neither(kit):
    plan = access_plan(kit)
    first = kit.name("a")
    t1 = kit.tenant(name=first, plan=plan, owners={"users": ["alice"]}, prefixed=["b-c", "x"])
    t2 = kit.tenant(name=f"{first}-b", plan=plan, owners={"users": ["erin"]},
                    prefixed=["c", "y"])
    contested = kit.expect_namespace(f"{first}-b-c")
    assert contested == f"{t2}-c"
    x, y = kit.expect_namespace(f"{t1}-x"), kit.expect_namespace(f"{t2}-y")
    rv0 = kit.current_rv()
    # Both exist before landlord starts, so neither can be first.
    kit.start()
    for t, own in ((t1, x), (t2, y)):
        obj = kit.wait_condition(t, "NamespacesReady", "False", "Collision")
        assert contested in [c["name"] for c in obj["status"].get("collisions") or []]
        assert contested not in (obj["status"].get("namespaces") or [])
        kit.wait_provisioned(own, t)
    # Once a later pass of each has finished: most reasonable reading of "nobody gets it", it
    # was never created at all.
    kit.barrier(t1, ["b-c", "x"])
    kit.barrier(t2, ["c", "y"])
    assert kit.read_namespace(contested) is None
    history = kit.replay(kit.core.list_namespace, rv0,
                         field_selector=f"metadata.name={contested}")
    assert history == [], history


# ---------- drift ----------

def test_drift_is_repaired(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "get", "pods", ns)
    before = kit.labels(ns)
    np_before = kit.net.read_namespaced_network_policy("landlord-isolation", ns).spec.to_dict()
    lr_before = kit.core.read_namespaced_limit_range("landlord-limits", ns).spec.to_dict()

    kit.rbac.delete_namespaced_role_binding("landlord-owners-admin", ns)
    kit.core.delete_namespaced_resource_quota("landlord-quota", ns)
    kit.net.delete_namespaced_network_policy("landlord-isolation", ns)
    kit.core.delete_namespaced_limit_range("landlord-limits", ns)
    kit.core.patch_namespace(ns, {"metadata": {"labels": {
        "landlord.dev/kind": "hacked", "landlord.dev/plan": None,
        "pod-security.kubernetes.io/enforce": "privileged"}}})

    def repaired():
        return (kit.labels(ns) == before and kit.quota_in_force(ns)
                and kit.rolebinding(ns, "landlord-owners-admin")
                and ignore_404(kit.net.read_namespaced_network_policy, "landlord-isolation", ns)
                and ignore_404(kit.core.read_namespaced_limit_range, "landlord-limits", ns))
    kit.cluster.wait_for(repaired, 30, interval=0.2, what="deleted objects and labels put back")
    assert kit.net.read_namespaced_network_policy("landlord-isolation",
                                                  ns).spec.to_dict() == np_before
    assert kit.core.read_namespaced_limit_range("landlord-limits", ns).spec.to_dict() == lr_before
    kit.wait_can_i("alice", "get", "pods", ns)

    # Edits, not only deletes.
    kit.rbac.patch_namespaced_role_binding("landlord-owners-admin", ns, {"subjects": [
        {"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"},
        {"apiGroup": RBAC_GROUP, "kind": "User", "name": "frank"}]})
    rq = kit.quota(ns)
    kit.core.patch_namespaced_resource_quota("landlord-quota", ns,
                                             {"spec": {"hard": {"pods": "1000"}}})
    kit.net.patch_namespaced_network_policy("landlord-isolation", ns,
                                            {"spec": {"ingress": [{}]}})

    def edits_undone():
        rb = kit.rolebinding(ns, "landlord-owners-admin")
        now = kit.quota(ns)
        netpol = kit.net.read_namespaced_network_policy("landlord-isolation", ns)
        return (rb and [s.name for s in rb.subjects] == ["alice"]
                and now and now.spec.hard == rq.spec.hard
                and netpol.spec.to_dict() == np_before)
    kit.cluster.wait_for(edits_undone, 30, interval=0.2, what="edited objects put back")
    kit.wait_can_i("frank", "get", "pods", ns, False)


def test_what_others_add_to_landlords_objects_is_reverted(kit):
    """Drift repair reverts additions, not only landlord's own fields: an egress rule on the
    isolation policy, a scopeSelector on the quota and an extra subject on a binding each
    change what the object means although landlord never set those fields."""
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t)
    np_before = kit.net.read_namespaced_network_policy("landlord-isolation", ns).spec.to_dict()
    hard_before = kit.quota(ns).spec.hard

    egress = [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]
    kit.net.patch_namespaced_network_policy("landlord-isolation", ns, {"spec": {
        "policyTypes": ["Ingress", "Egress"], "egress": egress}})
    kit.core.patch_namespaced_resource_quota("landlord-quota", ns, {"spec": {"scopeSelector": {
        "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In",
                              "values": ["never-used"]}]}}})
    rb = kit.rolebinding(ns, "landlord-owners-admin")
    subjects = [s.to_dict() for s in rb.subjects]
    kit.rbac.patch_namespaced_role_binding("landlord-owners-admin", ns, {"subjects": subjects + [
        {"apiGroup": RBAC_GROUP, "kind": "User", "name": "erin"}]})

    def reverted():
        netpol = kit.net.read_namespaced_network_policy("landlord-isolation", ns)
        rq = kit.quota(ns)
        binding = kit.rolebinding(ns, "landlord-owners-admin")
        return (netpol.spec.to_dict() == np_before and not netpol.spec.egress
                and rq and rq.spec.scope_selector is None and rq.spec.hard == hard_before
                and binding and [s.name for s in binding.subjects] == ["alice"])
    kit.cluster.wait_for(reverted, 30, interval=0.2, what="additions by others reverted")
    kit.wait_can_i("erin", "get", "pods", ns, False)
    kit.wait_can_i("alice", "get", "pods", ns)


def test_tenant_users_cannot_change_landlords_labels_or_objects(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "delete", "rolebindings", ns)
    # RBAC would let alice patch the namespace: only the policy can refuse.
    kit.grant_namespace_patch("alice", [ns])
    kit.wait_can_i("alice", "patch", f"namespaces/{ns}", None)
    kit.apply_policies()
    try:
        kit.cluster.wait_for(lambda: kit.managed_object_probe("alice", ns), 60,
                             what="the admission policies to be in force")
        alice = k8s.CoreV1Api(kit.client("alice"))
        alice_rbac = k8s.RbacAuthorizationV1Api(kit.client("alice"))
        alice_net = k8s.NetworkingV1Api(kit.client("alice"))
        labels = kit.labels(ns)

        # Label changes on the namespace. The namespace policy may take a moment longer.
        kit.cluster.wait_for(lambda: tenants.ns_policy_denies(kit.client("alice"), ns), 60,
                             what="the namespace label policy to be in force")
        for change in ({TENANT_LABEL: "other"}, {"landlord.dev/kind": None},
                       {"landlord.dev/plan": "huge"},
                       {"pod-security.kubernetes.io/enforce": "privileged"}):
            body = forbidden(alice.patch_namespace, ns, {"metadata": {"labels": change}})
            assert NS_POLICY in body, body

        # landlord's objects: alice's admin role allows writing RoleBindings and
        # NetworkPolicies, so the policy is the reason; quota and limits are read-only to her.
        for fn, args in ((alice_rbac.delete_namespaced_role_binding, ("landlord-owners-admin",)),
                         (alice_rbac.patch_namespaced_role_binding,
                          ("landlord-owners-admin", {"metadata": {"labels": {MANAGED_BY: None}}})),
                         (alice_net.delete_namespaced_network_policy, ("landlord-isolation",)),
                         (alice_net.patch_namespaced_network_policy,
                          ("landlord-isolation", {"spec": {"ingress": [{}]}}))):
            body = forbidden(fn, *args[:1], ns, *args[1:])
            assert OBJ_POLICY in body, body
        forbidden(alice.delete_namespaced_resource_quota, "landlord-quota", ns)
        forbidden(alice.delete_namespaced_limit_range, "landlord-limits", ns)
        body = forbidden(alice.create_namespaced_config_map, ns,
                         configmap("fake", {MANAGED_BY: "landlord"}))
        assert OBJ_POLICY in body, body

        # Her own objects stay self-service (for members of her tenant: herself here).
        alice_rbac.create_namespaced_role_binding(ns, {
            "metadata": {"name": "mine"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"}]})
        alice_rbac.delete_namespaced_role_binding("mine", ns)

        assert kit.labels(ns) == labels
        assert kit.rolebinding(ns, "landlord-owners-admin")
        assert kit.net.read_namespaced_network_policy("landlord-isolation", ns)
    finally:
        kit.remove_policies()
        kit.cluster.wait_for(lambda: not kit.managed_object_probe("alice", ns), 60,
                             what="the admission policies to be out of force")


# ---------- adoption ----------

def test_a_labelled_namespace_is_adopted_and_released_when_unlabelled(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"], purge=True)
    dev = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [dev])
    created = kit.namespace(kit.name("adopt"), labels={TENANT_LABEL: t})
    relabelled = kit.namespace(kit.name("adopt"))
    kit.core.patch_namespace(relabelled, {"metadata": {"labels": {TENANT_LABEL: t,
                                                                   "landlord.dev/kind": "tools"}}})
    kit.wait_ready(t, [dev, created, relabelled])
    for ns in (created, relabelled):
        kit.wait_provisioned(ns, t)
        labels = kit.labels(ns)
        assert labels["landlord.dev/plan"] == plan
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
        assert_access(kit, ns, {"alice": "admin"})
    assert kit.labels(created)["landlord.dev/kind"] == "adopted"
    assert kit.labels(relabelled)["landlord.dev/kind"] == "tools"
    assert sorted(kit.status(t).get("adopted") or []) == sorted([created, relabelled])

    # Unlabelled: released, never purged (even with onDeletePurge).
    kit.core.patch_namespace(created, {"metadata": {"labels": {TENANT_LABEL: None}}})
    wait_released(kit, created)
    kit.wait_tenant(t, lambda o: created in (o["status"].get("released") or []),
                    f"{created} listed in status.released")
    # a later pass has finished: no pass so far purged it
    _, barrier = kit.barrier(t, ["dev"])
    obj = kit.read_namespace(created)
    assert obj.status.phase == "Active" and obj.metadata.deletion_timestamp is None
    kit.wait_can_i("alice", "get", "pods", created, False)
    kit.wait_ready(t, [dev, relabelled, barrier])
    assert kit.status(t).get("adopted") == [relabelled]


# ---------- plan ----------

def test_missing_plan_grants_nothing_until_the_plan_exists(kit):
    """Checked on the API server's history: no RoleBinding of the tenant's was ever written
    before the Plan was created (resourceVersions are etcd revisions here, so they order writes
    across kinds)."""
    plan = kit.name("p")
    rv0 = kit.current_rv()
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_condition(t, "Ready", "False", "PlanNotFound")
    kit.cluster.wait_for(lambda: kit.labels(ns).get(TENANT_LABEL) == t,
                         what=f"{ns} created while the Plan is missing")
    assert not kit.landlord_rolebindings(ns)
    assert not kit.can_i("alice", "get", "pods", ns)
    kit.plan(name=plan, hard=HARD, limits=LIMITS)
    plan_rv = int(kit.get_plan(plan)["metadata"]["resourceVersion"])
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t)
    assert_access(kit, ns, {"alice": "admin"})
    history = kit.replay(kit.rbac.list_role_binding_for_all_namespaces, rv0,
                         f"{TENANT_LABEL}={t}")
    writes = sorted(int(o["metadata"]["resourceVersion"]) for _, o in history)
    assert writes, history
    assert writes[0] > plan_rv, (f"a RoleBinding written at {writes[0]}, before the Plan "
                                 f"(created by {plan_rv})")


# ---------- names, metadata, subjects, role mapping ----------

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_user_names_that_are_not_valid_names_are_sanitised(kit):
    plan = access_plan(kit)
    email, long_user = "bob@example.com", "x" * 30 + ".Very_Long.User" + "y" * 40
    t = kit.tenant(plan=plan, owners={"users": ["alice", email]},
                   editors={"users": [long_user]}, sandboxes={"enabled": True})
    kit.start()
    obj = kit.wait_tenant(t, lambda o: len(o["status"].get("sandboxes") or {}) == 3,
                          "three sandboxes")
    sandboxes = obj["status"]["sandboxes"]
    for ns in sandboxes.values():
        kit.expect_namespace(ns)
    assert sandboxes["alice"] == f"{t}-alice-sandbox"
    assert re.fullmatch(rf"{t}-bob-example-com-sandbox-[0-9a-f]{{8}}", sandboxes[email]), \
        sandboxes
    assert sandboxes[long_user] != sandboxes[email]
    for user, ns in sandboxes.items():
        assert len(ns) <= 63 and DNS_LABEL.match(ns), ns
        kit.wait_provisioned(ns, t)
        obj = kit.read_namespace(ns)
        label = obj.metadata.labels["landlord.dev/username"]
        assert len(label) <= 63 and LABEL_VALUE.match(label), label
        if user != "alice":
            assert obj.metadata.annotations["landlord.dev/username-raw"] == user
        # The sandbox's user, under the raw name, is its owner.
        rb = kit.rolebinding(ns, "landlord-owners-admin")
        assert ("User", user) in [(s.kind, s.name) for s in rb.subjects], rb.subjects
    kit.wait_ready(t, sorted(sandboxes.values()))


def test_namespace_metadata_follows_the_spec(kit):
    plan = access_plan(kit)
    meta = {
        "common": {"labels": {"example.com/team": "{{ TENANT.NAME }}",
                              "example.com/tier": "common"},
                   "annotations": {"example.com/contact": "team-{{ TENANT.NAME }}"}},
        "sandbox": {"labels": {"example.com/user": "{{ TENANT.USERNAME }}",
                               "example.com/tier": "sandbox"}},
    }
    t = kit.name("t")
    dev, prod = kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-prod")
    sb = kit.expect_namespace(f"{t}-alice-sandbox")
    meta["specific"] = [{"namespaces": [prod], "labels": {"example.com/tier": "specific"},
                         "annotations": {"example.com/contact": "oncall"}}]
    kit.tenant(name=t, plan=plan, owners={"users": ["alice"]}, prefixed=["dev", "prod"],
               sandboxes={"enabled": True}, ns_metadata=meta)
    kit.start()
    kit.wait_ready(t, [dev, prod, sb])
    for ns in (dev, prod, sb):
        kit.wait_provisioned(ns, t)

    def meta_of(ns):
        obj = kit.read_namespace(ns)
        return obj.metadata.labels or {}, obj.metadata.annotations or {}
    labels, ann = meta_of(dev)
    assert labels["example.com/team"] == t and labels["example.com/tier"] == "common"
    assert ann["example.com/contact"] == f"team-{t}"
    assert "landlord.dev/managed-metadata" in ann
    labels, ann = meta_of(prod)
    assert labels["example.com/tier"] == "specific" and ann["example.com/contact"] == "oncall"
    labels, _ = meta_of(sb)
    assert labels["example.com/tier"] == "sandbox" and labels["example.com/user"] == "alice"
    assert labels["example.com/team"] == t

    # A key someone else set is never touched; a key dropped from the spec goes.
    kit.core.patch_namespace(dev, {"metadata": {"labels": {"example.com/extra": "mine"},
                                                "annotations": {"example.com/note": "mine"}}})
    kit.patch_tenant(t, {"namespaces": {"metadata": {"common": {
        "labels": {"example.com/tier": None}, "annotations": None}}}})

    def settled():
        labels, ann = meta_of(dev)
        return ("example.com/tier" not in labels and "example.com/contact" not in ann
                and meta_of(prod)[0].get("example.com/tier") == "specific")
    kit.cluster.wait_for(settled, 30, interval=0.3, what="dropped keys removed")
    labels, ann = meta_of(dev)
    assert labels["example.com/extra"] == "mine" and ann["example.com/note"] == "mine"
    assert labels["example.com/team"] == t


def test_service_account_members(kit):
    plan = access_plan(kit)
    ci = kit.namespace(kit.name("ci"))
    t = kit.tenant(plan=plan, owners={"users": ["alice"]},
                   viewers={"serviceAccounts": [{"namespace": ci, "name": "reporter"}]},
                   prefixed=["dev"])
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t, ("landlord-owners-admin", "landlord-viewers-view"))
    rb = kit.rolebinding(ns, "landlord-viewers-view")
    assert [(s.kind, s.name, s.namespace) for s in rb.subjects] == [
        ("ServiceAccount", "reporter", ci)]
    sa = f"system:serviceaccount:{ci}:reporter"

    def can(verb, resource):
        r = kit.cluster.kubectl("admin", "auth", "can-i", verb, resource, "-n", ns, "--as", sa)
        return r.stdout.strip() == "yes"
    kit.cluster.wait_for(lambda: can("list", "pods"), what="the service account to view")
    assert not can("create", "configmaps")
    assert not can("get", "secrets")


def test_a_changed_role_mapping_replaces_the_binding(kit):
    plan = access_plan(kit)
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["carol"]},
                   prefixed=["dev"], sandboxes={"enabled": True})
    dev, sb = kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-alice-sandbox")
    carols = kit.expect_namespace(f"{t}-carol-sandbox")
    kit.start()
    kit.wait_ready(t, [dev, sb, carols])
    for ns in (dev, sb):
        kit.wait_provisioned(ns, t, ("landlord-owners-admin", "landlord-editors-edit"))
    custom = {"tenantRoles": {"custom": [{
        "labelSelector": {"matchLabels": {"landlord.dev/kind": "sandbox"}}, "editor": "admin"}]}}
    with kit.landlord_config(custom) as accepted:
        kit.cluster.wait_for(accepted, 60, what="the LandlordConfig to be accepted")
        kit.cluster.wait_for(lambda: kit.rolebinding(sb, "landlord-editors-admin")
                             and not kit.rolebinding(sb, "landlord-editors-edit"), 30,
                             interval=0.3, what="landlord-editors-edit replaced in the sandbox")
        rb = kit.rolebinding(sb, "landlord-editors-admin")
        assert (rb.role_ref.name, [s.name for s in rb.subjects]) == ("admin", ["carol"])
        kit.wait_can_i("carol", "create", "rolebindings", sb)
        assert set(kit.landlord_rolebindings(dev)) == {"landlord-owners-admin",
                                                       "landlord-editors-edit"}
        assert not kit.can_i("carol", "create", "rolebindings", dev)
    kit.cluster.wait_for(lambda: kit.rolebinding(sb, "landlord-editors-edit")
                         and not kit.rolebinding(sb, "landlord-editors-admin"), 30,
                         interval=0.3, what="the default mapping back")
    kit.wait_can_i("carol", "create", "rolebindings", sb, False)
