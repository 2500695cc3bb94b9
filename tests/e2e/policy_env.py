"""The shared set-up of the admission-policy suites (test_policies.py: tenant namespaces and
landlord's objects; test_policies_landlord.py: landlord's names, and the cluster protected from
landlord itself): namespaces, identities and grants, and the `env` fixture, which applies
deploy/policies/ and removes them again at the end, waiting until they are out of force so that
later modules in the session are unaffected. Every denial asserted in those suites is one that
RBAC would allow: the grants come first, so only a policy can be the reason, and a positive
control by the same identity shows it. Requests that must not take effect even if a policy failed
(on kube-system, default, cluster-wide RBAC) are dry runs: admission runs on them all the same.
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


