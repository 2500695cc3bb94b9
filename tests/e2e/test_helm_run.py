"""The Helm runner's core (issue 14, points 3 and 4; src/templates/helm_run.h) on the real control
plane, driven by tests/tools/helm_drive without the instance controllers: the pinned Helm 4
installs, upgrades and uninstalls tests/e2e/charts/hello from its path as a ServiceAccount bound
to `edit` in one namespace, with a TokenRequest token that no process's arguments or
environment ever hold; a chart that creates a ClusterRole fails with the API server's Forbidden
in the result."""

import json
import os
import subprocess
import threading

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from charts import CHARTS, pinned
from helm_env import helm_running, holders
from procs import BUILD

DRIVE = BUILD / "helm_drive"
SA = "deployer"


def bind_editor(cluster, ns):
    """ServiceAccount @ns/deployer bound to `edit` in @ns, created as admin."""
    core = k8s.CoreV1Api(cluster.client("admin"))
    core.create_namespaced_service_account(ns, {"metadata": {"name": SA}})
    k8s.RbacAuthorizationV1Api(cluster.client("admin")).create_namespaced_role_binding(ns, {
        "metadata": {"name": f"{SA}-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": ns}]})


def drive(cluster, ns, *args, timeout_ms=60000, tmpdir=None):
    """One helm_drive run for the release `web` in @ns as @ns/deployer: its JSON line."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if tmpdir:
        env["TMPDIR"] = str(tmpdir)
    cmd = [str(DRIVE), "--kubeconfig", cluster.kubeconfig("admin"), "--helm",
           str(pinned("helm")), "--sa", f"{ns}/{SA}", "--ns", ns, "--release", "web",
           "--timeout-ms", str(timeout_ms), *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.stdout.strip(), f"helm_drive printed nothing: {r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert (r.returncode == 0) == (out["outcome"] == "ok"), (r.returncode, out, r.stderr)
    return out


def release_records(cluster, ns):
    """Helm's release record Secrets of `web` in @ns, oldest revision first."""
    items = k8s.CoreV1Api(cluster.client("admin")).list_namespaced_secret(
        ns, label_selector="owner=helm,name=web").items
    return sorted(items, key=lambda s: int(s.metadata.labels["version"]))


def greeting(cluster, ns):
    try:
        cm = k8s.CoreV1Api(cluster.client("admin")).read_namespaced_config_map("web-hello", ns)
    except ApiException as e:
        assert e.status == 404
        return None
    return cm.data["greeting"]


def test_install_upgrade_status_uninstall_as_an_editor(cluster, namespace):
    bind_editor(cluster, namespace)
    first = drive(cluster, namespace, "upgrade", CHARTS / "hello", '{"greeting": "hi"}')
    assert first["outcome"] == "ok", first
    assert greeting(cluster, namespace) == "hi"
    records = release_records(cluster, namespace)
    assert [r.metadata.labels.get("landlord.dev/digest") for r in records] == [first["digest"]]
    st = drive(cluster, namespace, "status")
    assert (st["status"], st["revision"], st["chartVersion"], st["statusDigest"]) == \
        ("deployed", 1, "0.1.0", first["digest"]), st

    second = drive(cluster, namespace, "upgrade", CHARTS / "hello", '{"greeting": "bye"}')
    assert second["outcome"] == "ok" and second["digest"] != first["digest"], second
    assert greeting(cluster, namespace) == "bye"
    st = drive(cluster, namespace, "status")
    assert (st["status"], st["revision"]) == ("deployed", 2), st
    assert release_records(cluster, namespace)[-1].metadata.labels["landlord.dev/digest"] == \
        second["digest"]
    # the same chart and values (keys in another order) have the same digest
    again = drive(cluster, namespace, "upgrade", CHARTS / "hello", '{ "greeting":"bye" }')
    assert again["digest"] == second["digest"], again

    gone = drive(cluster, namespace, "uninstall")
    assert gone["outcome"] == "ok", gone
    assert greeting(cluster, namespace) is None
    assert release_records(cluster, namespace) == []
    st = drive(cluster, namespace, "status")
    assert (st["outcome"], st["rc"]) == ("failed", -2), st  # -ENOENT: no such release
    assert "not found" in st["message"], st


def write_chart(root, name, template):
    """A one-template chart @name under @root."""
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (chart / "templates" / "t.yaml").write_text(template)
    return chart


def test_a_cluster_role_is_forbidden_to_an_editor(cluster, namespace, tmp_path):
    bind_editor(cluster, namespace)
    chart = write_chart(tmp_path, "grab", "apiVersion: rbac.authorization.k8s.io/v1\n"
                        "kind: ClusterRole\nmetadata: {name: grab-{{ .Release.Namespace }}}\n"
                        "rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n")
    out = drive(cluster, namespace, "upgrade", chart)
    assert out["outcome"] == "failed", out
    assert "forbidden" in out["message"] and "clusterroles" in out["message"], out
    assert len(out["message"].encode()) <= 256


HOOK = """apiVersion: batch/v1
kind: Job
metadata:
  name: wait
  annotations: {"helm.sh/hook": pre-install}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: wait, image: registry.k8s.io/pause:3.10}]
"""


def test_the_token_is_in_no_process_arguments_or_environment(cluster, namespace, tmp_path):
    """A pre-install hook Job never completes here (no kubelet), so helm runs for its own
    --timeout (half of the runner's 16 s); meanwhile every process is searched for the token,
    read from the run's kubeconfig file. Only PIDs are reported, never the token."""
    bind_editor(cluster, namespace)
    chart = write_chart(tmp_path, "hook", HOOK)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result = {}
    t = threading.Thread(target=lambda: result.update(
        drive(cluster, namespace, "upgrade", chart, timeout_ms=16000, tmpdir=tmp)))
    t.start()
    try:
        kubeconfig = cluster.wait_for(lambda: next(tmp.glob("landlord-helm-*/kubeconfig"), None),
                                      20, 0.02, "the run's kubeconfig")
        cluster.wait_for(lambda: kubeconfig.stat().st_size > 0, 5, 0.02, "its content")
        assert kubeconfig.stat().st_mode & 0o777 == 0o600
        assert kubeconfig.parent.stat().st_mode & 0o777 == 0o700
        user = json.loads(kubeconfig.read_text())["users"][0]["user"]
        assert list(user) == ["token"]  # nothing of landlord's own credentials
        token = user["token"].encode()
        size = len(token)  # asserted apart: pytest would print the token in len(token)
        assert size > 100, size
        cluster.wait_for(helm_running, 10, 0.02, "helm running")
        seen = [holders(token) for _ in range(5)]
        assert seen == [[]] * 5, seen
    finally:
        t.join(60)
    assert result["outcome"] == "failed" and "failed pre-install" in result["message"], result
    assert list(tmp.iterdir()) == []  # the run's directory is gone
