"""The landlord binary against the real control plane: least privilege, leader election,
errors, probes, metrics and shutdown."""

import datetime
import json

from kubernetes import client as k8s

import tenants
from kube import ignore_404, uniq
from procs import LANDLORD, Proc, REPO, start_controllers, start_landlord

LEASE_NS = "landlord-system"


def make_tenant(cluster, name=None):
    return tenants.create_tenant(cluster, name or uniq("t"), "gold")


def tenant_status(cluster, name):
    obj = tenants.get_tenant(cluster, name)
    return obj, obj.get("status") or {}


def wait_observed(cluster, name):
    """The Tenant's status once it describes the current generation."""
    return tenants.wait_tenant(cluster, name, lambda obj: True, "status")["status"]


def read_lease(cluster):
    coord = k8s.CoordinationV1Api(cluster.client("admin"))
    return ignore_404(coord.read_namespaced_lease, "landlord", LEASE_NS)


def delete_lease(cluster):
    coord = k8s.CoordinationV1Api(cluster.client("admin"))
    ignore_404(coord.delete_namespaced_lease, "landlord", LEASE_NS)


def test_landlord_identity_is_not_a_cluster_admin(installed):
    review = k8s.AuthenticationV1Api(installed.client("landlord")).create_self_subject_review(
        k8s.V1SelfSubjectReview())
    user = review.status.user_info
    assert user.username == "system:serviceaccount:landlord-system:landlord"
    assert "system:masters" not in (user.groups or [])
    # Secrets are read and written through landlord-templates (TemplateGroupInstances stamp
    # them, resource mappings copy them: docs/templates.md); pods are only listed (the roll-up).
    for verb, resource in (("get", "nodes"), ("create", "pods"), ("escalate", "clusterroles"),
                           ("update", "nodes"), ("create", "customresourcedefinitions"),
                           ("impersonate", "users"), ("impersonate", "serviceaccounts")):
        r = installed.kubectl("landlord", "auth", "can-i", verb, resource, "-A")
        assert r.stdout.strip() == "no", (verb, resource, r.stdout)


def test_controller_reconciles_under_the_shipped_role(installed, tmp_path):
    name = make_tenant(installed)
    proc = start_controllers(installed, tmp_path, wait=False)
    try:
        proc.wait_probe()
        st = wait_observed(installed, name)
        ready = [c for c in st["conditions"] if c["type"] == "Ready"]
        # the tenant names a Plan that does not exist here
        assert ready and ready[0]["status"] == "False" and ready[0]["reason"] == "PlanNotFound"
        installed.wait_for(lambda: proc.get("/readyz")[0] == 200, what="readyz")
        assert proc.get("/healthz") == (200, "ok")
        # not Ready yet, so the tenant is requeued (a timer) rather than done
        assert proc.metric("landlord_reconcile_total", controller="tenant",
                           result="requeue") >= 1
        assert proc.metric("landlord_api_requests_total", verb="PATCH", code="200") >= 1
        assert proc.metric("landlord_api_requests_total", verb="LIST") >= 1
        assert ("landlord_workqueue_depth", frozenset({("name", "tenant")})) in proc.metrics()
    finally:
        assert proc.stop() == 0
    assert proc.find("stopped"), "no clean-shutdown record"


def test_steady_state_resync_writes_nothing(installed, tmp_path):
    names = [make_tenant(installed) for _ in range(3)]
    first = start_controllers(installed, tmp_path, name="first", wait=False)
    try:
        first.wait_probe()
        for n in names:
            wait_observed(installed, n)
        core = k8s.CoreV1Api(installed.client("admin"))

        def persisted():
            return ignore_404(core.read_namespaced_config_map, "landlord-config-accepted",
                              LEASE_NS)
        # the configuration in force was persisted too, so the second run has nothing to write
        installed.wait_for(persisted, what="the accepted LandlordConfig persisted")
    finally:
        assert first.stop() == 0
    rvs = {n: tenant_status(installed, n)[0]["metadata"]["resourceVersion"] for n in names}
    second = start_controllers(installed, tmp_path, name="second", wait=False)
    try:
        second.wait_probe()
        installed.wait_for(lambda: second.metric("landlord_reconcile_total",
                                                 controller="tenant") >= len(names),
                           what="every tenant reconciled again")
        # the controllers' client; the webhook's registers its configurations at start
        for verb in ("PATCH", "APPLY", "CREATE", "UPDATE", "DELETE"):
            assert second.metric("landlord_api_requests_total", verb=verb, client="main") == 0, \
                verb
    finally:
        assert second.stop() == 0
    assert rvs == {n: tenant_status(installed, n)[0]["metadata"]["resourceVersion"]
                   for n in names}


def test_api_errors_reach_the_log_with_the_servers_reason(installed, tmp_path):
    rbac = k8s.RbacAuthorizationV1Api(installed.client("admin"))
    rbac.delete_cluster_role_binding("landlord")
    # the webhook on given files: its own certificate would need the rights taken away here
    pki = installed.pki_dir
    proc = start_controllers(installed, tmp_path, "--tls-cert-file", pki / "webhook.crt",
                             "--tls-key-file", pki / "webhook.key", wait=False)
    try:
        try:
            proc.wait_probe()

            def forbidden_logged():
                return [r for r in proc.records() if r.get("level") in ("warn", "error")
                        and "Forbidden" in json.dumps(r)
                        and 'cannot list resource \\"tenants\\"' in json.dumps(r)]
            installed.wait_for(forbidden_logged, timeout=60, what="a Forbidden record")
            assert proc.get("/readyz")[0] == 503
        finally:
            r = installed.kubectl("admin", "apply", "-f", REPO / "deploy/rbac.yaml")
            assert r.returncode == 0, r.stderr
        # With the binding back, the informer recovers on its own back-off.
        name = make_tenant(installed)
        wait_observed(installed, name)
    finally:
        assert proc.stop() == 0


def run_to_exit(argv, tmp_path, name):
    p = Proc(argv, tmp_path / f"{name}.log")
    code = p.popen.wait(60)
    return code, p.records(), p.log_path.read_text()


def test_missing_kubeconfig_is_one_clear_error(tmp_path):
    code, records, text = run_to_exit([LANDLORD, "run", "--kubeconfig", tmp_path / "nope"],
                                      tmp_path, "nokc")
    errors = [r for r in records if r["level"] == "error"]
    assert code == 1, text
    assert len(errors) == 1 and "kubeconfig" in errors[0]["msg"], text
    assert "nope" in errors[0]["error"]


def test_unreachable_server_is_one_clear_error(installed, tmp_path):
    kc = (tmp_path / "dead.kubeconfig")
    text = open(installed.kubeconfig("landlord")).read()
    kc.write_text(text.replace(installed.api_url, "https://127.0.0.1:1"))
    code, records, text = run_to_exit([LANDLORD, "run", "--kubeconfig", kc], tmp_path, "dead")
    errors = [r for r in records if r["level"] == "error"]
    assert code == 1, text
    assert len(errors) == 1 and errors[0]["msg"] == "cannot reach the API server", text
    assert errors[0]["server"] == "https://127.0.0.1:1"


def test_rejected_credentials_are_one_clear_error(installed, tmp_path):
    kc = tmp_path / "badtoken.kubeconfig"
    text = open(installed.kubeconfig("alice")).read()
    token = [ln.split(":", 1)[1].strip() for ln in text.splitlines()
             if ln.strip().startswith("token:")][0]
    kc.write_text(text.replace(token, "not-a-valid-token"))
    code, records, text = run_to_exit([LANDLORD, "run", "--kubeconfig", kc], tmp_path, "bad")
    errors = [r for r in records if r["level"] == "error"]
    assert code == 1, text
    assert len(errors) == 1 and errors[0]["code"] == 401, text


def leader_and_follower(procs, cluster):
    def leaders():
        flags = [p.metric("landlord_leader") for p in procs]
        return flags if sorted(flags) == [0.0, 1.0] else None
    flags = cluster.wait_for(leaders, timeout=60, what="exactly one leader")
    leader = procs[flags.index(1.0)]
    return leader, procs[1 - flags.index(1.0)]


def parse_time(s):
    return datetime.datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")


def test_two_controllers_one_leader_failover_and_graceful_handover(installed, tmp_path):
    delete_lease(installed)
    timing = ["--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms"]
    procs = [start_landlord(installed, tmp_path, "controller", *timing, name=f"c{i}")
             for i in range(2)]
    try:
        for p in procs:
            p.wait_probe()
        leader, follower = leader_and_follower(procs, installed)
        for _ in range(3):
            wait_observed(installed, make_tenant(installed))
        assert leader.metric("landlord_reconcile_total") >= 3
        assert follower.metric("landlord_reconcile_total") == 0
        lease = read_lease(installed)
        assert lease.spec.holder_identity == leader.find("leader election started")[0]["identity"]
        raw = k8s.CoordinationV1Api(installed.client("admin")).read_namespaced_lease(
            "landlord", LEASE_NS, _preload_content=False).data.decode()
        renew = json.loads(raw)["spec"]["renewTime"]
        assert len(renew.split(".")[1]) == len("000000Z"), renew

        # Crash: the follower takes over once the lease expires (duration + one retry period).
        killed_at = datetime.datetime.now(datetime.timezone.utc)
        leader.kill()
        installed.wait_for(lambda: follower.metric("landlord_leader") == 1.0, timeout=30,
                           what="follower to take over")
        lease = read_lease(installed)
        took = (lease.spec.acquire_time - killed_at).total_seconds()
        assert took <= 4.0 + 0.5 + 1.0, f"takeover after {took:.2f}s"
        wait_observed(installed, make_tenant(installed))
        assert follower.metric("landlord_reconcile_total") >= 1

        # Graceful stop releases the Lease at once: a new candidate need not wait for expiry.
        newcomer = start_landlord(installed, tmp_path, "controller", "--lease-duration", "30s",
                                  "--renew-deadline", "20s", "--retry-period", "500ms",
                                  name="c2")
        procs.append(newcomer)
        newcomer.wait_probe()
        assert follower.stop() == 0
        released = follower.find("workers stopped")
        assert released, "the leader did not drain its workers"
        installed.wait_for(lambda: newcomer.metric("landlord_leader") == 1.0, timeout=10,
                           what="newcomer to lead well before a 30 s lease could expire")
    finally:
        for p in procs:
            p.stop()


def test_sigterm_exits_cleanly_and_releases_the_lease(installed, tmp_path):
    delete_lease(installed)
    proc = start_landlord(installed, tmp_path, "controller", "--lease-duration", "30s")
    proc.wait_probe()
    installed.wait_for(lambda: proc.metric("landlord_leader") == 1.0, what="leadership")
    assert proc.stop() == 0
    lease = read_lease(installed)
    assert not lease.spec.holder_identity, lease.spec.holder_identity
    assert proc.find("stopped")
