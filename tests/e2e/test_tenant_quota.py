"""A Plan's quota holds for a tenant as a whole (docs/quota.md), seen from outside: concurrent
pod creation in several namespaces never gets past the plan, headroom moves to where it is
needed, Plan changes reach every namespace's ResourceQuota and LimitRange, and the Tenant and
Plan report usage.

Pods stay Pending (there is no kubelet) and count against quota all the same.
"""

import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

import tenants
from tenants import q

LIMITS = [{"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"},
           "max": {"cpu": "1"}}]
POD_CPU = "100m"


def provisioned_tenant(kit, plan, names):
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=names)
    nss = [kit.expect_namespace(f"{t}-{n}") for n in names]
    kit.start()
    kit.wait_ready(t, nss)
    for ns in nss:
        kit.wait_provisioned(ns, t)
        kit.wait_default_sa(ns)
        kit.wait_can_i("alice", "create", "pods", ns)
    return t, nss


def quotas(api, namespaces):
    """namespace -> landlord-quota, all from one list (one consistent snapshot)."""
    items = api.list_resource_quota_for_all_namespaces(
        field_selector="metadata.name=landlord-quota").items
    return {rq.metadata.namespace: rq for rq in items if rq.metadata.namespace in namespaces}


def total(rqs, field, resource):
    """Sum over namespaces of spec.hard or status.hard [resource]."""
    out = q(0)
    for rq in rqs.values():
        hard = (getattr(rq, field).hard or {}) if getattr(rq, field) else {}
        out += q(hard.get(resource, 0))
    return out


def live_pods(api, label, namespaces):
    items = api.list_pod_for_all_namespaces(label_selector=label).items
    return [p for p in items if p.metadata.namespace in namespaces
            and p.status.phase not in ("Succeeded", "Failed")
            and not p.metadata.deletion_timestamp]


def exceeded_quota(e):
    return e.status == 403 and "exceeded quota" in (e.body or "")


def quota_conflict(e):
    """Quota admission's update of the quota's usage lost a race with another write to the
    quota (409 Conflict on the ResourceQuota): nothing was created, and a client retries."""
    return e.status == 409 and '"kind":"resourcequotas"' in (e.body or "")


def create_pod(api, ns, name, label_value):
    api.create_namespaced_pod(ns, tenants.restricted_pod(name, {"e2e-quota": label_value},
                                                         cpu=POD_CPU))


def test_tenant_quota_holds_under_concurrent_pod_creation(kit):
    plan_hard = {"pods": "6", "requests.cpu": "3"}
    plan = kit.plan(hard=plan_hard, limits=LIMITS)
    t, nss = provisioned_tenant(kit, plan, ["one", "two", "three"])
    one, two, three = nss
    rqs = quotas(kit.core, nss)
    assert set(rqs) == set(nss)
    for res, val in plan_hard.items():
        assert total(rqs, "spec", res) == q(val), (res, {n: r.spec.hard for n, r in rqs.items()})
    assert {n: q(r.spec.hard["pods"]) for n, r in rqs.items()} == {n: 2 for n in nss}

    label = f"e2e-quota={kit.id}"
    stop = threading.Event()
    violations, errors, observations = [], [], [0]
    max_seen = [0]

    def observe():
        api = k8s.CoreV1Api(kit.fresh_client("admin"))
        while not stop.is_set():
            n = len(live_pods(api, label, nss))
            max_seen[0] = max(max_seen[0], n)
            if n > 6:
                violations.append(f"{n} pods")
            snap = quotas(api, nss)
            for res, val in plan_hard.items():
                for field in ("status", "spec"):
                    s = total(snap, field, res)
                    if s > q(val):
                        violations.append(f"sum of {field}.hard[{res}] = {s} > {val}: " + str(
                            {n: getattr(r, field).hard for n, r in snap.items()}))
            observations[0] += 1
            time.sleep(0.05)

    def worker(ns, tag, want):
        """Create up to `want` pods in ns, retrying quota rejections until stopped."""
        api = k8s.CoreV1Api(kit.fresh_client("alice"))
        made = 0
        while made < want and not stop.is_set():
            try:
                create_pod(api, ns, f"{tag}-{made}", kit.id)
                made += 1
            except ApiException as e:
                if not (exceeded_quota(e) or quota_conflict(e)):
                    errors.append(f"{ns} {tag}: {e.status} {e.body}")
                    return
                time.sleep(0.1)

    # Uneven demand: one and two want far more than their share, three wants one pod, so
    # reaching 6 needs headroom moved from three.
    plan_workers = [(one, "a", 10), (one, "b", 10), (one, "c", 10), (two, "d", 10),
                    (two, "e", 10), (three, "f", 1)]
    observer = threading.Thread(target=observe, daemon=True)
    workers = [threading.Thread(target=worker, args=w, daemon=True) for w in plan_workers]
    # kube-controller-manager recounts a quota from its own caches when its spec changes and
    # can count an object admitted a moment before out (docs/quota.md, the race that remains):
    # stopped here, quota admission alone counts, and landlord's guarantee is judged alone.
    kit.cluster.stop_kcm()
    observer.start()
    for w in workers:
        w.start()
    admin = kit.core
    try:
        try:
            kit.cluster.wait_for(lambda: errors or len(live_pods(admin, label, nss)) >= 6, 120,
                                 interval=0.2, what="6 pods across the tenant")
        except pytest.fail.Exception:
            pods = live_pods(admin, label, nss)
            rqs = {n: (r.spec.hard, r.status.hard, r.status.used)
                   for n, r in quotas(admin, nss).items()}
            pytest.fail("6 pods never existed: pods per namespace "
                        f"{ {ns: sum(p.metadata.namespace == ns for p in pods) for ns in nss} }, "
                        f"quotas (spec, status, used) {rqs}"
                        f"\nviolations {violations[:5]}\n{kit.log_tail(3000)}")
        # Keep pushing for a while: nothing more may get in.
        time.sleep(5)
    finally:
        stop.set()
        for w in workers:
            w.join(30)
        observer.join(30)
        kit.cluster.start_kcm()
    assert not errors, errors
    if violations:
        pods = live_pods(admin, label, nss)
        rqs = {n: (r.spec.hard, r.status.hard, r.status.used)
               for n, r in quotas(admin, nss).items()}
        pytest.fail(f"violations {sorted(set(violations))[:10]}: pods per namespace "
                    f"{ {ns: sum(p.metadata.namespace == ns for p in pods) for ns in nss} }, "
                    f"quotas (spec, status, used) {rqs}\n{kit.log_tail(4000)}")
    assert observations[0] > 10
    pods = live_pods(admin, label, nss)
    per_ns = {ns: sum(p.metadata.namespace == ns for p in pods) for ns in nss}
    assert len(pods) == 6, per_ns
    assert per_ns[three] == 1, per_ns
    assert max_seen[0] == 6

    rqs = quotas(kit.core, nss)
    for ns in nss:
        used = q(rqs[ns].status.used["pods"])
        assert used == per_ns[ns] and q(rqs[ns].status.hard["pods"]) >= used
    for res, val in plan_hard.items():
        assert total(rqs, "spec", res) <= q(val)

    # The Tenant reports tenant-wide use against the plan; the Plan counts its tenants.
    def tenant_quota(obj):
        quota = obj["status"].get("quota") or {}
        hard, used = quota.get("hard") or {}, quota.get("used") or {}
        return ({k: q(v) for k, v in hard.items()} == {k: q(v) for k, v in plan_hard.items()}
                and q(used.get("pods", -1)) == 6 and q(used.get("requests.cpu", -1)) == q("600m"))
    kit.wait_tenant(t, tenant_quota, "status.quota used pods=6 requests.cpu=600m")

    # The Plan sums its tenants' quota and names the tenant at its pods limit.
    def plan_totals(st):
        used = (st.get("quota") or {}).get("used") or {}
        return (st.get("tenants") == 1 and st.get("namespaces") == 3
                and q(used.get("pods", -1)) == 6)
    st = kit.wait_plan(plan, plan_totals, "1 tenant, 3 namespaces, 6 pods used")
    assert {k: q(v) for k, v in st["quota"]["hard"].items()} == \
        {k: q(v) for k, v in plan_hard.items()}, st
    assert q(st["quota"]["used"]["requests.cpu"]) == q("600m"), st
    assert st["tenantsNearLimit"] == [{"name": t, "namespaces": 3, "resource": "pods",
                                       "used": "6", "hard": "6", "usedPerMille": 1000}], st


def limit_range_matches(lr, limits):
    if lr is None:
        return False
    have = []
    for item in lr.spec.limits:
        d = {"type": item.type}
        for f in ("max", "min", "default", "default_request", "max_limit_request_ratio"):
            v = getattr(item, f)
            if v:
                d[f] = {k: q(x) for k, x in v.items()}
        have.append(d)
    want = []
    for item in limits:
        d = {"type": item["type"]}
        for f, key in (("max", "max"), ("min", "min"), ("default", "default"),
                       ("default_request", "defaultRequest"),
                       ("max_limit_request_ratio", "maxLimitRequestRatio")):
            if item.get(key):
                d[f] = {k: q(x) for k, x in item[key].items()}
        want.append(d)
    return have == want


def test_plan_changes_reach_every_namespace(kit):
    plan = kit.plan(hard={"pods": "6", "requests.cpu": "3"}, limits=LIMITS)
    t, nss = provisioned_tenant(kit, plan, ["one", "two", "three"])
    for ns in nss:
        lr = ignore_lr(kit, ns)
        assert limit_range_matches(lr, LIMITS), (ns, lr)
        assert lr.metadata.labels[tenants.MANAGED_BY] == "landlord"

    new_limits = [{"type": "Container", "default": {"cpu": "300m"},
                   "defaultRequest": {"cpu": "150m"}, "max": {"cpu": "2"}}]
    kit.patch_plan(plan, {"resourceQuota": {"hard": {"pods": "9", "requests.cpu": None,
                                                     "count/configmaps": "30"}},
                          "limitRange": {"limits": new_limits}})
    last = {}

    def updated():
        rqs = last["rqs"] = quotas(kit.core, nss)
        if set(rqs) != set(nss):
            return False
        for rq in rqs.values():
            if set(rq.spec.hard) != {"pods", "count/configmaps"} or not kit.quota_in_force(
                    rq.metadata.namespace):
                return False
        return (total(rqs, "spec", "pods") == 9 and total(rqs, "spec", "count/configmaps") == 30
                and all(limit_range_matches(ignore_lr(kit, ns), new_limits) for ns in nss))
    try:
        kit.cluster.wait_for(updated, 60, interval=0.3, what="the new plan in every namespace")
    except pytest.fail.Exception:
        pytest.fail(f"plan change not applied: "
                    f"{ {n: r.spec.hard for n, r in last['rqs'].items()} }\n{kit.log_tail(2000)}")

    def tenant_hard(obj):
        hard = (obj["status"].get("quota") or {}).get("hard") or {}
        return {k: q(v) for k, v in hard.items()} == {"pods": 9, "count/configmaps": 30}
    kit.wait_tenant(t, tenant_hard, "status.quota.hard follows the plan")

    kit.wait_plan(plan, lambda st: st.get("tenants") == 1 and st.get("namespaces") == 3,
                  "the changed plan observed, 1 tenant, 3 namespaces")


def ignore_lr(kit, ns):
    return tenants.ignore_404(kit.core.read_namespaced_limit_range, "landlord-limits", ns)


def test_lowering_the_plan_below_usage_freezes_the_tenant(kit):
    plan = kit.plan(hard={"pods": "6"}, limits=LIMITS)
    t, nss = provisioned_tenant(kit, plan, ["one", "two"])
    one, two = nss
    alice = k8s.CoreV1Api(kit.client("alice"))
    for ns in nss:
        for i in range(2):
            create_pod(alice, ns, f"p{i}", kit.id)

    kit.patch_plan(plan, {"resourceQuota": {"hard": {"pods": "3"}}})
    kit.wait_condition(t, "QuotaReady", "False", "OverPlan")

    def frozen():
        rqs = quotas(kit.core, nss)
        return (len(rqs) == 2 and all(q(rq.spec.hard["pods"]) == 2 for rq in rqs.values())
                and all(kit.quota_in_force(ns) for ns in nss))
    try:
        kit.cluster.wait_for(frozen, 60, interval=0.3, what="every quota set to its usage")
    except pytest.fail.Exception:
        rqs = quotas(kit.core, nss)
        pytest.fail("quotas not frozen at usage: " + str(
            {n: (r.spec.hard, r.status.hard, r.status.used) for n, r in rqs.items()}) +
            f"\n{kit.log_tail(3000)}")
    for ns in nss:
        with pytest.raises(ApiException) as exc:
            create_pod(alice, ns, "extra", kit.id)
        assert exceeded_quota(exc.value), exc.value.body
    assert len(live_pods(kit.core, f"e2e-quota={kit.id}", nss)) == 4, "lowering deleted pods"

    # Back within the plan: the condition clears and the headroom is shared again.
    alice.delete_namespaced_pod("p0", one)
    alice.delete_namespaced_pod("p1", one)
    kit.wait_condition(t, "QuotaReady", "True")

    def room_again():
        rqs = quotas(kit.core, nss)
        return total(rqs, "spec", "pods") == 3 and all(kit.quota_in_force(ns) for ns in nss)
    kit.cluster.wait_for(room_again, 60, interval=0.3, what="the plan split again")

    def one_more():
        try:
            create_pod(alice, one, "again", kit.id)
            return True
        except ApiException as e:
            if exceeded_quota(e) or quota_conflict(e):
                return False
            raise
    kit.cluster.wait_for(one_more, 60, interval=0.5, what="a new pod admitted within the plan")
    with pytest.raises(ApiException) as exc:
        create_pod(alice, two, "over", kit.id)
    assert exceeded_quota(exc.value), exc.value.body
