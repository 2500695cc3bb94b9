"""Charts of TemplateGroupInstances (issue 14, points 4 and 6; docs/helm.md) on the real control
plane, with the pinned Helm 4: the chart is installed in every selected tenant namespace as
tgi.<namespace>, an account of landlord-system bound there to landlord-templates only (never as
landlord, whose rights read every Secret): a chart whose `lookup` reads a Secret of another
namespace fails with Forbidden; a namespace leaving the selector, and the instance's deletion,
uninstall the release there.
"""

import pytest

from charts import CHARTS, pinned
from helm_env import (SYSTEM, TGI, TIMEOUT, absent, all_deployed, configmap, delete_tgis,
                      helm_records_policy, ledger, patch_template, records, release_mark,
                      template, tgi, tgi_rows, wait_tgi)
from kube import GROUP, VERSION


@pytest.fixture
def env(kit, created):
    """Tenant t with namespaces t-dev and t-qa; landlord with the pinned helm."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev", "qa"])
    for ns in (f"{t}-dev", f"{t}-qa"):
        kit.expect_namespace(ns)
    kit.start("--helm-binary", str(pinned("helm")))
    kit.wait_ready(t, [f"{t}-dev", f"{t}-qa"])
    e = {"kit": kit, "t": t, "created": created, "instances": []}
    yield e
    delete_tgis(kit, e["instances"])  # their finalizers uninstall while landlord runs


def test_a_groups_chart_runs_as_its_namespace_account_everywhere_it_selects(env):
    kit, t = env["kit"], env["t"]
    dev, qa = f"{t}-dev", f"{t}-qa"
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "site",
                          "values": "greeting: hi ${namespace}\n"}, instantiable=False)
    name = tgi(kit, tmpl, {"matchLabels": {"landlord.dev/tenant": t}})
    env["instances"].append(name)
    obj = wait_tgi(kit, name, all_deployed([dev, qa]), "deployed in both namespaces")
    assert tgi_rows(obj)[dev]["release"]["revision"] == 1
    for ns in (dev, qa):
        assert configmap(env, "site-hello", ns).data == {"greeting": f"hi {ns}"}
        led = ledger(env, "site", ns)
        assert led["owner"] == f"tgi/{name}" and led["account"] == f"tgi.{ns}"
        assert release_mark(env, "site", ns) == f"tgi/{name}"
        rb = kit.rbac.read_namespaced_role_binding("landlord-tgi", ns)
        assert rb.role_ref.name == "landlord-templates"
        assert [(s.kind, s.namespace, s.name) for s in rb.subjects] == [
            ("ServiceAccount", SYSTEM, f"tgi.{ns}")]
    # under the landlord-helm-records policy each namespace's account still upgrades and
    # uninstalls its release (the tenant's owner, who may write Secrets, may not write its records)
    with helm_records_policy({**env, "ns": dev}, "alice", "site"):
        patch_template(env, tmpl, {"resources": {"helm": {
            "values": "greeting: bye ${namespace}\n"}}})
        wait_tgi(kit, name, lambda o: all_deployed([dev, qa])(o) and all(
            r["release"]["revision"] == 2 for r in tgi_rows(o).values()), "upgraded in both")
        # qa leaves the selector: its release is uninstalled, dev's stays
        kit.core.patch_namespace(qa, {"metadata": {"labels": {"stage": "qa"}}})
        kit.custom.patch_cluster_custom_object(GROUP, VERSION, TGI, name, {"spec": {"selector": {
            "matchLabels": {"landlord.dev/tenant": t},
            "matchExpressions": [{"key": "stage", "operator": "DoesNotExist"}]}}})
        kit.cluster.wait_for(lambda: not records(env, "site", qa), TIMEOUT,
                             what=f"the release in {qa} uninstalled\n{kit.log_tail()}")
        assert configmap(env, "site-hello", qa) is None
        assert len(records(env, "site", dev)) == 2
        # deleting the instance uninstalls the rest
        kit.custom.delete_cluster_custom_object(GROUP, VERSION, TGI, name)
        kit.cluster.wait_for(lambda: not records(env, "site", dev), TIMEOUT,
                             what=f"the release in {dev} uninstalled\n{kit.log_tail()}")
        assert configmap(env, "site-hello", dev) is None

    # with their last release, the namespaces' chart accounts go too
    def accounts_gone():
        names = {sa.metadata.name for sa in kit.core.list_namespaced_service_account(
            SYSTEM).items}
        return not {f"tgi.{dev}", f"tgi.{qa}"} & names
    kit.cluster.wait_for(accounts_gone, TIMEOUT, what="tgi.<ns> accounts released")
    assert release_mark(env, "site", dev) is None and release_mark(env, "site", qa) is None
    assert absent(kit.rbac.read_namespaced_role_binding, "landlord-tgi", dev)


def test_a_groups_chart_cannot_read_another_namespaces_secret(env, tmp_path):
    kit, t = env["kit"], env["t"]
    dev = f"{t}-dev"
    kit.core.create_namespaced_secret("kube-system", {
        "metadata": {"name": kit.name("crown")}, "stringData": {"jewel": "x"}})
    chart = tmp_path / "peek"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: peek\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        "{{- $s := lookup \"v1\" \"Secret\" \"kube-system\" \"\" }}\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: peek}\n"
        "data: {n: {{ len $s | quote }}}\n")
    tmp_path.chmod(0o755)
    tmpl = template(env, {"path": str(chart), "releaseName": "peek"}, instantiable=False)
    name = tgi(kit, tmpl, {"matchLabels": {"landlord.dev/tenant": t}})
    env["instances"].append(name)

    def forbidden(obj):
        f = [x for x in (obj.get("status") or {}).get("failing") or []
             if x["namespace"] == dev]
        return (bool(f) and f[0]["object"] == "Release/peek" and f[0]["reason"] == "Forbidden"
                and "forbidden" in f[0]["message"])
    obj = wait_tgi(kit, name, forbidden, "Forbidden by RBAC")
    msg = [x for x in obj["status"]["failing"] if x["namespace"] == dev][0]["message"]
    assert f"tgi.{dev}" in msg and "kube-system" in msg, msg
    assert configmap(env, "peek", dev) is None
