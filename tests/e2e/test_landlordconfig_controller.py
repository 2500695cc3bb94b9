"""The LandlordConfig controller with the real binary under its least-privilege identity
(docs/config.md is the contract): accepted configurations are put in force and persisted in the
ConfigMap landlord-system/landlord-config-accepted, invalid ones are reported field by field and
change nothing, the persisted one is what a restarted landlord loads, and tenants can neither
read nor change any of it.

Every test leaves the singleton deleted and the ConfigMap holding the defaults, which is what a
landlord started on a cluster without a LandlordConfig writes, so later tests see no writes.
"""

import hashlib
import json

import pytest
from kubernetes import client as k8s

from kube import GROUP, VERSION, condition_of, core, custom, forbidden, ignore_404, short_id
from procs import start_controllers
from tenants import (allow_landlord_to_bind, forbid_landlord_to_bind, rendered_roles,
                     shipped_bind_roles)

PLURAL = "landlordconfigs"
NAME = "landlord"
SYSTEM_NS = "landlord-system"
CONFIGMAP = "landlord-config-accepted"
TIMEOUT = 60

DEFAULT_SPEC = {
    "tenantRoles": {"default": {"owner": "admin", "editor": "edit", "viewer": "view"},
                    "custom": []},
    "privileged": {"namespaces": [], "users": [], "groups": [], "serviceAccounts": []},
    "namespaceMetadata": {"labels": {}, "annotations": {}},
    "defaults": {"podSecurity": "restricted", "networkIsolation": True},
    "integrations": {},
    "showback": {"currency": "USD", "cpuCoreHour": "0", "memoryGiBHour": "0",
                 "storageGiBMonth": "0"},
}

VALID_SPEC = {
    "defaults": {"podSecurity": "baseline", "networkIsolation": False},
    "privileged": {"users": ["ops-.*"], "namespaces": ["kube-.*"]},
    "namespaceMetadata": {"labels": {"cost-center": "cc-42"}},
    "showback": {"cpuCoreHour": "0.0310", "currency": "EUR"},
}


def get_config(cluster):
    return ignore_404(custom(cluster).get_cluster_custom_object, GROUP, VERSION, PLURAL, NAME)


def delete_config(cluster):
    ignore_404(custom(cluster).delete_cluster_custom_object, GROUP, VERSION, PLURAL, NAME)
    cluster.wait_for(lambda: get_config(cluster) is None, TIMEOUT, what="LandlordConfig gone")


def apply_spec(cluster, spec):
    """Create or replace the singleton's spec as admin; returns the new generation."""
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LandlordConfig",
            "metadata": {"name": NAME}, "spec": spec}
    now = get_config(cluster)
    if now is None:
        obj = custom(cluster).create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    else:
        body["metadata"]["resourceVersion"] = now["metadata"]["resourceVersion"]
        obj = custom(cluster).replace_cluster_custom_object(GROUP, VERSION, PLURAL, NAME, body)
    return obj["metadata"]["generation"]


def read_configmap(cluster):
    return ignore_404(core(cluster).read_namespaced_config_map, CONFIGMAP, SYSTEM_NS)


def persisted_spec(cluster):
    cm = read_configmap(cluster)
    if cm is None or not cm.data or "config.json" not in cm.data:
        return None
    return json.loads(cm.data["config.json"])["spec"]


def wait_persisted(cluster, want_spec):
    cluster.wait_for(lambda: persisted_spec(cluster) == want_spec, TIMEOUT,
                     what=f"ConfigMap {CONFIGMAP} to hold {want_spec}")
    return read_configmap(cluster)


def wait_verdict(cluster, reason, generation):
    """The singleton once its status reports @reason for @generation."""
    def check():
        obj = get_config(cluster)
        if obj is None or (obj.get("status") or {}).get("observedGeneration") != generation:
            return None
        accepted = condition_of(obj, "Accepted")
        return obj if accepted and accepted["reason"] == reason else None
    return cluster.wait_for(check, TIMEOUT, what=f"LandlordConfig {reason} at {generation}")


def events_about(cluster, obj):
    """{reason: (type, message)} of the Events about this very object (found by uid)."""
    items = core(cluster).list_namespaced_event(
        "default", field_selector=f"involvedObject.uid={obj['metadata']['uid']}").items
    return {e.reason: (e.type, e.message) for e in items}


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def landlord(installed, tmp_path):
    """Starts landlord processes. Each test starts from no LandlordConfig and ends with none
    and the defaults persisted (by a landlord still running, or one started for that)."""
    delete_config(installed)
    procs = []

    def start(name="landlord"):
        p = start_controllers(installed, tmp_path, name=name)
        procs.append(p)
        return p

    yield start
    delete_config(installed)
    if not [p for p in procs if p.popen.poll() is None]:
        start("cleanup")
    wait_persisted(installed, DEFAULT_SPEC)
    for p in procs:
        if p.popen.poll() is None:
            assert p.stop() == 0


def test_without_a_config_the_defaults_are_persisted(landlord, installed):
    ignore_404(core(installed).delete_namespaced_config_map, CONFIGMAP, SYSTEM_NS)
    proc = landlord()
    assert proc.wait_record("no accepted LandlordConfig persisted yet; the defaults are in "
                            "force")
    cm = wait_persisted(installed, DEFAULT_SPEC)
    assert cm.metadata.labels.get("app.kubernetes.io/managed-by") == "landlord"
    assert [m.manager for m in cm.metadata.managed_fields] == ["landlord"]
    # landlord's own default roles (what it just persisted) are exactly those deploy/rbac.yaml
    # lets it bind, and those scripts/render-rbac.py renders for the defaults.
    roles = json.loads(cm.data["config.json"])["spec"]["tenantRoles"]["default"]
    assert sorted(set(roles.values())) == shipped_bind_roles() == rendered_roles()


def test_a_valid_config_is_accepted_put_in_force_and_persisted(landlord, installed):
    proc = landlord()
    gen = apply_spec(installed, VALID_SPEC)
    obj = wait_verdict(installed, "Accepted", gen)
    st = obj["status"]
    assert st["lastAppliedGeneration"] == gen
    assert "invalid" not in st
    assert condition_of(obj, "Accepted")["status"] == "True"
    ready = condition_of(obj, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Accepted")
    assert ready["observedGeneration"] == gen

    # Persisted normalized: every field present, prices canonical.
    spec = installed.wait_for(
        lambda: (persisted_spec(installed) or {}).get("defaults", {}).get("podSecurity")
        == "baseline" and persisted_spec(installed), TIMEOUT, what="valid config persisted")
    assert spec["defaults"] == {"podSecurity": "baseline", "networkIsolation": False}
    assert spec["privileged"]["users"] == ["ops-.*"]
    assert spec["namespaceMetadata"]["labels"] == {"cost-center": "cc-42"}
    assert spec["showback"]["cpuCoreHour"] == "0.031"
    assert spec["showback"]["currency"] == "EUR"
    assert spec["tenantRoles"]["default"] == DEFAULT_SPEC["tenantRoles"]["default"]
    text = read_configmap(installed).data["config.json"]
    assert "\n" not in text
    logged = [r for r in proc.find("persisted the accepted LandlordConfig")
              if r["digest"] == digest(text)]
    assert logged, proc.log_path.read_text()[-3000:]
    assert proc.find("LandlordConfig accepted and in force")[-1]["generation"] == gen


def test_an_invalid_config_changes_nothing_and_the_last_valid_one_survives_a_restart(
        landlord, kit, installed):
    kit.start()
    good = apply_spec(installed, VALID_SPEC)
    wait_verdict(installed, "Accepted", good)
    cm = installed.wait_for(
        lambda: (persisted_spec(installed) or {}).get("defaults", {}).get("podSecurity")
        == "baseline" and read_configmap(installed), TIMEOUT, what="valid config persisted")
    stored, rv = cm.data["config.json"], cm.metadata.resource_version

    bad_spec = dict(VALID_SPEC, defaults={"podSecurity": "privileged"},
                    namespaceMetadata={"labels": {"cost-center": "cc-bad"}},
                    privileged={"users": ["(ops", "fine", "[a-"], "groups": ["admins"]})
    bad = apply_spec(installed, bad_spec)
    obj = wait_verdict(installed, "Invalid", bad)
    st = obj["status"]
    fields = [p["field"] for p in st["invalid"]]
    assert fields == ["spec.privileged.users[0]", "spec.privileged.users[2]"], st["invalid"]
    assert all("regular expression" in p["message"] for p in st["invalid"])
    assert st["lastAppliedGeneration"] == good
    accepted, ready = condition_of(obj, "Accepted"), condition_of(obj, "Ready")
    assert (accepted["status"], ready["status"], ready["reason"]) == ("False", "False", "Invalid")
    assert "spec.privileged.users[0]" in accepted["message"]
    assert kit.landlord.find("LandlordConfig rejected; the configuration in force is unchanged")
    events = installed.wait_for(lambda: len(events_about(installed, obj)) >= 2 and
                                events_about(installed, obj), TIMEOUT, what="two Events")
    assert sorted(events) == ["Accepted", "Invalid"]
    assert events["Accepted"] == ("Normal", f"generation {good} is in force")
    assert events["Invalid"][0] == "Warning"
    assert "spec.privileged.users[0]" in events["Invalid"][1]
    # Nothing persisted.
    cm = read_configmap(installed)
    assert (cm.data["config.json"], cm.metadata.resource_version) == (stored, rv)
    kit.stop()

    # A new process loads the last accepted configuration, not the invalid object...
    status_rv = get_config(installed)["metadata"]["resourceVersion"]
    second = kit.start()
    loaded = second.wait_record("loaded the last accepted LandlordConfig")
    assert loaded["digest"] == digest(stored)
    assert loaded["resourceVersion"] == rv
    # ...reconciles (the singleton and every ClusterRole key) and writes nothing: the status
    # already says what it would say, and the ConfigMap holds the last valid configuration.
    roles = len(k8s.RbacAuthorizationV1Api(installed.client("admin")).list_cluster_role().items)
    installed.wait_for(lambda: second.metric("landlord_reconcile_total",
                                             controller="landlordconfig") >= roles + 1,
                       what="the singleton and every ClusterRole key reconciled")
    assert get_config(installed)["metadata"]["resourceVersion"] == status_rv
    cm = read_configmap(installed)
    assert (cm.data["config.json"], cm.metadata.resource_version) == (stored, rv)
    assert not second.find("LandlordConfig accepted and in force")
    # ...and that is the configuration in force: tenant namespaces get its metadata.
    tenant = kit.tenant(plan=kit.plan(), owners={"users": ["alice"]}, prefixed=["dev"])
    ns = kit.expect_namespace(f"{tenant}-dev")
    kit.wait_ready(tenant, [ns])
    assert kit.labels(ns).get("cost-center") == "cc-42"

    # Fixing the object puts it in force again, and tenants follow.
    fixed_spec = dict(bad_spec, privileged={"users": ["ops"]})
    fixed_spec["namespaceMetadata"] = {"labels": {"cost-center": "cc-fixed"}}
    fixed = apply_spec(installed, fixed_spec)
    wait_verdict(installed, "Accepted", fixed)
    installed.wait_for(lambda: (persisted_spec(installed) or {}).get("defaults") ==
                       {"podSecurity": "privileged", "networkIsolation": True}, TIMEOUT,
                       what="the fixed config persisted")
    installed.wait_for(lambda: kit.labels(ns).get("cost-center") == "cc-fixed", TIMEOUT,
                       what="the tenant namespace relabelled from the new configuration")


def test_a_config_naming_a_missing_cluster_role_is_rejected_until_it_exists(landlord, installed):
    landlord()
    role = f"e2e-viewer-{short_id()}"
    rbac = k8s.RbacAuthorizationV1Api(installed.client("admin"))
    # landlord may bind it once it exists, as an administrator grants it.
    grant = allow_landlord_to_bind(installed, role)
    wait_persisted(installed, DEFAULT_SPEC)
    gen = apply_spec(installed, {"tenantRoles": {"default": {"viewer": role}},
                                 "defaults": {"podSecurity": "baseline"}})
    obj = wait_verdict(installed, "UnknownClusterRole", gen)
    assert obj["status"]["invalid"] == [{
        "field": "spec.tenantRoles.default.viewer",
        "message": f'ClusterRole "{role}" does not exist'}]
    assert condition_of(obj, "Ready")["status"] == "False"
    assert persisted_spec(installed) == DEFAULT_SPEC

    rbac.create_cluster_role(k8s.V1ClusterRole(metadata=k8s.V1ObjectMeta(name=role), rules=[]))
    try:
        obj = wait_verdict(installed, "Accepted", gen)
        assert "invalid" not in obj["status"]
        installed.wait_for(lambda: (persisted_spec(installed) or {}).get("tenantRoles", {})
                           .get("default", {}).get("viewer") == role, TIMEOUT,
                           what="the config naming the new role persisted")
    finally:
        rbac.delete_cluster_role(role)
        forbid_landlord_to_bind(installed, grant)
    # The role going away is noticed too.
    wait_verdict(installed, "UnknownClusterRole", gen)


def not_bindable(role):
    return (f'landlord may not bind ClusterRole "{role}": add it to resourceNames of the bind '
            "rule in ClusterRole landlord (deploy/rbac.yaml), or render it with "
            "scripts/render-rbac.py")


def test_a_role_landlord_may_not_bind_is_rejected_until_an_administrator_allows_it(
        landlord, kit, installed):
    """The configuration is not put in force (tenants keep their RoleBindings) and says which
    role and which line; once the administrator lets landlord bind the role, it is accepted
    without anything else changing, and tenants get RoleBindings of it."""
    rbac = k8s.RbacAuthorizationV1Api(installed.client("admin"))
    role = f"e2e-ops-admin-{short_id()}"
    # A rule landlord does not hold: Kubernetes would refuse landlord's RoleBinding of it too.
    rbac.create_cluster_role({"metadata": {"name": role}, "rules": [{
        "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
    kit.cluster_roles.append(role)
    kit.start()
    tenant = kit.tenant(plan=kit.plan(), owners={"users": ["alice"]}, prefixed=["ops"])
    ns = kit.expect_namespace(f"{tenant}-ops")
    kit.wait_ready(tenant, [ns])
    assert kit.rolebinding(ns, "landlord-owners-admin")
    spec = {"defaults": {"podSecurity": "baseline"}, "tenantRoles": {"custom": [{
        "labelSelector": {"matchLabels": {"landlord.dev/tenant": tenant}}, "owner": role}]}}
    gen = apply_spec(installed, spec)
    obj = wait_verdict(installed, "RoleNotBindable", gen)
    assert obj["status"]["invalid"] == [{"field": "spec.tenantRoles.custom[0].owner",
                                         "message": not_bindable(role)}]
    accepted = condition_of(obj, "Accepted")
    assert accepted["status"] == "False"
    assert not_bindable(role) in accepted["message"], accepted["message"]
    assert condition_of(obj, "Ready")["reason"] == "RoleNotBindable"
    assert "lastAppliedGeneration" not in obj["status"]
    events = installed.wait_for(lambda: "RoleNotBindable" in events_about(installed, obj) and
                                events_about(installed, obj), TIMEOUT, what="the Event")
    assert events["RoleNotBindable"][0] == "Warning"
    # Nothing put in force: the defaults stay persisted, and the owners keep admin.
    assert persisted_spec(installed) == DEFAULT_SPEC
    assert kit.rolebinding(ns, "landlord-owners-admin")
    assert not kit.rolebinding(ns, f"landlord-owners-{role}")

    # The administrator adds the line: bind on that one role, by resourceNames.
    kit.allow_landlord_to_bind(role)
    obj = wait_verdict(installed, "Accepted", gen)
    assert obj["status"]["lastAppliedGeneration"] == gen and "invalid" not in obj["status"]
    installed.wait_for(lambda: (persisted_spec(installed) or {}).get("defaults", {})
                       .get("podSecurity") == "baseline", TIMEOUT, what="the config persisted")
    installed.wait_for(lambda: kit.rolebinding(ns, f"landlord-owners-{role}")
                       and not kit.rolebinding(ns, "landlord-owners-admin"), TIMEOUT,
                       interval=0.3, what=f"the owners' RoleBinding of {role}")


def test_deleting_the_config_puts_the_defaults_in_force_and_persists_them(landlord, installed):
    proc = landlord()
    gen = apply_spec(installed, VALID_SPEC)
    wait_verdict(installed, "Accepted", gen)
    installed.wait_for(lambda: persisted_spec(installed) not in (None, DEFAULT_SPEC), TIMEOUT,
                       what="the valid config persisted")
    delete_config(installed)
    wait_persisted(installed, DEFAULT_SPEC)
    installed.wait_for(lambda: proc.find("no LandlordConfig named landlord: the defaults are "
                                         "in force"), TIMEOUT, what="the defaults logged")


def test_tenant_users_cannot_read_or_change_the_config(installed):
    delete_config(installed)
    apply_spec(installed, {})
    try:
        api, v1 = custom(installed, "alice"), core(installed, "alice")
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LandlordConfig",
                "metadata": {"name": NAME}, "spec": {}}
        patch = {"spec": {"defaults": {"podSecurity": "privileged"}}}
        forbidden(api.get_cluster_custom_object, GROUP, VERSION, PLURAL, NAME)
        forbidden(api.list_cluster_custom_object, GROUP, VERSION, PLURAL)
        forbidden(api.create_cluster_custom_object, GROUP, VERSION, PLURAL, body)
        forbidden(api.patch_cluster_custom_object, GROUP, VERSION, PLURAL, NAME, patch)
        forbidden(api.patch_cluster_custom_object_status, GROUP, VERSION, PLURAL, NAME,
                         {"status": {"observedGeneration": 99}})
        forbidden(api.delete_cluster_custom_object, GROUP, VERSION, PLURAL, NAME)
        forbidden(v1.read_namespaced_config_map, CONFIGMAP, SYSTEM_NS)
        forbidden(v1.list_namespaced_config_map, SYSTEM_NS)
        forbidden(v1.patch_namespaced_config_map, CONFIGMAP, SYSTEM_NS,
                         {"data": {"config.json": "{}"}})
        forbidden(v1.delete_namespaced_config_map, CONFIGMAP, SYSTEM_NS)
        forbidden(v1.create_namespaced_config_map, SYSTEM_NS,
                         k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="x"), data={}))
        # The admin (who is allowed) still reads it: the 403s are about alice, not the objects.
        assert get_config(installed) is not None
    finally:
        delete_config(installed)
