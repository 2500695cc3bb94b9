"""A Tenant's spec.hibernation (issue 15; docs/tenants.md#hibernation) on the real control plane:
landlord (its own least-privilege identity, the admission policies applied) makes one
ResourceSupervisor named after the tenant, and the supervisor controller of the same process
puts the tenant's namespaces to sleep and wakes them. kube-controller-manager runs the
deployment and replicaset controllers (no kubelet: pods stay Pending).

- no schedule: asleep at once; the supervisor labelled for the tenant and owned by it (its
  uid, controller); an administrator's edit of its spec put back, the administrator's
  annotation kept (landlord never writes a supervisor's annotations); spec.hibernation removed:
  the supervisor deleted and every Deployment restored exactly, the owners' rule on it gone;
- an owner (alice, in the Tenant's owners) sets the override with her own client: accepted, the
  Deployment wakes; her change of the spec refused by the landlord-hibernation policy; bob, no
  owner, refused by RBAC;
- a Tenant deleted while its namespaces sleep: the supervisor goes first, the namespaces are
  released awake and unmarked;
- a supervisor of the tenant's name made by an administrator: reported (HibernationConflict,
  naming it), never written, no right to it for the owners; once it is gone, landlord makes the
  tenant's;
- landlord-self-limits: an owners' role may hold get, patch and update on its own tenant's
  supervisor by name, nothing more (dry runs as landlord).
"""

import json
import time

import pytest
from kubernetes import client as k8s

from kube import GROUP, MANAGED_BY, VERSION, forbidden, ignore_404, refusal_message
from tenants import SELF_POLICY, TENANT_LABEL

RS = "resourcesupervisors"
SAVED = "landlord.dev/sleep-saved"
OVERRIDE = "landlord.dev/hibernation"
SLEEPING = "landlord.dev/sleeping"
RESERVED = "landlord.dev/sleep-reserved"
TIMEOUT = 60


def deployment(name, replicas):
    """A Deployment whose pods the restricted Pod Security level admits."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "automountServiceAccountToken": False,
                         "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                             "seccompProfile": {"type": "RuntimeDefault"}},
                         "containers": [{
                             "name": "app", "image": "registry.k8s.io/pause:3.10",
                             "securityContext": {"allowPrivilegeEscalation": False,
                                                 "capabilities": {"drop": ["ALL"]}}}]}}}}


def forbidden_message(fn, *args):
    """fn(*args) must be refused with 403: the Status message."""
    return json.loads(forbidden(fn, *args)).get("message", "")


pytestmark = pytest.mark.usefixtures("module_policies")


class Env:
    """One test's landlord (Kit), its Tenant and the supervisors it leaves behind."""

    def __init__(self, kit):
        self.kit = kit
        self.apps = k8s.AppsV1Api(kit.admin)
        self.extra = []  # supervisors the test makes as an administrator

    def tenant(self, prefixed, hibernation=None, **kw):
        """A Tenant owned by alice with these namespaces (and spec.hibernation), Ready."""
        spec = {"hibernation": hibernation} if hibernation is not None else {}
        name = self.kit.tenant(plan=self.kit.plan(), owners={"users": ["alice"]},
                               prefixed=prefixed, **spec, **kw)
        namespaces = [f"{name}-{p}" for p in prefixed]
        for ns in namespaces:
            self.kit.expect_namespace(ns)
        self.kit.wait_ready(name, namespaces)
        return name, namespaces

    # ---- supervisors ----

    def supervisor(self, name, client=None):
        api = k8s.CustomObjectsApi(client) if client else self.kit.custom
        return ignore_404(api.get_cluster_custom_object, GROUP, VERSION, RS, name)

    def patch(self, name, body, client=None):
        api = k8s.CustomObjectsApi(client) if client else self.kit.custom
        return api.patch_cluster_custom_object(GROUP, VERSION, RS, name, body)

    def wait_supervisor(self, name, predicate, what):
        return self.kit.cluster.wait_for(
            lambda: (lambda rs: rs if rs and predicate(rs) else None)(self.supervisor(name)),
            TIMEOUT, interval=0.2, what=f"supervisor {name}: {what}")

    def wait_gone(self, name):
        self.kit.cluster.wait_for(lambda: self.supervisor(name) is None, TIMEOUT,
                                  interval=0.2, what=f"supervisor {name} gone")

    def owner_rules(self, tenant):
        role = ignore_404(self.kit.rbac.read_cluster_role, f"landlord:tenant:{tenant}:owners")
        return [r for r in (role.rules or []) if r.resources == [RS]] if role else []

    def cleanup(self):
        for name in self.extra:
            ignore_404(self.kit.custom.delete_cluster_custom_object, GROUP, VERSION, RS, name)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(self.supervisor(n) for n in self.extra):
            time.sleep(0.2)
        for name in self.extra:  # landlord did not get to it: by hand
            if self.supervisor(name):
                ignore_404(self.kit.custom.patch_cluster_custom_object, GROUP, VERSION, RS,
                           name, {"metadata": {"finalizers": None}})

    # ---- workloads ----

    def deploy(self, ns, name, replicas):
        self.apps.create_namespaced_deployment(ns, deployment(name, replicas))
        return ns, name

    def replicas(self, ns, name):
        return self.apps.read_namespaced_deployment(name, ns).spec.replicas

    def saved(self, ns, name):
        meta = self.apps.read_namespaced_deployment(name, ns).metadata
        text = (meta.annotations or {}).get(SAVED)
        return json.loads(text) if text else None

    def wait_replicas(self, want, what):
        """Every (ns, name) of @want at its replicas."""
        self.kit.cluster.wait_for(
            lambda: all(self.replicas(*key) == n for key, n in want.items()), TIMEOUT,
            interval=0.2, what=what)

    def awake_and_unmarked(self, want, wait=True):
        """Every Deployment of @want at its replicas without landlord's saved value, and its
        namespace without the sleep marks (@wait: once they are; else now)."""
        def left():
            out = []
            for (ns, name), n in want.items():
                meta = self.kit.core.read_namespace(ns).metadata
                marks = [k for k in (meta.labels or {}) if k == SLEEPING] + \
                    [k for k in (meta.annotations or {}) if k == RESERVED]
                if self.replicas(ns, name) != n or self.saved(ns, name) or marks:
                    out.append((ns, name, self.replicas(ns, name), self.saved(ns, name), marks))
            return out
        if not wait:
            assert not left(), left()
            return
        try:
            self.kit.cluster.wait_for(lambda: not left(), TIMEOUT, interval=0.2,
                                      what=f"{sorted(want)} awake and unmarked")
        except pytest.fail.Exception:
            pytest.fail(f"not awake and unmarked: {left()}")


@pytest.fixture
def env(kit):
    e = Env(kit)
    kit.start()
    yield e
    e.cleanup()


def hibernation_cond(obj):
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c["type"] == "HibernationReady"), None)


def test_the_tenants_supervisor_sleeps_its_namespaces_until_spec_hibernation_goes(env):
    kit = env.kit
    tenant, (a, b) = env.tenant(["a", "b"], hibernation={})
    web, api = env.deploy(a, "web", 2), env.deploy(b, "api", 3)
    env.wait_replicas({web: 0, api: 0}, "both Deployments asleep")
    assert env.saved(*web) == {"supervisor": tenant, "field": "replicas", "value": 2}
    assert env.saved(*api) == {"supervisor": tenant, "field": "replicas", "value": 3}

    rs = env.supervisor(tenant)
    uid = kit.get_tenant(tenant)["metadata"]["uid"]
    assert rs["metadata"]["labels"] == {TENANT_LABEL: tenant, MANAGED_BY: "landlord"}
    assert rs["metadata"]["ownerReferences"] == [{
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "name": tenant, "uid": uid,
        "controller": True}]
    want_spec = {"namespaces": {"labelSelector": {"matchLabels": {TENANT_LABEL: tenant}}},
                 "schedule": {"timezone": "UTC"}, "enforce": False,
                 "allowWorkloadExclusion": False}
    assert rs["spec"] == want_spec
    assert hibernation_cond(kit.get_tenant(tenant))["status"] == "True"
    assert [r.resource_names for r in env.owner_rules(tenant)] == [[tenant]]

    # An administrator's edit of the spec is put back; its annotation is not landlord's.
    env.patch(tenant, {"metadata": {"annotations": {"note": "kept"}},
                       "spec": {"schedule": {"timezone": "Europe/Berlin"}}})
    rs = env.wait_supervisor(tenant, lambda o: o["spec"] == want_spec, "the spec put back")
    assert rs["metadata"]["annotations"]["note"] == "kept"

    kit.patch_tenant(tenant, {"hibernation": None})
    env.wait_gone(tenant)
    env.awake_and_unmarked({web: 2, api: 3})
    kit.wait_tenant(tenant, lambda o: hibernation_cond(o) is None and not
                    env.owner_rules(tenant), "no HibernationReady, no rule on the supervisor")


def test_owners_change_only_the_override_and_outsiders_nothing(env):
    kit = env.kit
    tenant, (a,) = env.tenant(["a"], hibernation={})
    web = env.deploy(a, "web", 2)
    env.wait_replicas({web: 0}, "asleep")
    alice, bob = kit.client("alice"), kit.client("bob")

    # RBAC reaches the authorizer's cache asynchronously: the first patch may come too early.
    kit.cluster.wait_for(
        lambda: refusal_message(lambda: env.patch(tenant, {"metadata": {"annotations": {
            OVERRIDE: "wake"}}}, alice)) is None,
        TIMEOUT, interval=0.3, what="alice may set the override")
    env.wait_replicas({web: 2}, "woken by alice's override")

    msg = forbidden_message(env.patch, tenant, {"spec": {"enforce": True}}, alice)
    assert (f"ResourceSupervisor {tenant} belongs to tenant {tenant} (its spec.hibernation): "
            "only the annotation landlord.dev/hibernation may be changed here") in msg, msg
    msg = forbidden_message(env.patch, tenant, {"metadata": {"labels": {TENANT_LABEL: "other"}}},
                    alice)
    assert "only the annotation landlord.dev/hibernation may be changed" in msg, msg
    msg = forbidden_message(env.patch, tenant, {"metadata": {"annotations": {OVERRIDE: "sleep"}}},
                    bob)
    assert 'User "bob" cannot patch resource "resourcesupervisors"' in msg, msg
    assert env.supervisor(tenant)["spec"]["enforce"] is False


def test_a_deleted_tenant_wakes_its_namespaces_before_releasing_them(env):
    kit = env.kit
    tenant, (a, b) = env.tenant(["a", "b"], hibernation={})
    web, api = env.deploy(a, "web", 2), env.deploy(b, "api", 1)
    env.wait_replicas({web: 0, api: 0}, "both Deployments asleep")

    kit.delete_tenant(tenant)
    kit.cluster.wait_for(lambda: kit.get_tenant(tenant) is None, TIMEOUT, interval=0.2,
                         what=f"tenant {tenant} gone")
    # The Tenant's finalizer went after the supervisor, which went after waking everything.
    assert env.supervisor(tenant) is None
    env.awake_and_unmarked({web: 2, api: 1}, wait=False)
    for ns in (a, b):  # released, not purged
        meta = kit.core.read_namespace(ns).metadata
        assert (meta.annotations or {}).get("landlord.dev/released-from") == tenant
        assert TENANT_LABEL not in (meta.labels or {})


def test_a_supervisor_of_the_tenants_name_is_reported_and_left_alone(env):
    kit = env.kit
    name = kit.name("t")
    env.extra.append(name)
    kit.custom.create_cluster_custom_object(GROUP, VERSION, RS, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSupervisor",
        "metadata": {"name": name},
        "spec": {"namespaces": {"names": [f"{name}-none"]},
                 "schedule": {"sleepSchedule": "0 0 1 1 *", "wakeSchedule": "0 1 1 1 *"}}})
    kit.tenant(name, plan=kit.plan(), owners={"users": ["alice"]}, hibernation={})

    def conflict(obj):
        c = hibernation_cond(obj)
        return c and c["status"] == "False" and c["reason"] == "HibernationConflict"
    obj = kit.wait_tenant(name, conflict, "HibernationReady=False, HibernationConflict")
    assert f"ResourceSupervisor {name} exists and is not this tenant's" in \
        hibernation_cond(obj)["message"]
    ready = kit.condition_of(obj, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "HibernationConflict"), ready
    rs = env.supervisor(name)
    assert "ownerReferences" not in rs["metadata"] and "labels" not in rs["metadata"], rs
    assert rs["spec"]["namespaces"] == {"names": [f"{name}-none"]}
    assert env.owner_rules(name) == []
    msg = forbidden_message(env.patch, name, {"metadata": {"annotations": {OVERRIDE: "sleep"}}},
                    kit.client("alice"))
    assert 'User "alice" cannot patch resource "resourcesupervisors"' in msg, msg

    kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, name)
    env.wait_supervisor(name, lambda o: o["metadata"].get("labels", {}).get(TENANT_LABEL) ==
                        name, "the tenant's own, once the other is gone")
    env.extra.remove(name)  # the tenant's now: its teardown deletes it
    kit.wait_condition(name, "HibernationReady", "True", "Provisioned")


def owners_role(name, rules):
    return {"metadata": {"name": name}, "rules": rules}


def rs_rule(names, verbs=("get", "patch", "update")):
    return {"apiGroups": [GROUP], "resources": [RS], "resourceNames": names,
            "verbs": list(verbs)}


@pytest.mark.parametrize("role,rule,allowed", [
    pytest.param("landlord:tenant:x:owners", rs_rule(["x"]), True, id="its-own"),
    pytest.param("landlord:tenant:x:owners", rs_rule(["x"], ["patch"]), True, id="patch-only"),
    pytest.param("landlord:tenant:x:owners", rs_rule(["y"]), False, id="another-tenants"),
    pytest.param("landlord:tenant:x:owners", rs_rule(["x", "y"]), False, id="two"),
    pytest.param("landlord:tenant:x:owners",
                 rs_rule(["x"], ["get", "patch", "update", "delete"]), False, id="delete"),
    pytest.param("landlord:tenant:x:owners", {"apiGroups": [GROUP], "resources": [RS],
                                              "verbs": ["patch"]}, False, id="every-one"),
    pytest.param("landlord:tenant:x:owners",
                 {**rs_rule(["x"]), "resources": [RS, f"{RS}/status"]}, False, id="status"),
    pytest.param("landlord:tenant:x", rs_rule(["x"]), False, id="members-role"),
])
def test_landlord_may_let_owners_change_only_their_own_supervisor(kit, role, rule, allowed):
    """landlord-self-limits: the owners' role may get, patch and update the supervisor named as
    its tenant, by name, and nothing else of supervisors (dry runs as landlord)."""
    rbac = k8s.RbacAuthorizationV1Api(kit.client("landlord"))

    def create():
        return rbac.create_cluster_role(owners_role(role, [rule]), dry_run="All")
    if allowed:  # a policy just applied takes a moment to be in force
        kit.cluster.wait_for(lambda: refusal_message(create) is None, TIMEOUT, interval=0.3,
                             what=f"landlord may write {role}")
        return
    msg = kit.cluster.wait_for(lambda: refusal_message(create), TIMEOUT, interval=0.3,
                               what=f"landlord may not write {role}")
    assert SELF_POLICY in msg, msg
    assert ("its owners' role may also create namespaces and delete named ones (not default, "
            "landlord-system or kube-*), and get, patch and update the ResourceSupervisor of "
            "its own tenant's name") in msg, msg
