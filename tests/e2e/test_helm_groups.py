"""Charts of TemplateGroupInstances (issue 14, points 4 and 6; docs/helm.md) on the real control
plane, with the pinned Helm 4: the chart is installed in every selected tenant namespace as
tgi.<namespace>, an account of landlord-system bound there to landlord-templates only (never as
landlord, whose rights read every Secret): a chart whose `lookup` reads a Secret of another
namespace fails with Forbidden; a namespace leaving the selector, and the instance's deletion,
uninstall the release there.
"""

import pytest
from kubernetes.client.rest import ApiException

from charts import CHARTS, pinned
from kube import GROUP, VERSION

TGI, TPL = "templategroupinstances", "templates"
SYSTEM = "landlord-system"
TIMEOUT = 90


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
    for name in e["instances"]:  # their finalizers uninstall while landlord runs
        try:
            kit.custom.delete_cluster_custom_object(GROUP, VERSION, TGI, name)
        except ApiException as ex:
            if ex.status != 404:
                raise

    def gone():
        items = kit.custom.list_cluster_custom_object(GROUP, VERSION, TGI)["items"]
        return not any(i["metadata"]["name"] in e["instances"] for i in items)
    kit.cluster.wait_for(gone, TIMEOUT, what=f"instances gone\n{kit.log_tail()}")


def template(env, helm):
    kit = env["kit"]
    name = kit.name("tpl")
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": name},
            "spec": {"resources": {"helm": helm}}}

    def create():  # the webhook answers 503 while landlord's caches load
        try:
            kit.custom.create_cluster_custom_object(GROUP, VERSION, TPL, body)
            return True
        except ApiException as e:
            if e.status != 503:
                raise
            return False
    kit.cluster.wait_for(create, TIMEOUT, what=f"Template {name} admitted")
    env["created"].append((TPL, name))
    return name


def tgi(env, tmpl, selector):
    name = env["kit"].name("tgi")
    env["kit"].custom.create_cluster_custom_object(GROUP, VERSION, TGI, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateGroupInstance",
        "metadata": {"name": name},
        "spec": {"template": tmpl, "sync": True, "selector": selector}})
    env["instances"].append(name)
    return name


def get(env, name):
    return env["kit"].custom.get_cluster_custom_object(GROUP, VERSION, TGI, name)


def wait(env, name, predicate, what):
    last = {}

    def ok():
        last["obj"] = get(env, name)
        return predicate(last["obj"])
    try:
        env["kit"].cluster.wait_for(ok, TIMEOUT, what=f"{name}: {what}")
    except BaseException:
        print((last.get("obj") or {}).get("status"), env["kit"].log_tail())
        raise
    return last["obj"]


def rows(obj):
    return {r["namespace"]: r for r in (obj.get("status") or {}).get("rows") or []}


def all_deployed(namespaces):
    def ok(obj):
        rs = rows(obj)
        return set(rs) == set(namespaces) and all(
            r["ready"] and r.get("release", {}).get("status") == "deployed" for r in rs.values())
    return ok


def records(kit, ns, release):
    return kit.core.list_namespaced_secret(
        ns, label_selector=f"owner=helm,name={release}").items


def configmap(kit, ns, name):
    try:
        return kit.core.read_namespaced_config_map(name, ns)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_a_groups_chart_runs_as_its_namespace_account_everywhere_it_selects(env):
    kit, t = env["kit"], env["t"]
    dev, qa = f"{t}-dev", f"{t}-qa"
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "site",
                          "values": "greeting: hi ${namespace}\n"})
    name = tgi(env, tmpl, {"matchLabels": {"landlord.dev/tenant": t}})
    obj = wait(env, name, all_deployed([dev, qa]), "deployed in both namespaces")
    assert rows(obj)[dev]["release"]["revision"] == 1
    for ns in (dev, qa):
        assert configmap(kit, ns, "site-hello").data == {"greeting": f"hi {ns}"}
        led = kit.core.read_namespaced_config_map(f"helm.{ns}.site", SYSTEM)
        assert led.data["owner"] == f"tgi/{name}" and led.data["account"] == f"tgi.{ns}"
        rb = kit.rbac.read_namespaced_role_binding("landlord-tgi", ns)
        assert rb.role_ref.name == "landlord-templates"
        assert [(s.kind, s.namespace, s.name) for s in rb.subjects] == [
            ("ServiceAccount", SYSTEM, f"tgi.{ns}")]
    # qa leaves the selector: its release is uninstalled, dev's stays
    kit.core.patch_namespace(qa, {"metadata": {"labels": {"stage": "qa"}}})
    kit.custom.patch_cluster_custom_object(GROUP, VERSION, TGI, name, {"spec": {"selector": {
        "matchLabels": {"landlord.dev/tenant": t},
        "matchExpressions": [{"key": "stage", "operator": "DoesNotExist"}]}}})
    kit.cluster.wait_for(lambda: not records(kit, qa, "site"), TIMEOUT,
                         what=f"the release in {qa} uninstalled\n{kit.log_tail()}")
    assert configmap(kit, qa, "site-hello") is None
    assert len(records(kit, dev, "site")) == 1
    # deleting the instance uninstalls the rest
    kit.custom.delete_cluster_custom_object(GROUP, VERSION, TGI, name)
    kit.cluster.wait_for(lambda: not records(kit, dev, "site"), TIMEOUT,
                         what=f"the release in {dev} uninstalled\n{kit.log_tail()}")
    assert configmap(kit, dev, "site-hello") is None


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
    tmpl = template(env, {"path": str(chart), "releaseName": "peek"})
    name = tgi(env, tmpl, {"matchLabels": {"landlord.dev/tenant": t}})

    def forbidden(obj):
        f = [x for x in (obj.get("status") or {}).get("failing") or []
             if x["namespace"] == dev]
        return (bool(f) and f[0]["object"] == "Release/peek" and f[0]["reason"] == "Forbidden"
                and "forbidden" in f[0]["message"])
    obj = wait(env, name, forbidden, "Forbidden by RBAC")
    msg = [x for x in obj["status"]["failing"] if x["namespace"] == dev][0]["message"]
    assert f"tgi.{dev}" in msg and "kube-system" in msg, msg
    assert configmap(kit, dev, "peek") is None
