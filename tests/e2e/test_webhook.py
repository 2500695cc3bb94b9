"""landlord webhook: the real API server calls it over TLS with AdmissionReview v1."""

import base64
import ssl
import urllib.request
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from procs import LANDLORD, Proc


@pytest.fixture
def webhook(cluster, tmp_path):
    pki = cluster.pki_dir
    proc = Proc([LANDLORD, "webhook", "--tls-cert-file", pki / "webhook.crt",
                 "--tls-key-file", pki / "webhook.key", "--webhook-addr", "127.0.0.1:0",
                 "--probe-addr", "127.0.0.1:0", "--shutdown-delay", "0s"],
                tmp_path / "webhook.log")
    proc.wait_probe()
    proc.webhook_port = proc.wait_record("webhook listening")["port"]
    yield proc
    proc.stop()


def https(cluster, port, method, path, body=None):
    ctx = ssl.create_default_context(cafile=cluster.ca)
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_webhook_answers_reviews_and_rejects_malformed_input(cluster, webhook):
    port = webhook.webhook_port
    assert https(cluster, port, "GET", "/healthz") == (200, "ok")
    status, _ = https(cluster, port, "GET", "/validate")
    assert status == 405
    status, body = https(cluster, port, "POST", "/validate", b"{not json")
    assert status == 400 and "not JSON" in body
    status, body = https(cluster, port, "POST", "/validate", b'{"kind":"AdmissionReview"}')
    assert status == 400 and "admission.k8s.io/v1" in body
    status, _ = https(cluster, port, "POST", "/validate", b"x" * (9 << 20))
    assert status == 413
    review = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
              b'"request":{"uid":"u-1","operation":"CREATE"}}')
    status, body = https(cluster, port, "POST", "/validate", review)
    assert status == 200 and '"uid":"u-1"' in body and '"allowed":true' in body


def test_api_server_calls_the_webhook(cluster, webhook, make_namespace):
    label = f"wh-{uuid.uuid4().hex[:6]}"
    ns = make_namespace(labels={"landlord.dev/webhook-test": label})
    adm = k8s.AdmissionregistrationV1Api(cluster.client("admin"))
    name = f"landlord-test-{label}"
    ca = base64.b64encode(open(cluster.ca, "rb").read()).decode()
    cfg = k8s.V1ValidatingWebhookConfiguration(
        metadata=k8s.V1ObjectMeta(name=name),
        webhooks=[k8s.V1ValidatingWebhook(
            name=f"{label}.landlord.dev", admission_review_versions=["v1"],
            side_effects="None", failure_policy="Fail", timeout_seconds=5,
            client_config=k8s.AdmissionregistrationV1WebhookClientConfig(
                url=f"https://127.0.0.1:{webhook.webhook_port}/validate", ca_bundle=ca),
            namespace_selector=k8s.V1LabelSelector(
                match_labels={"landlord.dev/webhook-test": label}),
            rules=[k8s.V1RuleWithOperations(api_groups=[""], api_versions=["v1"],
                                            operations=["CREATE"],
                                            resources=["configmaps"])])])
    adm.create_validating_webhook_configuration(cfg)
    core = k8s.CoreV1Api(cluster.client("admin"))
    try:
        def created_through_webhook():
            core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
                metadata=k8s.V1ObjectMeta(generate_name="cm-")))
            return webhook.metric("landlord_admission_requests_total", allowed="true") >= 1
        cluster.wait_for(created_through_webhook, timeout=60,
                         what="the API server to call the webhook")

        # With the webhook gone, failurePolicy Fail rejects: the calls were real.
        webhook.stop()
        with pytest.raises(ApiException) as e:
            core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
                metadata=k8s.V1ObjectMeta(generate_name="cm-")))
        assert "failed calling webhook" in e.value.body
    finally:
        adm.delete_validating_webhook_configuration(name)
