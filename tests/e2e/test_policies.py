"""deploy/policies: ValidatingAdmissionPolicies protecting tenant namespaces and landlord's objects.

The module applies deploy/policies/ as admin, acts as real users (alice's token, landlord's
client certificate, admin impersonating a member of landlord:privileged or a kube-system service
account) and removes the policies again at the end, waiting until they are out of force so that
later modules in the session are unaffected. Every denial asserted here is one that RBAC would
allow: the test grants the rights first, so only the policy can be the reason.
"""

import pathlib
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

POLICY_DIR = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "policies"
NS_POLICY = "ValidatingAdmissionPolicy 'landlord-tenant-namespace-labels'"
OBJ_POLICY = "ValidatingAdmissionPolicy 'landlord-managed-objects'"
MANAGED = {"app.kubernetes.io/managed-by": "landlord"}
LANDLORD_USER = "system:serviceaccount:landlord-system:landlord"
RBAC_GROUP = "rbac.authorization.k8s.io"

# kind -> (API class, method suffix, spec part of the body)
KINDS = {
    "RoleBinding": (k8s.RbacAuthorizationV1Api, "role_binding", {
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "team-a"}]}),
    "ResourceQuota": (k8s.CoreV1Api, "resource_quota", {"spec": {"hard": {"pods": "10"}}}),
    "LimitRange": (k8s.CoreV1Api, "limit_range", {
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}),
    "NetworkPolicy": (k8s.NetworkingV1Api, "network_policy", {
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
    "ConfigMap": (k8s.CoreV1Api, "config_map", {"data": {"k": "v"}}),
    "Secret": (k8s.CoreV1Api, "secret", {"stringData": {"k": "v"}}),
}


def rand(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def ignore_404(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        if e.status != 404:
            raise


class Objects:
    """create/read/patch/delete of the KINDS as one API client."""

    def __init__(self, api_client):
        self.api_client = api_client

    def _call(self, verb, kind, *args, **kwargs):
        api_class, suffix, _ = KINDS[kind]
        return getattr(api_class(self.api_client), f"{verb}_namespaced_{suffix}")(*args, **kwargs)

    def create(self, kind, ns, name, labels=None):
        body = {"metadata": {"name": name, "labels": labels or {}}, **KINDS[kind][2]}
        return self._call("create", kind, ns, body)

    def read(self, kind, ns, name):
        return self._call("read", kind, name, ns)

    def patch_labels(self, kind, ns, name, labels):
        return self._call("patch", kind, name, ns, {"metadata": {"labels": labels}})

    def delete(self, kind, ns, name):
        return self._call("delete", kind, name, ns)


def denied_by(policy, fn, *args, **kwargs):
    """Call fn and return the API server's message; fail unless policy denied it."""
    with pytest.raises(ApiException) as exc:
        fn(*args, **kwargs)
    assert exc.value.status == 403, exc.value.body
    assert policy in exc.value.body, exc.value.body
    return exc.value.body


def impersonating(cluster, user, group=None):
    """An ApiClient that is admin impersonating user (and group)."""
    api = k8s_config.new_client_from_config(config_file=cluster.kubeconfig("admin"),
                                            persist_config=False)
    api.set_default_header("Impersonate-User", user)
    if group:
        api.set_default_header("Impersonate-Group", group)
    return api


def ns_labels(cluster, ns):
    return k8s.CoreV1Api(cluster.client("admin")).read_namespace(ns).metadata.labels


def restore_ns_labels(cluster, ns, labels):
    """Put labels back as admin, so that a failed denial does not break later tests."""
    now = ns_labels(cluster, ns)
    if now != labels:
        patch = {k: None for k in now if k not in labels}
        k8s.CoreV1Api(cluster.client("admin")).patch_namespace(
            ns, {"metadata": {"labels": {**patch, **labels}}})


def binding(name, role_kind, role, subject_kind, subject, namespace=None):
    subj = {"kind": subject_kind, "name": subject}
    if subject_kind == "ServiceAccount":
        subj["namespace"] = namespace
    else:
        subj["apiGroup"] = RBAC_GROUP
    return {"metadata": {"name": name}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind,
                                                    "name": role}, "subjects": [subj]}


class Env:
    """The namespaces, grants and clients every test uses (see the env fixture)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.tenant = rand("t")
        self.ns = self.tenant
        self.plain = rand("plain")
        self.id = uuid.uuid4().hex[:8]
        self.cluster_roles = []
        self.cluster_bindings = []
        self.extra_namespaces = []
        self.admin = cluster.client("admin")
        self.alice = cluster.client("alice")
        self.landlord = cluster.client("landlord")
        self.privileged = impersonating(cluster, "pat", "landlord:privileged")

    def probes_denied(self):
        """Dry-run requests from alice that the policies must deny; True once both do."""
        core = k8s.CoreV1Api(self.alice)
        rbac = k8s.RbacAuthorizationV1Api(self.alice)
        probes = [
            (NS_POLICY, lambda: core.patch_namespace(
                self.ns, {"metadata": {"labels": {"landlord.dev/tenant": "probe"}}},
                dry_run="All")),
            (OBJ_POLICY, lambda: rbac.create_namespaced_role_binding(self.ns, {
                "metadata": {"name": "probe", "labels": MANAGED}, **KINDS["RoleBinding"][2]},
                dry_run="All")),
        ]
        results = []
        for policy, probe in probes:
            try:
                probe()
                results.append(False)
            except ApiException as e:
                results.append(e.status == 403 and policy in e.body)
        return results

    def cluster_role(self, rules):
        name = rand("policy-test")
        k8s.RbacAuthorizationV1Api(self.admin).create_cluster_role(
            {"metadata": {"name": name}, "rules": rules})
        self.cluster_roles.append(name)
        return name

    def cluster_bind(self, role, subject_kind, subject, namespace=None):
        body = binding(rand("policy-test"), "ClusterRole", role, subject_kind, subject, namespace)
        k8s.RbacAuthorizationV1Api(self.admin).create_cluster_role_binding(body)
        self.cluster_bindings.append(body["metadata"]["name"])


def kubectl_apply_policies(cluster, verb):
    args = ["apply", "-f", POLICY_DIR] if verb == "apply" else [
        "delete", "--ignore-not-found", "-f", POLICY_DIR]
    r = cluster.kubectl("admin", *args)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def env(cluster):
    e = Env(cluster)
    core = k8s.CoreV1Api(e.admin)
    rbac = k8s.RbacAuthorizationV1Api(e.admin)
    try:
        core.create_namespace({"metadata": {"name": e.ns, "labels": {
            "landlord.dev/tenant": e.tenant, "landlord.dev/kind": "sandbox",
            "landlord.dev/plan": "small", "landlord.dev/username": "alice",
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "latest",
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": "latest"}}})
        core.create_namespace({"metadata": {"name": e.plain, "labels": {
            "pod-security.kubernetes.io/enforce": "baseline"}}})
        # alice: owner (admin) in both namespaces, plus what admin lacks, so that RBAC allows
        # every request the tests expect the policies to deny.
        for ns in (e.ns, e.plain):
            rbac.create_namespaced_role_binding(
                ns, binding("alice-admin", "ClusterRole", "admin", "User", "alice"))
        rbac.create_namespaced_role(e.ns, {"metadata": {"name": "alice-extra"}, "rules": [{
            "apiGroups": [""], "resources": ["resourcequotas", "resourcequotas/status",
                                             "limitranges"],
            "verbs": ["get", "list", "create", "update", "patch", "delete"]}]})
        rbac.create_namespaced_role_binding(
            e.ns, binding("alice-extra", "Role", "alice-extra", "User", "alice"))
        alice_ns = e.cluster_role([
            {"apiGroups": [""], "resources": ["namespaces", "namespaces/status"],
             "resourceNames": [e.ns, e.plain], "verbs": ["get", "patch", "update"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]}])
        e.cluster_bind(alice_ns, "User", "alice")
        # landlord and landlord:privileged: the writes landlord will do (test-only grant; the
        # real RBAC is deploy/rbac.yaml).
        writer = e.cluster_role([
            {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": [e.ns],
             "verbs": ["get", "patch", "update"]},
            {"apiGroups": [""], "resources": ["resourcequotas", "limitranges", "configmaps",
                                              "secrets"],
             "verbs": ["get", "create", "update", "patch", "delete"]},
            {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
             "verbs": ["get", "create", "update", "patch", "delete"]},
            {"apiGroups": [RBAC_GROUP], "resources": ["rolebindings"],
             "verbs": ["get", "create", "update", "patch", "delete"]},
            {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
             "resourceNames": ["view", "admin"]}])
        e.cluster_bind(writer, "ServiceAccount", "landlord", "landlord-system")
        e.cluster_bind(writer, "Group", "landlord:privileged")

        kubectl_apply_policies(cluster, "apply")
        # Policies and RBAC reach the API server's caches asynchronously.
        cluster.wait_for(lambda: all(e.probes_denied()), timeout=60,
                         what="both policies to be in force")
        yield e
    finally:
        kubectl_apply_policies(cluster, "delete")
        cluster.wait_for(lambda: not any(e.probes_denied()), timeout=60,
                         what="the policies to be out of force")
        for name in e.cluster_bindings:
            ignore_404(rbac.delete_cluster_role_binding, name)
        for name in e.cluster_roles:
            ignore_404(rbac.delete_cluster_role, name)
        for ns in (e.ns, e.plain, *e.extra_namespaces):
            cluster.delete_namespace(ns)


def make_managed(env, ns=None):
    """One fresh landlord-managed object of every kind, created as admin; returns kind -> name."""
    ns = ns or env.ns
    names = {}
    for kind in KINDS:
        names[kind] = rand(f"landlord-{kind.lower()}")
        Objects(env.admin).create(kind, ns, names[kind],
                                  {**MANAGED, "landlord.dev/tenant": env.tenant})
    return names


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
    # The status subresource accepts label changes as well.
    denied_by(NS_POLICY, core.patch_namespace_status, env.ns,
              {"metadata": {"labels": {"landlord.dev/tenant": "other"}}})
    assert ns_labels(cluster, env.ns)["landlord.dev/tenant"] == env.tenant


def test_tenant_cannot_create_or_forge_a_tenant_namespace(cluster, env):
    core = k8s.CoreV1Api(env.alice)
    name = rand("forged")
    msg = denied_by(NS_POLICY, core.create_namespace,
                    {"metadata": {"name": name, "labels": {"landlord.dev/tenant": env.tenant}}})
    assert "landlord.dev/tenant" in msg
    assert not cluster.namespace_exists(name)
    # Tagging an ordinary namespace as a tenant's would enrol it in that tenant's traffic.
    denied_by(NS_POLICY, core.patch_namespace, env.plain,
              {"metadata": {"labels": {"landlord.dev/tenant": env.tenant}}})
    # Namespaces without landlord.dev labels stay hers to create.
    env.extra_namespaces.append(name)
    core.create_namespace({"metadata": {"name": name, "labels": {
        "pod-security.kubernetes.io/enforce": "privileged"}}})
    assert cluster.namespace_exists(name)


def test_namespace_without_tenant_label_is_unaffected(cluster, env):
    for change in (["pod-security.kubernetes.io/enforce=privileged", "--overwrite"],
                   ["pod-security.kubernetes.io/enforce-"],
                   ["pod-security.kubernetes.io/audit=restricted"]):
        r = cluster.kubectl("alice", "label", "namespace", env.plain, *change)
        assert r.returncode == 0, r.stderr
    objs = Objects(env.alice)
    name = rand("alice-rb")
    objs.create("RoleBinding", env.plain, name, MANAGED)
    objs.patch_labels("RoleBinding", env.plain, name, {"touched": "yes"})
    objs.delete("RoleBinding", env.plain, name)


@pytest.mark.parametrize("who", ["admin", "landlord", "privileged"])
def test_exempt_users_may_change_protected_namespace_labels(cluster, env, who):
    core = k8s.CoreV1Api(getattr(env, who))
    core.patch_namespace(env.ns, {"metadata": {"labels": {
        "landlord.dev/plan": who, "pod-security.kubernetes.io/audit": "restricted"}}})
    labels = ns_labels(cluster, env.ns)
    assert labels["landlord.dev/plan"] == who
    core.patch_namespace(env.ns, {"metadata": {"labels": {
        "landlord.dev/plan": "small", "pod-security.kubernetes.io/audit": None}}})
    assert "pod-security.kubernetes.io/audit" not in ns_labels(cluster, env.ns)


# ---------- objects landlord manages ----------

@pytest.mark.parametrize("kind", list(KINDS))
def test_tenant_cannot_modify_or_delete_managed_objects(env, kind):
    name = make_managed(env)[kind]
    objs = Objects(env.alice)
    before = Objects(env.admin).read(kind, env.ns, name).metadata
    msg = denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name, {"touched": "yes"})
    assert f"may modify objects managed by landlord ({kind} {env.ns}/{name})" in msg
    # Dropping the label to make it hers is a modification too.
    denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name,
              {"app.kubernetes.io/managed-by": None})
    msg = denied_by(OBJ_POLICY, objs.delete, kind, env.ns, name)
    assert "may delete objects managed by landlord" in msg
    after = Objects(env.admin).read(kind, env.ns, name).metadata
    assert (after.labels, after.resource_version) == (before.labels, before.resource_version)


def test_tenant_cannot_delete_managed_objects_with_kubectl_or_by_collection(cluster, env):
    names = make_managed(env)
    r = cluster.kubectl("alice", "-n", env.ns, "delete", "rolebinding", names["RoleBinding"])
    assert r.returncode != 0 and OBJ_POLICY in r.stderr, r.stderr
    r = cluster.kubectl("alice", "-n", env.ns, "delete", "networkpolicy", names["NetworkPolicy"])
    assert r.returncode != 0 and OBJ_POLICY in r.stderr, r.stderr
    msg = denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).delete_collection_namespaced_config_map,
                    env.ns, label_selector="app.kubernetes.io/managed-by=landlord")
    assert f"may delete objects managed by landlord (ConfigMap {env.ns}/" in msg
    Objects(env.admin).read("ConfigMap", env.ns, names["ConfigMap"])
    # generateName: the name is generated before admission, and the message names it.
    msg = denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).create_namespaced_config_map, env.ns,
                    {"metadata": {"generateName": "forged-", "labels": MANAGED}})
    assert f"(ConfigMap {env.ns}/forged-" in msg
    # The quota's status subresource takes label changes: it is covered as well.
    denied_by(OBJ_POLICY, k8s.CoreV1Api(env.alice).patch_namespaced_resource_quota_status,
              names["ResourceQuota"], env.ns,
              {"metadata": {"labels": {"app.kubernetes.io/managed-by": None}}})


@pytest.mark.parametrize("kind", ["RoleBinding", "NetworkPolicy", "ConfigMap", "Secret"])
def test_tenant_cannot_forge_the_managed_by_label(env, kind):
    objs = Objects(env.alice)
    name = rand("forged")
    msg = denied_by(OBJ_POLICY, objs.create, kind, env.ns, name, MANAGED)
    assert "only landlord may create objects labelled app.kubernetes.io/managed-by=landlord" \
        in msg
    # Labelling her own object afterwards is the same forgery.
    objs.create(kind, env.ns, name)
    denied_by(OBJ_POLICY, objs.patch_labels, kind, env.ns, name, MANAGED)
    assert not (objs.read(kind, env.ns, name).metadata.labels or {})
    objs.delete(kind, env.ns, name)


@pytest.mark.parametrize("kind", ["RoleBinding", "NetworkPolicy", "ConfigMap", "Secret"])
def test_tenant_objects_without_the_label_stay_self_service(env, kind):
    objs = Objects(env.alice)
    name = rand("own")
    objs.create(kind, env.ns, name, {"app.kubernetes.io/managed-by": "alice"})
    objs.patch_labels(kind, env.ns, name, {"touched": "yes"})
    assert objs.read(kind, env.ns, name).metadata.labels["touched"] == "yes"
    objs.delete(kind, env.ns, name)
    role = {"metadata": {"name": name}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    k8s.RbacAuthorizationV1Api(env.alice).create_namespaced_role(env.ns, role)
    k8s.RbacAuthorizationV1Api(env.alice).delete_namespaced_role(name, env.ns)


@pytest.mark.parametrize("who", ["admin", "landlord", "privileged"])
def test_exempt_users_may_manage_managed_objects(env, who):
    objs = Objects(getattr(env, who))
    names = make_managed(env)
    for kind, name in names.items():
        objs.patch_labels(kind, env.ns, name, {"touched": who})
        assert objs.read(kind, env.ns, name).metadata.labels["touched"] == who
        objs.delete(kind, env.ns, name)
    for kind in ("RoleBinding", "NetworkPolicy", "ConfigMap"):
        name = rand("new")
        objs.create(kind, env.ns, name, MANAGED)
        objs.delete(kind, env.ns, name)


def test_look_alike_identities_are_not_exempt(cluster, env):
    names = make_managed(env)
    for user in ("system:serviceaccount:landlord-system:landlord-x", "landlord"):
        # RBAC allows the delete; only the policy can refuse it.
        k8s.RbacAuthorizationV1Api(env.admin).create_namespaced_role_binding(
            env.ns, binding(rand("lookalike"), "ClusterRole", "admin", "User", user))
        objs = Objects(impersonating(cluster, user, "landlord:privileged-x"))
        cluster.wait_for(lambda: _can_read(objs, "ConfigMap", env.ns, names["ConfigMap"]),
                         what=f"the RoleBinding for {user} to take effect")
        denied_by(OBJ_POLICY, objs.delete, "ConfigMap", env.ns, names["ConfigMap"])


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
    gc.patch_labels("ConfigMap", env.ns, names["ConfigMap"], {"touched": "gc"})
    gc.delete("ConfigMap", env.ns, names["ConfigMap"])
    gc.delete("RoleBinding", env.ns, names["RoleBinding"])


def test_deleting_a_tenant_namespace_still_removes_everything(cluster, env):
    ns = rand("t")
    k8s.CoreV1Api(env.admin).create_namespace(
        {"metadata": {"name": ns, "labels": {"landlord.dev/tenant": ns}}})
    env.extra_namespaces.append(ns)
    make_managed(env, ns)
    cluster.delete_namespace(ns, wait=True, timeout=90)
