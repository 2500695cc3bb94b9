"""Charts of TemplateInstances (issue 14; docs/helm.md) on the real control plane, with the pinned
Helm 4: an editor's instance of a Template with a chart installs the release as the namespace's
editor account (ti.<ns>.editor), never as landlord; its row shows the release; Helm's record
carries the digest label and landlord keeps its ledger in landlord-system; new values upgrade it,
an unchanged resync runs no helm; dropping the chart, and deleting the instance, uninstall it;
a release landlord did not install is never taken over (Conflict); a failed install shows Helm's
message and is retried until fixed; a forged release record stops every helm command on the
release (ReleaseTampered).
"""

import json

import pytest
from kubernetes import client as k8s

from charts import CHARTS, Helm, pinned
from helm_env import (SYSTEM, TI, TIMEOUT, TPL, absent, delete_tis, deployed, failing, get_ti,
                      greeting, helm_records_policy, instance, ledger, patch_template,
                      ready_condition, records, release_mark, release_row, template, wait_ti)
from kube import GROUP, VERSION


@pytest.fixture
def env(kit, created):
    """Tenant t (owner alice, editor bob) with namespace t-dev; landlord with the pinned helm,
    repairing a drifted release at most every 5 s (not 30 s: the drift test waits for two)."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"])
    kit.expect_namespace(f"{t}-dev")
    kit.start("--helm-binary", str(pinned("helm")), "--helm-repair-interval", "5s")
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_can_i("bob", "create", "templateinstances.landlord.dev", f"{t}-dev")
    e = {"kit": kit, "t": t, "ns": f"{t}-dev", "created": created}
    yield e
    delete_tis(e)


def test_an_editors_chart_is_installed_as_the_editor_account_and_upgraded(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "web",
                          "values": "greeting: hi ${{TEAM}}\n"},
                    parameters=[{"name": "TEAM", "validation": "^[a-z]+$", "value": "x"}])
    name = instance(env, "bob", tmpl, {"TEAM": "blue"})
    obj = wait_ti(env, name, deployed(1), "the release deployed")
    assert greeting(env, "web") == "hi blue"
    rel = release_row(obj)
    assert rel == {"name": "web", "status": "deployed", "revision": 1,
                   "chartVersion": "0.1.0"}, rel
    recs = records(env, "web")
    assert len(recs) == 1 and len(recs[0].metadata.labels["landlord.dev/digest"]) == 60
    # written by helm as the editor account, never as landlord
    cm = kit.core.read_namespaced_config_map("web-hello", ns)
    assert {m.manager for m in cm.metadata.managed_fields} == {"helm"}
    led = ledger(env, "web")
    assert led["owner"] == f"ti/{ns}/{name}", led
    assert led["account"] == f"ti.{ns}.editor"
    assert led["pending"] == "" and led["records"].startswith("1 ")
    # the editor cannot write the ledger; the namespace names the release landlord's
    assert kit.can_i("bob", "update", "helmledgers.landlord.dev") is False
    assert release_mark(env, "web") == f"ti/{ns}/{name}"
    # new values: an upgrade, revision 2
    env["kit"].custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, TI, name,
        {"spec": {"parameters": [{"name": "TEAM", "value": "green"}]}})
    wait_ti(env, name, deployed(2), "the release upgraded")
    assert greeting(env, "web") == "hi green"
    # setValues too (--set-string)
    patch_template(env, tmpl, {"resources": {"helm": {
        "setValues": [{"name": "greeting", "value": "set ${{TEAM}}", "forceString": True}]}}})
    wait_ti(env, name, deployed(3), "the release upgraded by setValues")
    assert greeting(env, "web") == "set green"
    # dropping the chart from the Template uninstalls the release
    body = kit.custom.get_cluster_custom_object(GROUP, VERSION, TPL, tmpl)
    body["spec"]["resources"] = {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "plain"},
                                                "data": {"k": "v"}}]}
    kit.custom.replace_cluster_custom_object(GROUP, VERSION, TPL, tmpl, body)
    kit.cluster.wait_for(lambda: not records(env, "web") and ledger(env, "web") is None,
                         TIMEOUT, what=f"the release uninstalled\n{kit.log_tail()}")
    assert greeting(env, "web") is None and release_mark(env, "web") is None


def test_deleting_the_instance_uninstalls_its_release_first(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "gone"})
    name = instance(env, "bob", tmpl)
    wait_ti(env, name, deployed(1), "the release deployed")
    kit.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, TI, name)
    kit.cluster.wait_for(lambda: absent(get_ti, env, name), TIMEOUT,
                         what=f"the instance gone\n{kit.log_tail()}")
    assert records(env, "gone") == [] and ledger(env, "gone") is None
    assert greeting(env, "gone") is None


def test_a_release_landlord_did_not_install_is_never_taken_over(env, tmp_path):
    kit, ns = env["kit"], env["ns"]
    helm = Helm(tmp_path / "helm")
    r = helm("upgrade", "--install", "theirs", CHARTS / "hello", "-n", ns, "--kubeconfig",
             kit.cluster.kubeconfig("admin"), "--set", "greeting=mine")
    assert r.returncode == 0
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "theirs"})
    name = instance(env, "bob", tmpl)
    obj = wait_ti(env, name, failing("Conflict"), "a Conflict")
    f = obj["status"]["failing"][0]
    assert f["object"] == "Release/theirs" and "never taken over" in f["message"], f
    assert greeting(env, "theirs") == "mine" and len(records(env, "theirs")) == 1
    assert ledger(env, "theirs") is None


def test_a_release_record_made_behind_landlords_back_is_never_taken_over(env):
    """A tenant makes the first record's name before landlord's first install, unlabelled, so
    that neither landlord's cache nor Helm's history sees it: the install is `helm install`,
    which will not create over it, and the release is a Conflict; the tenant's Secret stays."""
    kit, ns = env["kit"], env["ns"]
    squat = "sh.helm.release.v1.squat.v1"
    k8s.CoreV1Api(kit.client("bob")).create_namespaced_secret(ns, {
        "metadata": {"name": squat}, "stringData": {"release": "not helm's"}})
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "squat"})
    name = instance(env, "bob", tmpl)
    obj = wait_ti(env, name, failing("Conflict"), "a Conflict")
    f = obj["status"]["failing"][0]
    assert f["object"] == "Release/squat" and "never taken over" in f["message"], f
    assert kit.core.read_namespaced_secret(squat, ns).metadata.labels is None
    assert ledger(env, "squat") is None
    with pytest.raises(k8s.rest.ApiException) as e:
        kit.core.read_namespaced_config_map("squat-hello", ns)
    assert e.value.status == 404


def test_a_failed_install_shows_helms_message_and_is_retried_until_fixed(env, tmp_path):
    kit = env["kit"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: 0.1.0\n")
    (broken / "templates").mkdir()
    (broken / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken}\n"
        "data: {k: {{ required \"set value k\" .Values.k | quote }}}\n")
    tmp_path.chmod(0o755)
    tmpl = template(env, {"path": str(broken), "releaseName": "broken"})
    name = instance(env, "bob", tmpl)
    obj = wait_ti(env, name, failing("HelmFailed"), "HelmFailed")
    assert "set value k" in obj["status"]["failing"][0]["message"], obj["status"]
    assert ready_condition(obj)["status"] == "False"
    patch_template(env, tmpl, {"resources": {"helm": {"values": "k: fixed\n"}}})
    wait_ti(env, name, deployed(), "the release deployed once fixed")
    assert kit.core.read_namespaced_config_map("broken", env["ns"]).data == {"k": "fixed"}


def test_a_forged_release_record_stops_every_helm_command(env):
    """With the landlord-helm-records policy in force, bob (an editor: he may write Secrets) may
    not forge, change, relabel or delete the records of landlord's release, while landlord's own
    upgrade (as ti.<ns>.editor) goes through; a forgery written anyway (by an identity the policy
    exempts) stops every helm command until it is gone."""
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "forged",
                          "values": "greeting: one\n"})
    name = instance(env, "bob", tmpl)
    wait_ti(env, name, deployed(1), "the release deployed")
    rec = records(env, "forged")[0]
    forged = k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name="sh.helm.release.v1.forged.v3",
                                  labels={**rec.metadata.labels, "version": "3"}),
        type=rec.type, data=rec.data)
    bob = k8s.CoreV1Api(kit.client("bob"))
    theirs = {"metadata": {"name": "sh.helm.release.v1.bobs.v1",
                           "labels": {"owner": "helm", "name": "bobs", "version": "1"}}}
    with helm_records_policy(env, "bob", "forged"):
        for attempt in (lambda: bob.create_namespaced_secret(ns, forged),
                        lambda: bob.patch_namespaced_secret(
                            rec.metadata.name, ns, {"metadata": {"labels": {"x": "y"}}}),
                        lambda: bob.patch_namespaced_secret(
                            rec.metadata.name, ns, {"metadata": {"labels": {"name": "bobs"}}}),
                        lambda: bob.delete_namespaced_secret(rec.metadata.name, ns)):
            with pytest.raises(k8s.rest.ApiException) as e:
                attempt()
            assert e.value.status == 403 and "landlord-helm-records" in e.value.body, e.value.body
            assert f"Helm release forged in {ns}" in e.value.body, e.value.body
        # a release landlord does not install stays bob's to write, but never becomes landlord's
        bob.create_namespaced_secret(ns, theirs)
        with pytest.raises(k8s.rest.ApiException) as e:
            bob.patch_namespaced_secret("sh.helm.release.v1.bobs.v1", ns,
                                        {"metadata": {"labels": {"name": "forged"}}})
        assert e.value.status == 403 and "landlord-helm-records" in e.value.body, e.value.body
        bob.delete_namespaced_secret("sh.helm.release.v1.bobs.v1", ns)
        # landlord's helm writes the records as the instance's account: the policy lets it
        patch_template(env, tmpl, {"resources": {"helm": {"values": "greeting: two\n"}}})
        wait_ti(env, name, deployed(2), "the release upgraded under the policy")
    assert [r.metadata.uid for r in records(env, "forged")][0] == rec.metadata.uid
    # a forgery that got in anyway (written by someone the policy exempts) stops every helm
    kit.core.create_namespaced_secret(ns, forged)
    patch_template(env, tmpl, {"resources": {"helm": {"values": "greeting: three\n"}}})
    obj = wait_ti(env, name, failing("ReleaseTampered"), "ReleaseTampered")
    assert "revision 3" in obj["status"]["failing"][0]["message"], obj["status"]
    assert greeting(env, "forged") == "two"  # no helm ran
    # the forged record removed: landlord's ledger agrees again, and the upgrade runs
    kit.core.delete_namespaced_secret("sh.helm.release.v1.forged.v3", ns)
    wait_ti(env, name, deployed(3), "the release upgraded once the forgery is gone")
    assert greeting(env, "forged") == "three"


def test_sync_repairs_drift_and_the_row_counts_the_charts_workloads(env):
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "web"), "releaseName": "drift"})
    name = instance(env, "bob", tmpl)

    def deployed_with_workloads(obj):
        rows = (obj.get("status") or {}).get("rows") or []
        return (bool(rows) and rows[0].get("release", {}).get("status") == "deployed" and
                rows[0].get("deployments") == {"ready": 0, "desired": 1})
    obj = wait_ti(env, name, deployed_with_workloads, "deployed, its Deployment counted")
    # no kubelet: the chart's Deployment never gets ready, and the instance says so
    assert ready_condition(obj)["reason"] == "WorkloadsNotReady", ready_condition(obj)
    revision = release_row(obj)["revision"]
    # a deleted object of the release comes back (helm upgrade --force-conflicts)
    kit.core.delete_namespaced_config_map("drift-config", ns)
    kit.cluster.wait_for(lambda: greeting(env, "drift", "config") == "hello", TIMEOUT,
                         what=f"the ConfigMap back\n{kit.log_tail()}")
    # an edited field Helm applied comes back too (at most one repair per 5 s here)
    apps = k8s.AppsV1Api(kit.client("bob"))
    apps.patch_namespaced_deployment("drift-web", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}}})

    def image():
        return kit.apps.read_namespaced_deployment("drift-web", ns).spec.template.spec \
            .containers[0].image if hasattr(kit, "apps") else k8s.AppsV1Api(
                kit.client("admin")).read_namespaced_deployment("drift-web", ns) \
            .spec.template.spec.containers[0].image
    try:
        kit.cluster.wait_for(lambda: image() == "registry.k8s.io/pause:3.9", TIMEOUT,
                             what=f"the image back\n{kit.log_tail()}")
    except BaseException:
        print(json.dumps(get_ti(env, name).get("status"), indent=1))
        d = k8s.AppsV1Api(kit.client("admin")).read_namespaced_deployment("drift-web", ns)
        print("IMAGE", d.spec.template.spec.containers[0].image, d.metadata.generation)
        for m in d.metadata.managed_fields:
            print("MF", m.manager, m.operation, m.time, m.subresource)
        for r in records(env, "drift"):
            print("REC", r.metadata.name, r.metadata.labels)
        raise
    # (a repair that failed on something passing, such as a webhook's time-out under load, is
    # retried: its revision counts too)
    obj = wait_ti(env, name, lambda o: release_row(o).get("revision", 0) >= revision + 2 and
                  release_row(o).get("status") == "deployed", "two repairs, deployed")
    # ignore-updates on an object: its edits stay
    kit.core.patch_namespaced_config_map("drift-config", ns, {
        "metadata": {"labels": {"landlord.dev/ignore-updates": "true"}},
        "data": {"greeting": "mine"}})
    before = release_row(get_ti(env, name))["revision"]
    import time
    time.sleep(5)
    assert greeting(env, "drift", "config") == "mine"
    assert release_row(get_ti(env, name))["revision"] == before



def test_an_editors_edit_of_an_owners_instance_runs_helm_as_the_editor(env):
    """alice (owner) instantiates a chart with a RoleBinding to admin: it installs as the owner
    account. bob (editor) then edits her instance: the upgrade runs as the editor account and
    is refused, and the owner's RoleBinding stays as she made it."""
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "knobs"), "releaseName": "esc",
                          "values": "bindAdmin: ${{WHO}}\n"},
                    parameters=[{"name": "WHO", "validation": "^[a-z]+$", "value": "x"}])
    name = instance(env, "alice", tmpl, {"WHO": "alice"})
    wait_ti(env, name, deployed(1), "installed as the owner account")
    assert ledger(env, "esc")["account"] == f"ti.{ns}.owner"
    subjects = [s.name for s in kit.rbac.read_namespaced_role_binding("esc-grab-admin",
                                                                      ns).subjects]
    assert subjects == ["alice"]
    k8s.CustomObjectsApi(kit.client("bob")).patch_namespaced_custom_object(
        GROUP, VERSION, ns, TI, name, {"spec": {"parameters": [{"name": "WHO", "value": "bob"}]}})
    obj = wait_ti(env, name, failing("Forbidden"), "the editor's upgrade refused")
    msg = obj["status"]["failing"][0]["message"]
    assert f"system:serviceaccount:{SYSTEM}:ti.{ns}.editor" in msg, msg
    subjects = [s.name for s in kit.rbac.read_namespaced_role_binding("esc-grab-admin",
                                                                      ns).subjects]
    assert subjects == ["alice"]  # never bob
    assert release_row(obj)["revision"] >= 2 and release_row(obj)["status"] == "failed"


def test_an_instance_deleted_after_its_tenant_still_uninstalls_its_release(env):
    """The Tenant is deleted and keeps its namespaces (onDeletePurge false). Deleting the
    instance afterwards still cleans up what it made, its release included (as the namespace's
    editor account, as for its manifests), and its finalizer does not hang; landlord's ledger and
    the namespace's mark go with the release."""
    kit, ns = env["kit"], env["ns"]
    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "kept"})
    name = instance(env, "bob", tmpl)
    wait_ti(env, name, deployed(1), "the release deployed")
    kit.delete_tenant(env["t"])
    kit.cluster.wait_for(
        lambda: "landlord.dev/tenant" not in (kit.core.read_namespace(ns).metadata.labels or {}),
        TIMEOUT, what=f"{ns} released\n{kit.log_tail()}")
    kit.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, TI, name)
    kit.cluster.wait_for(lambda: absent(get_ti, env, name), TIMEOUT,
                         what=f"the instance gone\n{kit.log_tail()}")
    assert records(env, "kept") == [] and greeting(env, "kept") is None
    assert ledger(env, "kept") is None and release_mark(env, "kept") is None
