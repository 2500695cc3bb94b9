"""landlord's webhook with its own certificates, called by the real API server (issue 12, points
1 to 3): the CA and serving certificate in the Secret landlord-webhook-tls, shared by every
process; --webhook-url registering the chart's configurations (deploy/webhooks.json) at
https://127.0.0.1:<port>; a clean exit removing them and a crash leaving them (tenant namespaces
fail closed, others keep working); a CA rotation under load without one failed call.

Every landlord here runs as its own least-privilege identity (deploy/rbac.yaml)."""

import base64
import json
import signal
import socket
import ssl
import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import grant_user, revoke
from procs import WEBHOOK_CONFIG, remove_registered_webhooks, start_landlord

NS = "landlord-system"
SECRET = "landlord-webhook-tls"
TENANT_LABEL = "landlord.dev/tenant"


def core(cluster, user="admin"):
    return k8s.CoreV1Api(cluster.client(user))


def tenant_editor(cluster, ns):
    """alice, editor in ns (bound by an administrator): the webhook judges her requests, while
    administrators, like in the admission policies, are exempt and never reach it."""
    k8s.RbacAuthorizationV1Api(cluster.client("admin")).create_namespaced_role_binding(ns, {
        "metadata": {"name": "e2e-alice-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "alice"}]})
    cluster.wait_for(lambda: cluster.kubectl("alice", "auth", "can-i", "create", "deployments",
                                             "-n", ns).stdout.strip() == "yes",
                     30, interval=0.3, what=f"alice editor in {ns}")
    return "alice"


def adm(cluster):
    return k8s.AdmissionregistrationV1Api(cluster.client("admin"))


def delete_secret(cluster):
    try:
        core(cluster).delete_namespaced_secret(SECRET, NS)
    except ApiException as e:
        if e.status != 404:
            raise


def secret_data(cluster, key):
    s = core(cluster).read_namespaced_secret(SECRET, NS)
    return base64.b64decode(s.data[key]).decode()


def start_webhook(cluster, tmp_path, *args, name="webhook"):
    """`landlord webhook` (registered at https://127.0.0.1:<its port> unless args say
    otherwise); returns the process with .webhook_port set once it listens."""
    p = start_landlord(cluster, tmp_path, "webhook", *args, name=name)
    p.wait_probe()
    p.webhook_port = p.wait_record("webhook listening")["port"]
    return p


def registered(cluster):
    """(validating, mutating) named landlord, None where absent."""
    out = []
    for read in (adm(cluster).read_validating_webhook_configuration,
                 adm(cluster).read_mutating_webhook_configuration):
        try:
            out.append(read(WEBHOOK_CONFIG))
        except ApiException as e:
            if e.status != 404:
                raise
            out.append(None)
    return tuple(out)


def peer_cert(port, cadata=None):
    """The DER certificate served on 127.0.0.1:port; verified against cadata (PEM) if given."""
    ctx = ssl.create_default_context(cadata=cadata) if cadata else ssl._create_unverified_context()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def service(name):
    return k8s.V1Service(metadata=k8s.V1ObjectMeta(name=name), spec=k8s.V1ServiceSpec(
        ports=[k8s.V1ServicePort(port=80)]))


def deployment(name):
    labels = {"app": name}
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1DeploymentSpec(
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="busybox")]))))


def validated(proc):
    return proc.metric("landlord_admission_requests_total", webhook="validate", allowed="true")


def test_api_server_calls_landlord_over_tls_with_its_own_ca(installed, tmp_path, make_namespace):
    tenant_ns = make_namespace(labels={TENANT_LABEL: "wh-own-ca"})
    user = tenant_editor(installed, tenant_ns)
    proc = start_webhook(installed, tmp_path)
    try:
        v, m = registered(installed)
        base = f"https://127.0.0.1:{proc.webhook_port}"
        bundle = secret_data(installed, "ca-bundle.crt")
        assert v.metadata.labels["app.kubernetes.io/managed-by"] == "landlord"
        # /sleep: enforced hibernation's webhook (docs/hibernation.md)
        assert {h.client_config.url for h in v.webhooks} == {f"{base}/validate",
                                                            f"{base}/sleep"}
        assert {h.client_config.url for h in m.webhooks} == {f"{base}/mutate"}
        for h in v.webhooks + m.webhooks:
            assert base64.b64decode(h.client_config.ca_bundle).decode() == bundle
        # the chart's rules, selectors and conditions, as deploy/webhooks.json renders them
        want = json.loads((installed_repo() / "deploy/webhooks.json").read_text())["items"]
        assert [h.name for h in v.webhooks] == [h["name"] for h in want[0]["webhooks"]]
        assert [h.name for h in m.webhooks] == [h["name"] for h in want[1]["webhooks"]]
        # landlord's CA verifies what it serves, for the registered host
        peer_cert(proc.webhook_port, cadata=bundle)

        before = validated(proc)

        def through_webhook():
            try:
                k8s.AppsV1Api(installed.client(user)).create_namespaced_deployment(
                    tenant_ns, deployment(f"d-{time.monotonic_ns() % 100000}"), dry_run="All")
            except ApiException as e:  # 503 while landlord's caches load: retried
                assert e.status == 503, e.body
                return False
            return validated(proc) > before
        installed.wait_for(through_webhook, timeout=30, interval=0.5,
                           what="a tenant-namespace request to reach /validate")
        assert proc.stop() == 0
    finally:
        proc.stop()


def installed_repo():
    from procs import REPO
    return REPO


def test_two_processes_share_one_secret(installed, tmp_path):
    delete_secret(installed)
    first = start_webhook(installed, tmp_path, name="first")
    second = start_webhook(installed, tmp_path, "--no-webhook-url", name="second")
    try:
        assert first.find("webhook CA and serving certificate created")
        assert not second.find("webhook CA and serving certificate created")
        bundle = secret_data(installed, "ca-bundle.crt")
        assert bundle.count("BEGIN CERTIFICATE") == 1
        # one CA, one serving certificate: both serve the same, and it chains to the bundle
        assert peer_cert(first.webhook_port, bundle) == peer_cert(second.webhook_port, bundle)
        # the configurations still point at the first: the second registered nothing
        v, _ = registered(installed)
        assert v.webhooks[0].client_config.url.startswith(
            f"https://127.0.0.1:{first.webhook_port}/")
        assert second.stop() == 0
        assert registered(installed)[0] is not None
        assert first.stop() == 0
        assert registered(installed) == (None, None)
    finally:
        second.stop()
        first.stop()


def test_clean_exit_removes_the_configurations_and_a_crash_leaves_them(installed, tmp_path,
                                                                      make_namespace):
    tenant_ns = make_namespace(labels={TENANT_LABEL: "wh-down"})
    user = tenant_editor(installed, tenant_ns)
    plain_ns = make_namespace()
    proc = start_webhook(installed, tmp_path, name="clean")
    assert all(registered(installed))
    assert proc.stop(signal.SIGTERM) == 0
    assert registered(installed) == (None, None)
    assert proc.find("webhook configuration removed")

    proc = start_webhook(installed, tmp_path, name="crash")
    try:
        assert all(registered(installed))
        proc.kill()
        assert all(registered(installed)), "a crash must leave the configurations"
        # tenant namespaces fail closed
        with pytest.raises(ApiException) as e:
            core(installed, user).create_namespaced_service(tenant_ns, service("down"))
        assert "failed calling webhook" in e.value.body
        # kube-system and namespaces of no tenant keep working
        name = f"wh-down-{time.monotonic_ns() % 100000}"
        core(installed).create_namespaced_service("kube-system", service(name))
        core(installed).delete_namespaced_service(name, "kube-system")
        core(installed).create_namespaced_service(plain_ns, service("up"))
        # a landlord back registers over what the crashed one left, and serves
        back = start_webhook(installed, tmp_path, name="back")
        v, _ = registered(installed)
        assert v.webhooks[0].client_config.url.startswith(
            f"https://127.0.0.1:{back.webhook_port}/")
        installed.wait_for(lambda: _creates(installed, tenant_ns, user), timeout=30, interval=0.5,
                           what="tenant namespaces to work again")
        assert back.stop() == 0
    finally:
        remove_registered_webhooks(installed)


def _creates(cluster, ns, user="admin"):
    try:
        core(cluster, user).create_namespaced_service(
            ns, service(f"s-{time.monotonic_ns() % 10**6}"), dry_run="All")
        return True
    except ApiException:
        return False


def test_ca_rotation_under_load_fails_no_call(installed, tmp_path, make_namespace):
    tenant_ns = make_namespace(labels={TENANT_LABEL: "wh-rotate"})
    user = tenant_editor(installed, tenant_ns)
    delete_secret(installed)
    proc = start_webhook(installed, tmp_path, "--test-webhook-ca-lifetime", "30s",
                         "--test-webhook-serving-lifetime", "12s",
                         "--test-webhook-publish-grace", "3s", "--test-webhook-drain", "4s",
                         "--test-webhook-cert-period", "1s", name="rotate")
    stop = threading.Event()
    calls, failures = [0], []

    def load():
        apps = k8s.AppsV1Api(installed.new_client(user))
        i = 0
        while not stop.is_set():
            i += 1
            try:
                apps.create_namespaced_deployment(
                    tenant_ns, deployment(f"r-{threading.get_ident() % 1000}-{i}"),
                    dry_run="All")
                calls[0] += 1
            except ApiException as e:
                failures.append(f"{e.status}: {e.body[:300]}")
    threads = [threading.Thread(target=load, daemon=True) for _ in range(4)]
    try:
        installed.wait_for(lambda: _deploys(installed, tenant_ns, user), timeout=30,
                           interval=0.5,
                           what="the webhook to answer")
        for t in threads:
            t.start()
        proc.wait_record("CA rotation finished: old CAs left the bundle", timeout=90)
        time.sleep(3)  # and a moment on the new CA alone
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        proc.stop()
        delete_secret(installed)  # later tests get a CA with the default lifetime
    assert proc.find("CA rotation started: a new CA joins the bundle")
    assert proc.find("CA rotation: serving a certificate from the new CA")
    assert proc.find("webhook serving a new certificate")
    assert failures == [], f"{len(failures)} of {calls[0] + len(failures)} calls failed: " \
                           f"{failures[:3]}"
    assert calls[0] > 50


def _deploys(cluster, ns, user):
    try:
        k8s.AppsV1Api(cluster.client(user)).create_namespaced_deployment(
            ns, deployment("probe"), dry_run="All")
        return True
    except ApiException:
        return False


def _exit_line(proc, timeout=60):
    code = proc.popen.wait(timeout)
    errors = [r for r in proc.records() if r.get("level") == "error"]
    return code, errors


def test_a_bad_url_or_a_taken_port_is_one_clear_error(installed, tmp_path):
    proc = start_landlord(installed, tmp_path, "webhook", "--webhook-url", "http://127.0.0.1:1",
                          name="bad-url")
    code, errors = _exit_line(proc)
    assert code == 1 and len(errors) == 1, errors
    assert "--webhook-url http://127.0.0.1:1: not https://" in errors[0]["error"]

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_landlord(installed, tmp_path, "webhook", "--webhook-addr",
                              f"127.0.0.1:{port}", name="taken")
        code, errors = _exit_line(proc)
    assert code == 1 and len(errors) == 1, errors
    assert f"port 127.0.0.1:{port} is in use" in errors[0]["error"]
    assert registered(installed) == (None, None)


def test_a_replica_that_does_not_lead_serves_the_webhook(installed, tmp_path):
    timing = ["--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s"]
    leader = start_landlord(installed, tmp_path, "run", *timing, name="leader")
    leader.wait_probe()
    installed.wait_for(lambda: leader.metric("landlord_leader") == 1.0, timeout=30,
                       what="the first replica to lead")
    follower = start_landlord(installed, tmp_path, "run", *timing, name="follower")
    try:
        follower.wait_probe()
        port = follower.wait_record("webhook listening")["port"]
        assert follower.metric("landlord_leader") == 0.0
        # the configurations now point at the follower, the last to register: the API server
        # calls it, and it answers while the other replica leads
        v, _ = registered(installed)
        assert v.webhooks[0].client_config.url.startswith(f"https://127.0.0.1:{port}/")
        # a dry-run Tenant from alice (the tenant rules judge every requester but the exempt;
        # a namespace labelled for a tenant that does not exist would be released by the
        # controllers, and then nothing in it would reach the webhook)
        grant_user(installed.client("admin"), "e2e-tenant-create", [{
            "apiGroups": ["landlord.dev"], "resources": ["tenants"], "verbs": ["create"]}],
            "alice")
        alice = k8s.CustomObjectsApi(installed.client("alice"))
        before = validated(follower)

        def admitted():  # RBAC and the follower's caches may take a moment: retried
            try:
                alice.create_cluster_custom_object(
                    "landlord.dev", "v1alpha1", "tenants",
                    {"apiVersion": "landlord.dev/v1alpha1", "kind": "Tenant",
                     "metadata": {"name": "wh-follower"}, "spec": {"plan": "none"}},
                    dry_run="All")
            except k8s.ApiException as e:
                assert e.status in (403, 503), e.body
                return False
            return validated(follower) > before
        try:
            installed.wait_for(admitted, 30, what="alice's Tenant admitted by the follower")
        finally:
            revoke(installed.client("admin"), "e2e-tenant-create")
        assert follower.metric("landlord_leader") == 0.0
        assert follower.stop() == 0
        assert leader.stop() == 0
    finally:
        follower.stop()
        leader.stop()
