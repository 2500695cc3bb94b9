"""The TemplateInstance controller (issue 13, points 2, 4 to 6; docs/templates.md) on the real
control plane: an editor's instance is rendered and applied as the namespace's editor account
(ti.<ns>.editor in landlord-system, bound there to edit), never as landlord; parameter values
stay literal strings; what the editor could not do itself is refused whole at the dry run with
nothing written; drift (a deleted object, an edited field) is reverted by watch; what the
Template no longer renders is pruned; a deleted instance is cleaned by its finalizer. The
webhook (registered by every landlord here) refuses bad parameters and Templates not
instantiable in the namespace at the door and records the writer (bob: editor); the controller
rechecks instances admitted before their Template changed.
"""

import base64
import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from helm_env import configmap as read_cm  # the ConfigMap of env's namespace, or None
from helm_env import get_ti, instance
from kube import GROUP, VERSION
from tenants import restricted_pod

TI, TPL = "templateinstances", "templates"
SYSTEM = "landlord-system"
TIMEOUT = 60


@pytest.fixture
def env(kit, created):
    """Tenant t (owner alice, editor bob, images from registry.k8s.io only) with namespace
    t-dev, and tenant other with other-dev; landlord running with its webhook."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"], allowed={"registries": ["registry.k8s.io"]})
    other = kit.tenant(plan=plan, owners={"users": ["erin"]}, prefixed=["dev"])
    kit.expect_namespace(f"{t}-dev")
    kit.expect_namespace(f"{other}-dev")
    kit.start()
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_ready(other, [f"{other}-dev"])
    kit.wait_can_i("bob", "create", "templateinstances.landlord.dev", f"{t}-dev")
    yield {"kit": kit, "t": t, "ns": f"{t}-dev", "other": other, "created": created}


def template(env, manifests, parameters=None, instantiable=True):
    name = env["kit"].name("tpl")
    spec = {"resources": {"manifests": manifests}}
    if parameters:
        spec["parameters"] = parameters
    if instantiable:
        spec["instantiableIn"] = {"matchExpressions": [
            {"key": "landlord.dev/tenant", "operator": "Exists"}]}
    env["kit"].custom.create_cluster_custom_object(GROUP, VERSION, TPL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": name},
        "spec": spec})
    env["created"].append((TPL, name))
    return name


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def condition(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return c
    return None


def wait_ti(env, name, status, reason=None):
    def ok():
        c = condition(get_ti(env, name), "Ready")
        return c and c["status"] == status and (reason is None or c["reason"] == reason)
    try:
        env["kit"].cluster.wait_for(ok, TIMEOUT, what=f"TemplateInstance {name} Ready={status} "
                                    f"{reason or ''}\n{env['kit'].log_tail()}")
    except BaseException:
        print(json.dumps(get_ti(env, name).get("status"), indent=1))
        raise
    return get_ti(env, name)


def wait_cm(env, name, predicate, what):
    env["kit"].cluster.wait_for(lambda: predicate(read_cm(env, name)), TIMEOUT,
                                what=f"{what}\n{env['kit'].log_tail()}")
    return read_cm(env, name)


PARAMS = [{"name": "TEAM", "value": "web", "validation": "^[a-z]+$"},
          {"name": "NOTE", "value": ""}, {"name": "REPLICAS", "value": "1", "type": "number"}]


def test_an_editors_instance_is_applied_as_the_editor_account_with_literal_values(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, [configmap("app", {"team": "${{TEAM}}", "where": "${namespace}",
                                            "tenant": "${tenant}", "note": "${{NOTE}}"})],
                    PARAMS)
    injection = "x\nkey: v\n---\nkind: Secret ${{TEAM}} ${namespace}"
    name = instance(env, "bob", tmpl, {"TEAM": "blue", "NOTE": injection})
    obj = wait_ti(env, name, "True", "Applied")
    cm = read_cm(env, "app")
    assert cm.data == {"team": "blue", "where": ns, "tenant": env["t"], "note": injection}
    assert cm.metadata.labels["landlord.dev/ti"] == name
    managers = {m.manager for m in cm.metadata.managed_fields}
    assert f"landlord/ti/{ns}/{name}" in managers and "landlord" not in managers
    assert obj["status"]["rows"] == [{"namespace": ns, "ready": True, "applied": 1,
                                      "rendered": 1}]
    assert obj["status"]["kinds"] == ["v1/ConfigMap"]
    # the account it wrote as: in landlord-system, bound in the namespace to edit
    sa = kit.core.read_namespaced_service_account(f"ti.{ns}.editor", SYSTEM)
    assert sa.automount_service_account_token is False
    rb = kit.rbac.read_namespaced_role_binding("landlord-ti-editor", ns)
    assert rb.role_ref.name == "edit"
    assert [(s.kind, s.namespace, s.name) for s in rb.subjects] == [
        ("ServiceAccount", SYSTEM, f"ti.{ns}.editor")]
    assert rb.metadata.labels["app.kubernetes.io/managed-by"] == "landlord"


def test_what_the_editor_could_not_do_is_refused_whole_and_nothing_is_written(env):
    ns = env["ns"]
    escalate = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "grab-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "admin"},
                "subjects": [{"kind": "User", "name": "bob"}]}
    tmpl = template(env, [configmap("before-escalation", {"k": "v"}), escalate])
    name = instance(env, "bob", tmpl)
    obj = wait_ti(env, name, "False", "Forbidden")
    failing = obj["status"]["failing"]
    assert failing[0]["object"] == "RoleBinding/grab-admin", failing
    assert "escalat" in failing[0]["message"] or "forbidden" in failing[0]["message"].lower()
    assert read_cm(env, "before-escalation") is None  # the dry run stopped everything
    with pytest.raises(ApiException) as e:
        env["kit"].rbac.read_namespaced_role_binding("grab-admin", ns)
    assert e.value.status == 404


def test_the_webhook_judges_the_apply_account_as_a_member_of_the_tenant(env):
    pod = restricted_pod("x", labels={"app": "evil"})
    pod["spec"]["containers"][0]["image"] = "docker.io/evil/miner:1"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "evil"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "evil"}},
                           "template": {"metadata": {"labels": {"app": "evil"}},
                                        "spec": pod["spec"]}}}
    name = instance(env, "bob", template(env, [configmap("with-evil", {"k": "v"}), deployment]))

    def first_failing():  # a first apply may meet the new account's binding not yet in force
        return ((get_ti(env, name).get("status") or {}).get("failing") or [{}])[0]
    env["kit"].cluster.wait_for(lambda: first_failing().get("object") == "Deployment/evil",
                                TIMEOUT, what=f"the Deployment refused\n{env['kit'].log_tail()}")
    obj = wait_ti(env, name, "False")
    msg = obj["status"]["failing"][0]["message"]
    assert obj["status"]["failing"][0]["object"] == "Deployment/evil", obj["status"]
    assert "docker.io/evil/miner:1" in msg and "not from a registry allowed" in msg, msg
    assert read_cm(env, "with-evil") is None


def test_no_tenant_member_can_impersonate_an_apply_account(env):
    kit, ns = env["kit"], env["ns"]
    instance(env, "bob", template(env, [configmap("probe", {"k": "v"})]))
    wait_cm(env, "probe", lambda cm: cm is not None, "an account exists")
    for user in ("bob", "alice"):  # the namespace's editor and its owner (admin)
        for role in ("editor", "owner"):
            r = kit.cluster.kubectl(user, "get", "configmaps", "-n", ns, "--as",
                                    f"system:serviceaccount:{SYSTEM}:ti.{ns}.{role}")
            assert r.returncode != 0 and "cannot impersonate" in r.stderr, (user, r.stderr)


def test_cluster_scoped_objects_other_namespaces_and_bad_parameters_fail_by_name(env):
    kit = env["kit"]
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": kit.name("crb")},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                       "name": "view"}, "subjects": [{"kind": "User", "name": "bob"}]}
    elsewhere = configmap("elsewhere", {"k": "v"})
    elsewhere["metadata"]["namespace"] = "kube-system"
    for manifests, what in (([crb], "cluster-scoped"), ([elsewhere], "kube-system")):
        name = instance(env, "bob", template(env, manifests))
        obj = wait_ti(env, name, "False", "Forbidden")
        assert what in condition(obj, "Ready")["message"], condition(obj, "Ready")
    assert read_cm(env, "elsewhere") is None
    tmpl = template(env, [configmap("never", {"team": "${{TEAM}}"})], PARAMS)
    # the webhook refuses a bad parameter at the door (test_template_admission.py)...
    with pytest.raises(ApiException) as e:
        instance(env, "bob", tmpl, {"TEAM": "NOT VALID"})
    assert e.value.status == 403, e.value.body
    assert 'spec.parameters[TEAM]: \\"NOT VALID\\" does not match' in e.value.body, e.value.body
    assert read_cm(env, "never") is None
    # ...and the controller one the Template came to refuse after it was admitted
    name = instance(env, "bob", tmpl, {"TEAM": "shop"})
    wait_ti(env, name, "True")
    narrower = [dict(p, validation="^[a-z]{1,3}$") if p["name"] == "TEAM" else p for p in PARAMS]
    env["kit"].custom.patch_cluster_custom_object(GROUP, VERSION, TPL, tmpl,
                                                  {"spec": {"parameters": narrower}})
    obj = wait_ti(env, name, "False", "ParameterInvalid")
    msg = condition(obj, "Ready")["message"]
    assert 'spec.parameters[TEAM]: "shop" does not match ^[a-z]{1,3}$' in msg, msg


def test_a_template_not_instantiable_here_applies_nothing(env):
    tmpl = template(env, [configmap("nowhere", {"k": "v"})], instantiable=False)
    # the webhook refuses it at the door (test_template_admission.py)...
    with pytest.raises(ApiException) as e:
        instance(env, "bob", tmpl)
    assert e.value.status == 403 and "spec.instantiableIn" in e.value.body, e.value.body
    assert read_cm(env, "nowhere") is None
    # ...and the controller stops an instance whose Template no longer selects its namespace
    tmpl = template(env, [configmap("here", {"k": "v"})])
    name = instance(env, "bob", tmpl)
    wait_ti(env, name, "True")
    env["kit"].custom.patch_cluster_custom_object(GROUP, VERSION, TPL, tmpl, {
        "spec": {"instantiableIn": {"matchExpressions": None,
                                    "matchLabels": {"landlord.dev/tenant": "nobody"}}}})
    obj = wait_ti(env, name, "False", "NotInstantiable")
    assert "spec.instantiableIn" in condition(obj, "Ready")["message"]


def test_drift_is_reverted_by_watch_and_what_is_no_longer_rendered_is_pruned(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, [configmap("kept", {"k": "v"}), configmap("dropped", {"k": "v"})])
    name = instance(env, "bob", tmpl)
    wait_ti(env, name, "True")
    # an edit by hand is reverted
    kit.core.patch_namespaced_config_map("kept", ns, {"data": {"k": "edited"}})
    wait_cm(env, "kept", lambda cm: cm and cm.data == {"k": "v"}, "the edit reverted")
    # a deleted object comes back
    kit.core.delete_namespaced_config_map("kept", ns)
    wait_cm(env, "kept", lambda cm: cm is not None, "the deleted ConfigMap restored")
    # the Template drops one: it is pruned
    kit.custom.patch_cluster_custom_object(GROUP, VERSION, TPL, tmpl, {
        "spec": {"resources": {"manifests": [configmap("kept", {"k": "v2"})]}}})
    wait_cm(env, "dropped", lambda cm: cm is None, "the dropped ConfigMap pruned")
    wait_cm(env, "kept", lambda cm: cm and cm.data == {"k": "v2"}, "the change applied")
    # ignore-updates: an object so labelled by hand is left alone, by drift and by changes
    kit.core.patch_namespaced_config_map("kept", ns, {
        "metadata": {"labels": {"landlord.dev/ignore-updates": "true"}}, "data": {"k": "mine"}})
    kit.custom.patch_cluster_custom_object(GROUP, VERSION, TPL, tmpl, {
        "spec": {"resources": {"manifests": [configmap("kept", {"k": "v3"}),
                                             configmap("added", {"k": "v"})]}}})
    wait_cm(env, "added", lambda cm: cm is not None, "the added ConfigMap applied")
    assert read_cm(env, "kept").data == {"k": "mine"}


def test_sync_false_applies_once_and_a_deleted_instance_is_cleaned(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, [configmap("once", {"k": "v"})])
    name = instance(env, "bob", tmpl, sync=False)
    wait_ti(env, name, "True")
    kit.core.patch_namespaced_config_map("once", ns, {"data": {"k": "edited"}})
    kit.custom.patch_cluster_custom_object(GROUP, VERSION, TPL, tmpl, {
        "spec": {"resources": {"manifests": [configmap("once", {"k": "v2"})]}}})
    # a later instance of the same Template in sync converges; this one stays as edited
    probe = instance(env, "bob", template(env, [configmap("probe", {"k": "v"})]))
    wait_ti(env, probe, "True")
    assert read_cm(env, "once").data == {"k": "edited"}
    # deleting the instances cleans what they applied, then the accounts
    k8s.CustomObjectsApi(kit.client("bob")).delete_namespaced_custom_object(
        GROUP, VERSION, ns, TI, name)
    k8s.CustomObjectsApi(kit.client("bob")).delete_namespaced_custom_object(
        GROUP, VERSION, ns, TI, probe)
    wait_cm(env, "once", lambda cm: cm is None, "the instance's ConfigMap deleted")
    wait_cm(env, "probe", lambda cm: cm is None, "the other instance's ConfigMap deleted")

    kit.cluster.wait_for(
        lambda: kit.custom.list_namespaced_custom_object(GROUP, VERSION, ns, TI)["items"] == [],
        TIMEOUT, what=f"both instances gone (their finalizer removed)\n{kit.log_tail()}")
    # the last one out released the account's binding before its finalizer went
    with pytest.raises(ApiException) as e:
        kit.rbac.read_namespaced_role_binding("landlord-ti-editor", ns)
    assert e.value.status == 404


def read_secret(env, name):
    try:
        return env["kit"].core.read_namespaced_secret(name, env["ns"])
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_a_mapped_secret_follows_its_source_and_goes_when_no_longer_instantiable(env):
    kit, ns, t = env["kit"], env["ns"], env["t"]
    platform = kit.namespace(kit.name("platform"))
    secret = {"metadata": {"name": "shared-token"}, "type": "example.com/token",
              "stringData": {"token": "one"}}
    kit.core.create_namespaced_secret(platform, secret)
    kit.core.create_namespaced_config_map(platform, configmap("shared-settings", {"a": "1"}))
    name = env["kit"].name("tpl")
    kit.custom.create_cluster_custom_object(GROUP, VERSION, TPL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": name},
        "spec": {"instantiableIn": {"matchExpressions": [
            {"key": "landlord.dev/tenant", "operator": "In", "values": [t]}]},
            "resources": {"manifests": [configmap("app", {"k": "v"})], "resourceMappings": {
                "secrets": [{"namespace": platform, "name": "shared-token"}],
                "configMaps": [{"namespace": platform, "name": "shared-settings"}]}}}})
    env["created"].append((TPL, name))
    ti = instance(env, "bob", name)

    def token(expected):
        def ok():
            s = read_secret(env, "shared-token")
            return s is not None and s.type == "example.com/token" and \
                s.data == {"token": expected}
        kit.cluster.wait_for(ok, TIMEOUT, what=f"the copy holds {expected}\n{kit.log_tail()}")
    token(base64.b64encode(b"one").decode())
    wait_cm(env, "shared-settings", lambda cm: cm and cm.data == {"a": "1"}, "the copied map")
    copy = read_secret(env, "shared-token")
    assert copy.metadata.annotations["landlord.dev/mapped-from"] == f"{platform}/shared-token"
    assert f"landlord/ti/{ns}/{ti}" in {m.manager for m in copy.metadata.managed_fields}
    # the source changes: the copy follows
    kit.core.patch_namespaced_secret("shared-token", platform, {"stringData": {"token": "two"}})
    token(base64.b64encode(b"two").decode())
    # the source goes: so does the copy, and the instance says why
    kit.core.delete_namespaced_secret("shared-token", platform)
    kit.cluster.wait_for(lambda: read_secret(env, "shared-token") is None, TIMEOUT,
                         what="the copy deleted with its source")
    obj = wait_ti(env, ti, "False", "SourceNotFound")
    assert f"Secret {platform}/shared-token does not exist" in condition(obj, "Ready")["message"]
    # instantiableIn narrows to another tenant: the instance stops, its copies go
    kit.custom.patch_cluster_custom_object(GROUP, VERSION, TPL, name, {"spec": {
        "instantiableIn": {"matchLabels": {"landlord.dev/tenant": env["other"]}}}})
    wait_ti(env, ti, "False", "NotInstantiable")
    wait_cm(env, "shared-settings", lambda cm: cm is None, "the copied map deleted")
    assert read_cm(env, "app") is not None  # what it rendered itself stays: it only stops


def test_status_rolls_up_the_instances_workloads_and_pods(env):
    """No kubelet runs here: the test plays it, marking the Deployment's pods Running and
    Ready; kube-controller-manager then counts them ready, and the instance's status follows."""
    kit, ns = env["kit"], env["ns"]
    pod = restricted_pod("x", labels={"app": "web"})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": pod["spec"]}}}
    name = instance(env, "bob", template(env, [deployment]))
    obj = wait_ti(env, name, "False", "WorkloadsNotReady")

    def pods():
        return kit.core.list_namespaced_pod(ns, label_selector="app=web").items
    kit.cluster.wait_for(lambda: len(pods()) == 2, TIMEOUT, what="the Deployment's 2 pods")

    def row():
        return get_ti(env, name)["status"]["rows"][0]
    kit.cluster.wait_for(lambda: row().get("pods") == {"pending": 2}, TIMEOUT,
                         what=f"2 pods pending in status: {row()}")
    assert row()["deployments"] == {"ready": 0, "desired": 2} and row()["ready"] is False
    for p in pods():
        kit.core.patch_namespaced_pod_status(p.metadata.name, ns, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    obj = wait_ti(env, name, "True", "Applied")
    assert obj["status"]["rows"][0]["pods"] == {"running": 2}
    assert obj["status"]["rows"][0]["deployments"] == {"ready": 2, "desired": 2}
    assert obj["status"]["namespaces"] == {"matched": 1, "ready": 1}


def test_two_instances_on_one_object_conflict_and_the_first_keeps_it(env):
    ns = env["ns"]
    first = instance(env, "bob", template(env, [configmap("shared", {"k": "first"})]))
    wait_ti(env, first, "True")
    second = instance(env, "bob", template(env, [configmap("shared", {"k": "second"}),
                                                 configmap("second-only", {"k": "v"})]))
    obj = wait_ti(env, second, "False", "Conflict")
    conflict = condition(obj, "Conflict")
    assert conflict["status"] == "True" and f"landlord/ti/{ns}/{first}" in conflict["message"]
    assert read_cm(env, "shared").data == {"k": "first"}
    assert read_cm(env, "second-only") is None  # refused whole


def test_an_owners_instance_applies_with_the_owner_role_and_an_editors_does_not(env):
    """The webhook records who wrote the instance (landlord.dev/last-writer): an owner's
    applies as ti.<ns>.owner, bound to admin, which may write RBAC; an editor's may not."""
    kit, ns = env["kit"], env["ns"]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    tmpl = template(env, [role])
    mine = instance(env, "alice", tmpl)
    obj = wait_ti(env, mine, "True")
    assert obj["metadata"]["annotations"]["landlord.dev/last-writer"] == "owner"
    assert kit.rbac.read_namespaced_role("reader", ns).rules[0].verbs == ["get"]
    rb = kit.rbac.read_namespaced_role_binding("landlord-ti-owner", ns)
    assert rb.role_ref.name == "admin" and rb.subjects[0].name == f"ti.{ns}.owner"
    theirs = instance(env, "bob", template(env, [dict(role, metadata={"name": "bobs"})]))
    obj = wait_ti(env, theirs, "False", "Forbidden")
    assert obj["metadata"]["annotations"]["landlord.dev/last-writer"] == "editor"
    assert obj["status"]["failing"][0]["object"] == "Role/bobs"
