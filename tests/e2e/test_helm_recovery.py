"""Stuck, hung and crowded Helm releases (issue 14, points 3 and 5; docs/helm.md) on the real
control plane, with the pinned Helm 4 and the `hooked` chart (tests/e2e/charts/hooked): with
`hook: true` its pre-upgrade hook Job never completes here (no kubelet runs its Pod), and helm
waits for hook Jobs even without --wait, so the upgrade hangs with the release pending-upgrade.

- landlord killed (SIGKILL) while its helm hangs: helm dies with it (PR_SET_PDEATHSIG), the
  release stays pending-upgrade, and the next landlord rolls it back to its last deployed
  revision, then upgrades it with the values wanted now;
- a crash loop: landlord killed during an upgrade N = 1, 2, 3 times in a row, converges each time
  with no release left pending;
- a hung helm ends at its own --timeout (--helm-timeout less 30 s, at least half): a failed
  release, Helm's message in the instance's status (HelmFailed), deployed once the hook is gone;
- 20 namespaces of a TemplateGroupInstance with --helm-concurrency 2: all deployed, never more
  than 2 helm processes at once (landlord_helm_processes_peak), and 2 at once at some point.
"""

import json
import time

import pytest
from kubernetes import client as k8s

import helm_env
from charts import CHARTS, Helm, pinned
from helm_env import (TI, TIMEOUT, all_deployed, delete_tgis, delete_tis, deployed, failing,
                      get_tgi, greeting, helm_processes, instance, ledger, release_row,
                      template, tgi, wait_ti)
from kube import GROUP, VERSION

HOOKED = str(CHARTS / "hooked")


# ---------- landlord and its helm processes ----------

def start(kit, *flags):
    return kit.start("--helm-binary", str(pinned("helm")), *flags)


def helm_children(pid):
    """PIDs of live (not zombie) helm processes whose parent is @pid."""
    return list(helm_processes(pid))


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_landlord(kit):
    """SIGKILL landlord while its helm runs; its helm processes must die with it."""
    landlord = kit.landlord
    helms = helm_children(landlord.pid)
    assert helms, f"no helm process of landlord {landlord.pid} runs"
    landlord.kill()
    deadline = time.monotonic() + 10
    while any(alive(p) for p in helms) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in helms if alive(p)]
    assert not left, f"helm processes {left} outlived landlord {landlord.pid} (PDEATHSIG)"


# ---------- TemplateInstances ----------

@pytest.fixture
def tenant(kit, created):
    """Tenant t (owner alice, editor bob) with namespace t-dev; landlord not started yet."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"])
    kit.expect_namespace(f"{t}-dev")
    e = {"kit": kit, "t": t, "ns": f"{t}-dev", "created": created}
    yield e
    if kit.landlord_runs():  # its helm uninstalls them; else the cleanup's landlord finalizes
        delete_tis(e)


def ready(env, *flags):
    """Start landlord with the pinned helm and @flags; wait until bob may create instances."""
    kit = env["kit"]
    start(kit, *flags)
    kit.wait_ready(env["t"], [env["ns"]])
    kit.wait_can_i("bob", "create", "templateinstances.landlord.dev", env["ns"])


def values(greeting, hook):
    return f"greeting: {greeting}\nhook: {'true' if hook else 'false'}\n"


def hooked(env, release, vals):
    """A Template of the hooked chart as release @release with the values @vals."""
    return template(env, {"path": HOOKED, "releaseName": release, "values": vals})


def set_values(env, tmpl, vals):
    helm_env.patch_template(env, tmpl, {"resources": {"helm": {"values": vals}}})


def records(env, release):
    """Helm's release records {revision: status}."""
    return {int(s.metadata.labels["version"]): s.metadata.labels["status"]
            for s in helm_env.records(env, release)}


def wait_pending(env, release, after):
    """Wait until helm hangs on a revision newer than @after, pending-upgrade; that revision."""
    def pending():
        recs = records(env, release)
        new = [r for r, st in recs.items() if r > after and st == "pending-upgrade"]
        return new and helm_children(env["kit"].landlord.pid) and max(new)
    try:
        return env["kit"].cluster.wait_for(
            pending, TIMEOUT, what=f"{release} pending-upgrade after revision {after}, helm "
                                   f"running\n{env['kit'].log_tail()}")
    except BaseException:
        print(records(env, release))
        for ti in env["kit"].custom.list_namespaced_custom_object(
                GROUP, VERSION, env["ns"], TI)["items"]:
            print(json.dumps(ti.get("status"), indent=1))
        raise


def helm_admin(env, tmp_path, *args):
    """The pinned helm as the cluster's administrator, in the tenant's namespace: its stdout."""
    return Helm(tmp_path / "helm-admin")(*args, "-n", env["ns"], "--kubeconfig",
                                         env["kit"].cluster.kubeconfig("admin")).stdout


def history(env, release, tmp_path):
    """`helm history`: [{revision, status, description}]."""
    out = helm_admin(env, tmp_path, "history", release, "-o", "json", "--max", "100")
    return sorted(json.loads(out), key=lambda h: h["revision"])


def assert_settled(env, tmp_path, name, release, revision, interrupted):
    """The row deployed at @revision, the ledger expecting nothing, and no release pending in
    Helm's eyes (`helm list --pending`). The records of the @interrupted revisions stay
    pending-upgrade: Helm's rollback supersedes only deployed revisions (Helm 4.3.1,
    pkg/action/rollback.go), until --history-max 10 prunes them; a release's status is its last
    revision's."""
    obj = wait_ti(env, name, deployed(revision), f"{release} deployed at {revision}")
    recs = records(env, release)
    assert max(recs) == revision and recs[revision] == "deployed", recs
    assert len(recs) <= 10, recs
    assert {r for r, st in recs.items() if st.startswith("pending-")} == {
        r for r in interrupted if r >= min(recs)}, recs
    assert ledger(env, release)["pending"] == ""
    listed = json.loads(helm_admin(env, tmp_path, "list", "--pending", "-o", "json"))
    assert listed == [], listed
    listed = json.loads(helm_admin(env, tmp_path, "list", "-o", "json"))
    assert [(r["name"], r["status"], int(r["revision"])) for r in listed] == [
        (release, "deployed", revision)], listed
    return obj


def test_helm_killed_with_landlord_mid_upgrade_is_rolled_back_then_upgraded(tenant, tmp_path):
    env, kit = tenant, tenant["kit"]
    ready(env)
    tmpl = hooked(env, "stuck", values("one", False))
    name = instance(env, "bob", tmpl, sync=None)
    wait_ti(env, name, deployed(1), "the release deployed")
    # the hook: helm upgrade hangs on the Job, the release pending-upgrade at revision 2
    set_values(env, tmpl, values("two", True))
    assert wait_pending(env, "stuck", 1) == 2
    jobs = k8s.BatchV1Api(kit.admin)
    kit.cluster.wait_for(lambda: jobs.list_namespaced_job(env["ns"]).items, 30,
                         what="the hook's Job")
    job = jobs.read_namespaced_job("stuck-pre-upgrade", env["ns"])
    assert job.metadata.annotations["helm.sh/hook"] == "pre-upgrade"
    # while helm hangs, the hook is dropped from the values; landlord is killed, helm with it
    set_values(env, tmpl, values("three", False))
    kill_landlord(kit)
    assert records(env, "stuck") == {1: "deployed", 2: "pending-upgrade"}
    assert ledger(env, "stuck")["pending"] == "2"
    # the next landlord: revision 3 rolls back to 1, revision 4 upgrades to what is wanted now
    ready(env)
    obj = assert_settled(env, tmp_path, name, "stuck", 4, [2])
    assert greeting(env, "stuck", "hooked") == "three"
    assert release_row(obj) == {"name": "stuck", "status": "deployed", "revision": 4,
                                "chartVersion": "0.1.0"}, release_row(obj)
    hist = history(env, "stuck", tmp_path)
    assert [(h["revision"], h["status"]) for h in hist] == [
        (1, "superseded"), (2, "pending-upgrade"), (3, "superseded"), (4, "deployed")], hist
    assert hist[2]["description"] == "Rollback to 1", hist
    assert hist[3]["description"] == "Upgrade complete", hist
    recovered = kit.landlord.find("helm release recovered")
    assert len(recovered) == 1 and "rolled back" in recovered[0]["how"], recovered


def test_a_crash_loop_during_upgrades_converges(tenant, tmp_path):
    """N = 1, 2, 3: landlord killed N times in a row, each time while its helm hangs on an
    upgrade; then restarted once the hook is gone: deployed, nothing pending."""
    env, kit = tenant, tenant["kit"]
    ready(env)
    tmpl = hooked(env, "loop", values("start", False))
    name = instance(env, "bob", tmpl, sync=None)
    wait_ti(env, name, deployed(1), "the release deployed")
    revision, interrupted = 1, []
    for n in (1, 2, 3):
        set_values(env, tmpl, values(f"hang{n}", True))
        for kill in range(1, n + 1):
            # each landlord first recovers what the last one left (a rollback, one revision),
            # then hangs on the hook again
            pending = wait_pending(env, "loop", revision)
            assert pending == revision + (1 if kill == 1 else 2), (n, kill, records(env, "loop"))
            revision = pending
            interrupted.append(revision)
            if kill == n:
                set_values(env, tmpl, values(f"done{n}", False))
            kill_landlord(kit)
            assert records(env, "loop")[revision] == "pending-upgrade"
            ready(env)
        revision += 2  # rolled back, then upgraded
        assert_settled(env, tmp_path, name, "loop", revision, interrupted)
        assert greeting(env, "loop", "hooked") == f"done{n}"
        hist = history(env, "loop", tmp_path)
        assert hist[-2]["description"].startswith("Rollback to "), hist


def test_a_hung_helm_times_out_as_a_failed_release_then_recovers(tenant, tmp_path):
    """--helm-timeout 20s: helm's own --timeout is 10 s (at least half), so the hook's wait ends
    as a failed upgrade (HelmFailed, Helm's message), well before the runner kills helm."""
    env, kit = tenant, tenant["kit"]
    ready(env, "--helm-timeout", "20s")
    tmpl = hooked(env, "slow", values("one", False))
    name = instance(env, "bob", tmpl, sync=None)
    wait_ti(env, name, deployed(1), "the release deployed")
    t0 = time.monotonic()
    set_values(env, tmpl, values("two", True))
    obj = wait_ti(env, name, failing("HelmFailed"), "HelmFailed at helm's time-out", 40)
    took = time.monotonic() - t0
    msg = obj["status"]["failing"][0]["message"]
    assert "pre-upgrade" in msg and "helm upgrade" in msg, msg
    assert 9 <= took <= 20, took  # helm's own 10 s, not the runner's 20 s
    assert records(env, "slow")[2] == "failed"
    assert kit.landlord.metric("landlord_helm_runs_total", verb="upgrade",
                               outcome="failed") >= 1
    assert kit.landlord.metric("landlord_helm_runs_total", verb="upgrade",
                               outcome="timed-out") == 0
    # fixed: the hook gone, the next upgrade deploys
    set_values(env, tmpl, values("three", False))
    obj = wait_ti(env, name, deployed(), "deployed once the hook is gone", 60)
    assert greeting(env, "slow", "hooked") == "three"
    assert not (obj["status"].get("failing") or []), obj["status"]
    recs = records(env, "slow")
    assert recs[max(recs)] == "deployed" and "failed" in recs.values(), recs
    assert not [r for r, st in recs.items() if st.startswith("pending-")], recs


# ---------- a TemplateGroupInstance in 20 namespaces ----------

WIDE = 20


def test_twenty_namespaces_never_run_more_helms_than_the_concurrency(kit, created):
    plan = kit.plan(hard={"pods": "10"})
    stages = [f"n{i}" for i in range(WIDE)]
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=stages)
    namespaces = [f"{t}-{s}" for s in stages]
    for ns in namespaces:
        kit.expect_namespace(ns)
    landlord = start(kit, "--helm-concurrency", "2")
    kit.wait_ready(t, namespaces)
    tmpl = template({"kit": kit, "created": created},
                    {"path": HOOKED, "releaseName": "wide",
                     "values": "greeting: hi ${namespace}\n"}, instantiable=False)
    name = tgi(kit, tmpl, {"matchLabels": {"landlord.dev/tenant": t}}, sync=None)
    seen = []

    def deployed_everywhere():
        seen.append(landlord.metric("landlord_helm_processes"))
        return all_deployed(namespaces)(get_tgi(kit, name))
    try:
        kit.cluster.wait_for(deployed_everywhere, 120, interval=0.05,
                             what=f"deployed in {WIDE} namespaces\n{kit.log_tail()}")
        for ns in namespaces:
            cm = kit.core.read_namespaced_config_map("wide-hooked", ns)
            assert cm.data == {"greeting": f"hi {ns}"}
        assert max(seen) <= 2, seen
        assert landlord.metric("landlord_helm_processes_peak") == 2
        assert landlord.metric("landlord_helm_runs_total", verb="install", outcome="ok") == WIDE
    finally:  # its finalizer uninstalls everywhere while landlord runs
        delete_tgis(kit, [name])
