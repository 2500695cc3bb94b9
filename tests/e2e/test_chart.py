"""The Helm chart (deploy/chart) with the pinned, real Helm (tests/cluster/build-helm.sh) against
a real control plane: install, upgrade, uninstall.

No kubelet runs here, so landlord's Deployment never gets pods (no ReplicaSet controller runs
either): the test installs with `service.endpoints`, a Service without a selector whose Endpoints
point into a network namespace of the test's (netns.py), where a stub admission server
(admission_stub.py, with a throwaway CA) plays landlord's webhook. The test writes the caBundle,
as landlord would at run time.

The chart gets a control plane of its own: it owns cluster-wide objects (the CRDs, the ClusterRole
landlord, the admission policies) that the session's `installed` fixture applies with kubectl and
other tests rely on, and while it is installed every namespace CREATE waits on its webhook.
"""

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from charts import pinned
from conftest import private_cluster, wait_for
from kube import grant_user
from netns import netns, throwaway_pki  # noqa: F401 (netns is a fixture)
from procs import REPO

CHART = REPO / "deploy" / "chart"
STUB = REPO / "tests" / "e2e" / "admission_stub.py"
NS = "landlord-system"
RELEASE = "landlord"
WEBHOOK_PORT = 9443  # values.yaml webhook.port: the Endpoints' port


@pytest.fixture(scope="module")
def helm(tmp_path_factory):
    """Run the pinned helm with its own config, cache and data directories."""
    binary = str(pinned("helm"))
    home = tmp_path_factory.mktemp("helm")
    env = {**os.environ, "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_CACHE_HOME": str(home / "cache"), "HELM_DATA_HOME": str(home / "data")}

    def run(*args, kubeconfig=None, check=True):
        cmd = [binary, *map(str, args)] + (["--kubeconfig", kubeconfig] if kubeconfig else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if check:
            assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout}{r.stderr}"
        return r
    return run


@pytest.fixture(scope="module")
def chart_cluster(tmp_path_factory):
    """A control plane of the chart test's own (see the module's docstring)."""
    with private_cluster(tmp_path_factory.mktemp("chart-cluster")) as c:
        yield c


# ---------- without a cluster: what the chart renders ----------

def test_chart_renders_for_landlord_system_only(helm):
    r = helm("template", RELEASE, CHART, "-n", "default", check=False)
    assert r.returncode != 0 and "landlord-system" in r.stderr, r.stderr
    docs = [d for d in yaml.safe_load_all(helm("template", RELEASE, CHART, "-n", NS).stdout) if d]
    kinds = {d["kind"] for d in docs}
    assert "Endpoints" not in kinds  # without service.endpoints, the Service selects the pods
    configs = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    assert len(configs) == 2
    for hook in (w for d in configs for w in d["webhooks"]):
        assert "caBundle" not in hook["clientConfig"], hook["name"]
        assert hook["failurePolicy"] == "Fail" and hook["matchConditions"], hook["name"]
        for rule in hook["rules"]:
            assert not any(r.endswith("/status") or r == "*/*" for r in rule["resources"]), hook


# ---------- install, upgrade, uninstall on a real control plane ----------

def tenant_namespace(api):
    """A namespace of tenant "acme" where alice may edit and landlord's quota is in force (the
    policy landlord-quota-in-force refuses pods until it is)."""
    core = k8s.CoreV1Api(api)
    name = f"acme-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"landlord.dev/tenant": "acme"}}})
    core.create_namespaced_resource_quota(name, {"metadata": {"name": "landlord-quota"},
                                                 "spec": {"hard": {"pods": "10"}}})
    k8s.RbacAuthorizationV1Api(api).create_namespaced_role_binding(name, {
        "metadata": {"name": "alice-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "alice"}]})
    wait_for(lambda: (core.read_namespaced_resource_quota("landlord-quota", name).status.hard
                      or {}).get("pods") == "10", 30, what="landlord-quota in force")
    return name


def pod(labels=None):
    return {"metadata": {"generateName": "p-", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}}


def create_pod(api, ns, labels=None):
    """Create a pod; returns its name, or the ApiException that refused it."""
    try:
        return k8s.CoreV1Api(api).create_namespaced_pod(ns, pod(labels)).metadata.name
    except ApiException as e:
        return e


def webhooks(api):
    adm = k8s.AdmissionregistrationV1Api(api)
    return (adm.read_validating_webhook_configuration("landlord").webhooks,
            adm.read_mutating_webhook_configuration("landlord").webhooks)


def write_ca_bundle(api, ca):
    """What landlord does at run time: a JSON patch of each webhook's caBundle, nothing else,
    under landlord's own field manager."""
    adm = k8s.AdmissionregistrationV1Api(api)
    bundle = base64.b64encode(ca).decode()
    validating, mutating = webhooks(api)
    adm.patch_validating_webhook_configuration(
        "landlord", [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle",
                      "value": bundle} for i in range(len(validating))],
        field_manager="landlord")
    adm.patch_mutating_webhook_configuration(
        "landlord", [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle",
                      "value": bundle} for i in range(len(mutating))],
        field_manager="landlord")
    return bundle


def watch_deletions(api, seen, stop):
    """Threads that record, per kind, the resourceVersion at which landlord's webhook
    configurations and Deployment were deleted. resourceVersions are opaque by the API's
    contract; here they are the one etcd's revisions, so they order deletions across kinds."""
    adm = k8s.AdmissionregistrationV1Api(api)
    apps = k8s.AppsV1Api(api)
    sources = {
        "ValidatingWebhookConfiguration": adm.list_validating_webhook_configuration,
        "MutatingWebhookConfiguration": adm.list_mutating_webhook_configuration,
        "Service": lambda **kw: k8s.CoreV1Api(api).list_namespaced_service(NS, **kw),
        "Deployment": lambda **kw: apps.list_namespaced_deployment(NS, **kw),
    }
    ready = []

    def run(kind, lister):
        rv = lister().metadata.resource_version
        ready.append(kind)
        w = k8s_watch.Watch()
        for ev in w.stream(lister, resource_version=rv, timeout_seconds=30,
                           field_selector="metadata.name=landlord"):
            if ev["type"] == "DELETED":
                seen[kind] = int(ev["raw_object"]["metadata"]["resourceVersion"])
                break
            if stop.is_set():
                break
        w.stop()
    threads = [threading.Thread(target=run, args=kv, daemon=True) for kv in sources.items()]
    for t in threads:
        t.start()
    wait_for(lambda: len(ready) == len(sources), 10, what="the watches to start")
    return threads


def message(e):
    return json.loads(e.body).get("message", "")


def refused_by_webhook(result, webhook):
    """Whether the API server refused because it could not call this webhook (fail closed)."""
    return isinstance(result, ApiException) and \
        f'failed calling webhook "{webhook}"' in message(result)


def test_chart_install_upgrade_uninstall(chart_cluster, helm, netns, tmp_path):  # noqa: F811
    c = chart_cluster
    admin = c.client("admin")
    alice = c.client("alice")
    kubeconfig = c.kubeconfig("admin")
    tenant_ns = tenant_namespace(admin)
    ca, cert, key = throwaway_pki(tmp_path / "pki", dns_names=[f"landlord.{NS}.svc"])
    stub_log = tmp_path / "stub.log"
    stub = netns.popen([sys.executable, STUB, "--cert", cert, "--key", key, "--addr", netns.ns_ip,
                        "--port", WEBHOOK_PORT], stub_log)
    values = ["--set", f"service.endpoints={{{netns.ns_ip}}}",
              "--set", "image.repository=registry.example/landlord", "--set", "image.tag=e2e"]
    installed = False
    try:
        # ---- install ----
        t0 = time.monotonic()
        helm("install", RELEASE, CHART, "-n", NS, "--create-namespace", *values,
             kubeconfig=kubeconfig)
        installed = True
        print(f"helm install: {time.monotonic() - t0:.1f}s")
        ext = k8s.ApiextensionsV1Api(admin)
        for crd in ("tenants", "plans", "landlordconfigs"):
            meta = ext.read_custom_resource_definition(f"{crd}.landlord.dev").metadata
            assert meta.annotations["helm.sh/resource-policy"] == "keep"
        adm = k8s.AdmissionregistrationV1Api(admin)
        policies = {p.metadata.name for p in adm.list_validating_admission_policy().items}
        assert {"landlord-namespace-metadata", "landlord-managed-objects", "landlord-reserved-names",
                "landlord-quota-in-force", "landlord-self-limits", "landlord-helm-records"} <= policies
        k8s.RbacAuthorizationV1Api(admin).read_cluster_role("landlord")
        core = k8s.CoreV1Api(admin)
        core.read_namespaced_service_account("landlord", NS)
        dep = k8s.AppsV1Api(admin).read_namespaced_deployment("landlord", NS)
        assert dep.spec.replicas == 2
        args = dep.spec.template.spec.containers[0].args
        assert args[0] == "run" and f"--webhook-addr=0.0.0.0:{WEBHOOK_PORT}" in args
        # The graceful stop: landlord's drain delay fits in the pod's grace period.
        assert "--shutdown-delay=5s" in args
        assert dep.spec.template.spec.termination_grace_period_seconds == 30
        svc = core.read_namespaced_service("landlord", NS)
        assert not svc.spec.selector
        eps = core.read_namespaced_endpoints("landlord", NS)
        assert [a.ip for a in eps.subsets[0].addresses] == [netns.ns_ip]
        validating, mutating = webhooks(admin)
        assert all(w.client_config.ca_bundle is None for w in validating + mutating)
        assert {w.name for w in validating} >= {"namespaces.landlord.dev", "pods.landlord.dev"}

        # ---- before landlord writes the caBundle, tenant namespaces fail closed ----
        wait_for(lambda: refused_by_webhook(create_pod(alice, tenant_ns), "pods.landlord.dev"),
                 30, what="pods in the tenant namespace to fail closed")

        # ---- landlord writes the caBundle: the API server reaches the webhook ----
        bundle = write_ca_bundle(admin, ca)
        wait_for(lambda: isinstance(create_pod(alice, tenant_ns), str), 30,
                 what="a tenant pod admitted through the webhook")
        calls = stub_log.read_text().splitlines()
        assert any(line.startswith("/validate CREATE pods") for line in calls), calls
        denied = create_pod(alice, tenant_ns, {"admission-stub/deny": "x"})
        assert isinstance(denied, ApiException) and "denied by admission-stub at /validate" \
            in message(denied), denied
        # A label change on a pod is not sent (matchCondition checked-fields-changed).
        name = create_pod(alice, tenant_ns)
        k8s.CoreV1Api(alice).patch_namespaced_pod(
            name, tenant_ns, {"metadata": {"labels": {"admission-stub/deny": "x"}}})
        # Namespace CREATE: the selector reads the label the API server sets from the name,
        # whatever the requester writes into it.
        forged = {"metadata": {"name": f"forged-{uuid.uuid4().hex[:6]}",
                               "labels": {"kubernetes.io/metadata.name": "kube-system",
                                          "admission-stub/deny": "x"}}}
        # frank may create namespaces (a test-only grant) and, unlike administrators, is not
        # exempt from the webhooks
        grant_user(admin, "e2e-ns-create",
                   [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]}],
                   "frank")
        frank = k8s.CoreV1Api(c.client("frank"))

        def refused_at_mutate():
            try:
                frank.create_namespace(forged, dry_run="All")
            except ApiException as e:
                return "denied by admission-stub at /mutate" in message(e)
            return False
        wait_for(refused_at_mutate, 30, what="frank's forged namespace sent to /mutate")

        # ---- upgrade: a changed configuration, and landlord's caBundle stays ----
        for extra in ([], ["--server-side=false"]):
            t0 = time.monotonic()
            helm("upgrade", RELEASE, CHART, "-n", NS, *values, *extra,
                 "--set", f"webhook.timeoutSeconds={7 + len(extra)}", kubeconfig=kubeconfig)
            print(f"helm upgrade {' '.join(extra)}: {time.monotonic() - t0:.1f}s")
            validating, mutating = webhooks(admin)
            for w in validating + mutating:
                assert w.timeout_seconds == 7 + len(extra), w.name
                assert w.client_config.ca_bundle == bundle, f"{w.name} lost its caBundle"
        assert isinstance(create_pod(alice, tenant_ns), str)

        # ---- uninstall: the configurations go before the Deployment ----
        seen, stop = {}, threading.Event()
        threads = watch_deletions(admin, seen, stop)
        t0 = time.monotonic()
        helm("uninstall", RELEASE, "-n", NS, kubeconfig=kubeconfig)
        installed = False
        print(f"helm uninstall: {time.monotonic() - t0:.1f}s")
        for t in threads:
            t.join(30)
        stop.set()
        assert len(seen) == 4, seen
        print("deleted at resourceVersion:", seen)
        assert seen["ValidatingWebhookConfiguration"] < seen["Deployment"], seen
        assert seen["MutatingWebhookConfiguration"] < seen["Deployment"], seen
        assert max(seen["ValidatingWebhookConfiguration"],
                   seen["MutatingWebhookConfiguration"]) < seen["Service"], seen
        # The CRDs stay (and every Tenant with them); the policies go.
        ext.read_custom_resource_definition("tenants.landlord.dev")
        assert not {p.metadata.name for p in adm.list_validating_admission_policy().items} \
            & policies

        # ---- afterwards, with nothing serving the old endpoint, tenants create pods ----
        netns.stop(stub)
        wait_for(lambda: isinstance(create_pod(alice, tenant_ns), str), 30,
                 what="a tenant pod created after uninstall")
        core.create_namespace({"metadata": {"name": f"after-{uuid.uuid4().hex[:6]}"}})
    finally:
        if installed:
            helm("uninstall", RELEASE, "-n", NS, kubeconfig=kubeconfig, check=False)
        netns.stop(stub)
