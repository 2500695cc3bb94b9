"""Helpers for the Tenant controller's end-to-end tests (docs/tenants.md is the contract).

Module functions create and wait for Plans and Tenants, and apply and probe the admission
policies, for tests that run landlord their own way. `Kit` runs one landlord process under its
least-privilege identity, creates Plans, Tenants and namespaces with names unique to the test,
waits for what the contract promises, and removes everything at the end: Tenants first (while
landlord still runs, so that it can drop its finalizer), then landlord, then the namespaces and
Plans. Use it through the `kit` fixture (conftest.py).
"""

import contextlib
import copy
import json
import subprocess
import time

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from kube import (GROUP, MANAGED_BY, RBAC_GROUP, VERSION, condition_of, custom,
                  ignore_404, short_id)
import procs
from procs import REPO, start_controllers

FINALIZER = "landlord.dev/finalizer"
TENANT_LABEL = "landlord.dev/tenant"
POLICY_DIR = REPO / "deploy" / "policies"
NS_POLICY = "ValidatingAdmissionPolicy 'landlord-namespace-metadata'"
OBJ_POLICY = "ValidatingAdmissionPolicy 'landlord-managed-objects'"
RESERVED_POLICY = "ValidatingAdmissionPolicy 'landlord-reserved-names'"
SELF_POLICY = "ValidatingAdmissionPolicy 'landlord-self-limits'"
TIMEOUT = 60
RENDER_RBAC = REPO / "scripts" / "render-rbac.py"
LANDLORD_SA = {"kind": "ServiceAccount", "name": "landlord", "namespace": "landlord-system"}


def install(cluster):
    """landlord's namespace, CRDs and least-privilege RBAC, exactly as deploy/ ships them."""
    r = cluster.kubectl("admin", "apply", "-f", REPO / "deploy/namespace.yaml",
                        "-f", REPO / "deploy/crds", "-f", REPO / "deploy/rbac.yaml")
    assert r.returncode == 0, r.stderr
    cluster.wait_crds_established("tenants.landlord.dev", "plans.landlord.dev",
                                  "landlordconfigs.landlord.dev", "templates.landlord.dev",
                                  "templateinstances.landlord.dev",
                                  "templategroupinstances.landlord.dev",
                                  "helmledgers.landlord.dev",
                                  "resourcesupervisors.landlord.dev",
                                  "extensions.landlord.dev")
    return cluster


# ---------- landlord's bind rule (deploy/rbac.yaml, scripts/render-rbac.py) ----------

def shipped_bind_roles():
    """The resourceNames of the bind rule in deploy/rbac.yaml's ClusterRole landlord."""
    for doc in yaml.safe_load_all((REPO / "deploy/rbac.yaml").read_text()):
        if doc and doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == "landlord":
            binds = [r for r in doc["rules"] if "bind" in r["verbs"]]
            assert len(binds) == 1, binds
            return binds[0].get("resourceNames")
    pytest.fail("deploy/rbac.yaml has no ClusterRole landlord")


def rendered_roles(config=None):
    """The roles scripts/render-rbac.py lets landlord bind for a LandlordConfig file (None: the
    defaults)."""
    r = subprocess.run([str(RENDER_RBAC), "--roles", *([str(config)] if config else [])],
                       capture_output=True, text=True, check=True)
    return r.stdout.split()


def allow_landlord_to_bind(cluster, role):
    """Test-only RBAC, as an administrator grants it (docs/config.md, "Letting landlord bind a
    role"): a ClusterRole whose one rule is bind on ClusterRole @role by resourceNames, bound to
    landlord's service account. The binding is created first, so that the ClusterRole's creation
    (a change landlord watches) finds the grant complete; returns once landlord's own identity
    may bind @role. Returns the name of both objects (forbid_landlord_to_bind() removes them)."""
    name = f"e2e-bind-{short_id()}"
    rbac = k8s.RbacAuthorizationV1Api(cluster.client("admin"))
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [LANDLORD_SA]})
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": [{
        "apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
        "resourceNames": [role]}]})
    cluster.wait_for(lambda: landlord_can_i(cluster, "bind", f"clusterroles/{role}"),
                     TIMEOUT, interval=0.2, what=f"landlord may bind {role}")
    return name


def forbid_landlord_to_bind(cluster, name):
    """Remove what allow_landlord_to_bind() created (404s ignored)."""
    rbac = k8s.RbacAuthorizationV1Api(cluster.client("admin"))
    ignore_404(rbac.delete_cluster_role_binding, name)
    ignore_404(rbac.delete_cluster_role, name)


def landlord_can_i(cluster, verb, resource, ns=None):
    """`kubectl auth can-i` as landlord's own identity."""
    r = cluster.kubectl("landlord", "auth", "can-i", verb, resource, *(["-n", ns] if ns else []))
    assert r.stdout.strip() in ("yes", "no"), (r.stdout, r.stderr)
    return r.stdout.strip() == "yes"


# ---------- Plans and Tenants, without a Kit ----------

def plan_body(name, hard=None, limits=None, **spec):
    if hard is not None:
        spec["resourceQuota"] = {"hard": hard}
    if limits is not None:
        spec["limitRange"] = {"limits": limits}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Plan", "metadata": {"name": name},
            "spec": spec}


def create_plan(cluster, name, hard=None, limits=None, **spec):
    custom(cluster).create_cluster_custom_object(GROUP, VERSION, "plans",
                                                 plan_body(name, hard, limits, **spec))
    return name


def tenant_body(name, plan, owners=None, editors=None, viewers=None, prefixed=None,
                unprefixed=None, sandboxes=None, purge=None, ns_metadata=None, **spec):
    """A Tenant; owners={"users": [...]}, prefixed=[...] (withTenantPrefix), unprefixed,
    sandboxes={"enabled": True}, purge (onDeletePurge), ns_metadata; other spec fields as
    given."""
    access = {}
    for role, subjects in (("owners", owners), ("editors", editors), ("viewers", viewers)):
        if subjects is not None:
            access[role] = subjects
    namespaces = {}
    if prefixed is not None:
        namespaces["withTenantPrefix"] = prefixed
    if unprefixed is not None:
        namespaces["withoutTenantPrefix"] = unprefixed
    if sandboxes is not None:
        namespaces["sandboxes"] = sandboxes
    if purge is not None:
        namespaces["onDeletePurge"] = purge
    if ns_metadata is not None:
        namespaces["metadata"] = ns_metadata
    body_spec = {"plan": plan, **spec}
    if access:
        body_spec["accessControl"] = access
    if namespaces:
        body_spec["namespaces"] = namespaces
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant",
            "metadata": {"name": name}, "spec": body_spec}


def create_tenant(cluster, name, plan, **kw):
    """Create a Tenant (kw as tenant_body) as admin; returns its name."""
    custom(cluster).create_cluster_custom_object(GROUP, VERSION, "tenants",
                                                 tenant_body(name, plan, **kw))
    return name


def get_tenant(cluster, name):
    return ignore_404(custom(cluster).get_cluster_custom_object, GROUP, VERSION, "tenants", name)


def observed(obj):
    """The object's status describes its current generation."""
    st = (obj or {}).get("status") or {}
    return bool(obj) and st.get("observedGeneration") == obj["metadata"].get("generation")


def ready(obj, namespaces=None):
    """Ready=True for the current generation, and (if given) exactly these namespaces."""
    c = condition_of(obj, "Ready")
    if not (observed(obj) and c and c.get("status") == "True"):
        return False
    return namespaces is None or sorted(obj["status"].get("namespaces") or []) == \
        sorted(namespaces)


def wait_tenant(cluster, name, predicate, what, timeout=TIMEOUT, log_tail=None):
    """Poll until the Tenant's status describes its current generation and predicate(obj)
    holds; return the object. log_tail() adds landlord's log to a timeout's message."""
    last = {}

    def check():
        obj = last["obj"] = get_tenant(cluster, name)
        return obj if observed(obj) and predicate(obj) else None
    try:
        return cluster.wait_for(check, timeout, interval=0.2, what=f"tenant {name}: {what}")
    except pytest.fail.Exception:
        obj = copy.deepcopy(last.get("obj") or {})
        obj.get("metadata", {}).pop("managedFields", None)
        pytest.fail(f"timed out after {timeout}s waiting for tenant {name}: {what}\n"
                    f"last seen: {json.dumps(obj, indent=1)[:4000]}\n"
                    f"landlord log tail:\n{log_tail() if log_tail else ''}")


def wait_ready(cluster, name, namespaces=None, timeout=TIMEOUT, log_tail=None):
    """Ready=True, and (if given) exactly these namespaces in status.namespaces."""
    return wait_tenant(cluster, name, lambda obj: ready(obj, namespaces),
                       f"Ready=True with namespaces {namespaces}", timeout, log_tail)


# ---------- the admission policies (deploy/policies) ----------

def apply_policies(cluster):
    r = cluster.kubectl("admin", "apply", "-f", POLICY_DIR)
    assert r.returncode == 0, r.stderr


def remove_policies(cluster):
    r = cluster.kubectl("admin", "delete", "--ignore-not-found", "-f", POLICY_DIR)
    assert r.returncode == 0, r.stderr


def ns_policy_denies(api_client, ns):
    """True when the landlord-namespace-metadata policy denies this client's dry-run
    labelling of namespace ns with a landlord.dev/ label."""
    try:
        k8s.CoreV1Api(api_client).patch_namespace(
            ns, {"metadata": {"labels": {"landlord.dev/probe": "x"}}}, dry_run="All")
        return False
    except ApiException as e:
        return e.status == 403 and NS_POLICY in e.body


def obj_policy_denies(api_client, ns):
    """True when the landlord-managed-objects policy denies this client's dry-run create of a
    landlord-labelled ConfigMap in ns."""
    try:
        k8s.CoreV1Api(api_client).create_namespaced_config_map(ns, {
            "metadata": {"name": "policy-probe", "labels": {MANAGED_BY: "landlord"}}},
            dry_run="All")
        return False
    except ApiException as e:
        return e.status == 403 and OBJ_POLICY in e.body


def q(value):
    """A quantity (string or number) as a Decimal, for comparisons."""
    return parse_quantity(str(value))


def restricted_pod(name, labels=None, cpu="100m", port=8080):
    """A bare Pod that the restricted Pod Security level admits."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "app", "image": "registry.k8s.io/pause:3.10",
                "ports": [{"name": "http", "containerPort": port}],
                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }


def privileged_pod(name):
    body = restricted_pod(name)
    body["spec"]["securityContext"] = {}
    body["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return body


class Kit:
    """One test's landlord, Plans, Tenants and namespaces. See the module docstring."""

    def __init__(self, cluster, tmp_path):
        self.cluster = cluster
        self.tmp_path = tmp_path
        self.id = short_id()
        self.plans = []
        self.tenants = []
        self.namespaces = []
        self.cluster_roles = []
        self.cluster_bindings = []
        self.landlord = None
        self.admin = cluster.client("admin")
        self.custom = k8s.CustomObjectsApi(self.admin)
        self.core = k8s.CoreV1Api(self.admin)
        self.rbac = k8s.RbacAuthorizationV1Api(self.admin)
        self.net = k8s.NetworkingV1Api(self.admin)
        self._serial = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    # ---------- names ----------

    def name(self, prefix="t"):
        """A name unique to this test: <prefix><id><n>."""
        self._serial += 1
        return f"{prefix}{self.id}{self._serial}"

    # ---------- landlord ----------

    def start(self, *args):
        """landlord run (controllers, no leader election) as its own identity."""
        assert self.landlord is None or self.landlord.popen.poll() is not None
        self.landlord = start_controllers(self.cluster, self.tmp_path, *args,
                                          name=f"landlord-{self._serial}")
        self._serial += 1
        return self.landlord

    def stop(self):
        """Stop landlord; it must still have been running and must exit 0."""
        p, self.landlord = self.landlord, None
        if p is None:
            return
        crashed = p.popen.poll()
        code = p.stop()
        assert crashed is None, (f"landlord exited {crashed} during the test:\n"
                                 f"{p.log_path.read_text()[-4000:]}")
        assert code == 0, f"landlord exited {code}:\n{p.log_path.read_text()[-4000:]}"

    def landlord_runs(self):
        """This Kit's landlord, or another this session's tests started, is running."""
        return ((self.landlord is not None and self.landlord.popen.poll() is None) or
                procs.any_running())

    def log_tail(self, n=4000):
        return self.landlord.log_path.read_text()[-n:] if self.landlord else ""

    # ---------- Plans ----------

    def plan(self, name=None, hard=None, limits=None, **spec):
        name = create_plan(self.cluster, name or self.name("p"), hard, limits, **spec)
        if name not in self.plans:
            self.plans.append(name)
        return name

    def get_plan(self, name):
        return ignore_404(self.custom.get_cluster_custom_object, GROUP, VERSION, "plans", name)

    def wait_plan(self, name, predicate, what, timeout=TIMEOUT):
        """Poll until the Plan's status describes its current generation and predicate(status)
        holds; return the status."""
        last = {}

        def check():
            obj = last["obj"] = self.get_plan(name)
            st = (obj or {}).get("status") or {}
            if not obj or st.get("observedGeneration") != obj["metadata"].get("generation"):
                return None
            return st if predicate(st) else None
        try:
            return self.cluster.wait_for(check, timeout, interval=0.2,
                                         what=f"plan {name}: {what}")
        except pytest.fail.Exception:
            obj = last.get("obj") or {}
            pytest.fail(f"timed out after {timeout}s waiting for plan {name}: {what}\n"
                        f"generation {obj.get('metadata', {}).get('generation')}, "
                        f"status: {json.dumps(obj.get('status'))[:3000]}")

    def wait_settled(self, plan, tenant, timeout=TIMEOUT):
        """Plan @plan has one tenant, @tenant: wait until the Tenant's status has the usage of
        every resource of its quota (kube-controller-manager measures it a moment after the
        quota is made) and the Plan's status counts the tenant, its namespaces and sums its
        quota, so that neither controller has anything left to write (a test counting
        landlord's writes)."""
        def same(a, b):
            return set(a) == set(b) and all(q(a[k]) == q(v) for k, v in b.items())

        def settled(st):
            mine = self.status(tenant)
            used = (mine.get("quota") or {}).get("used") or {}
            hard = (mine.get("quota") or {}).get("hard") or {}
            quota = st.get("quota") or {}
            return (hard and set(used) == set(hard) and st.get("tenants") == 1 and
                    st.get("namespaces") == mine.get("namespaceCount") and
                    same(quota.get("used") or {}, used) and same(quota.get("hard") or {}, hard))
        return self.wait_plan(plan, settled, f"its status sums tenant {tenant}'s usage",
                              timeout)

    def patch_plan(self, name, spec):
        """JSON merge patch of spec (None removes a key)."""
        return self.custom.patch_cluster_custom_object(GROUP, VERSION, "plans", name,
                                                       {"spec": spec})

    # ---------- Tenants ----------

    def tenant(self, name=None, plan=None, **kw):
        """Create a Tenant; kw as tenant_body (owners={"users": [...]}, prefixed=[...], ...)."""
        name = create_tenant(self.cluster, name or self.name("t"), plan, **kw)
        self.tenants.append(name)
        return name

    def get_tenant(self, name):
        return get_tenant(self.cluster, name)

    def patch_tenant(self, name, spec):
        """JSON merge patch of spec (None removes a key; lists are replaced whole)."""
        return self.custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", name,
                                                       {"spec": spec})

    def delete_tenant(self, name):
        ignore_404(self.custom.delete_cluster_custom_object, GROUP, VERSION, "tenants", name)

    def status(self, name):
        obj = self.get_tenant(name)
        return (obj or {}).get("status") or {}

    condition_of = staticmethod(condition_of)

    def wait_tenant(self, name, predicate, what, timeout=TIMEOUT):
        """Poll until the Tenant's status describes its current generation and predicate(obj)
        holds; return the object."""
        return wait_tenant(self.cluster, name, predicate, what, timeout,
                           lambda: self.log_tail(2000))

    def barrier(self, name, prefixed):
        """Make landlord run one more pass over Tenant name, after everything so far, and wait
        until it has finished: add a withTenantPrefix namespace (prefixed is the list now; the
        new one is returned) and wait for the status of the generation that asks for it, listing
        it. One tenant's passes run one at a time, and a pass records its Events and makes its
        writes before it writes its status, so whatever an earlier pass did or recorded is
        visible once this returns: absence checked afterwards covers them all.
        Returns (new prefixed list, the new namespace)."""
        suffix = self.name("b")
        ns = self.expect_namespace(f"{name}-{suffix}")
        self.patch_tenant(name, {"namespaces": {"withTenantPrefix": [*prefixed, suffix]}})
        self.wait_tenant(name, lambda o: ns in (o["status"].get("namespaces") or []),
                         f"the barrier pass, which creates {ns}")
        return [*prefixed, suffix], ns

    def wait_condition(self, name, ctype, status, reason=None, timeout=TIMEOUT):
        def ok(obj):
            c = self.condition_of(obj, ctype)
            return c and c.get("status") == status and (reason is None or
                                                        c.get("reason") == reason)
        return self.wait_tenant(name, ok, f"{ctype}={status}" + (f" ({reason})" if reason else ""),
                                timeout)

    def wait_ready(self, name, namespaces=None, timeout=TIMEOUT):
        """Ready=True, and (if given) exactly these namespaces in status.namespaces."""
        return wait_ready(self.cluster, name, namespaces, timeout, lambda: self.log_tail(2000))

    # ---------- namespaces ----------

    def namespace(self, name=None, labels=None):
        """Create a namespace as admin (removed after the test)."""
        name = name or self.name("ns")
        self.core.create_namespace({"metadata": {"name": name, "labels": labels or {}}})
        self.expect_namespace(name)
        return name

    def expect_namespace(self, name):
        """Record a namespace landlord may create, so that cleanup removes it."""
        if name not in self.namespaces:
            self.namespaces.append(name)
        return name

    def read_namespace(self, name):
        return ignore_404(self.core.read_namespace, name)

    def labels(self, ns):
        obj = self.read_namespace(ns)
        return dict((obj.metadata.labels or {}) if obj else {})

    def tenant_namespaces(self, tenant):
        items = self.core.list_namespace(label_selector=f"{TENANT_LABEL}={tenant}").items
        return sorted(n.metadata.name for n in items)

    def quota(self, ns, name="landlord-quota"):
        return ignore_404(self.core.read_namespaced_resource_quota, name, ns)

    def rolebinding(self, ns, name):
        return ignore_404(self.rbac.read_namespaced_role_binding, name, ns)

    def landlord_rolebindings(self, ns):
        return {rb.metadata.name: rb for rb in
                self.rbac.list_namespaced_role_binding(ns).items
                if (rb.metadata.labels or {}).get(MANAGED_BY) == "landlord"}

    def quota_in_force(self, ns):
        rq = self.quota(ns)
        if not rq or not rq.status or not rq.status.hard:
            return False
        spec = {k: q(v) for k, v in (rq.spec.hard or {}).items()}
        return spec == {k: q(v) for k, v in rq.status.hard.items()}

    def wait_provisioned(self, ns, tenant, bindings=("landlord-owners-admin",), timeout=TIMEOUT):
        """The namespace carries the tenant label, its quota is in force and the named
        RoleBindings exist."""
        def ok():
            return (self.labels(ns).get(TENANT_LABEL) == tenant and self.quota_in_force(ns)
                    and all(self.rolebinding(ns, b) for b in bindings))
        try:
            self.cluster.wait_for(ok, timeout, interval=0.2,
                                  what=f"namespace {ns} provisioned for {tenant}")
        except pytest.fail.Exception:
            bindings = sorted(self.landlord_rolebindings(ns)) if self.read_namespace(ns) else None
            pytest.fail(f"namespace {ns} not provisioned for {tenant} within {timeout}s: "
                        f"labels={self.labels(ns)} quota={self.quota(ns)} bindings={bindings}\n"
                        f"tenant status={json.dumps(self.status(tenant))[:2000]}\n"
                        f"landlord log tail:\n{self.log_tail(2000)}")

    def wait_default_sa(self, ns, timeout=TIMEOUT):
        self.cluster.wait_for(
            lambda: ignore_404(self.core.read_namespaced_service_account, "default", ns),
            timeout, what=f"ServiceAccount default in {ns}")

    # ---------- users ----------

    def client(self, user):
        return self.cluster.client(user)

    def fresh_client(self, user):
        """A new ApiClient for user (one per thread)."""
        return self.cluster.new_client(user)

    def can_i(self, user, verb, resource, ns=None):
        args = ["auth", "can-i", verb, resource] + (["-n", ns] if ns else [])
        r = self.cluster.kubectl(user, *args)
        answer = r.stdout.strip()
        assert answer in ("yes", "no"), (args, r.stdout, r.stderr)
        return answer == "yes"

    def wait_can_i(self, user, verb, resource, ns, expected=True, timeout=TIMEOUT):
        """RBAC reaches the authorizer's cache asynchronously: poll."""
        self.cluster.wait_for(lambda: self.can_i(user, verb, resource, ns) == expected,
                              timeout, interval=0.3,
                              what=f"can-i {user} {verb} {resource} -n {ns} == {expected}")

    def grant_namespace_patch(self, user, namespaces):
        """Test-only RBAC: user may patch these namespaces (so that only the admission policies
        can be the reason for a denial)."""
        self.grant([{"apiGroups": [""], "resources": ["namespaces"],
                     "resourceNames": list(namespaces), "verbs": ["get", "patch", "update"]}],
                   [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user}], "e2e-nspatch-")

    def grant(self, rules, subjects, prefix="e2e-grant-"):
        """Test-only RBAC: a ClusterRole of rules bound cluster-wide to subjects (removed after
        the test)."""
        name = self.name(prefix)
        self.rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
        self.cluster_roles.append(name)
        self.rbac.create_cluster_role_binding({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": subjects})
        self.cluster_bindings.append(name)

    def allow_landlord_to_bind(self, role):
        """Let landlord bind ClusterRole role, as an administrator would (module function of the
        same name); removed after the test."""
        name = allow_landlord_to_bind(self.cluster, role)
        self.cluster_bindings.append(name)
        self.cluster_roles.append(name)
        return name

    # ---------- admission policies ----------

    def apply_policies(self):
        apply_policies(self.cluster)

    def remove_policies(self):
        remove_policies(self.cluster)

    def managed_object_probe(self, user, ns):
        """True when the landlord-managed-objects policy denies user's dry-run create of a
        landlord-labelled ConfigMap in ns."""
        return obj_policy_denies(self.client(user), ns)

    # ---------- LandlordConfig ----------

    @contextlib.contextmanager
    def landlord_config(self, spec):
        """Merge-patch the singleton LandlordConfig "landlord" with spec (creating it if absent)
        for the duration of the block; afterwards its saved spec is put back, or it is deleted
        if it did not exist. Yields a predicate: the configuration is accepted and in force."""
        api = self.custom
        saved = ignore_404(api.get_cluster_custom_object, GROUP, VERSION, "landlordconfigs",
                           "landlord")
        if saved:
            api.patch_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord",
                                            {"spec": spec})
        else:
            api.create_cluster_custom_object(GROUP, VERSION, "landlordconfigs", {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "LandlordConfig",
                "metadata": {"name": "landlord"}, "spec": spec})

        def accepted():
            obj = api.get_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord")
            st = obj.get("status") or {}
            return st.get("lastAppliedGeneration") == obj["metadata"]["generation"] and any(
                c.get("type") == "Accepted" and c.get("status") == "True"
                for c in st.get("conditions") or [])
        try:
            yield accepted
        finally:
            if saved:
                now = api.get_cluster_custom_object(GROUP, VERSION, "landlordconfigs",
                                                    "landlord")
                now["spec"] = copy.deepcopy(saved.get("spec") or {})
                api.replace_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord",
                                                  now)
            else:
                ignore_404(api.delete_cluster_custom_object, GROUP, VERSION, "landlordconfigs",
                           "landlord")

    # ---------- history ----------

    def current_rv(self):
        """A resourceVersion read now (a quorum list), to replay watch events from."""
        return self.core.list_namespace(limit=1).metadata.resource_version

    def replay(self, list_fn, rv, label_selector=None, seconds=2, field_selector=None):
        """Every watch event of list_fn (a list-for-all-namespaces call) since rv, as raw dicts
        in order. The API server's watch cache keeps recent history, so this works for events of
        the last minute or so."""
        out = []
        w = k8s_watch.Watch()
        selectors = {k: v for k, v in (("label_selector", label_selector),
                                       ("field_selector", field_selector)) if v}
        for ev in w.stream(list_fn, resource_version=rv, timeout_seconds=seconds, **selectors):
            out.append((ev["type"], ev["raw_object"]))
        return out

    # ---------- events ----------

    def events_for(self, kind, name):
        items = self.core.list_event_for_all_namespaces(
            field_selector=f"involvedObject.kind={kind},involvedObject.name={name}").items
        return items

    # ---------- cleanup ----------

    def cleanup(self):
        """Tenants first (landlord still running drops its finalizer), then landlord, then what
        is left. Best effort: the tests assert behaviour, cleanup only tidies."""
        errors = []
        namespaces = set(self.namespaces)
        for t in self.tenants:
            st = self.status(t)
            namespaces.update(st.get("namespaces") or [])
            namespaces.update(st.get("released") or [])
            namespaces.update((st.get("sandboxes") or {}).values())
        if self.tenants and not self.landlord_runs():
            # only a landlord drops the finalizers, with what they guard (the tenant's
            # cluster-wide roles and bindings): a test that ended with landlord stopped gets one
            try:
                self.start()
            except AssertionError:
                pass  # best effort: the finalizers are removed by hand below
        for t in self.tenants:
            self.delete_tenant(t)
        deadline = time.monotonic() + (30 if self.landlord_runs() else 0)
        while time.monotonic() < deadline and any(self.get_tenant(t) for t in self.tenants):
            time.sleep(0.2)
        for t in self.tenants:
            obj = self.get_tenant(t)
            if obj and obj["metadata"].get("finalizers"):
                ignore_404(self.custom.patch_cluster_custom_object, GROUP, VERSION, "tenants", t,
                           {"metadata": {"finalizers": None}})
        try:
            self.stop()
        except AssertionError as e:
            errors.append(str(e))
        for t in self.tenants:
            namespaces.update(self.tenant_namespaces(t))
        for ns in sorted(namespaces):
            ignore_404(self.core.delete_namespace, ns)
        for t in self.tenants:
            ignore_404(self.rbac.delete_cluster_role_binding, f"landlord:tenant:{t}")
            ignore_404(self.rbac.delete_cluster_role, f"landlord:tenant:{t}")
        for name in self.cluster_bindings:
            ignore_404(self.rbac.delete_cluster_role_binding, name)
        for name in self.cluster_roles:
            ignore_404(self.rbac.delete_cluster_role, name)
        for p in self.plans:
            ignore_404(self.custom.delete_cluster_custom_object, GROUP, VERSION, "plans", p)
        if errors:
            pytest.fail("\n".join(errors))


