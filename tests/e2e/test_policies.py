"""deploy/policies: ValidatingAdmissionPolicies protecting tenant namespaces (their labels and
annotations, released ones too) and the objects landlord manages in them.

Identities: alice's token, a ServiceAccount's token from the TokenRequest API, landlord's client
certificate, admin impersonating a member of landlord:privileged, a kube-system service account,
users with test-only grants. The set-up, and why only a policy can be the reason for each denial,
is in policy_env.py.
"""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import api_error, uniq
from policy_env import (  # noqa: F401 (env is a fixture)
    ENFORCE, KINDS, MANAGED, MANAGED_METADATA, MAY_NOT_ANNOTATE, MAY_NOT_CREATE,
    MAY_NOT_DELETE, MAY_NOT_LABEL, MAY_NOT_MODIFY, NamespaceWriter, Objects, RELEASED_FROM,
    binding, denied_by, env, impersonating, make_managed, ns_annotations, ns_labels,
    restore_ns_labels, set_owned)
from tenants import NS_POLICY, OBJ_POLICY


# ---------- namespace labels ----------

@pytest.mark.parametrize("change,label", [
    (["landlord.dev/tenant=other", "--overwrite"], "landlord.dev/tenant"),
    (["landlord.dev/tenant-"], "landlord.dev/tenant"),
    (["landlord.dev/plan=huge", "--overwrite"], "landlord.dev/plan"),
    (["landlord.dev/extra=x"], "landlord.dev/extra"),
    (["pod-security.kubernetes.io/enforce=privileged", "--overwrite"],
     "pod-security.kubernetes.io/enforce"),
    (["pod-security.kubernetes.io/enforce-"], "pod-security.kubernetes.io/enforce"),
    (["pod-security.kubernetes.io/audit=restricted"], "pod-security.kubernetes.io/audit"),
])
def test_tenant_cannot_change_protected_namespace_labels(cluster, env, change, label):
    before = ns_labels(cluster, env.ns)
    try:
        r = cluster.kubectl("alice", "label", "namespace", env.ns, *change)
        assert r.returncode != 0
        assert NS_POLICY in r.stderr, r.stderr
        assert f"label(s) {label} on namespace {env.ns}" in r.stderr
        assert ns_labels(cluster, env.ns) == before
    finally:
        restore_ns_labels(cluster, env.ns, before)


def test_tenant_keeps_her_own_namespace_labels_and_is_denied_through_status(cluster, env):
    core = k8s.CoreV1Api(env.alice)
    # RBAC lets alice patch the namespace: unprotected labels are hers.
    r = cluster.kubectl("alice", "label", "namespace", env.ns, "team=a", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert ns_labels(cluster, env.ns)["team"] == "a"
    # A change of several protected labels names all of them.
    msg = denied_by(NS_POLICY, core.patch_namespace, env.ns, {"metadata": {"labels": {
        "landlord.dev/kind": None, "pod-security.kubernetes.io/warn": "baseline"}}})
    assert "landlord.dev/kind" in msg and "pod-security.kubernetes.io/warn" in msg
    labels = ns_labels(cluster, env.ns)
    assert labels["landlord.dev/kind"] == "sandbox"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    # Labels and annotations together: the message names both.
    msg = denied_by(NS_POLICY, core.patch_namespace, env.ns, {"metadata": {
        "labels": {"landlord.dev/plan": "huge"}, "annotations": {MANAGED_METADATA: "{}"}}})
    assert (f"{MAY_NOT_LABEL} landlord.dev/plan and the annotation(s) {MANAGED_METADATA} "
            f"on namespace {env.ns}") in msg, msg
    # The status subresource accepts label changes as well.
    msg = denied_by(NS_POLICY, core.patch_namespace_status, env.ns,
                    {"metadata": {"labels": {"landlord.dev/tenant": "other"}}})
    assert f"{MAY_NOT_LABEL} landlord.dev/tenant on namespace {env.ns}" in msg, msg
    assert ns_labels(cluster, env.ns)["landlord.dev/tenant"] == env.tenant


def test_tenant_cannot_create_or_forge_a_tenant_namespace(cluster, env):
    core = k8s.CoreV1Api(env.alice)
    name = uniq("forged")
    msg = denied_by(NS_POLICY, core.create_namespace,
                    {"metadata": {"name": name, "labels": {"landlord.dev/tenant": env.tenant}}})
    assert f"{MAY_NOT_LABEL} landlord.dev/tenant on namespace {name}" in msg, msg
    assert not cluster.namespace_exists(name)
    # Tagging an ordinary namespace as a tenant's would enrol it in that tenant's traffic.
    before = ns_labels(cluster, env.plain)
    msg = denied_by(NS_POLICY, core.patch_namespace, env.plain,
                    {"metadata": {"labels": {"landlord.dev/tenant": env.tenant}}})
    assert f"{MAY_NOT_LABEL} landlord.dev/tenant on namespace {env.plain}" in msg, msg
    assert ns_labels(cluster, env.plain) == before
    # Namespaces without landlord.dev labels stay hers to create.
    env.extra_namespaces.append(name)
    core.create_namespace({"metadata": {"name": name, "labels": {
        "pod-security.kubernetes.io/enforce": "privileged"}}})
    assert ns_labels(cluster, name)["pod-security.kubernetes.io/enforce"] == "privileged"


def test_namespace_without_tenant_label_is_unaffected(cluster, env):
    enforce, audit = "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/audit"
    for change, key, want in (([f"{enforce}=privileged", "--overwrite"], enforce, "privileged"),
                              ([f"{enforce}-"], enforce, None),
                              ([f"{audit}=restricted"], audit, "restricted")):
        r = cluster.kubectl("alice", "label", "namespace", env.plain, *change)
        assert r.returncode == 0, r.stderr
        assert ns_labels(cluster, env.plain).get(key) == want, (change, ns_labels(cluster,
                                                                                  env.plain))
    objs = Objects(env.alice)
    name = uniq("alice-rb")
    objs.create("RoleBinding", env.plain, name, MANAGED)
    assert objs.labels("RoleBinding", env.plain, name) == MANAGED
    objs.patch_labels("RoleBinding", env.plain, name, {"touched": "yes"})
    assert objs.labels("RoleBinding", env.plain, name) == {**MANAGED, "touched": "yes"}
    objs.delete("RoleBinding", env.plain, name)
    objs.assert_gone("RoleBinding", env.plain, name)


@pytest.mark.parametrize("who", ["admin", "landlord", "privileged"])
def test_exempt_users_may_change_protected_namespace_metadata(cluster, env, who):
    """landlord, cluster admins and landlord:privileged change protected labels and
    annotations."""
    core = k8s.CoreV1Api(getattr(env, who))
    original = ns_annotations(cluster, env.ns)[MANAGED_METADATA]
    core.patch_namespace(env.ns, {"metadata": {"labels": {
        "landlord.dev/plan": who, "pod-security.kubernetes.io/audit": "restricted"},
        "annotations": {MANAGED_METADATA: who}}})
    labels = ns_labels(cluster, env.ns)
    assert labels["landlord.dev/plan"] == who
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    assert ns_annotations(cluster, env.ns)[MANAGED_METADATA] == who
    core.patch_namespace(env.ns, {"metadata": {"labels": {
        "landlord.dev/plan": "small", "pod-security.kubernetes.io/audit": None},
        "annotations": {MANAGED_METADATA: original}}})
    labels = ns_labels(cluster, env.ns)
    assert "pod-security.kubernetes.io/audit" not in labels
    assert labels["landlord.dev/plan"] == "small"
    assert ns_annotations(cluster, env.ns)[MANAGED_METADATA] == original


# ---------- namespace annotations ----------

@pytest.mark.parametrize("shape", NamespaceWriter.SHAPES)
def test_service_account_cannot_add_change_or_remove_landlord_annotations(cluster, env, shape):
    """A ServiceAccount that may get, patch and update its own tenant namespace (and nothing
    else) is refused adding, changing and removing landlord.dev/managed-metadata by this request
    shape, and may add an unrelated label and annotation by the same shape."""
    ns, key = env.ns, MANAGED_METADATA
    original = ns_annotations(cluster, ns)[key]
    denial = f"{MAY_NOT_ANNOTATE} {key} on namespace {ns}"
    try:
        set_owned(cluster, ns, {key: None})
        msg = denied_by(NS_POLICY, env.sa.write, shape, ns, {"annotations": {key: "{}"}})
        assert denial in msg, msg
        assert key not in ns_annotations(cluster, ns)
        # Positive control: the shape carries metadata, and RBAC allows it.
        out = env.sa.write(shape, ns, {"labels": {"team": "x"}, "annotations": {"team": "x"}},
                           dry_run=True)
        assert out["metadata"]["labels"]["team"] == "x", out["metadata"]
        assert out["metadata"]["annotations"]["team"] == "x", out["metadata"]
        set_owned(cluster, ns, {key: original})
        for value in (json.dumps({"tenant": "forged"}), None):
            msg = denied_by(NS_POLICY, env.sa.write, shape, ns, {"annotations": {key: value}})
            assert denial in msg, (value, msg)
            assert ns_annotations(cluster, ns)[key] == original
    finally:
        k8s.CoreV1Api(env.admin).patch_namespace(ns, {"metadata": {
            "labels": {"team": None}, "annotations": {key: original, "team": None}}})


@pytest.mark.parametrize("target", ["kube-system", "plain"])
def test_namespace_manager_cannot_write_landlord_annotations_on_any_namespace(env, target):
    """Someone who may patch every namespace, without being privileged, is refused landlord's
    annotations on a namespace that has no landlord.dev key at all, kube-system included (dry
    runs: nothing changes even if the policy failed)."""
    ns = env.plain if target == "plain" else target
    api = k8s.CoreV1Api(env.ns_manager)
    msg = denied_by(NS_POLICY, api.patch_namespace, ns, {"metadata": {"annotations": {
        MANAGED_METADATA: json.dumps({"tenant": env.tenant}), RELEASED_FROM: env.tenant}}},
        dry_run="All")
    assert f"{MAY_NOT_ANNOTATE} " in msg and f" on namespace {ns}" in msg, msg
    assert MANAGED_METADATA in msg and RELEASED_FROM in msg, msg
    out = api.patch_namespace(ns, {"metadata": {"annotations": {"team": "x"}}}, dry_run="All")
    assert out.metadata.annotations["team"] == "x"


# ---------- released namespaces ----------

def test_released_namespace_keeps_its_pod_security_labels(cluster, env):
    """On a namespace landlord released (annotated landlord.dev/released-from, no tenant label)
    the Pod Security labels stay protected, the annotation cannot be removed to lift that, and
    other labels stay free."""
    ns, api = env.released, env.sa.core
    labels, annotations = ns_labels(cluster, ns), ns_annotations(cluster, ns)
    audit = "pod-security.kubernetes.io/audit"
    try:
        for change, key in (({ENFORCE: "privileged"}, ENFORCE), ({ENFORCE: None}, ENFORCE),
                            ({audit: "restricted"}, audit)):
            msg = denied_by(NS_POLICY, api.patch_namespace, ns, {"metadata": {"labels": change}})
            assert f"{MAY_NOT_LABEL} {key} on namespace {ns}" in msg, msg
        msg = denied_by(NS_POLICY, api.patch_namespace, ns,
                        {"metadata": {"annotations": {RELEASED_FROM: None}}})
        assert f"{MAY_NOT_ANNOTATE} {RELEASED_FROM} on namespace {ns}" in msg, msg
        assert (ns_labels(cluster, ns), ns_annotations(cluster, ns)) == (labels, annotations)
        api.patch_namespace(ns, {"metadata": {"labels": {"team": "x"}}})
        assert ns_labels(cluster, ns) == {**labels, "team": "x"}
    finally:
        restore_ns_labels(cluster, ns, labels)
        k8s.CoreV1Api(env.admin).patch_namespace(
            ns, {"metadata": {"annotations": {RELEASED_FROM: annotations[RELEASED_FROM]}}})


# ---------- objects landlord manages ----------

@pytest.mark.parametrize("kind", list(KINDS))
def test_tenant_cannot_modify_or_delete_managed_objects(env, kind):
    name = make_managed(env)[kind]
    objs = Objects(env.alice)
    before = Objects(env.admin).read(kind, env.ns, name).metadata
    msg = denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name, {"touched": "yes"})
    assert f"may modify objects managed by landlord ({kind} {env.ns}/{name})" in msg
    # Dropping the label to make it hers is a modification too.
    msg = denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name,
                    {"app.kubernetes.io/managed-by": None})
    assert f"{MAY_NOT_MODIFY} ({kind} {env.ns}/{name})" in msg, msg
    msg = denied_by(OBJ_POLICY, objs.delete, kind, env.ns, name)
    assert f"{MAY_NOT_DELETE} ({kind} {env.ns}/{name})" in msg, msg
    after = Objects(env.admin).read(kind, env.ns, name).metadata
    assert (after.labels, after.resource_version) == (before.labels, before.resource_version)


def test_tenant_cannot_delete_managed_objects_with_kubectl_or_by_collection(cluster, env):
    names = make_managed(env)
    admin = Objects(env.admin)
    for kind, resource in (("RoleBinding", "rolebinding"), ("NetworkPolicy", "networkpolicy")):
        r = cluster.kubectl("alice", "-n", env.ns, "delete", resource, names[kind])
        assert r.returncode != 0 and OBJ_POLICY in r.stderr, r.stderr
        assert f"{MAY_NOT_DELETE} ({kind} {env.ns}/{names[kind]})" in r.stderr, r.stderr
        assert admin.labels(kind, env.ns, names[kind])["app.kubernetes.io/managed-by"] == \
            "landlord"
    msg = denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).delete_collection_namespaced_config_map,
                    env.ns, label_selector="app.kubernetes.io/managed-by=landlord")
    assert f"{MAY_NOT_DELETE} (ConfigMap {env.ns}/" in msg, msg
    admin.read("ConfigMap", env.ns, names["ConfigMap"])
    # generateName: the name is generated before admission, and the message names it.
    msg = denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).create_namespaced_config_map, env.ns,
                    {"metadata": {"generateName": "forged-", "labels": MANAGED}})
    assert f"{MAY_NOT_CREATE} (ConfigMap {env.ns}/forged-" in msg, msg
    # The quota's status subresource takes label changes: it is covered as well.
    msg = denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).patch_namespaced_resource_quota_status,
                    names["ResourceQuota"], env.ns,
                    {"metadata": {"labels": {"app.kubernetes.io/managed-by": None}}})
    assert f"{MAY_NOT_MODIFY} (ResourceQuota {env.ns}/{names['ResourceQuota']})" in msg, msg
    assert admin.labels("ResourceQuota", env.ns, names["ResourceQuota"])[
        "app.kubernetes.io/managed-by"] == "landlord"


@pytest.mark.parametrize("kind", ["RoleBinding", "NetworkPolicy", "ConfigMap", "Secret"])
def test_tenant_cannot_forge_the_managed_by_label(env, kind):
    objs = Objects(env.alice)
    name = uniq("forged")
    msg = denied_by(OBJ_POLICY, objs.create, kind, env.ns, name, MANAGED)
    assert f"{MAY_NOT_CREATE} ({kind} {env.ns}/{name})" in msg, msg
    objs.assert_gone(kind, env.ns, name)
    # Labelling her own object afterwards is the same forgery.
    objs.create(kind, env.ns, name)
    msg = denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name, MANAGED)
    assert f"{MAY_NOT_MODIFY} ({kind} {env.ns}/{name})" in msg, msg
    assert objs.labels(kind, env.ns, name) == {}
    objs.delete(kind, env.ns, name)
    objs.assert_gone(kind, env.ns, name)


@pytest.mark.parametrize("kind", ["RoleBinding", "NetworkPolicy", "ConfigMap", "Secret"])
def test_tenant_objects_without_the_label_stay_self_service(env, kind):
    objs = Objects(env.alice)
    name = uniq("own")
    objs.create(kind, env.ns, name, {"app.kubernetes.io/managed-by": "alice"})
    assert objs.labels(kind, env.ns, name) == {"app.kubernetes.io/managed-by": "alice"}
    objs.patch_labels(kind, env.ns, name, {"touched": "yes"})
    assert objs.labels(kind, env.ns, name) == {"app.kubernetes.io/managed-by": "alice",
                                               "touched": "yes"}
    objs.delete(kind, env.ns, name)
    objs.assert_gone(kind, env.ns, name)
    rbac = k8s.RbacAuthorizationV1Api(env.alice)
    role = {"metadata": {"name": name}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    rbac.create_namespaced_role(env.ns, role)
    assert rbac.read_namespaced_role(name, env.ns).rules[0].resources == ["pods"]
    rbac.delete_namespaced_role(name, env.ns)
    api_error(404, rbac.read_namespaced_role, name, env.ns)


@pytest.mark.parametrize("who", ["admin", "landlord", "privileged"])
def test_exempt_users_may_manage_managed_objects(env, who):
    objs = Objects(getattr(env, who))
    names = make_managed(env)
    admin = Objects(env.admin)
    for kind, name in names.items():
        objs.patch_labels(kind, env.ns, name, {"touched": who})
        assert objs.read(kind, env.ns, name).metadata.labels["touched"] == who
        objs.delete(kind, env.ns, name)
        admin.assert_gone(kind, env.ns, name)
    for kind in ("RoleBinding", "NetworkPolicy", "ConfigMap"):
        name = uniq("new")
        objs.create(kind, env.ns, name, MANAGED)
        assert admin.labels(kind, env.ns, name) == MANAGED
        objs.delete(kind, env.ns, name)
        admin.assert_gone(kind, env.ns, name)


def test_look_alike_identities_are_not_exempt(cluster, env):
    names = make_managed(env)
    for user in ("system:serviceaccount:landlord-system:landlord-x", "landlord"):
        # RBAC allows the delete; only the policy can refuse it.
        k8s.RbacAuthorizationV1Api(env.admin).create_namespaced_role_binding(
            env.ns, binding(uniq("lookalike"), "ClusterRole", "admin", "User", user))
        objs = Objects(impersonating(cluster, user, "landlord:privileged-x"))
        cluster.wait_for(lambda: _can_read(objs, "ConfigMap", env.ns, names["ConfigMap"]),
                         what=f"the RoleBinding for {user} to take effect")
        msg = denied_by(OBJ_POLICY, objs.delete, "ConfigMap", env.ns, names["ConfigMap"])
        assert f"{MAY_NOT_DELETE} (ConfigMap {env.ns}/{names['ConfigMap']})" in msg, msg
        Objects(env.admin).read("ConfigMap", env.ns, names["ConfigMap"])


def _can_read(objs, kind, ns, name):
    try:
        objs.read(kind, ns, name)
        return True
    except ApiException as e:
        if e.status != 403:
            raise
        return False


def test_kube_system_controllers_are_exempt(cluster, env):
    names = make_managed(env)
    # The garbage collector's own identity and bootstrap RBAC (delete on everything).
    gc = Objects(impersonating(cluster,
                               "system:serviceaccount:kube-system:generic-garbage-collector"))
    admin = Objects(env.admin)
    gc.patch_labels("ConfigMap", env.ns, names["ConfigMap"], {"touched": "gc"})
    assert admin.labels("ConfigMap", env.ns, names["ConfigMap"])["touched"] == "gc"
    for kind in ("ConfigMap", "RoleBinding"):
        gc.delete(kind, env.ns, names[kind])
        admin.assert_gone(kind, env.ns, names[kind])


def test_deleting_a_tenant_namespace_still_removes_everything(cluster, env):
    ns = uniq("t")
    k8s.CoreV1Api(env.admin).create_namespace(
        {"metadata": {"name": ns, "labels": {"landlord.dev/tenant": ns}}})
    env.extra_namespaces.append(ns)
    make_managed(env, ns)
    cluster.delete_namespace(ns, wait=True, timeout=90)


