"""Self-service namespaces, the part the admission policies carry: each Tenant's owners hold the
verb "own" on it (ClusterRole landlord:tenant:<t>:owners), and policy landlord-namespace-metadata
lets a requester who owns a tenant create a namespace carrying that tenant's label, and no other
landlord.dev key, when its name starts with "<tenant>-". landlord then provisions it like any
other. The right to create namespaces comes from a test-only grant here, so that the policy
alone is what refuses; landlord's own grant to owners, the webhook's name rules and the
namespace limit are test_self_service_webhook.py's.
"""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import GROUP, RBAC_GROUP
from tenants import TENANT_LABEL

POLICY = "landlord-namespace-metadata"


@pytest.fixture
def acme(kit):
    """A tenant owned by alice and by group team-b (carol, dave), bob its editor; a second
    tenant owned by erin; every tenant user may create namespaces (test-only grant)."""
    plan = kit.plan(hard={"pods": "4"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"], "groups": ["team-b"]},
                   editors={"users": ["bob"]}, prefixed=["dev"])
    other = kit.tenant(plan=plan, owners={"users": ["erin"]})
    kit.grant([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]}],
              [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "tenant-users"}])
    kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_ready(other)
    for user in ("alice", "carol"):  # RBAC reaches the authorizer's cache asynchronously
        kit.wait_can_i(user, "own", f"tenants.{GROUP}/{t}", None)
    kit.wait_can_i("frank", "create", "namespaces", None)
    kit.apply_policies()
    try:
        kit.cluster.wait_for(lambda: labelling_refused(kit, t), 60,
                             what="the namespace metadata policy in force")
        yield t, other
    finally:
        kit.remove_policies()
        kit.cluster.wait_for(lambda: not labelling_refused(kit, t), 60,
                             what="the policies out of force")


def labelling_refused(kit, tenant):
    """Does the policy refuse frank (an outsider) a dry-run namespace labelled for tenant?"""
    try:
        k8s.CoreV1Api(kit.client("frank")).create_namespace(
            {"metadata": {"name": f"{tenant}-probe", "labels": {TENANT_LABEL: tenant}}},
            dry_run="All")
        return False
    except ApiException as e:
        return e.status == 403 and POLICY in e.body


def create_as(kit, user, name, labels=None, annotations=None):
    kit.expect_namespace(name)
    return k8s.CoreV1Api(kit.client(user)).create_namespace(
        {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}}})


def refused(kit, user, name, labels=None, annotations=None):
    with pytest.raises(ApiException) as e:
        create_as(kit, user, name, labels, annotations)
    assert e.value.status == 403 and POLICY in e.value.body, e.value.body
    return json.loads(e.value.body)["message"]


def test_owners_and_only_owners_hold_own_on_their_tenant(kit, acme):
    t, other = acme
    assert kit.can_i("alice", "own", f"tenants.{GROUP}/{t}")
    assert kit.can_i("carol", "own", f"tenants.{GROUP}/{t}")  # through group team-b
    assert not kit.can_i("bob", "own", f"tenants.{GROUP}/{t}")  # an editor
    assert not kit.can_i("alice", "own", f"tenants.{GROUP}/{other}")
    assert not kit.can_i("frank", "own", f"tenants.{GROUP}/{t}")  # an outsider


def test_an_owner_creates_a_namespace_for_its_tenant_and_landlord_provisions_it(kit, acme):
    t, _ = acme
    for user, name in (("alice", f"{t}-feature"), ("carol", f"{t}-team-b")):
        create_as(kit, user, name, {TENANT_LABEL: t})
        kit.wait_provisioned(name, t)
    kit.wait_tenant(t, lambda o: sorted(o["status"].get("adopted") or []) ==
                    sorted([f"{t}-feature", f"{t}-team-b"]), "status.adopted lists both")
    assert f"{t}-dev" not in kit.status(t)["adopted"]
    # the owner is admin there, through landlord's binding, not through having created it
    assert kit.can_i("alice", "create", "configmaps", f"{t}-team-b")
    kit.wait_can_i("bob", "create", "configmaps", f"{t}-feature")  # editor


def test_the_tenant_label_is_refused_to_non_owners_and_on_other_names(kit, acme):
    t, other = acme
    hint = f"an owner of tenant {t} may create a namespace named {t}-<name>"
    body = refused(kit, "bob", f"{t}-by-editor", {TENANT_LABEL: t})  # an editor
    assert hint in body, body
    refused(kit, "frank", f"{t}-by-outsider", {TENANT_LABEL: t})
    refused(kit, "alice", f"{other}-taken", {TENANT_LABEL: t})  # another tenant's prefix
    refused(kit, "alice", f"x{t}-almost", {TENANT_LABEL: t})
    refused(kit, "alice", f"{other}-stolen", {TENANT_LABEL: other})  # a tenant she doesn't own
    refused(kit, "alice", f"{t}-cordoned", {TENANT_LABEL: t, "landlord.dev/cordoned": "true"})
    refused(kit, "alice", f"{t}-sourced", {TENANT_LABEL: t},
            {"landlord.dev/source": "spec"})  # would make it purgeable
    # positive control: the same users may create namespaces without landlord's keys
    for user in ("bob", "frank"):
        assert create_as(kit, user, kit.name("plain")).metadata.name
    assert not any(kit.read_namespace(n) for n in (f"{t}-by-editor", f"{other}-stolen"))
