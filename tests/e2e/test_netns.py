"""The plumbing the chart's test relies on, tested on its own: the real kube-apiserver calls a
webhook through a Service without a selector whose Endpoints point into a network namespace of
the test's (netns.py), where a minimal TLS admission server (admission_stub.py) with a
throwaway CA answers. Nothing of landlord's runs here."""

import base64
import sys
import uuid

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from netns import netns, throwaway_pki  # noqa: F401 (netns is a fixture)
from procs import REPO

STUB = REPO / "tests" / "e2e" / "admission_stub.py"
STUB_PORT = 8443


def serve_stub(netns, tmp_path, dns_names):  # noqa: F811
    """Start admission_stub.py in the namespace with a new CA; returns (process, CA PEM, log)."""
    ca, cert, key = throwaway_pki(tmp_path / "pki", dns_names=dns_names)
    log = tmp_path / "stub.log"
    proc = netns.popen([sys.executable, STUB, "--cert", cert, "--key", key,
                        "--addr", netns.ns_ip, "--port", STUB_PORT], log)
    return proc, ca, log


def service_with_endpoints(core, ns, name, ip, port):
    core.create_namespaced_service(ns, {
        "metadata": {"name": name},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}})
    core.create_namespaced_endpoints(ns, {
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port}]}]})


def test_api_server_reaches_a_webhook_in_a_network_namespace(cluster, netns, make_namespace,  # noqa: F811
                                                             tmp_path):
    tag = uuid.uuid4().hex[:8]
    svc_ns = make_namespace("llw-svc")
    target = make_namespace("llw-target", labels={"llw-test": tag})
    admin = cluster.client("admin")
    core = k8s.CoreV1Api(admin)
    proc, ca, log = serve_stub(netns, tmp_path, [f"stub.{svc_ns}.svc"])
    cluster.wait_for(lambda: "listening" in log.read_text() or proc.poll() is not None,
                     10, what="the stub server to listen")
    assert proc.poll() is None, log.read_text()

    # Endpoints refuse loopback addresses: the reason for the network namespace.
    try:
        core.create_namespaced_endpoints(svc_ns, {
            "metadata": {"name": "loopback"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 1}]}]})
        raise AssertionError("the API server accepted a loopback endpoint")
    except ApiException as e:
        assert e.status == 422 and "loopback" in e.body, e.body

    service_with_endpoints(core, svc_ns, "stub", netns.ns_ip, STUB_PORT)
    adm = k8s.AdmissionregistrationV1Api(admin)
    name = f"llw-stub-{tag}"
    adm.create_validating_webhook_configuration({
        "metadata": {"name": name},
        "webhooks": [{
            "name": "stub.llw.test",
            "clientConfig": {"service": {"namespace": svc_ns, "name": "stub",
                                         "path": "/validate", "port": 443},
                             "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["configmaps"], "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {"llw-test": tag}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail", "timeoutSeconds": 5}]})
    try:
        def denied_by_stub():
            cm = {"metadata": {"generateName": "deny-", "labels": {"admission-stub/deny": "x"}}}
            try:
                core.create_namespaced_config_map(target, cm)
                return False  # the configuration is not in force yet
            except ApiException as e:
                assert e.status == 403, e.body
                return "denied by admission-stub at /validate" in e.body
        cluster.wait_for(denied_by_stub, 30, what="the webhook in the netns to deny")
        core.create_namespaced_config_map(target, {"metadata": {"name": "allowed"}})
        calls = log.read_text().splitlines()
        assert "/validate CREATE configmaps allowed" in calls, calls
    finally:
        adm.delete_validating_webhook_configuration(name)
        netns.stop(proc)
