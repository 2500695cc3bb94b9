"""landlord killed right after its Nth API write, for every N, still converges after a restart.

The fault hook --test-crash-after-writes N makes the process exit (status 86, no cleanup) just
after the Nth successful POST/PUT/PATCH/DELETE, before it sees the answer. For each N up to the
number of writes one provisioning needs (found by raising N until a run converges before its
crash point), a fresh Tenant is provisioned by a landlord that dies there, then by a normal
landlord; the end state must equal the uninterrupted one.
Also here: a Tenant whose Plan is missing reports it, and recovers when the Plan appears.
"""

import pytest
from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

import tenants
from kube import condition_of, short_id
from procs import start_controllers
from tenants import get_tenant

CRASH_EXIT = 86
MAX_WRITES = 80  # one tenant's provisioning needs about 20
PLAN_HARD = {"pods": "10", "requests.cpu": "2", "count/configmaps": "20"}


def create_plan(cluster, name):
    tenants.create_plan(cluster, name, hard=PLAN_HARD,
                        limits=[{"type": "Container", "default": {"cpu": "100m"}}])


def create_tenant(cluster, name, plan):
    tenants.create_tenant(cluster, name, plan, owners={"users": ["alice"]},
                          viewers={"groups": ["team-b"]}, prefixed=["dev", "prod"],
                          sandboxes={"enabled": True})


def ready(cluster, name):
    """The Tenant, once Ready for its current generation; else None."""
    t = get_tenant(cluster, name)
    return t if tenants.ready(t) else None


def wait_ready(cluster, name, timeout=90):
    return tenants.wait_ready(cluster, name, timeout=timeout)


def end_state(cluster, tenant):
    """What provisioning produced for a tenant, with the tenant's name replaced by T."""
    admin = cluster.client("admin")
    core, rbac, net = k8s.CoreV1Api(admin), k8s.RbacAuthorizationV1Api(admin), \
        k8s.NetworkingV1Api(admin)
    sel = f"landlord.dev/tenant={tenant}"
    state, totals = {}, {}
    for ns in core.list_namespace(label_selector=sel).items:
        n = ns.metadata.name
        labels = {k: v.replace(tenant, "T") for k, v in ns.metadata.labels.items()
                  if k != "kubernetes.io/metadata.name"}
        rqs = core.list_namespaced_resource_quota(n).items
        for rq in rqs:
            for k, v in rq.spec.hard.items():
                totals[k] = totals.get(k, 0) + parse_quantity(v)
        state[n.replace(tenant, "T")] = {
            "labels": labels,
            "quotas": sorted(r.metadata.name for r in rqs),
            "limits": sorted(r.metadata.name for r in core.list_namespaced_limit_range(n).items),
            "netpols": sorted(p.metadata.name
                              for p in net.list_namespaced_network_policy(n).items),
            "bindings": sorted((b.metadata.name, b.role_ref.name,
                                tuple(sorted((s.kind, s.name) for s in b.subjects or [])))
                               for b in rbac.list_namespaced_role_binding(n).items),
        }
    role = f"landlord:tenant:{tenant}"
    t = get_tenant(cluster, tenant)
    return {
        "namespaces": state,
        "quota_totals": totals,
        "cluster_role": rbac.read_cluster_role(role).rules[0].resource_names == [tenant],
        "cluster_binding": sorted((s.kind, s.name)
                                  for s in rbac.read_cluster_role_binding(role).subjects),
        "finalizers": t["metadata"].get("finalizers"),
        "status_namespaces": [n.replace(tenant, "T") for n in t["status"]["namespaces"]],
        "sandboxes": {u: n.replace(tenant, "T") for u, n in t["status"]["sandboxes"].items()},
    }


def writes(proc):
    return int(sum(proc.metric("landlord_api_requests_total", verb=v)
                   for v in ("CREATE", "APPLY", "PATCH", "UPDATE", "DELETE")))


def test_converges_after_a_crash_after_every_write(installed, tmp_path):
    plan = f"crash-{short_id()}"
    create_plan(installed, plan)
    reference = f"ref-{short_id()}"
    create_tenant(installed, reference, plan)
    proc = start_controllers(installed, tmp_path, name="ref")
    try:
        wait_ready(installed, reference)
        needed = writes(proc)
    finally:
        assert proc.stop() == 0
    want = end_state(installed, reference)
    assert want["finalizers"] == ["landlord.dev/finalizer"]
    assert want["cluster_role"] is True
    assert want["cluster_binding"] == [("Group", "team-b"), ("User", "alice")]
    assert want["quota_totals"] == {k: parse_quantity(v) for k, v in PLAN_HARD.items()}
    assert len(want["namespaces"]) == 3 and needed >= 10

    # N = 1, 2, ... until a run provisions its tenant with fewer than N writes: then every
    # write one provisioning makes has had a crash right after it.
    for n in range(1, MAX_WRITES + 1):
        name = f"c{n}-{short_id()}"
        create_tenant(installed, name, plan)
        crashing = start_controllers(installed, tmp_path, "--test-crash-after-writes", str(n),
                                     name=f"crash-{n}", wait=False)
        installed.wait_for(lambda: crashing.popen.poll() is not None or ready(installed, name),
                           timeout=60, what=f"N={n}: a crash or convergence")
        code = crashing.popen.poll()
        converged = code is None
        if converged:
            code = crashing.stop()
        # A run that converged may still crash on a write that follows Ready (its Event, the
        # Plan's status) before it is stopped: that exit is the hook's too.
        assert code in ((0, CRASH_EXIT) if converged else (CRASH_EXIT,)), f"N={n}: exit {code}"
        healthy = start_controllers(installed, tmp_path, name=f"after-{n}", wait=False)
        try:
            healthy.wait_probe()
            wait_ready(installed, name)
        finally:
            assert healthy.stop() == 0
        got = end_state(installed, name)
        assert got == want, f"after a crash following write {n}"
        if converged:
            break
    else:
        pytest.fail(f"still crashing after {MAX_WRITES} writes; one provisioning took {needed}")
    assert n > 10, f"a provisioning converged within {n - 1} writes; the hook did not count"


def test_missing_plan_is_reported_and_recovers(installed, tmp_path):
    plan = f"later-{short_id()}"
    name = f"np-{short_id()}"
    create_tenant(installed, name, plan)
    proc = start_controllers(installed, tmp_path, wait=False)
    try:
        proc.wait_probe()

        def plan_missing():
            t = get_tenant(installed, name)
            c = condition_of(t, "Ready")
            return c and c["status"] == "False" and c["reason"] == "PlanNotFound" and t
        t = installed.wait_for(plan_missing, timeout=60, what="Ready=False PlanNotFound")
        assert plan in condition_of(t, "QuotaReady")["message"]
        # namespaces exist, but nobody was granted anything without a quota in force
        rbac = k8s.RbacAuthorizationV1Api(installed.client("admin"))
        for ns in t["status"]["namespaces"]:
            assert rbac.list_namespaced_role_binding(ns).items == []
        r = installed.kubectl("alice", "auth", "can-i", "create", "pods", "-n", f"{name}-dev")
        assert r.stdout.strip() == "no"

        create_plan(installed, plan)
        wait_ready(installed, name)
        r = installed.kubectl("alice", "auth", "can-i", "create", "pods", "-n", f"{name}-dev")
        assert r.stdout.strip() == "yes"
    finally:
        assert proc.stop() == 0
