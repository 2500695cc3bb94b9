"""Attacks on what landlord decides from, each as it was found by a red-team run
(docs/internals/trust.md lists every input and the test that attacks it).

The admission policies in deploy/policies/ stop most of these at the door (test_policies.py); the
tests here run without them, to show the other side: landlord itself never acts on a value a
non-landlord writer could have forged, owns the names it uses, quarantines what it releases and
keeps non-members out of tenant namespaces. Each attacker first shows that it holds the rights
the attack needs (a positive control), so that only landlord's behaviour can make a test pass.
"""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import RBAC_GROUP, forbidden, ignore_404
from tenants import MANAGED_BY, TENANT_LABEL, privileged_pod

HARD = {"pods": "10"}
MANAGED_METADATA = "landlord.dev/managed-metadata"
RELEASED_FROM = "landlord.dev/released-from"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"


def subject(kind, name, namespace=None):
    s = {"kind": kind, "name": name}
    if kind == "ServiceAccount":
        s["namespace"] = namespace
    else:
        s["apiGroup"] = RBAC_GROUP
    return s


def binding(name, role, subjects, role_kind="ClusterRole"):
    return {"metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
            "subjects": subjects}


def subjects_of(rb):
    return sorted((s.kind, s.name) for s in rb.subjects or [])


def events(kit, tenant, reason, needle=""):
    return [e.message for e in kit.events_for("Tenant", tenant)
            if e.reason == reason and needle in (e.message or "")]


def wait_event(kit, tenant, reason, needle):
    return kit.cluster.wait_for(lambda: events(kit, tenant, reason, needle), 60, interval=0.3,
                                what=f"a {reason} Event on {tenant} about {needle}")


def service_account_client(kit, ns, name):
    """A ServiceAccount in ns, and an ApiClient acting with its own token."""
    kit.core.create_namespaced_service_account(ns, {"metadata": {"name": name}})
    token = kit.core.create_namespaced_service_account_token(
        name, ns, {"spec": {"expirationSeconds": 3600}}).status.token
    conf = k8s.Configuration()
    conf.host = kit.cluster.api_url
    conf.ssl_ca_cert = kit.cluster.ca
    conf.api_key = {"authorization": f"Bearer {token}"}
    return k8s.ApiClient(conf)


def grant(kit, name, rules, subj, ns=None):
    """Test-only RBAC for an attacker: a (Cluster)Role with rules bound to subj."""
    if ns:
        kit.rbac.create_namespaced_role(ns, {"metadata": {"name": name}, "rules": rules})
        kit.rbac.create_namespaced_role_binding(ns, binding(name, name, [subj], "Role"))
        return
    kit.rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
    kit.cluster_roles.append(name)
    kit.rbac.create_cluster_role_binding(binding(name, name, [subj]))
    kit.cluster_bindings.append(name)


def provisioned_tenant(kit, prefixed=("dev",), **kw):
    plan = kit.plan(hard=HARD)
    t = kit.tenant(plan=plan, prefixed=list(prefixed), **kw)
    namespaces = [kit.expect_namespace(f"{t}-{p}") for p in prefixed]
    if kit.landlord is None:
        kit.start()
    kit.wait_ready(t, namespaces)
    return t, namespaces


# ---------- 1. the bookkeeping annotation ----------

def test_a_ci_account_cannot_detach_its_namespace_through_the_bookkeeping_annotation(kit):
    """The CI ServiceAccount of Capsule's CVE-2022-46167 holds patch on its own namespace.
    It writes landlord's bookkeeping annotation naming another tenant and listing the labels
    that isolate the namespace; landlord keeps the namespace with its tenant, rewrites the
    annotation, and says so; the account's privileged pod is still refused."""
    globex, _ = provisioned_tenant(kit, owners={"users": ["carol"]})
    acme, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]})
    kit.wait_provisioned(ns, acme)
    ci_subject = subject("ServiceAccount", "ci", ns)
    ci = service_account_client(kit, ns, "ci")
    grant(kit, kit.name("e2e-ci-ns-"), [{"apiGroups": [""], "resources": ["namespaces"],
                                          "resourceNames": [ns],
                                          "verbs": ["get", "patch", "update"]}], ci_subject)
    kit.rbac.create_namespaced_role_binding(ns, binding("ci-edit", "edit", [ci_subject]))
    ci_core = k8s.CoreV1Api(ci)
    # positive control: the account may patch its namespace
    kit.cluster.wait_for(lambda: _try(lambda: ci_core.patch_namespace(
        ns, {"metadata": {"labels": {"team": "x"}}})), what="the CI account to patch its namespace")
    forged = {"tenant": globex, "labels": [TENANT_LABEL, PSA_ENFORCE,
                                           "pod-security.kubernetes.io/warn",
                                           "pod-security.kubernetes.io/audit"],
              "annotations": []}
    ci_core.patch_namespace(ns, {"metadata": {"annotations": {
        MANAGED_METADATA: json.dumps(forged)}}})

    wait_event(kit, acme, "ManagedMetadataIgnored", ns)
    kit.cluster.wait_for(lambda: json.loads((kit.read_namespace(ns).metadata.annotations or {})
                                            .get(MANAGED_METADATA, "{}")).get("tenant") == acme,
                         what="the annotation rewritten for the tenant its label names")
    kit.barrier(globex, ["dev"])
    labels = kit.labels(ns)
    assert labels[TENANT_LABEL] == acme and labels[PSA_ENFORCE] == "restricted", labels
    assert labels["team"] == "x"
    assert kit.quota(ns) and kit.rolebinding(ns, "landlord-owners-admin")
    assert ns not in (kit.status(globex).get("released") or [])
    kit.wait_can_i("alice", "create", "pods", ns)
    body = forbidden(ci_core.create_namespaced_pod, ns, host_network_pod("breakout"))
    assert "violates PodSecurity" in body, body


def host_network_pod(name):
    pod = privileged_pod(name)
    pod["spec"]["hostNetwork"] = True
    return pod


def _try(fn):
    try:
        fn()
        return True
    except k8s.ApiException:
        return False


def test_a_namespace_manager_cannot_make_landlord_its_deputy_on_kube_system(kit):
    """An identity that manages namespaces cluster-wide (not privileged in landlord's config)
    writes the bookkeeping annotation for a tenant on kube-system: landlord writes nothing
    there."""
    globex, _ = provisioned_tenant(kit, owners={"users": ["carol"]})
    grant(kit, kit.name("e2e-nsmanager-"), [{"apiGroups": [""], "resources": ["namespaces"],
                                              "verbs": ["get", "list", "patch"]}],
          subject("User", "erin"))
    erin = k8s.CoreV1Api(kit.client("erin"))
    probe = kit.name("e2e-probe-")
    try:
        kit.cluster.wait_for(lambda: _try(lambda: erin.patch_namespace(
            "kube-system", {"metadata": {"labels": {probe: "x"}}})),
            what="erin to patch kube-system (positive control)")
        erin.patch_namespace("kube-system", {"metadata": {"annotations": {MANAGED_METADATA:
            json.dumps({"tenant": globex, "labels": [probe], "annotations": []})}}})
        kit.barrier(globex, ["dev"])
        ks = kit.read_namespace("kube-system")
        assert (ks.metadata.labels or {}).get(probe) == "x"
        assert RELEASED_FROM not in (ks.metadata.annotations or {})
        assert "kube-system" not in (kit.status(globex).get("released") or [])
    finally:
        kit.core.patch_namespace("kube-system", {"metadata": {
            "labels": {probe: None}, "annotations": {MANAGED_METADATA: None}}})


# ---------- 2. squatted names ----------

def test_a_squatted_binding_with_another_role_is_replaced(kit):
    """Before editors exist, the owner creates landlord-editors-edit with roleRef admin for
    herself (the webhook refuses an outsider in it at the door); when editors are added,
    landlord replaces the binding (roleRef cannot change) and reports it."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]})
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "create", "rolebindings", ns)
    alice = k8s.RbacAuthorizationV1Api(kit.client("alice"))
    with pytest.raises(ApiException) as refused:
        alice.create_namespaced_role_binding(ns, binding(
            "landlord-editors-edit", "admin", [subject("User", "alice"), subject("User", "frank")]))
    assert refused.value.status == 403 and 'binds User \\"frank\\"' in refused.value.body, \
        refused.value.body
    squat = alice.create_namespaced_role_binding(
        ns, binding("landlord-editors-edit", "admin", [subject("User", "alice")]))

    kit.patch_tenant(t, {"accessControl": {"editors": {"users": ["bob"]}}})
    kit.wait_ready(t, [ns])
    rb = kit.rolebinding(ns, "landlord-editors-edit")
    assert rb.metadata.uid != squat.metadata.uid
    assert (rb.role_ref.name, subjects_of(rb)) == ("edit", [("User", "bob")])
    assert rb.metadata.labels[MANAGED_BY] == "landlord"
    wait_event(kit, t, "ObjectReplaced", f"RoleBinding {ns}/landlord-editors-edit")
    kit.wait_can_i("bob", "create", "configmaps", ns)
    assert not kit.can_i("frank", "get", "pods", ns)


def test_a_squatted_binding_with_the_same_role_is_replaced_not_adopted(kit):
    """The same squat with roleRef edit: landlord does not adopt the stranger's binding; it
    replaces it, so nothing of the squatter's survives under landlord's protected label."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]})
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "create", "rolebindings", ns)
    squat = k8s.RbacAuthorizationV1Api(kit.client("alice")).create_namespaced_role_binding(
        ns, binding("landlord-editors-edit", "edit", [subject("User", "alice")]))
    kit.patch_tenant(t, {"accessControl": {"editors": {"users": ["bob"]}}})
    kit.wait_ready(t, [ns])
    rb = kit.rolebinding(ns, "landlord-editors-edit")
    assert rb.metadata.uid != squat.metadata.uid
    assert subjects_of(rb) == [("User", "bob")]
    wait_event(kit, t, "ObjectReplaced", "landlord did not create it")


def test_a_squatted_network_policy_is_replaced(kit):
    """An owner may create NetworkPolicies: one named landlord-isolation that admits everything,
    made before landlord makes its own (here: network isolation switched on later), is replaced
    by landlord's."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]}, networkIsolation=False)
    kit.wait_can_i("alice", "create", "networkpolicies", ns)
    squat = k8s.NetworkingV1Api(kit.client("alice")).create_namespaced_network_policy(ns, {
        "metadata": {"name": "landlord-isolation"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]}})
    kit.patch_tenant(t, {"networkIsolation": True})
    kit.wait_ready(t, [ns])
    np = kit.net.read_namespaced_network_policy("landlord-isolation", ns)
    assert np.metadata.uid != squat.metadata.uid
    assert np.metadata.labels[MANAGED_BY] == "landlord"
    assert all(rule._from for rule in np.spec.ingress), "an allow-all rule survived"


# ---------- 3. release ----------

def test_a_released_namespace_is_quarantined(kit):
    """The owner plants her own admin binding in a namespace, which is then dropped from the
    Tenant without purge: every binding granting a member goes, whoever made it; Pod Security
    stays at the tenant's level; the release is reported. The quarantine holds: a binding for a
    member made there later is removed too, one for somebody else stays."""
    t, (dev, old) = provisioned_tenant(kit, prefixed=("dev", "old"),
                                       owners={"users": ["alice"]})
    kit.wait_provisioned(old, t)
    kit.wait_can_i("alice", "create", "rolebindings", old)
    alice_rbac = k8s.RbacAuthorizationV1Api(kit.client("alice"))
    alice_rbac.create_namespaced_role_binding(  # positive control: she may make her own
        old, binding("alice-admin", "admin", [subject("User", "alice")]))

    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": ["dev"]}})
    kit.wait_tenant(t, lambda o: old in (o["status"].get("released") or []),
                    f"{old} listed as released")
    ns = kit.read_namespace(old)
    assert ns.metadata.annotations.get(RELEASED_FROM) == t
    assert ns.metadata.labels.get(PSA_ENFORCE) == "restricted", ns.metadata.labels
    assert TENANT_LABEL not in ns.metadata.labels
    assert kit.rbac.list_namespaced_role_binding(old).items == []
    wait_event(kit, t, "SubjectRemoved", f"{old}/alice-admin")
    wait_event(kit, t, "NamespaceReleased", old)
    kit.wait_can_i("alice", "create", "pods", old, False)
    body = forbidden(kit.core.create_namespaced_pod, old, host_network_pod("p"), dry_run="All")
    assert "violates PodSecurity" in body, body
    assert kit.rolebinding(dev, "landlord-owners-admin")

    kit.rbac.create_namespaced_role_binding(old, binding(
        "monitoring", "view", [subject("ServiceAccount", "prometheus", "kube-system")]))
    kit.rbac.create_namespaced_role_binding(
        old, binding("late", "admin", [subject("User", "alice")]))
    kit.cluster.wait_for(lambda: not kit.rolebinding(old, "late"), 60, interval=0.3,
                         what="the late binding for a member removed")
    assert kit.rolebinding(old, "monitoring")


# ---------- 4. removed members ----------

def test_a_removed_owner_loses_the_bindings_she_made_herself(kit):
    """carol, an owner, makes herself admin bindings; once she is removed from the Tenant,
    landlord takes her out of every binding in the tenant's namespaces: a binding left empty is
    deleted, a shared one loses only her, and one landlord may not change (a Role of the
    tenant's own, which landlord cannot bind) is deleted."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice", "carol"]})
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("carol", "create", "rolebindings", ns)
    carol_rbac = k8s.RbacAuthorizationV1Api(kit.client("carol"))
    carol_rbac.create_namespaced_role_binding(ns, binding("carol-admin", "admin",
                                                          [subject("User", "carol")]))
    carol_rbac.create_namespaced_role_binding(ns, binding(
        "shared", "admin", [subject("User", "alice"), subject("User", "carol")]))
    carol_rbac.create_namespaced_role(ns, {"metadata": {"name": "pods"}, "rules": [{
        "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create"]}]})
    carol_rbac.create_namespaced_role_binding(ns, binding(
        "pod-makers", "pods", [subject("User", "alice"), subject("User", "carol")], "Role"))

    kit.patch_tenant(t, {"accessControl": {"owners": {"users": ["alice"]}}})
    kit.cluster.wait_for(lambda: not kit.rolebinding(ns, "carol-admin") and
                         subjects_of(kit.rolebinding(ns, "shared")) == [("User", "alice")] and
                         not kit.rolebinding(ns, "pod-makers"), 60, interval=0.3,
                         what="carol removed from every binding")
    wait_event(kit, t, "SubjectRemoved", f"{ns}/carol-admin")
    wait_event(kit, t, "SubjectRemoved", f"{ns}/shared")
    kit.wait_can_i("carol", "get", "pods", ns, False)
    assert kit.can_i("alice", "create", "rolebindings", ns)


def test_an_owner_cannot_grant_an_outsider_or_everyone(kit):
    """A binding for an outsider, for all authenticated users or for another tenant's
    ServiceAccount is refused to the owner by the webhook; the same binding made by an
    administrator (exempt, as anyone while the webhook is down) loses those subjects: members,
    the tenant's ServiceAccounts and the LandlordConfig's exceptions stay."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]},
                                  editors={"groups": ["team-a"]})
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "create", "rolebindings", ns)
    with kit.landlord_config({"privileged": {"users": ["ops-.*"]}}) as accepted:
        kit.cluster.wait_for(accepted, 60, what="the LandlordConfig to be accepted")
        mixed = binding("mixed", "view", [
            subject("User", "frank"), subject("Group", "system:authenticated"),
            subject("ServiceAccount", "bot", "elsewhere"), subject("Group", "team-a"),
            subject("ServiceAccount", "builder", ns), subject("User", "ops-jane")])
        with pytest.raises(ApiException) as refused:
            k8s.RbacAuthorizationV1Api(kit.client("alice")).create_namespaced_role_binding(
                ns, mixed)
        assert refused.value.status == 403 and "tenant-objects.landlord.dev" in \
            refused.value.body, refused.value.body
        kit.rbac.create_namespaced_role_binding(ns, mixed)
        kit.cluster.wait_for(lambda: subjects_of(kit.rolebinding(ns, "mixed")) == [
            ("Group", "team-a"), ("ServiceAccount", "builder"), ("User", "ops-jane")], 60,
            interval=0.3, what="only members and exceptions left")
    for who in ("User frank", "Group system:authenticated", "ServiceAccount elsewhere/bot"):
        wait_event(kit, t, "SubjectRemoved", who)


# ---------- the class: inputs landlord decides from ----------

def test_custom_roles_follow_landlords_labels_not_labels_others_add(kit):
    """The role mapping's selectors match the labels landlord gives a namespace: a CI account
    that labels its namespace to match a mapping that gives editors admin changes nothing."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]},
                                  editors={"users": ["carol"]})
    kit.wait_provisioned(ns, t, ("landlord-owners-admin", "landlord-editors-edit"))
    ci_subject = subject("ServiceAccount", "ci", ns)
    ci = k8s.CoreV1Api(service_account_client(kit, ns, "ci"))
    grant(kit, kit.name("e2e-ci-ns-"), [{"apiGroups": [""], "resources": ["namespaces"],
                                          "resourceNames": [ns], "verbs": ["get", "patch"]}],
          ci_subject)
    custom = {"tenantRoles": {"custom": [{"labelSelector": {"matchLabels": {"tier": "gold"}},
                                          "editor": "admin"}]}}
    with kit.landlord_config(custom) as accepted:
        kit.cluster.wait_for(accepted, 60, what="the LandlordConfig to be accepted")
        kit.cluster.wait_for(lambda: _try(lambda: ci.patch_namespace(
            ns, {"metadata": {"labels": {"tier": "gold"}}})), what="the CI account to label")
        kit.barrier(t, ["dev"])
        assert set(kit.landlord_rolebindings(ns)) == {"landlord-owners-admin",
                                                      "landlord-editors-edit"}
        assert not kit.can_i("carol", "create", "rolebindings", ns)


def test_objects_labelled_for_a_tenant_outside_its_namespaces_are_not_landlords(kit):
    """Outside tenant namespaces no policy stops anyone from labelling their objects as
    landlord's for a tenant. Such a ResourceQuota neither takes the tenant's quota nor holds
    its deletion, and landlord never touches it."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]})
    kit.wait_provisioned(ns, t)
    plain = kit.namespace()
    kit.core.create_namespaced_resource_quota(plain, {
        "metadata": {"name": "landlord-quota", "labels": {MANAGED_BY: "landlord",
                                                          TENANT_LABEL: t}},
        "spec": {"hard": {"pods": "9"}}})
    _, extra = kit.barrier(t, ["dev"])
    kit.wait_provisioned(extra, t)
    assert sum(int(kit.quota(n).spec.hard["pods"]) for n in (ns, extra)) == 10
    kit.delete_tenant(t)
    kit.cluster.wait_for(lambda: kit.get_tenant(t) is None, 60, interval=0.3,
                         what="the Tenant to be deleted")
    forged = kit.quota(plain)
    assert forged and forged.spec.hard == {"pods": "9"}
    assert ignore_404(kit.core.read_namespace, plain)


def test_what_landlord_reads_from_the_cluster_and_its_own_namespace_cannot_be_forged(kit):
    """The API server keeps kubernetes.io/metadata.name equal to the name (the NetworkPolicy's
    allow-list of privileged namespaces relies on it), and tenant users cannot write landlord's
    Lease or its accepted configuration in landlord-system."""
    t, (ns,) = provisioned_tenant(kit, owners={"users": ["alice"]})
    kit.grant_namespace_patch("alice", [ns])
    alice = k8s.CoreV1Api(kit.client("alice"))
    kit.cluster.wait_for(lambda: _try(lambda: alice.patch_namespace(
        ns, {"metadata": {"labels": {"team": "y"}}})), what="alice to patch her namespace")
    _try(lambda: alice.patch_namespace(
        ns, {"metadata": {"labels": {"kubernetes.io/metadata.name": "kube-system"}}}))
    assert kit.labels(ns)["kubernetes.io/metadata.name"] == ns
    forbidden(alice.patch_namespaced_config_map, "landlord-config-accepted", "landlord-system",
              {"data": {"x": "y"}})
    forbidden(k8s.CoordinationV1Api(kit.client("alice")).patch_namespaced_lease, "landlord",
              "landlord-system", {"spec": {"holderIdentity": "alice"}})
