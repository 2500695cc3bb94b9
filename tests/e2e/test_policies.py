"""deploy/policies: ValidatingAdmissionPolicies protecting tenant namespaces, landlord's objects and
names, and the cluster from landlord itself.

The module applies deploy/policies/ as admin, acts as real identities (alice's token, a
ServiceAccount's token from the TokenRequest API, landlord's client certificate, admin
impersonating a member of landlord:privileged, a kube-system service account or users with
test-only grants) and removes the policies again at the end, waiting until they are out of force
so that later modules in the session are unaffected. Every denial asserted here is one that RBAC
would allow: the test grants the rights first, so only the policy can be the reason, and a
positive control by the same identity shows it. Requests that must not take effect even if a
policy failed (on kube-system, default, cluster-wide RBAC) are dry runs: admission runs on them
all the same.
"""

import json
import subprocess

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

import tenants
from kube import MANAGED_BY, RBAC_GROUP, api_error, forbidden, ignore_404, uniq
from tenants import NS_POLICY, OBJ_POLICY, RESERVED_POLICY, SELF_POLICY

MANAGED = {MANAGED_BY: "landlord"}
# the policies' messages (deploy/policies/*.yaml)
MAY_NOT_CREATE = "only landlord may create objects labelled app.kubernetes.io/managed-by=landlord"
MAY_NOT_MODIFY = "only landlord and privileged users may modify objects managed by landlord"
MAY_NOT_DELETE = "only landlord and privileged users may delete objects managed by landlord"
MAY_NOT_LABEL = "only landlord and privileged users may add, change or remove the label(s)"
MAY_NOT_ANNOTATE = \
    "only landlord and privileged users may add, change or remove the annotation(s)"
RESERVED = "is reserved for landlord: only landlord and privileged users may create a"
LANDLORD_USER = "system:serviceaccount:landlord-system:landlord"
# landlord's bookkeeping annotation on its namespaces (docs/tenants.md)
MANAGED_METADATA = "landlord.dev/managed-metadata"
RELEASED_FROM = "landlord.dev/released-from"
ENFORCE = "pod-security.kubernetes.io/enforce"
SA_NAME = "ns-editor"            # the ServiceAccount in the tenant namespace
FIELD_MANAGER = "tenant-tools"   # its field manager for server-side apply

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


class Objects:
    """create/read/patch/delete of the KINDS as one API client."""

    def __init__(self, api_client):
        self.api_client = api_client

    def _call(self, verb, kind, *args, **kwargs):
        api_class, suffix, _ = KINDS[kind]
        return getattr(api_class(self.api_client), f"{verb}_namespaced_{suffix}")(*args, **kwargs)

    def create(self, kind, ns, name, labels=None, **kwargs):
        """kwargs: dry_run="All" and the like; a name ending in "-" is a generateName."""
        key = "generateName" if name.endswith("-") else "name"
        body = {"metadata": {key: name, "labels": labels or {}}, **KINDS[kind][2]}
        return self._call("create", kind, ns, body, **kwargs)

    def read(self, kind, ns, name):
        return self._call("read", kind, name, ns)

    def patch_labels(self, kind, ns, name, labels, **kwargs):
        return self._call("patch", kind, name, ns, {"metadata": {"labels": labels}}, **kwargs)

    def delete(self, kind, ns, name, **kwargs):
        return self._call("delete", kind, name, ns, **kwargs)

    def labels(self, kind, ns, name):
        return self.read(kind, ns, name).metadata.labels or {}

    def assert_gone(self, kind, ns, name):
        api_error(404, self.read, kind, ns, name)


def denied_by(policy, fn, *args, **kwargs):
    """Call fn and return the API server's message; fail unless policy denied it (403)."""
    body = forbidden(fn, *args, **kwargs)
    assert policy in body, body
    return body


def impersonating(cluster, user, group=None):
    """An ApiClient that is admin impersonating user (and group)."""
    return cluster.new_client("admin", impersonate=user, group=group)


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


def allowed(fn, *args, **kwargs):
    """True when fn succeeds, False when the API server refuses it (403)."""
    try:
        fn(*args, **kwargs)
        return True
    except ApiException as e:
        if e.status != 403:
            raise
        return False


def denies(policy, fn, *args, **kwargs):
    """True when policy refuses fn (RBAC refusing it first does not count)."""
    try:
        fn(*args, **kwargs)
        return False
    except ApiException as e:
        return e.status == 403 and policy in e.body


def token_client(cluster, token):
    """An ApiClient that authenticates with a bearer token, as a pod's ServiceAccount does."""
    cfg = k8s.Configuration()
    cfg.host = cluster.api_url
    cfg.ssl_ca_cert = cluster.ca
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return k8s.ApiClient(cfg)


def token_kubeconfig(cluster, token, path):
    """A kubeconfig file (JSON is YAML) for kubectl with this bearer token."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": {"server": cluster.api_url,
                                               "certificate-authority": cluster.ca}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}]}))
    return path


def json_pointer(key):
    return key.replace("~", "~0").replace("/", "~1")


class NamespaceWriter:
    """One identity writing a namespace's labels and annotations by every request shape.

    change: {"labels": {key: value or None}, "annotations": {...}}, None removing the key.
    Server-side apply removes a key by leaving it out, which removes it only when FIELD_MANAGER
    owns it; the tests make it the owner first (set_owned)."""

    SHAPES = ("update", "merge-patch", "json-patch", "strategic-merge-patch", "apply-kubectl",
              "apply-client", "status", "finalize")

    def __init__(self, cluster, api_client, kubeconfig):
        self.cluster = cluster
        self.api = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.kubeconfig = kubeconfig

    def write(self, shape, ns, change, dry_run=False):
        """Make the change by shape; returns the namespace as the API server answered, a dict.
        A refusal raises ApiException (kubectl's too, with its stderr as the body)."""
        dry = {"dry_run": "All"} if dry_run else {}
        if shape in ("update", "finalize"):
            obj = self.core.read_namespace(ns)
            for part in ("labels", "annotations"):
                have = getattr(obj.metadata, part) or {}
                for k, v in change.get(part, {}).items():
                    if v is None:
                        have.pop(k, None)
                    else:
                        have[k] = v
                setattr(obj.metadata, part, have)
            fn = self.core.replace_namespace if shape == "update" else \
                self.core.replace_namespace_finalize
            out = fn(ns, obj, **dry)
        elif shape == "strategic-merge-patch":
            out = self.core.patch_namespace(ns, {"metadata": change}, **dry)
        elif shape == "status":
            out = self.core.patch_namespace_status(ns, {"metadata": change}, **dry)
        elif shape == "json-patch":
            obj = self.core.read_namespace(ns).metadata
            ops = []
            for part in ("labels", "annotations"):
                have = getattr(obj, part) or {}
                for k, v in change.get(part, {}).items():
                    op = "remove" if v is None else "replace" if k in have else "add"
                    ops.append({"op": op, "path": f"/metadata/{part}/{json_pointer(k)}",
                                **({} if v is None else {"value": v})})
            out = self.core.patch_namespace(ns, ops, **dry)
        elif shape == "merge-patch":
            out = self._patch(ns, "application/merge-patch+json", {"metadata": change}, dry_run)
        elif shape == "apply-client":
            out = self._patch(ns, "application/apply-patch+yaml", self._manifest(ns, change),
                              dry_run, apply=True)
        elif shape == "apply-kubectl":
            return self._kubectl_apply(ns, change, dry_run)
        else:
            raise ValueError(shape)
        return self.api.sanitize_for_serialization(out)

    @staticmethod
    def _manifest(ns, change):
        meta = {"name": ns}
        for part in ("labels", "annotations"):
            kept = {k: v for k, v in change.get(part, {}).items() if v is not None}
            if kept:
                meta[part] = kept
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}

    def _patch(self, ns, content_type, body, dry_run, apply=False):
        """PATCH with an explicit content type (the client picks strategic merge or JSON patch
        by itself)."""
        query = [("dryRun", "All")] if dry_run else []
        if apply:
            query += [("fieldManager", FIELD_MANAGER), ("force", "true")]
        return self.api.call_api(
            "/api/v1/namespaces/{name}", "PATCH", {"name": ns}, query,
            {"Content-Type": content_type, "Accept": "application/json"}, body=body,
            response_type="V1Namespace", auth_settings=["BearerToken"],
            _return_http_data_only=True)

    def _kubectl_apply(self, ns, change, dry_run):
        args = [self.cluster.kubectl_bin, "--kubeconfig", str(self.kubeconfig), "apply",
                "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
                "-o", "json", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
        r = subprocess.run(args, input=json.dumps(self._manifest(ns, change)),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            e = ApiException(status=403 if "(Forbidden)" in r.stderr else 0)
            e.body = r.stderr
            raise e
        return json.loads(r.stdout)


def set_owned(cluster, ns, annotations):
    """As admin, set these annotations with server-side apply as FIELD_MANAGER, so that an apply
    by that manager that leaves one out removes it; None removes one (merge patch)."""
    api = k8s.CoreV1Api(cluster.client("admin"))
    api.patch_namespace(ns, {"metadata": {"annotations": {
        k: None for k, v in annotations.items() if v is None}}})
    kept = {k: v for k, v in annotations.items() if v is not None}
    if kept:
        NamespaceWriter(cluster, cluster.client("admin"), None)._patch(
            ns, "application/apply-patch+yaml", NamespaceWriter._manifest(
                ns, {"annotations": kept}), False, apply=True)


def ns_annotations(cluster, ns):
    return k8s.CoreV1Api(cluster.client("admin")).read_namespace(ns).metadata.annotations or {}


class Env:
    """The namespaces, grants and clients every test uses (see the env fixture)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.tenant = uniq("t")
        self.ns = self.tenant
        self.plain = None
        self.released = None
        self.cluster_roles = []
        self.cluster_bindings = []
        self.extra_namespaces = []
        self.admin = cluster.client("admin")
        self.alice = cluster.client("alice")
        self.landlord = cluster.client("landlord")
        self.privileged = impersonating(cluster, "pat", "landlord:privileged")
        # test-only identities, each granted below what the policies are to refuse it
        self.ns_manager = impersonating(cluster, "ns-manager")
        self.rbac_manager = impersonating(cluster, "rbac-manager")
        self.sa = None         # NamespaceWriter: ServiceAccount ns-editor in the tenant namespace

    def probes_denied(self):
        """Dry-run requests that the policies must deny; all True once all four are in force."""
        return [tenants.ns_policy_denies(self.alice, self.ns),
                tenants.obj_policy_denies(self.alice, self.ns),
                denies(RESERVED_POLICY, Objects(self.alice).create, "RoleBinding", self.ns,
                       "landlord-probe", dry_run="All"),
                denies(SELF_POLICY, k8s.CoreV1Api(self.landlord).patch_namespace, "kube-system",
                       {"metadata": {"labels": {"landlord.dev/probe": "x"}}}, dry_run="All")]

    def grants_in_force(self):
        """The test-only grants have reached the authorizer: each identity may make an
        unrelated dry-run write (RBAC reaches its cache asynchronously)."""
        team = {"metadata": {"labels": {"team": "x"}}}
        return (allowed(self.sa.core.patch_namespace, self.ns, team, dry_run="All") and
                allowed(k8s.CoreV1Api(self.ns_manager).patch_namespace, "kube-system", team,
                        dry_run="All") and
                allowed(k8s.RbacAuthorizationV1Api(self.rbac_manager).create_cluster_role,
                        {"metadata": {"name": uniq("probe")}}, dry_run="All"))

    def cluster_role(self, rules):
        name = uniq("policy-test")
        k8s.RbacAuthorizationV1Api(self.admin).create_cluster_role(
            {"metadata": {"name": name}, "rules": rules})
        self.cluster_roles.append(name)
        return name

    def cluster_bind(self, role, subject_kind, subject, namespace=None):
        body = binding(uniq("policy-test"), "ClusterRole", role, subject_kind, subject, namespace)
        k8s.RbacAuthorizationV1Api(self.admin).create_cluster_role_binding(body)
        self.cluster_bindings.append(body["metadata"]["name"])


def grant(env):
    """Test-only RBAC: every right the policies are tested against, so that RBAC never refuses
    first."""
    rbac = k8s.RbacAuthorizationV1Api(env.admin)
    # alice: owner (admin) in both namespaces, plus what admin lacks.
    for ns in (env.ns, env.plain):
        rbac.create_namespaced_role_binding(
            ns, binding("alice-admin", "ClusterRole", "admin", "User", "alice"))
    rbac.create_namespaced_role(env.ns, {"metadata": {"name": "alice-extra"}, "rules": [{
        "apiGroups": [""], "resources": ["resourcequotas", "resourcequotas/status",
                                         "limitranges"],
        "verbs": ["get", "list", "create", "update", "patch", "delete"]}]})
    rbac.create_namespaced_role_binding(
        env.ns, binding("alice-extra", "Role", "alice-extra", "User", "alice"))
    alice_ns = env.cluster_role([
        {"apiGroups": [""], "resources": ["namespaces", "namespaces/status"],
         "resourceNames": [env.ns, env.plain], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]}])
    env.cluster_bind(alice_ns, "User", "alice")
    # the ServiceAccount: get, patch and update of its own namespace (and of the released one),
    # by name, through every subresource that takes metadata; nothing else.
    sa_ns = env.cluster_role([
        {"apiGroups": [""], "resources": ["namespaces", "namespaces/status",
                                          "namespaces/finalize"],
         "resourceNames": [env.ns, env.released], "verbs": ["get", "patch", "update"]}])
    env.cluster_bind(sa_ns, "ServiceAccount", SA_NAME, env.ns)
    # someone who manages namespaces cluster-wide, without being privileged
    env.cluster_bind(env.cluster_role([{"apiGroups": [""], "resources": ["namespaces"],
                                        "verbs": ["get", "patch", "update"]}]),
                     "User", "ns-manager")
    # someone who may create cluster-wide RBAC
    env.cluster_bind(env.cluster_role([
        {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles", "clusterrolebindings"],
         "verbs": ["create"]},
        {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"]}]),
        "User", "rbac-manager")
    # landlord and landlord:privileged: the writes landlord will do (the real RBAC is
    # deploy/rbac.yaml).
    writer = env.cluster_role([
        {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": [env.ns],
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
    env.cluster_bind(writer, "ServiceAccount", "landlord", "landlord-system")
    env.cluster_bind(writer, "Group", "landlord:privileged")
    # landlord only: more than deploy/rbac.yaml gives it (escalate, any namespace), so that
    # only landlord-self-limits can refuse what it is tested against.
    env.cluster_bind(env.cluster_role([
        {"apiGroups": [""], "resources": ["namespaces", "namespaces/status",
                                          "namespaces/finalize"],
         "verbs": ["get", "create", "update", "patch", "delete"]},
        {"apiGroups": [RBAC_GROUP], "resources": ["clusterroles", "clusterrolebindings"],
         "verbs": ["get", "create", "update", "patch", "delete"]},
        {"apiGroups": [RBAC_GROUP], "resources": ["roles", "clusterroles"],
         "verbs": ["bind", "escalate"]}]),
        "ServiceAccount", "landlord", "landlord-system")


@pytest.fixture(scope="module")
def env(installed, tmp_path_factory):
    """installed: landlord-system exists (the self-limits tests write into it) and landlord
    has deploy/rbac.yaml (the Tenant test runs it)."""
    cluster = installed
    e = Env(cluster)
    core = k8s.CoreV1Api(e.admin)
    rbac = k8s.RbacAuthorizationV1Api(e.admin)
    try:
        core.create_namespace({"metadata": {"name": e.ns, "labels": {
            "landlord.dev/tenant": e.tenant, "landlord.dev/kind": "sandbox",
            "landlord.dev/plan": "small", "landlord.dev/username": "alice",
            ENFORCE: "baseline",
            "pod-security.kubernetes.io/enforce-version": "latest",
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": "latest"}, "annotations": {
            MANAGED_METADATA: json.dumps({"tenant": e.tenant}), "note": "tenant"}}})
        # Every tenant namespace has its landlord-quota (empty: it counts nothing); without it,
        # landlord-quota-in-force would refuse every creation there.
        core.create_namespaced_resource_quota(e.ns, {"metadata": {"name": "landlord-quota"},
                                                     "spec": {"hard": {}}})
        e.plain = cluster.create_namespace("plain", labels={ENFORCE: "baseline"})
        # released from the tenant by landlord: no tenant label, its Pod Security level kept
        e.released = uniq("released")
        e.extra_namespaces.append(e.released)
        core.create_namespace({"metadata": {"name": e.released, "labels": {
            ENFORCE: "baseline", "pod-security.kubernetes.io/enforce-version": "latest"},
            "annotations": {RELEASED_FROM: e.tenant, "note": "released"}}})
        core.create_namespaced_service_account(e.ns, {"metadata": {"name": SA_NAME}})
        token = core.create_namespaced_service_account_token(
            SA_NAME, e.ns, {"spec": {"expirationSeconds": 3600}}).status.token
        e.sa = NamespaceWriter(cluster, token_client(cluster, token), token_kubeconfig(
            cluster, token, tmp_path_factory.mktemp("sa") / "sa.kubeconfig"))
        grant(e)

        tenants.apply_policies(cluster)
        # Policies and RBAC reach the API server's caches asynchronously.
        cluster.wait_for(lambda: all(e.probes_denied()) and e.grants_in_force(), timeout=60,
                         what="the four policies and the test grants to be in force")
        yield e
    finally:
        tenants.remove_policies(cluster)
        cluster.wait_for(lambda: not any(e.probes_denied()), timeout=60,
                         what="the policies to be out of force")
        for name in e.cluster_bindings:
            ignore_404(rbac.delete_cluster_role_binding, name)
        for name in e.cluster_roles:
            ignore_404(rbac.delete_cluster_role, name)
        for ns in (e.ns, e.plain, *e.extra_namespaces):
            if ns:
                cluster.delete_namespace(ns)


def make_managed(env, ns=None):
    """One fresh landlord-managed object of every kind, created as admin; returns kind -> name."""
    ns = ns or env.ns
    names = {}
    for kind in KINDS:
        names[kind] = uniq(f"landlord-{kind.lower()}")
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
READ_ONLY_ROLE = "a tenant's ClusterRole may only get, list and watch landlord.dev objects"


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
