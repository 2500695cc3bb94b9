"""No quota window (docs/quota.md, "No window, no wait"): a new namespace's quota restricts
nothing until its status.hard is filled, so whatever is created before that is not counted.
landlord fills it itself right after writing the quota, grants access only once it is in force,
and the admission policy landlord-quota-in-force refuses what such a quota counts while it is
not in force, whatever the order of events.

Attackers act as alice (an owner) from several threads, creating as fast as they can; every
object is either refused or counted, and counts never exceed the quota. The real
kube-controller-manager runs unless a test stops it (and starts it again before it ends).
"""

import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import RBAC_GROUP, short_id
from tenants import TENANT_LABEL, q, restricted_pod

POLICY = "ValidatingAdmissionPolicy 'landlord-quota-in-force'"
PROVISIONING = "is still being provisioned"


def configmap(name):
    return {"metadata": {"name": name}, "data": {"k": "v"}}


def service(name):
    """A headless Service: no cluster IP to allocate, which concurrent creates can race on."""
    return {"metadata": {"name": name},
            "spec": {"clusterIP": "None", "ports": [{"port": 80}], "selector": {"app": name}}}


def refused(e):
    """A refusal that leaves nothing behind: quota, the policy, RBAC, a missing ServiceAccount,
    or quota admission losing a race on the quota's usage (409)."""
    return e.status in (403, 409, 422) or (e.status == 500 and "quota" in (e.body or ""))


class Hammer:
    """Threads creating objects as alice in the given namespaces until stopped; records what
    was admitted and anything unexpected."""

    def __init__(self, kit, kind, namespaces, threads_per_ns=2):
        self.kit, self.kind, self.stop = kit, kind, threading.Event()
        self.admitted, self.unexpected, self.refusals = [], [], []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(ns, i), daemon=True)
                        for ns in namespaces for i in range(threads_per_ns)]

    def _create(self, api, ns, name):
        if self.kind == "pods":
            return api.create_namespaced_pod(ns, restricted_pod(name))
        if self.kind == "services":
            return api.create_namespaced_service(ns, service(name))
        return api.create_namespaced_config_map(ns, configmap(name))

    def _run(self, ns, i):
        api = k8s.CoreV1Api(self.kit.fresh_client("alice"))
        n = 0
        while not self.stop.is_set():
            name = f"h{i}-{n}-{short_id(4)}"
            n += 1
            try:
                self._create(api, ns, name)
                with self.lock:
                    self.admitted.append((ns, name))
            except ApiException as e:
                with self.lock:
                    (self.refusals if refused(e) else self.unexpected).append(
                        f"{ns}/{name}: {e.status} {(e.body or '')[:300]}")
                time.sleep(0.01)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)
        assert not self.unexpected, self.unexpected[:5]

    def per_namespace(self):
        out = {}
        for ns, _ in self.admitted:
            out[ns] = out.get(ns, 0) + 1
        return out


def count(kit, kind, ns, names=None):
    """Objects of kind in ns (only those named in names, when given)."""
    items = {"pods": kit.core.list_namespaced_pod, "services": kit.core.list_namespaced_service,
             "configmaps": kit.core.list_namespaced_config_map}[kind](ns).items
    return sum(1 for o in items if names is None or o.metadata.name in names)


def quota_of(kit, ns):
    return kit.quota(ns)


def assert_counted(kit, kind, key, namespaces, hammer):
    """Every object the hammer got in is counted by its namespace's quota, and no namespace
    holds more than its quota allows."""
    mine = {ns: {n for s, n in hammer.admitted if s == ns} for ns in namespaces}
    for ns in namespaces:
        rq = quota_of(kit, ns)
        have = count(kit, kind, ns, mine[ns])
        assert have == len(mine[ns]), (ns, have, len(mine[ns]))
        used = q((rq.status.used or {}).get(key, "0"))
        hard = q(rq.status.hard[key])
        extra = count(kit, kind, ns) - have  # e.g. kube-root-ca.crt
        assert used == have + extra, f"{ns}: {have + extra} {kind}, quota counts {used}"
        assert have + extra <= hard, f"{ns}: {have + extra} {kind} over {key}={hard}"


# ---------- landlord's own order ----------

def test_an_owner_racing_new_namespaces_never_gets_past_their_quotas(kit):
    """alice watches for her tenant's namespaces and creates pods in each from the moment it
    exists; over 50 fresh namespaces every pod is refused or counted, and none exceeds its
    namespace's quota or the plan."""
    names = [f"n{i:02d}" for i in range(50)]
    plan = kit.plan(hard={"pods": "50"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=names)
    nss = [kit.expect_namespace(f"{t}-{n}") for n in names]
    seen = set()
    hammers = []
    kit.start()

    def hammer_new():
        for ns in kit.tenant_namespaces(t):
            if ns not in seen:
                seen.add(ns)
                hammers.append(Hammer(kit, "pods", [ns], threads_per_ns=1).start())
        return len(seen) == len(nss)
    kit.cluster.wait_for(hammer_new, 60, interval=0.05, what="every namespace, hammered at once")
    kit.wait_ready(t, nss)
    kit.cluster.wait_for(lambda: sum(len(h.admitted) for h in hammers) >= 50, 60,
                         what="one pod admitted in every namespace")
    time.sleep(1)  # keep pushing: nothing more may get in
    for h in hammers:
        h.finish()
    total = sum(len(h.admitted) for h in hammers)
    assert total == 50, total
    for h in hammers:
        assert_counted(kit, "pods", "pods", list(h.per_namespace()) or [], h)


# ---------- no kube-controller-manager at all ----------

def test_without_the_controller_manager_namespaces_are_usable_and_the_quota_holds(kit):
    """With kube-controller-manager stopped, nobody else fills a quota's status: landlord's own
    status write makes the namespaces usable, and every pod, service and ConfigMap is counted
    (no recount will correct anything). Pods are admitted at all only because landlord made
    each new namespace's default ServiceAccount, which the controller manager would have."""
    kit.cluster.stop_kcm()
    try:
        plan = kit.plan(hard={"pods": "2", "services": "3", "count/configmaps": "6"})
        t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a", "b", "c"])
        nss = [kit.expect_namespace(f"{t}-{n}") for n in ("a", "b", "c")]
        kit.start()
        kit.wait_ready(t, nss)
        for ns in nss:
            sa = kit.core.read_namespaced_service_account("default", ns)
            assert not sa.metadata.labels, sa.metadata
        for kind, key, limit in (("pods", "pods", 2), ("services", "services", 3),
                                 ("configmaps", "count/configmaps", 6)):
            h = Hammer(kit, kind, nss).start()
            kit.cluster.wait_for(lambda: len(h.admitted) >= limit, 60,
                                 what=f"{limit} {kind} across the tenant")
            time.sleep(1)
            h.finish()
            assert len(h.admitted) == limit, (kind, h.per_namespace())
            assert_counted(kit, kind, key, nss, h)
    finally:
        kit.cluster.start_kcm()


# ---------- the admission policy on its own ----------

@pytest.fixture
def policy_only(kit):
    """kube-controller-manager stopped (nobody fills a quota's status), the policies in force,
    no landlord: namespaces labelled as a tenant's by the administrator, with alice admin in
    them (RBAC allows what only the policy refuses)."""
    kit.cluster.stop_kcm()
    try:
        probe = tenant_namespace(kit, {"count/configmaps": "5"}, policies=False)
        alice = k8s.CoreV1Api(kit.client("alice"))

        def refused_by_policy():
            try:
                alice.create_namespaced_config_map(probe, configmap("probe"), dry_run="All")
                return False
            except ApiException as e:
                return e.status in (403, 422) and POLICY in (e.body or "")
        kit.apply_policies()
        kit.cluster.wait_for(refused_by_policy, 60, what="the quota policy in force")
        yield
    finally:
        kit.remove_policies()
        kit.cluster.start_kcm()
        kit.cluster.wait_for(lambda: not refused_by_policy(), 60,
                             what="the policies out of force")


def grant_admin(kit, ns):
    kit.rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"}]})
    kit.wait_can_i("alice", "create", "configmaps", ns)


def tenant_namespace(kit, hard, policies=True):
    """A namespace labelled as a tenant's, with landlord-quota with hard (status left empty:
    kube-controller-manager is stopped), and alice admin there. The quota comes first: while a
    tenant namespace has none, nothing but a quota can be created there, by anyone, and the
    policy sees a new quota a moment after it is created."""
    ns = kit.namespace(labels={TENANT_LABEL: "probe-" + kit.id})
    kit.core.create_namespaced_resource_quota(ns, {
        "metadata": {"name": "landlord-quota"}, "spec": {"hard": hard}})
    if policies:
        kit.cluster.wait_for(lambda: try_create(kit.core, ns, "seen", dry_run="All"), 30,
                             what="the policy to see the new quota")
    grant_admin(kit, ns)
    return ns


def fill_status(kit, ns, hard, used):
    kit.core.patch_namespaced_resource_quota_status(
        "landlord-quota", ns, {"status": {"hard": hard, "used": used}})


def test_the_policy_alone_refuses_until_the_quota_is_in_force(kit, policy_only):
    """Without landlord's order: in a tenant namespace without landlord-quota nothing is
    admitted, even from a cluster administrator (Kubernetes looks the parameter up before any
    exemption); a quota whose status is empty refuses what it counts, with the provisioning
    message, and admits what it does not count; once its status is filled, creates are
    admitted and counted."""
    alice = k8s.CoreV1Api(kit.client("alice"))
    bare = kit.namespace(labels={TENANT_LABEL: "probe-" + kit.id})
    body = api_refusal(kit.core.create_namespaced_config_map, bare, configmap("c"))
    assert POLICY in body, body

    hard = {"count/configmaps": "2"}
    ns = tenant_namespace(kit, hard)
    body = api_refusal(alice.create_namespaced_config_map, ns, configmap("c"))
    assert POLICY in body and PROVISIONING in body, body
    alice.create_namespaced_service(ns, service("not-counted"))

    fill_status(kit, ns, hard, {"count/configmaps": "0"})
    kit.cluster.wait_for(lambda: try_create(alice, ns, "first"), 30,
                         what="a ConfigMap admitted once the quota is in force")
    rq = kit.quota(ns)
    assert q(rq.status.used["count/configmaps"]) == 1


def test_a_create_racing_the_status_is_refused_or_counted(kit, policy_only):
    """The lag between the policy's view of the quota and quota admission's: creates race the
    moment the status is filled, over 10 fresh namespaces; each is refused or counted, never
    admitted uncounted (no recount runs: kube-controller-manager is stopped)."""
    hard = {"count/configmaps": "3"}
    nss = [tenant_namespace(kit, hard) for _ in range(10)]
    h = Hammer(kit, "configmaps", nss, threads_per_ns=1).start()
    time.sleep(0.5)
    assert not h.admitted, h.admitted
    for ns in nss:
        fill_status(kit, ns, hard, {"count/configmaps": "0"})
    kit.cluster.wait_for(lambda: len(h.admitted) >= 30, 60, what="3 ConfigMaps everywhere")
    time.sleep(1)
    h.finish()
    assert h.per_namespace() == {ns: 3 for ns in nss}
    assert_counted(kit, "configmaps", "count/configmaps", nss, h)


def api_refusal(fn, *args):
    with pytest.raises(ApiException) as exc:
        fn(*args)
    assert exc.value.status in (403, 422), exc.value.body
    return exc.value.body


def try_create(api, ns, name, **kw):
    try:
        api.create_namespaced_config_map(ns, configmap(name), **kw)
        return True
    except ApiException as e:
        if e.status in (403, 422):
            return False
        raise


# ---------- a Plan changed under load ----------

def reported(kit, t, hard):
    """The Tenant reports the plan's quota as applied: status.quota.hard is the new plan and
    QuotaReady is no longer waiting for it."""
    def ok(obj):
        st = obj["status"]
        c = kit.condition_of(obj, "QuotaReady") or {}
        have = {k: q(v) for k, v in ((st.get("quota") or {}).get("hard") or {}).items()}
        return have == {k: q(v) for k, v in hard.items()} and c.get("reason") in (
            "Provisioned", "OverPlan")
    kit.wait_tenant(t, ok, f"the plan {hard} reported applied")


def test_a_plan_changed_under_load_never_admits_more_than_the_new_limit(kit):
    """alice creates pods in two namespaces without pause while the Plan is lowered, then
    raised: once landlord reports a change applied, the tenant's pods never exceed the new
    limit (or what it already had, when lowered below that), and every pod is counted.

    kube-controller-manager is stopped once the namespaces have their ServiceAccounts: its
    recount of a quota whose spec changed reads its own caches, which can miss a pod admitted
    a moment before, and lower status.used below the truth until its next recount (a known
    Kubernetes race, docs/quota.md). Without it, what is tested is landlord's guarantee alone."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a", "b"])
    nss = [kit.expect_namespace(f"{t}-{n}") for n in ("a", "b")]
    kit.start()
    kit.wait_ready(t, nss)
    for ns in nss:
        kit.wait_default_sa(ns)
    kit.cluster.stop_kcm()
    h = Hammer(kit, "pods", nss)
    try:
        h.start()
        kit.cluster.wait_for(lambda: len(h.admitted) >= 3, 60, what="a few pods")
        for limit in (4, 8):
            kit.patch_plan(plan, {"resourceQuota": {"hard": {"pods": str(limit)}}})
            reported(kit, t, {"pods": str(limit)})
            at_report = len(h.admitted)
            time.sleep(2)
            now = len(h.admitted)
            assert now <= max(limit, at_report), (limit, at_report, now)
            assert sum(count(kit, "pods", ns) for ns in nss) == now
        h.finish()
        for ns in nss:
            rq = kit.quota(ns)
            assert q(rq.status.used["pods"]) == count(kit, "pods", ns)
    finally:
        h.stop.set()
        kit.cluster.start_kcm()
