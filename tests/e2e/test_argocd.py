"""Argo CD: a tenant's Extension becomes its AppProject (issue 15 point 8, docs/argocd.md), on
the real control plane with the pinned Argo CD CRDs, landlord as its own least-privilege
identity and the admission policies applied. One landlord for the module, started before the
AppProject CRD is installed.

- CRDs installed late: the Extension is ArgoCDUnavailable and landlord runs on; once the CRDs
  are installed the AppProject appears without a restart (ImpersonationDisabled: no
  destinations, since argocd-cm does not enable impersonation);
- impersonation enabled in argocd-cm: destinations and destinationServiceAccounts are exactly
  the tenant's namespaces (a new one added), each with the account landlord-argocd bound to the
  tenant's editor role; the LandlordConfig's lists (a change of them applied at once), one
  overridden by the Extension; roles with
  the Tenant's groups; the Extension's status settles (no reconcile loop);
- argocd-rbac-cm: the tenant's users as policy.landlord-<tenant>.csv, a second tenant's key next
  to it, an unsafe user name left out and reported by field; a second Extension of a tenant is
  DuplicateExtension and its deletion touches nothing; purge: the AppProject and the key of the
  purged tenant gone, the other's kept;
- a sync window and annotation the ResourceSupervisor controller adds survive landlord's apply;
- an unlabelled AppProject of the tenant's name is never taken over (AppProjectConflict);
- acting as landlord-argocd (as Argo CD does with impersonation), an image from a registry the
  Tenant does not allow is refused by landlord's webhook, an allowed one admitted;
- landlord-self-limits: landlord may create exactly landlord-argocd, without secrets, in tenant
  namespaces; tenants may neither take the name first nor touch landlord's account;
- deletion without purge: the AppProject and key stay, the accounts go.
"""

import json
import time

import pytest
from kubernetes import client as k8s

from ecosystem import install_ecosystem_crds
from kube import GROUP, MANAGED_BY, VERSION, ignore_404, refusal, refusal_message
from procs import detach, remove_registered_webhooks
from tenants import (OBJ_POLICY, RESERVED_POLICY, SELF_POLICY, TENANT_LABEL, Kit,
                     restricted_pod)

pytestmark = pytest.mark.usefixtures("module_policies")

ARGO = ("argoproj.io", "v1alpha1")
ACCOUNT = "landlord-argocd"
SERVER = "https://kubernetes.default.svc"
REGISTRY = "ghcr.io/acme"
LANDLORD_USER = "system:serviceaccount:landlord-system:landlord"
TIMEOUT = 60


class Env:
    """The module's landlord, Argo CD namespace and tenants (the `env` fixture)."""

    def __init__(self, kit):
        self.kit = kit
        self.cluster = kit.cluster
        self.custom = kit.custom
        self.core = kit.core
        self.rbac = kit.rbac

    def wait(self, predicate, what, timeout=TIMEOUT):
        def check():
            assert self.kit.landlord.popen.poll() is None, self.kit.log_tail()
            return predicate()
        try:
            return self.cluster.wait_for(check, timeout, what=what)
        except AssertionError:
            print(self.kit.log_tail(6000))
            raise

    # ---------- Extensions ----------

    def extension(self, tenant, purge=None, **app_project):
        argo = {"appProject": app_project} if app_project else {}
        if purge is not None:
            argo["onDeletePurgeAppProject"] = purge
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Extension",
                "metadata": {"name": tenant}, "spec": {"tenant": tenant, "argoCD": argo}}
        self.custom.create_cluster_custom_object(GROUP, VERSION, "extensions", body)
        return tenant

    def get_ext(self, name):
        return ignore_404(self.custom.get_cluster_custom_object, GROUP, VERSION, "extensions",
                          name)

    def delete_ext(self, name):
        ignore_404(self.custom.delete_cluster_custom_object, GROUP, VERSION, "extensions", name)

    def ready(self, name):
        obj = self.get_ext(name) or {}
        conds = (obj.get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "Ready"), {})

    def condition(self, name, ctype):
        obj = self.get_ext(name) or {}
        conds = (obj.get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == ctype), {})

    def wait_reason(self, name, reason):
        return self.wait(lambda: self.ready(name).get("reason") == reason,
                         f"Extension {name} Ready reason {reason}")

    # ---------- Argo CD objects ----------

    def project(self, name):
        return ignore_404(self.custom.get_namespaced_custom_object, *ARGO, self.argo_ns,
                          "appprojects", name)

    def rbac_cm(self):
        cm = ignore_404(self.core.read_namespaced_config_map, "argocd-rbac-cm", self.argo_ns)
        return dict(cm.data or {}) if cm else {}

    def destinations(self, name):
        spec = (self.project(name) or {}).get("spec") or {}
        return ([d.get("namespace") for d in spec.get("destinations") or []],
                [(d.get("namespace"), d.get("defaultServiceAccount"))
                 for d in spec.get("destinationServiceAccounts") or []])

    def account(self, ns):
        return ignore_404(self.core.read_namespaced_service_account, ACCOUNT, ns)

    def binding(self, ns):
        return ignore_404(self.rbac.read_namespaced_role_binding, ACCOUNT, ns)


@pytest.fixture(scope="module")
def env(installed, tmp_path_factory):
    cluster = installed
    r = cluster.kubectl("admin", "delete", "crd", "appprojects.argoproj.io",
                        "--ignore-not-found", "--wait=true")
    assert r.returncode == 0, r.stderr
    with Kit(installed, tmp_path_factory.mktemp("argocd")) as kit:
        e = Env(kit)
        e.argo_ns = kit.namespace(kit.name("argocd"))
        config = {"integrations": {"argocd": {
            "namespace": e.argo_ns,
            "clusterResourceWhitelist": [{"group": "", "kind": "Namespace"}],
            "namespaceResourceBlacklist": [{"group": "", "kind": "LimitRange"}]}}}
        with kit.landlord_config(config) as accepted:
            plan = kit.plan(hard={"pods": "20"})
            e.plan = plan
            e.a = a = kit.name("ta")
            kit.tenant(a, plan=plan, prefixed=["web"],
                       owners={"users": ["alice", "bad,user"], "groups": ["ops"]},
                       editors={"groups": ["devs"]}, viewers={"users": ["carol"]},
                       allowed={"registries": [REGISTRY]})
            e.a_prefixed = ["web"]
            e.a_ns = kit.expect_namespace(f"{a}-web")
            e.b = b = kit.name("tb")
            kit.tenant(b, plan=plan, prefixed=["web"], owners={"users": ["dave"]})
            e.b_ns = kit.expect_namespace(f"{b}-web")
            e.c = kit.name("tc")
            kit.tenant(e.c, plan=plan, owners={"users": ["erin"]})
            detach(kit.start(), cluster)
            cluster.wait_for(accepted, TIMEOUT, what="the LandlordConfig accepted")
            kit.wait_ready(a, [e.a_ns])
            kit.wait_ready(b, [e.b_ns])
            kit.wait_provisioned(e.a_ns, a)
            try:
                yield e
            finally:
                for name in (e.a, e.b, e.c):
                    e.delete_ext(name)
                e.wait(lambda: not any(e.get_ext(n) for n in (e.a, e.b, e.c)),
                       "the Extensions gone")
                ignore_404(e.custom.delete_namespaced_custom_object, *ARGO, e.argo_ns,
                           "appprojects", e.c)
                if kit.landlord is None or kit.landlord.popen.poll() is not None:
                    remove_registered_webhooks(installed)


def enable_impersonation(env, value="true"):
    body = {"metadata": {"name": "argocd-cm"},
            "data": {"application.sync.impersonation.enabled": value}}
    if ignore_404(env.core.read_namespaced_config_map, "argocd-cm", env.argo_ns):
        env.core.patch_namespaced_config_map("argocd-cm", env.argo_ns, body)
    else:
        env.core.create_namespaced_config_map(env.argo_ns, body)


# ---------- in file order: the module's story ----------

def test_crds_installed_late_are_picked_up(env):
    """landlord started without the AppProject CRD: ArgoCDUnavailable, landlord runs on; the
    Argo CD CRDs installed: the AppProject appears, without destinations (impersonation off)."""
    env.extension(env.a, sourceRepos=["https://git.example.com/acme/*"],
                  namespaceResourceBlacklist=[{"group": "", "kind": "ResourceQuota"}])
    env.wait_reason(env.a, "ArgoCDUnavailable")
    assert "appprojects.argoproj.io" in env.ready(env.a)["message"]
    install_ecosystem_crds(env.cluster, "argocd", only=["appproject"])
    env.wait_reason(env.a, "ImpersonationDisabled")
    proj = env.project(env.a)
    assert proj["metadata"]["labels"][MANAGED_BY] == "landlord"
    assert proj["metadata"]["labels"][TENANT_LABEL] == env.a
    assert env.destinations(env.a) == ([], [])
    assert env.get_ext(env.a)["status"]["appProject"] == f"{env.argo_ns}/{env.a}"
    assert "application.sync.impersonation.enabled" in env.ready(env.a)["message"]


def test_impersonation_gives_destinations_and_accounts(env):
    """argocd-cm enables impersonation: one destination per tenant namespace, each synced as
    landlord-argocd (the tenant's editor role); a new namespace is added; the lists are the
    LandlordConfig's unless the Extension gives its own; the roles carry the Tenant's groups."""
    enable_impersonation(env)
    env.wait_reason(env.a, "Synced")
    assert env.destinations(env.a) == ([env.a_ns], [(env.a_ns, ACCOUNT)])
    sa, rb = env.account(env.a_ns), env.binding(env.a_ns)
    assert sa.metadata.labels[MANAGED_BY] == "landlord" and not sa.secrets
    assert sa.automount_service_account_token is False
    assert rb.role_ref.name == "edit"
    assert [(s.kind, s.name, s.namespace) for s in rb.subjects] == [
        ("ServiceAccount", ACCOUNT, env.a_ns)]
    spec = env.project(env.a)["spec"]
    assert spec["sourceRepos"] == ["https://git.example.com/acme/*"]
    assert spec["clusterResourceWhitelist"] == [{"group": "", "kind": "Namespace"}]
    assert spec["namespaceResourceBlacklist"] == [{"group": "", "kind": "ResourceQuota"}]
    roles = {r["name"]: r for r in spec["roles"]}
    assert roles["owner"]["groups"] == ["ops"] and roles["editor"]["groups"] == ["devs"]
    assert "groups" not in roles["viewer"]
    assert f"p, proj:{env.a}:viewer, applications, get, {env.a}/*, allow" in \
        roles["viewer"]["policies"]
    # a new tenant namespace becomes a destination
    env.a_prefixed, new_ns = env.kit.barrier(env.a, env.a_prefixed)
    want = sorted([env.a_ns, new_ns])
    env.wait(lambda: env.destinations(env.a)[0] == want, f"destinations {want}")
    assert env.destinations(env.a)[1] == [(n, ACCOUNT) for n in want]
    env.wait(lambda: env.binding(new_ns) is not None, "the new namespace's binding")
    # a change of the LandlordConfig's lists reaches the AppProject (the Extension gives no
    # clusterResourceWhitelist of its own)
    wider = [{"group": "", "kind": "Namespace"},
             {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole"}]
    env.custom.patch_cluster_custom_object(
        GROUP, VERSION, "landlordconfigs", "landlord",
        {"spec": {"integrations": {"argocd": {"clusterResourceWhitelist": wider}}}})
    env.wait(lambda: env.project(env.a)["spec"]["clusterResourceWhitelist"] == wider,
             "the LandlordConfig's new clusterResourceWhitelist applied")
    env.custom.patch_cluster_custom_object(
        GROUP, VERSION, "landlordconfigs", "landlord",
        {"spec": {"integrations": {"argocd": {"clusterResourceWhitelist": wider[:1]}}}})
    env.wait(lambda: env.project(env.a)["spec"]["clusterResourceWhitelist"] == wider[:1],
             "the LandlordConfig's clusterResourceWhitelist back")
    # settled: neither the Extension nor the AppProject is written again
    env.wait(lambda: env.ready(env.a).get("message", "").endswith("2 destinations"),
             "the status of two destinations")
    rv = (env.get_ext(env.a)["metadata"]["resourceVersion"],
          env.project(env.a)["metadata"]["resourceVersion"])
    time.sleep(2)
    assert (env.get_ext(env.a)["metadata"]["resourceVersion"],
            env.project(env.a)["metadata"]["resourceVersion"]) == rv


def test_rbac_key_per_tenant_and_unsafe_names_refused(env):
    """The tenant's users in policy.landlord-<tenant>.csv; "bad,user" left out and reported by
    field; a second tenant's key next to the first; purging it leaves the first."""
    key_a, key_b = f"policy.landlord-{env.a}.csv", f"policy.landlord-{env.b}.csv"
    env.wait(lambda: key_a in env.rbac_cm(), key_a)
    assert env.rbac_cm()[key_a] == (f"g, alice, proj:{env.a}:owner\n"
                                    f"g, carol, proj:{env.a}:viewer\n")
    refused = env.condition(env.a, "NamesRefused")
    assert refused["status"] == "True", refused
    assert "spec.accessControl.owners.users[1]" in refused["message"]
    env.extension(env.b, purge=True, sourceRepos=["*"])
    env.wait_reason(env.b, "Synced")
    env.wait(lambda: key_b in env.rbac_cm(), key_b)
    data = env.rbac_cm()
    assert data[key_b] == f"g, dave, proj:{env.b}:owner\n" and key_a in data
    assert env.condition(env.b, "NamesRefused")["status"] == "False"
    assert env.project(env.b)["spec"]["clusterResourceWhitelist"] == [
        {"group": "", "kind": "Namespace"}]
    assert env.project(env.b)["spec"]["namespaceResourceBlacklist"] == [
        {"group": "", "kind": "LimitRange"}]
    # a second Extension of B: DuplicateExtension, and its deletion (purge) touches nothing
    dup = f"{env.b}-dup"
    env.custom.create_cluster_custom_object(GROUP, VERSION, "extensions", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Extension", "metadata": {"name": dup},
        "spec": {"tenant": env.b, "argoCD": {"onDeletePurgeAppProject": True}}})
    env.wait_reason(dup, "DuplicateExtension")
    assert env.b in env.ready(dup)["message"]
    env.delete_ext(dup)
    env.wait(lambda: env.get_ext(dup) is None, "the duplicate gone")
    assert env.project(env.b) is not None and key_b in env.rbac_cm()
    assert env.account(env.b_ns) is not None
    # purge: B's AppProject, key and account go; A's stay
    env.delete_ext(env.b)
    env.wait(lambda: env.get_ext(env.b) is None, "Extension B gone")
    assert env.project(env.b) is None
    data = env.rbac_cm()
    assert key_b not in data and key_a in data
    assert env.account(env.b_ns) is None and env.binding(env.b_ns) is None


def test_supervisor_sync_window_survives(env):
    """A deny window and the annotation landlord.dev/sleep-window, as the ResourceSupervisor
    controller adds them (JSON patch), survive landlord's next apply of the AppProject."""
    window = {"kind": "deny", "schedule": "* * * * *", "duration": "1h",
              "applications": ["*"], "manualSync": True}
    patch = [{"op": "add", "path": "/spec/syncWindows", "value": [window]},
             {"op": "add", "path": "/metadata/annotations",
              "value": {"landlord.dev/sleep-window": "sup"}}]
    r = env.cluster.kubectl("admin", "patch", "appprojects.argoproj.io", env.a, "-n",
                            env.argo_ns, "--type=json", "-p", json.dumps(patch))
    assert r.returncode == 0, r.stderr
    env.custom.patch_cluster_custom_object(
        GROUP, VERSION, "extensions", env.a,
        {"spec": {"argoCD": {"appProject": {"sourceRepos": ["https://git.example.com/x/*"]}}}})
    env.wait(lambda: env.project(env.a)["spec"]["sourceRepos"] ==
             ["https://git.example.com/x/*"], "the new sourceRepos applied")
    proj = env.project(env.a)
    assert proj["spec"]["syncWindows"] == [window]
    assert proj["metadata"]["annotations"]["landlord.dev/sleep-window"] == "sup"


def test_unlabelled_appproject_is_never_taken_over(env):
    """An administrator's AppProject of the tenant's name: AppProjectConflict, left as it is."""
    body = {"apiVersion": "/".join(ARGO), "kind": "AppProject",
            "metadata": {"name": env.c}, "spec": {"sourceRepos": ["mine"]}}
    env.custom.create_namespaced_custom_object(*ARGO, env.argo_ns, "appprojects", body)
    rv = env.project(env.c)["metadata"]["resourceVersion"]
    env.extension(env.c, sourceRepos=["*"])
    env.wait_reason(env.c, "AppProjectConflict")
    proj = env.project(env.c)
    assert proj["metadata"]["resourceVersion"] == rv and "labels" not in proj["metadata"]
    assert f"policy.landlord-{env.c}.csv" not in env.rbac_cm()


def test_syncing_as_landlord_argocd_obeys_the_tenant(env):
    """As Argo CD syncs with impersonation: a pod from a registry the Tenant does not allow is
    refused by landlord's webhook, one from the allowed registry admitted (dry runs)."""
    env.kit.wait_default_sa(env.a_ns)
    user = f"system:serviceaccount:{env.a_ns}:{ACCOUNT}"
    api = k8s.CoreV1Api(env.cluster.new_client("admin", impersonate=user))

    def pod(image):
        body = restricted_pod("probe")
        body["spec"]["containers"][0]["image"] = image
        return lambda: api.create_namespaced_pod(env.a_ns, body, dry_run="All")

    env.wait(lambda: refusal(pod("docker.io/library/nginx:1")) is not None,
             "the webhook refuses a disallowed registry")
    msg = refusal(pod("docker.io/library/nginx:1"))
    assert "docker.io" in msg, msg
    assert refusal(pod(f"{REGISTRY}/app:1")) is None


def test_self_limits_allow_exactly_landlords_account(env):
    """landlord (dry runs as its identity) may create landlord-argocd in a tenant namespace,
    labelled and without secrets, and nothing more: not another name, not with secrets, not
    in a namespace outside tenants. A tenant owner may neither take the name first nor delete
    landlord's account."""
    api = k8s.CoreV1Api(env.cluster.new_client("admin", impersonate=LANDLORD_USER))
    plain = env.kit.namespace(env.kit.name("plain"))

    def sa(name, ns, **extra):
        body = {"metadata": {"name": name, "labels": {MANAGED_BY: "landlord"}}, **extra}
        return lambda: api.create_namespaced_service_account(ns, body, dry_run="All")

    b_ns = env.b_ns  # B's account was removed with its Extension
    assert refusal_message(sa(ACCOUNT, b_ns)) is None
    for call, what in ((sa("other", b_ns), "another name"),
                       (sa(ACCOUNT, b_ns, secrets=[{"name": "x"}]), "secrets"),
                       (sa(ACCOUNT, b_ns, imagePullSecrets=[{"name": "x"}]), "pull secrets"),
                       (sa(ACCOUNT, plain), "an untenanted namespace")):
        msg = refusal_message(call)
        assert msg and SELF_POLICY.split("'")[1] in msg, (what, msg)
    owner = k8s.CoreV1Api(env.cluster.client("dave"))
    msg = refusal_message(lambda: owner.create_namespaced_service_account(
        b_ns, {"metadata": {"name": ACCOUNT}}, dry_run="All"))
    assert msg and RESERVED_POLICY.split("'")[1] in msg, msg
    alice = k8s.CoreV1Api(env.cluster.client("alice"))
    msg = refusal_message(lambda: alice.delete_namespaced_service_account(ACCOUNT, env.a_ns,
                                                                  dry_run="All"))
    assert msg and OBJ_POLICY.split("'")[1] in msg, msg


def test_delete_without_purge_keeps_project_and_key(env):
    """onDeletePurgeAppProject unset: the AppProject and the key stay as they were; the
    accounts, a grant that must not outlive the Extension, go."""
    key_a = f"policy.landlord-{env.a}.csv"
    env.delete_ext(env.a)
    env.wait(lambda: env.get_ext(env.a) is None, "Extension A gone")
    assert env.project(env.a) is not None and key_a in env.rbac_cm()
    for ns in env.kit.tenant_namespaces(env.a):
        assert env.account(ns) is None and env.binding(ns) is None
    ignore_404(env.custom.delete_namespaced_custom_object, *ARGO, env.argo_ns, "appprojects",
               env.a)


def test_a_sleeping_tenants_appproject_gets_the_deny_window(env):
    """A Tenant with spec.hibernation (asleep at once) and an Extension: its ResourceSupervisor
    names the tenant's AppProject (the LandlordConfig names Argo CD's namespace), which holds
    the exact deny window while asleep, next to the AppProject's own fields; removing
    spec.hibernation wakes the Deployment and then removes the window."""
    kit = env.kit
    d = kit.tenant(kit.name("td"), plan=env.plan, prefixed=["web"], owners={"users": ["fay"]},
                   hibernation={})
    ns = kit.expect_namespace(f"{d}-web")
    kit.wait_ready(d, [ns])
    env.extension(d, purge=True, sourceRepos=["*"])
    env.wait(lambda: env.project(d) is not None, f"AppProject {d}")
    apps = k8s.AppsV1Api(kit.admin)
    apps.create_namespaced_deployment(ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": restricted_pod("web")["spec"]}}})
    window = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", "applications": ["*"],
              "namespaces": ["*"], "clusters": ["*"], "manualSync": False}

    def held():
        proj = env.project(d)
        return (window in (proj["spec"].get("syncWindows") or []) and
                (proj["metadata"].get("annotations") or {}).get(
                    "landlord.dev/sleep-window") == d)
    env.wait(lambda: apps.read_namespaced_deployment("web", ns).spec.replicas == 0,
             "the tenant's Deployment asleep")
    assert held(), env.project(d)
    sup = kit.custom.get_cluster_custom_object(GROUP, VERSION, "resourcesupervisors", d)
    assert sup["spec"]["argocd"] == {"appProjects": [d]}
    kit.patch_tenant(d, {"hibernation": None})
    env.wait(lambda: apps.read_namespaced_deployment("web", ns).spec.replicas == 2,
             "the tenant's Deployment awake")
    env.wait(lambda: not held(), "the window removed after the wake")
    assert window not in (env.project(d)["spec"].get("syncWindows") or [])
    env.delete_ext(d)
    env.wait(lambda: env.get_ext(d) is None and env.project(d) is None, "Extension D purged")
