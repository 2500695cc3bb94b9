"""The tenant API proxy (docs/proxy.md), end to end: real kubectl through `landlord run`'s proxy,
with kubeconfigs from `landlord kubeconfig`, for two tenants that use the same namespace names.

Tenant A (owner alice) has namespaces dev and prod; tenant G (owner carol) has dev. Each user
works in its own view under short names; every way into the other tenant's namespaces fails.
"""

import base64
import json
import os
import queue
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

import procs
import tenants
from procs import LANDLORD
from stubkubelet import stub_kubelet  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("module_policies")


class Proxy:
    """One landlord (controllers, webhook and proxy) and the two tenants, for the module."""

    def __init__(self, cluster, tmp_path):
        self.cluster = cluster
        self.tmp = tmp_path
        self.kit = tenants.Kit(cluster, tmp_path)
        # the proxy on, as its own identity (never landlord's: deploy/rbac.yaml)
        self.landlord = self.kit.start("--proxy-kubeconfig",
                                       cluster.kubeconfig("landlord-proxy"))
        self.port = self.landlord.wait_record("proxy listening")["port"]
        self.url = f"https://127.0.0.1:{self.port}"
        self.plan = self.kit.plan(hard={"pods": "20"})
        self.a = self.kit.tenant(plan=self.plan, owners={"users": ["alice"]},
                                 prefixed=["dev", "prod"])
        self.g = self.kit.tenant(plan=self.plan, owners={"users": ["carol"]}, prefixed=["dev"])
        for t, names in ((self.a, ["dev", "prod"]), (self.g, ["dev"])):
            for n in names:
                self.kit.expect_namespace(f"{t}-{n}")
            self.kit.wait_ready(t, [f"{t}-{n}" for n in names])
            for n in names:
                self.kit.wait_provisioned(f"{t}-{n}", t)
        self.alice = self.kubeconfig(self.a, "alice")
        self.carol = self.kubeconfig(self.g, "carol")

    def kubeconfig(self, tenant, user, *extra, check=True):
        """`landlord kubeconfig` as the administrator, written to a file; its path."""
        r = subprocess.run([str(LANDLORD), "kubeconfig", "--tenant", tenant, "--user", user,
                            "--proxy-url", self.url, "--kubeconfig",
                            self.cluster.kubeconfig("admin"), *extra],
                           capture_output=True, text=True, timeout=60)
        if not check:
            return r
        assert r.returncode == 0, r.stderr
        path = self.tmp / f"{tenant}-{user}.kubeconfig"
        path.write_text(r.stdout)
        return str(path)

    def kubectl(self, kubeconfig, *args, input=None):
        return subprocess.run([self.cluster.kubectl_bin, "--kubeconfig", kubeconfig,
                               *map(str, args)], input=input, capture_output=True, text=True,
                              timeout=60)

    def ok(self, kubeconfig, *args, input=None):
        r = self.kubectl(kubeconfig, *args, input=input)
        assert r.returncode == 0, f"kubectl {' '.join(map(str, args))}: {r.stderr}"
        return r.stdout

    def configmap(self, kubeconfig, name, ns, **data):
        """Create a ConfigMap from a manifest (an unstructured client: JSON on the wire)."""
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns}, "data": data}
        return self.ok(kubeconfig, "create", "-f", "-", input=json.dumps(body))

    def close(self):
        self.kit.cleanup()


@pytest.fixture(scope="module")
def px(installed, tmp_path_factory):
    p = Proxy(installed, tmp_path_factory.mktemp("proxy"))
    procs.detach(p.landlord, installed)
    yield p
    p.close()
    if p.landlord.popen.poll() is None:
        p.landlord.stop()
    procs.remove_registered_webhooks(installed)


def unauthorized(r):
    """kubectl's words for a 401."""
    return "Unauthorized" in r.stderr or "must be logged in" in r.stderr


def token_kubeconfig(px, cert_kubeconfig, token, name):
    """@cert_kubeconfig with a bearer token instead of the client certificate."""
    cfg = yaml.safe_load(open(cert_kubeconfig))
    user = cfg["users"][0]["user"]
    user.pop("client-certificate-data")
    user.pop("client-key-data")
    user["token"] = token
    path = px.tmp / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def admin_core(px):
    return k8s.CoreV1Api(px.cluster.client("admin"))


def test_each_tenant_sees_its_own_namespaces_under_short_names(px):
    out = px.ok(px.alice, "get", "namespaces", "-o", "name")
    assert sorted(out.split()) == ["namespace/dev", "namespace/prod"]
    out = px.ok(px.carol, "get", "namespaces", "-o", "name")
    assert out.split() == ["namespace/dev"]
    ns = json.loads(px.ok(px.alice, "get", "namespace", "dev", "-o", "json"))
    assert ns["metadata"]["name"] == "dev"
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "dev"


def test_same_names_in_two_tenants_stay_apart(px):
    px.configmap(px.alice, "same", "dev", owner="alice")
    px.configmap(px.carol, "same", "dev", owner="carol")
    a = json.loads(px.ok(px.alice, "get", "configmap", "same", "-n", "dev", "-o", "json"))
    g = json.loads(px.ok(px.carol, "get", "configmap", "same", "-n", "dev", "-o", "json"))
    assert (a["data"]["owner"], a["metadata"]["namespace"]) == ("alice", "dev")
    assert (g["data"]["owner"], g["metadata"]["namespace"]) == ("carol", "dev")
    upstream = admin_core(px).read_namespaced_config_map("same", f"{px.a}-dev")
    assert upstream.data == {"owner": "alice"}


def test_the_other_tenants_namespace_is_not_found(px):
    for ns in (f"{px.g}-dev", "kube-system", "default", f"{px.a}-dev"):
        r = px.kubectl(px.alice, "get", "configmaps", "-n", ns)
        assert r.returncode != 0
        assert "NotFound" in r.stderr or "not found" in r.stderr, r.stderr
        assert "Forbidden" not in r.stderr


def test_a_certificate_for_another_tenant_is_refused(px):
    cfg = yaml.safe_load(open(px.alice))
    cfg["clusters"][0]["cluster"]["server"] = f"{px.url}/tenants/{px.g}"
    path = px.tmp / "alice-at-g.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    r = px.kubectl(str(path), "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and "Forbidden" in r.stderr, r.stderr
    assert px.g in r.stderr and "not" in r.stderr


def test_a_non_member_with_a_valid_certificate_is_refused(px):
    erin = px.kubeconfig(px.a, "erin")
    r = px.kubectl(erin, "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and "Forbidden" in r.stderr
    assert "not a member" in r.stderr


def test_a_proxy_certificate_is_worthless_at_the_api_server(px):
    cfg = yaml.safe_load(open(px.alice))
    cfg["clusters"][0]["cluster"]["server"] = px.cluster.api_url
    cfg["clusters"][0]["cluster"].pop("certificate-authority-data")
    cfg["clusters"][0]["cluster"]["certificate-authority"] = px.cluster.ca
    path = px.tmp / "alice-direct.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    r = px.kubectl(str(path), "get", "configmaps", "-n", f"{px.a}-dev")
    assert r.returncode != 0 and "Unauthorized" in r.stderr, r.stderr


def test_no_certificate_or_a_foreign_one_is_unauthorized(px):
    cfg = yaml.safe_load(open(px.alice))
    user = cfg["users"][0]["user"]
    user.pop("client-certificate-data")
    user.pop("client-key-data")
    user["token"] = "not-a-token"
    path = px.tmp / "anonymous.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    r = px.kubectl(str(path), "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and unauthorized(r), r.stderr
    # the test cluster's own admin certificate: another CA
    pki = px.cluster.pki_dir
    user.pop("token")
    user["client-certificate"] = str(pki / "admin.crt")
    user["client-key"] = str(pki / "admin.key")
    path.write_text(yaml.safe_dump(cfg))
    r = px.kubectl(str(path), "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and unauthorized(r), r.stderr


def test_all_namespaces_lists_only_the_tenants(px):
    px.configmap(px.alice, "everywhere", "prod")
    out = px.ok(px.alice, "get", "configmaps", "-A", "-o", "json")
    seen = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in json.loads(out)["items"]}
    assert ("prod", "everywhere") in seen
    assert {ns for ns, _ in seen} <= {"dev", "prod"}
    table = px.ok(px.alice, "get", "configmaps", "-A")
    assert "prod" in table and px.a not in table and px.g not in table


def test_patches_and_apply_work_in_the_view(px):
    px.configmap(px.alice, "patched", "dev")
    px.ok(px.alice, "patch", "configmap", "patched", "-n", "dev", "--type", "merge",
          "-p", '{"data": {"a": "1"}}')
    px.ok(px.alice, "patch", "configmap", "patched", "-n", "dev", "--type", "json",
          "-p", '[{"op": "add", "path": "/data/b", "value": "2"}]')
    px.ok(px.alice, "patch", "configmap", "patched", "-n", "dev", "--type", "strategic",
          "-p", '{"data": {"c": "3"}}')
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied, namespace: dev}\n"
                "data: {x: one}\n")
    px.ok(px.alice, "apply", "-f", "-", input=manifest)
    px.ok(px.alice, "apply", "--server-side", "-f", "-", input=manifest.replace("x: one", "x: two"))
    data = admin_core(px).read_namespaced_config_map("patched", f"{px.a}-dev").data
    assert data == {"a": "1", "b": "2", "c": "3"}
    assert admin_core(px).read_namespaced_config_map("applied", f"{px.a}-dev").data == {"x": "two"}


def test_a_body_naming_another_namespace_is_refused(px):
    other = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: sneaky, namespace: {px.g}-dev}}"
             "\n")
    r = px.kubectl(px.alice, "apply", "--server-side", "-n", "dev", "-f", "-", input=other)
    assert r.returncode != 0
    # a patch moving a value into metadata.namespace is applied in the view: refused, named
    px.configmap(px.alice, "retarget", "dev", target=f"{px.g}-dev")  # this test's own object
    r = px.kubectl(px.alice, "patch", "configmap", "retarget", "-n", "dev", "--type", "json",
                   "-p", '[{"op": "move", "from": "/data/target", "path": "/metadata/namespace"}]')
    assert r.returncode != 0 and "metadata.namespace" in r.stderr, r.stderr
    with pytest.raises(ApiException) as e:
        admin_core(px).read_namespaced_config_map("sneaky", f"{px.g}-dev")
    assert e.value.status == 404


def test_a_new_namespace_gets_the_tenant_prefix(px):
    px.kit.expect_namespace(f"{px.a}-fresh")
    px.ok(px.alice, "create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}))
    ns = admin_core(px).read_namespace(f"{px.a}-fresh")
    assert ns.metadata.labels["landlord.dev/tenant"] == px.a
    px.cluster.wait_for(lambda: "namespace/fresh" in px.ok(px.alice, "get", "ns", "-o", "name"),
                        what="fresh in alice's view")
    long_name = "x" * (63 - len(px.a))
    r = px.kubectl(px.alice, "create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": long_name}}))
    assert r.returncode != 0 and "metadata.name" in r.stderr, r.stderr


def review(px, kubeconfig, verb, resource, ns):
    """A SelfSubjectAccessReview through the proxy (from a manifest: JSON on the wire)."""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                            "namespace": ns}}}
    # --validate=false: kubectl checks this kind against /openapi/v2 in protobuf, which the
    # proxy does not serve yet (it answers 406)
    out = px.ok(kubeconfig, "create", "--validate=false", "-f", "-", "-o", "json",
                input=json.dumps(body))
    answer = json.loads(out)
    assert answer["spec"]["resourceAttributes"]["namespace"] == ns
    return answer["status"]["allowed"]


def test_access_reviews_answer_in_the_view(px):
    assert review(px, px.alice, "create", "configmaps", "dev") is True
    # carol's "prod" is no namespace of hers: the review cannot name another's
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": "configmaps",
                                            "namespace": "prod"}}}
    r = px.kubectl(px.carol, "create", "--validate=false", "-f", "-", input=json.dumps(body))
    assert r.returncode != 0 and "spec.resourceAttributes.namespace" in r.stderr, r.stderr


def test_a_watch_streams_converted_events(px):
    proc = subprocess.Popen([px.cluster.kubectl_bin, "--kubeconfig", px.alice, "get",
                             "configmaps", "-n", "dev", "--watch", "-o", "json",
                             "--output-watch-events"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        px.configmap(px.alice, "watched", "dev")
        decoder, text = json.JSONDecoder(), ""
        for line in proc.stdout:
            text += line
            try:
                event, _ = decoder.raw_decode(text.strip())
            except ValueError:
                continue
            text = ""
            obj = event["object"]
            assert obj["metadata"]["namespace"] == "dev", obj["metadata"]
            if obj["metadata"]["name"] == "watched":
                break
    finally:
        proc.kill()
        proc.wait()


def test_a_users_token_works_like_its_certificate(px):
    alice = token_kubeconfig(px, px.alice, "alice-token-0123456789", "alice-token")
    out = px.ok(alice, "get", "configmaps", "-n", "dev", "-o", "name")
    assert "configmap/same" in out.split()
    carol = token_kubeconfig(px, px.alice, "carol-token-0123456789", "carol-at-a")
    r = px.kubectl(carol, "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and "not a member" in r.stderr, r.stderr


def test_same_named_service_accounts_never_cross(px):
    """capsule-proxy's CVE-2023-46254: a ServiceAccount of G named like one of A sees only G."""
    core = admin_core(px)
    tokens = {}
    for t in (px.a, px.g):
        core.create_namespaced_service_account(f"{t}-dev", {"metadata": {"name": "ci"}})
        req = core.create_namespaced_service_account_token(
            "ci", f"{t}-dev", {"spec": {"expirationSeconds": 600}})
        tokens[t] = req.status.token
    g_at_a = token_kubeconfig(px, px.alice, tokens[px.g], "g-ci-at-a")
    r = px.kubectl(g_at_a, "get", "configmaps", "-n", "dev")
    assert r.returncode != 0 and "not a member" in r.stderr, r.stderr
    a_ci = token_kubeconfig(px, px.alice, tokens[px.a], "a-ci")
    r = px.kubectl(a_ci, "get", "configmaps", "-n", "dev")  # upstream, as the account itself
    assert r.returncode != 0 and "Forbidden" in r.stderr, r.stderr
    assert "system:serviceaccount:dev:ci" in r.stderr and px.a not in r.stderr


def test_client_impersonation_headers_are_refused(px):
    r = px.kubectl(px.alice, "get", "configmaps", "-n", "dev", "--as", "carol")
    assert r.returncode != 0 and "impersonation" in r.stderr, r.stderr
    r = px.kubectl(px.alice, "get", "configmaps", "-n", "dev", "--as-group", "system:masters")
    assert r.returncode != 0, r.stderr


def test_discovery_and_openapi_show_no_other_group(px):
    resources = px.ok(px.alice, "api-resources", "-o", "name")
    assert "configmaps" in resources.split() and "deployments.apps" in resources.split()
    assert "landlord.dev" not in resources and "nodes" not in resources.split()
    assert "customresourcedefinitions" not in resources
    base = f"/tenants/{px.a}"  # --raw takes the whole path, base included
    for path in ("/apis", "/openapi/v2", "/openapi/v3"):
        doc = px.ok(px.alice, "get", "--raw", base + path)
        assert "landlord.dev" not in doc and "apiextensions.k8s.io" not in doc, path
    r = px.kubectl(px.alice, "get", "--raw", base + "/openapi/v3/apis/landlord.dev/v1alpha1")
    assert r.returncode != 0 and "NotFound" in r.stderr, r.stderr


def test_cluster_scoped_kinds_and_proxies_are_hidden(px):
    for args in (("get", "nodes"), ("get", "clusterroles"), ("get", "tenants.landlord.dev"),
                 ("get", "validatingwebhookconfigurations")):
        r = px.kubectl(px.alice, *args)
        assert r.returncode != 0, args
        assert "Forbidden" not in r.stderr, (args, r.stderr)
    base = f"/tenants/{px.a}"
    r = px.kubectl(px.alice, "get", "--raw", base + "/api/v1/namespaces/dev/services/web/proxy")
    assert r.returncode != 0 and "Forbidden" in r.stderr, r.stderr
    r = px.kubectl(px.alice, "get", "--raw", base + "/api/v1/nodes/stub-node/proxy/pods")
    assert r.returncode != 0 and "Forbidden" not in r.stderr, r.stderr


def test_typed_clients_work_with_protobuf_bodies(px):
    """kubectl's typed clients send protobuf (and never fall back to JSON)."""
    px.ok(px.alice, "create", "configmap", "typed", "-n", "dev", "--from-literal=k=v")
    assert admin_core(px).read_namespaced_config_map("typed", f"{px.a}-dev").data == {"k": "v"}
    assert px.ok(px.alice, "auth", "can-i", "create", "configmaps", "-n", "dev").strip() == "yes"
    r = px.kubectl(px.carol, "auth", "can-i", "create", "configmaps", "-n", "prod")
    assert r.stdout.strip() != "yes" and "spec.resourceAttributes.namespace" in r.stderr, r
    px.ok(px.alice, "create", "serviceaccount", "robot", "-n", "dev")
    token = px.ok(px.alice, "create", "token", "robot", "-n", "dev").strip()
    robot = token_kubeconfig(px, px.alice, token, "robot")
    r = px.kubectl(robot, "get", "configmaps", "-n", "dev")
    assert "system:serviceaccount:dev:robot" in r.stderr, r.stderr  # upstream, as the robot
    px.ok(px.alice, "delete", "configmap", "typed", "-n", "dev")
    px.kit.expect_namespace(f"{px.a}-typedns")
    px.ok(px.alice, "create", "namespace", "typedns")
    assert admin_core(px).read_namespace(f"{px.a}-typedns").metadata.labels[
        "landlord.dev/tenant"] == px.a


def test_json_patches_on_namespace_fields_apply_in_the_view(px):
    """A copy or test of metadata.namespace cannot be rewritten by path: GET, patch, PUT."""
    px.configmap(px.alice, "copied", "dev", x="y")
    px.ok(px.alice, "patch", "configmap", "copied", "-n", "dev", "--type", "json", "-p",
          '[{"op": "test", "path": "/metadata/namespace", "value": "dev"},'
          ' {"op": "copy", "from": "/metadata/namespace", "path": "/data/ns"}]')
    cm = admin_core(px).read_namespaced_config_map("copied", f"{px.a}-dev")
    assert cm.data == {"x": "y", "ns": "dev"}  # the value the tenant saw
    r = px.kubectl(px.alice, "patch", "configmap", "copied", "-n", "dev", "--type", "json", "-p",
                   f'[{{"op": "test", "path": "/metadata/namespace", "value": "{px.a}-dev"}}]')
    assert r.returncode != 0 and "test failed" in r.stderr, r.stderr


# ---------- exec, attach, port-forward and logs -f: tunnels (docs/proxy.md, "Tunnels") ----------

EXEC_POD = "shell"
ECHO_PORT = 7000  # the stub kubelet echoes a forwarded port without an annotation
TUNNEL_TRANSPORTS = {
    "websocket": {},
    "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false",
             "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"},
}


def stub_pod(stub, name):
    """The stub kubelet's pod, made acceptable to the tenants' Pod Security level (restricted)."""
    body = stub.pod_manifest(name)
    body["spec"]["securityContext"] = {"runAsNonRoot": True, "runAsUser": 1000,
                                       "seccompProfile": {"type": "RuntimeDefault"}}
    body["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return body


@pytest.fixture(scope="module")
def exec_pods(px, stub_kubelet):
    """The pod `shell` on the stub kubelet's Node in alice's dev and in carol's dev, made by the
    administrator; deleted by the stub's stop() (grace period 0)."""
    for t in (px.a, px.g):
        ns = f"{t}-dev"
        px.kit.wait_default_sa(ns)
        admin_core(px).create_namespaced_pod(ns, stub_pod(stub_kubelet, EXEC_POD))
        stub_kubelet.wait_running(ns, EXEC_POD)
    yield stub_kubelet


def kubectl_env(px, kubeconfig, *args, env=None, input=None, timeout=60):
    return subprocess.run([px.cluster.kubectl_bin, "--kubeconfig", kubeconfig, *map(str, args)],
                          input=input, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


class LongKubectl:
    """A long-running kubectl (port-forward, logs -f) whose stdout a thread reads line by line;
    stopped by its PID."""

    def __init__(self, px, kubeconfig, *args, env=None):
        self.proc = subprocess.Popen(
            [px.cluster.kubectl_bin, "--kubeconfig", kubeconfig, *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def stderr(self):
        return self.proc.stderr.read() if self.proc.poll() is not None else "(running)"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Identity:
    """A TLS client identity for raw requests: the files of a kubeconfig's inline certificate,
    key and CA, or of the test cluster's own."""

    def __init__(self, host, port, ca, cert, key):
        self.host, self.port, self.ca, self.cert, self.key = host, port, ca, cert, key

    @classmethod
    def of_kubeconfig(cls, px, kubeconfig, name):
        cfg = yaml.safe_load(open(kubeconfig))
        files = {}
        for key, data in (("ca", cfg["clusters"][0]["cluster"]["certificate-authority-data"]),
                          ("cert", cfg["users"][0]["user"]["client-certificate-data"]),
                          ("key", cfg["users"][0]["user"]["client-key-data"])):
            files[key] = px.tmp / f"{name}.{key}.pem"
            files[key].write_bytes(base64.b64decode(data))
        return cls("127.0.0.1", px.port, files["ca"], files["cert"], files["key"])

    @classmethod
    def admin(cls, px):
        url = urllib.parse.urlsplit(px.cluster.api_url)
        pki = px.cluster.pki_dir
        return cls(url.hostname, url.port, px.cluster.ca, pki / "admin.crt", pki / "admin.key")


WS_HEADERS = {"Upgrade": "websocket", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
              "Sec-WebSocket-Version": "13", "Sec-WebSocket-Protocol": "v5.channel.k8s.io"}


def raw_upgrade(who, path, headers=None, method="GET"):
    """One upgrade request on a TLS connection of its own, as kubectl's WebSocket executor sends
    it by default: (status, {header: value} lowercased, body)."""
    ctx = ssl.create_default_context(cafile=str(who.ca))
    ctx.load_cert_chain(str(who.cert), str(who.key))
    lines = [f"{method} {path} HTTP/1.1", f"Host: {who.host}:{who.port}", "Connection: Upgrade"]
    lines += [f"{k}: {v}" for k, v in {**WS_HEADERS, **(headers or {})}.items()]
    with socket.create_connection((who.host, who.port), timeout=15) as raw, \
            ctx.wrap_socket(raw, server_hostname=who.host) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data and (chunk := s.recv(4096)):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        got = {k.strip().lower(): v.strip() for k, v in (f.split(":", 1) for f in fields)}
        status = int(status_line.split()[1])
        if status != 101:
            want = int(got.get("content-length", "0"))
            while len(body) < want and (chunk := s.recv(4096)):
                body += chunk
        return status, got, body


def exec_path(tenant, ns, pod=EXEC_POD, sub="exec"):
    query = "command=echo&command=hi&container=main&stdout=true"
    return f"/tenants/{tenant}/api/v1/namespaces/{ns}/pods/{pod}/{sub}?{query}"


@pytest.mark.parametrize("transport", TUNNEL_TRANSPORTS)
def test_exec_through_the_proxy(px, exec_pods, transport):
    env = TUNNEL_TRANSPORTS[transport]
    r = kubectl_env(px, px.alice, "-v=4", "exec", "-n", "dev", EXEC_POD, "--", "echo", "hello",
                    "world", env=env)
    assert (r.returncode, r.stdout) == (0, "hello world\n"), r.stderr
    assert ("The subprotocol is v5.channel.k8s.io" in r.stderr) == (transport == "websocket")
    r = kubectl_env(px, px.alice, "exec", "-i", "-n", "dev", EXEC_POD, "--", "cat", env=env,
                    input="line one\nline two\n")
    assert (r.returncode, r.stdout) == (0, "line one\nline two\n"), r.stderr
    r = kubectl_env(px, px.alice, "exec", "-n", "dev", EXEC_POD, "--", "sh", "-c", "exit 3",
                    env=env)
    assert r.returncode == 3 and "command terminated with exit code 3" in r.stderr, r.stderr
    r = kubectl_env(px, px.alice, "exec", "-n", "dev", EXEC_POD, "--", "stderr", "oops",
                    env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "oops\n")
    payload = "".join(f"{i:06d} the quick brown fox\n" for i in range(20000))  # ~540 KB
    r = kubectl_env(px, px.alice, "exec", "-i", "-n", "dev", EXEC_POD, "--", "cat", env=env,
                    input=payload)
    assert r.returncode == 0 and r.stdout == payload, r.stderr[-2000:]


def test_exec_with_the_python_client_websocket(px, exec_pods):
    """kubernetes.stream speaks v4.channel.k8s.io: the API server passes it to the kubelet as a
    WebSocket, so it goes through the proxy untranslated."""
    api = k8s_config.new_client_from_config(config_file=px.alice)
    core = k8s.CoreV1Api(api)
    out = stream(core.connect_get_namespaced_pod_exec, EXEC_POD, "dev", container="main",
                 command=["echo", "via", "python"], stderr=True, stdin=False, stdout=True,
                 tty=False)
    assert out == "via python\n"


@pytest.mark.parametrize("transport", TUNNEL_TRANSPORTS)
def test_attach_through_the_proxy(px, exec_pods, transport):
    r = kubectl_env(px, px.alice, "attach", "-i", "-n", "dev", EXEC_POD, "-c", "main",
                    env=TUNNEL_TRANSPORTS[transport], input="hello attach\n")
    assert r.returncode == 0, r.stderr
    # the stub's greeting names the pod as the kubelet knows it: the upstream namespace
    assert r.stdout == f"stub attach: {px.a}-dev/{EXEC_POD}/main\nhello attach\n"


def forward_exchange(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while len(got) < len(payload) and (chunk := s.recv(65536)):
            got += chunk
        return got


@pytest.mark.parametrize("transport", TUNNEL_TRANSPORTS)
def test_port_forward_through_the_proxy(px, exec_pods, transport):
    with LongKubectl(px, px.alice, "port-forward", "-n", "dev", "--address", "127.0.0.1",
                     f"pod/{EXEC_POD}", f":{ECHO_PORT}", env=TUNNEL_TRANSPORTS[transport]) as pf:
        port = None
        deadline = time.monotonic() + 20
        while port is None and time.monotonic() < deadline and pf.proc.poll() is None:
            line = pf.line(1)
            if line and line.startswith("Forwarding from 127.0.0.1:"):
                port = int(line.split("127.0.0.1:", 1)[1].split(" -> ")[0])
        assert port, f"kubectl port-forward: {pf.stderr()}"
        payload = os.urandom(256 * 1024)
        assert forward_exchange(port, payload) == payload
        assert forward_exchange(port, b"again") == b"again"


def test_logs_follow_through_the_proxy(px, exec_pods):
    with LongKubectl(px, px.alice, "logs", "-f", "-n", "dev", EXEC_POD, "-c", "main") as logs:
        lines = []
        start = time.monotonic()
        while len(lines) < 5 and time.monotonic() - start < 15:
            line = logs.line(1)
            if line is not None:
                lines.append(line)
    assert lines[:3] == [f"stub log line {i} of {px.a}-dev/{EXEC_POD}/main" for i in (1, 2, 3)]
    assert len(lines) == 5, lines


def test_a_raw_websocket_upgrade_through_the_proxy(px, exec_pods):
    alice = Identity.of_kubeconfig(px, px.alice, "alice-raw")
    status, headers, body = raw_upgrade(alice, exec_path(px.a, "dev"))
    assert status == 101, body
    assert headers["upgrade"].lower() == "websocket"
    assert headers["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert headers["sec-websocket-protocol"] == "v5.channel.k8s.io"


def test_exec_into_another_tenants_pod_is_not_found(px, exec_pods):
    r = px.kubectl(px.alice, "exec", "-n", f"{px.g}-dev", EXEC_POD, "--", "echo", "x")
    assert r.returncode != 0 and "not found" in r.stderr and "Forbidden" not in r.stderr
    alice = Identity.of_kubeconfig(px, px.alice, "alice-raw")
    for ns in (f"{px.g}-dev", "kube-system"):
        for sub in ("exec", "attach", "portforward"):
            status, _, body = raw_upgrade(alice, exec_path(px.a, ns, sub=sub))
            assert status == 404, (ns, sub, body)
            assert json.loads(body)["reason"] == "NotFound"
    # carol's pod through her own URL, with alice's certificate: another tenant's (403)
    status, _, _ = raw_upgrade(alice, exec_path(px.g, "dev"))
    assert status == 403
    # nothing of carol's pod reached: alice's dev has its own pod of that name
    status, _, body = raw_upgrade(alice, exec_path(px.a, "dev", pod="nothere"))
    assert status == 404, body


def test_exec_needs_create_not_just_get(px, exec_pods):
    """bob, a viewer of A with `get` on pods/exec only: the API server 1.33 would let his
    WebSocket exec through (a GET is authorised as get); the proxy's access review refuses it."""
    px.kit.patch_tenant(px.a, {"accessControl": {"owners": {"users": ["alice"]},
                                                 "viewers": {"users": ["bob"]}}})
    ns = f"{px.a}-dev"
    rbac = k8s.RbacAuthorizationV1Api(px.cluster.client("admin"))
    rbac.create_namespaced_role(ns, {"metadata": {"name": "exec-get"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "pods/exec", "pods/attach",
                                          "pods/portforward"], "verbs": ["get"]}]})
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "exec-get-bob"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-get"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    bob = px.kubeconfig(px.a, "bob")
    px.cluster.wait_for(lambda: px.kubectl(bob, "get", "pod", EXEC_POD, "-n", "dev")
                        .returncode == 0, 30, interval=0.3, what="bob a member who may get pods")
    # the hole: straight at the API server, as bob, the WebSocket exec is switched
    status, _, body = raw_upgrade(Identity.admin(px), exec_path(px.a, ns)
                                  .replace(f"/tenants/{px.a}", "", 1),
                                  {"Impersonate-User": "bob"})
    assert status == 101, body
    # through the proxy: refused before any upgrade, whatever the transport
    raw_bob = Identity.of_kubeconfig(px, bob, "bob-raw")
    for sub in ("exec", "attach", "portforward"):
        status, _, body = raw_upgrade(raw_bob, exec_path(px.a, "dev", sub=sub))
        assert status == 403, (sub, body)
        message = json.loads(body)["message"]
        assert f'cannot create resource "pods/{sub}"' in message and px.a not in message
    status, _, _ = raw_upgrade(raw_bob, exec_path(px.a, "dev"), method="POST",
                               headers={"Upgrade": "SPDY/3.1",
                                        "X-Stream-Protocol-Version": "v4.channel.k8s.io"})
    assert status == 403
    for transport, env in TUNNEL_TRANSPORTS.items():
        r = kubectl_env(px, bob, "exec", "-n", "dev", EXEC_POD, "--", "echo", "x", env=env)
        assert r.returncode != 0 and "Forbidden" in r.stderr, (transport, r.stderr)
        assert r.stdout == ""
    # alice, an owner (admin role), may
    assert px.ok(px.alice, "exec", "-n", "dev", EXEC_POD, "--", "echo", "ok") == "ok\n"


def test_pod_and_node_proxies_stay_closed(px, exec_pods):
    base = f"/tenants/{px.a}"
    r = px.kubectl(px.alice, "get", "--raw", f"{base}/api/v1/namespaces/dev/pods/{EXEC_POD}/proxy")
    assert r.returncode != 0 and "Forbidden" in r.stderr, r.stderr
    r = px.kubectl(px.alice, "get", "--raw", f"{base}/api/v1/nodes/{exec_pods.node}/proxy/pods")
    assert r.returncode != 0 and "Forbidden" not in r.stderr, r.stderr  # no nodes: 404
    alice = Identity.of_kubeconfig(px, px.alice, "alice-raw")
    status, _, _ = raw_upgrade(alice, f"{base}/api/v1/nodes/{exec_pods.node}/proxy/exec")
    assert status == 404


# ---------- the remaining field conversions (docs/proxy.md, "The namespaced view") ----------

def rbac(px):
    return k8s.RbacAuthorizationV1Api(px.cluster.client("admin"))


def test_a_rolebinding_for_a_service_account_binds_the_upstream_one(px):
    px.ok(px.alice, "create", "serviceaccount", "builder", "-n", "dev")
    # a typed client: protobuf on the wire
    px.ok(px.alice, "create", "rolebinding", "builder-view", "-n", "dev", "--clusterrole=view",
          "--serviceaccount=dev:builder", "--group=system:serviceaccounts:prod")
    upstream = rbac(px).read_namespaced_role_binding("builder-view", f"{px.a}-dev")
    subjects = {(s.kind, s.name, s.namespace) for s in upstream.subjects}
    assert ("ServiceAccount", "builder", f"{px.a}-dev") in subjects
    assert ("Group", f"system:serviceaccounts:{px.a}-prod", None) in subjects
    shown = json.loads(px.ok(px.alice, "get", "rolebinding", "builder-view", "-n", "dev",
                             "-o", "json"))
    assert {(s["kind"], s["name"], s.get("namespace")) for s in shown["subjects"]} == {
        ("ServiceAccount", "builder", "dev"), ("Group", "system:serviceaccounts:prod", None)}
    # the binding works for the account itself, upstream
    token = px.ok(px.alice, "create", "token", "builder", "-n", "dev").strip()
    builder = token_kubeconfig(px, px.alice, token, "builder-view")
    px.ok(builder, "get", "configmaps", "-n", "dev")
    # a JSON patch's value is converted where it goes
    px.ok(px.alice, "patch", "rolebinding", "builder-view", "-n", "dev", "--type", "json", "-p",
          json.dumps([{"op": "add", "path": "/subjects/-", "value": {
              "kind": "ServiceAccount", "name": "default", "namespace": "prod"}}]))
    upstream = rbac(px).read_namespaced_role_binding("builder-view", f"{px.a}-dev")
    assert ("ServiceAccount", "default", f"{px.a}-prod") in {
        (s.kind, s.name, s.namespace) for s in upstream.subjects}
    # a manifest (JSON on the wire) naming the other tenant's account: refused, named
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "sneaky", "namespace": "dev"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder",
                          "namespace": f"{px.g}-dev"}]}
    r = px.kubectl(px.alice, "create", "-f", "-", input=json.dumps(body))
    assert r.returncode != 0 and "subjects[0].namespace" in r.stderr, r.stderr
    r = px.kubectl(px.alice, "create", "rolebinding", "sneaky", "-n", "dev", "--clusterrole=view",
                   f"--group=system:serviceaccounts:{px.g}-dev")
    assert r.returncode != 0 and "subjects" in r.stderr, r.stderr


def pod_with(name, affinity):
    """A Pod (PodSecurity "restricted" holds in the tenant's namespaces) with @affinity."""
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10",
                 "securityContext": {"allowPrivilegeEscalation": False,
                                     "capabilities": {"drop": ["ALL"]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "dev"},
            "spec": {"containers": [container], "affinity": affinity,
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 65535,
                                         "seccompProfile": {"type": "RuntimeDefault"}}}}


def pod_affinity_term(**term):
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}},
         "topologyKey": "kubernetes.io/hostname", **term}]}}


def test_pod_affinity_names_only_the_tenants_namespaces(px):
    px.ok(px.alice, "create", "-f", "-", input=json.dumps(pod_with("near", pod_affinity_term(
        namespaces=["dev"],
        namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "prod"}}))))
    term = admin_core(px).read_namespaced_pod("near", f"{px.a}-dev").spec.affinity \
        .pod_affinity.required_during_scheduling_ignored_during_execution[0]
    assert term.namespaces == [f"{px.a}-dev"]
    assert term.namespace_selector.match_labels == {"kubernetes.io/metadata.name": f"{px.a}-prod"}
    shown = json.loads(px.ok(px.alice, "get", "pod", "near", "-n", "dev", "-o", "json"))
    shown_term = shown["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert shown_term["namespaces"] == ["dev"]
    assert shown_term["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "prod"}
    refused = {
        "other": pod_affinity_term(namespaces=["dev", f"{px.g}-dev"]),
        "everywhere": pod_affinity_term(namespaceSelector={}),
        "by-label": pod_affinity_term(namespaceSelector={"matchLabels": {"team": "a"}}),
        "not-in": pod_affinity_term(namespaceSelector={"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["dev"]}]}),
    }
    for name, affinity in refused.items():
        r = px.kubectl(px.alice, "create", "-f", "-", input=json.dumps(pod_with(name, affinity)))
        assert r.returncode != 0 and "namespace" in r.stderr, (name, r.stderr)
        assert "requiredDuringSchedulingIgnoredDuringExecution[0]" in r.stderr, (name, r.stderr)
    # a patch without a kind is converted as its resource's: the selector is refused there too
    r = px.kubectl(px.alice, "patch", "pod", "near", "-n", "dev", "--type", "merge", "-p",
                   json.dumps({"spec": {"affinity": pod_affinity_term(namespaceSelector={})}}))
    assert r.returncode != 0 and "namespaceSelector" in r.stderr, r.stderr
    with pytest.raises(ApiException) as e:
        admin_core(px).read_namespaced_pod("everywhere", f"{px.a}-dev")
    assert e.value.status == 404


def test_a_deployments_pod_template_is_converted(px):
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "spread", "namespace": "dev"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "spread"}},
                     "template": {"metadata": {"labels": {"app": "spread"}},
                                  "spec": pod_with("x", {"podAntiAffinity": {
                                      "preferredDuringSchedulingIgnoredDuringExecution": [
                                          {"weight": 5, "podAffinityTerm": {
                                              "topologyKey": "zone",
                                              "namespaces": ["prod"]}}]}})["spec"]}}}
    px.ok(px.alice, "create", "-f", "-", input=json.dumps(body))
    apps = k8s.AppsV1Api(px.cluster.client("admin"))
    term = apps.read_namespaced_deployment("spread", f"{px.a}-dev").spec.template.spec.affinity \
        .pod_anti_affinity.preferred_during_scheduling_ignored_during_execution[0]
    assert term.pod_affinity_term.namespaces == [f"{px.a}-prod"]
    # JSON patches: values converted where they go; inside a selector, applied in the view
    at = ("/spec/template/spec/affinity/podAntiAffinity/"
          "preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm")
    px.ok(px.alice, "patch", "deployment", "spread", "-n", "dev", "--type", "json", "-p",
          json.dumps([{"op": "add", "path": at + "/namespaces/-", "value": "dev"},
                      {"op": "add", "path": at + "/namespaceSelector",
                       "value": {"matchLabels": {"kubernetes.io/metadata.name": "dev"}}}]))
    term = apps.read_namespaced_deployment("spread", f"{px.a}-dev").spec.template.spec.affinity \
        .pod_anti_affinity.preferred_during_scheduling_ignored_during_execution[0] \
        .pod_affinity_term
    assert term.namespaces == [f"{px.a}-prod", f"{px.a}-dev"]
    assert term.namespace_selector.match_labels == {"kubernetes.io/metadata.name": f"{px.a}-dev"}
    r = px.kubectl(px.alice, "patch", "deployment", "spread", "-n", "dev", "--type", "json", "-p",
                   json.dumps([{"op": "remove", "path": at + "/namespaceSelector/matchLabels/"
                                                       "kubernetes.io~1metadata.name"}]))
    assert r.returncode != 0 and "namespaceSelector" in r.stderr, r.stderr


def test_namespace_label_and_field_selectors_use_shown_names(px):
    def names(*args):
        return sorted(px.ok(px.alice, "get", "namespaces", "-o", "name", *args).split())

    assert names("-l", "kubernetes.io/metadata.name=dev") == ["namespace/dev"]
    assert names("-l", "kubernetes.io/metadata.name in (dev,prod)") == [
        "namespace/dev", "namespace/prod"]
    others = names("-l", "kubernetes.io/metadata.name!=dev")
    assert "namespace/prod" in others and "namespace/dev" not in others
    assert names("-l", f"kubernetes.io/metadata.name={px.g}-dev") == []
    assert names("-l", f"kubernetes.io/metadata.name={px.a}-dev") == []
    assert names("--field-selector", "metadata.name=prod") == ["namespace/prod"]
    # the tenant's own label selector holds whatever the query says (Go decodes names too)
    base = f"/tenants/{px.a}/api/v1/namespaces"
    for query in ("label%53elector=", "labelSelector=&labelSelector=x", "labelSelector",
                  "labelSelector=%zz"):
        r = px.kubectl(px.alice, "get", "--raw", f"{base}?{query}")
        if r.returncode != 0:  # a selector Go would drop is refused (400)
            assert "BadRequest" in r.stderr or "400" in r.stderr, (query, r.stderr)
            continue
        listed = json.loads(r.stdout)
        assert {i["metadata"]["name"] for i in listed["items"]} <= {
            "dev", "prod", "fresh", "typedns"}, query


def test_event_field_selectors_use_shown_names(px):
    event = {"metadata": {"name": "hello", "namespace": f"{px.a}-dev"},
             "involvedObject": {"kind": "ConfigMap", "name": "same", "namespace": f"{px.a}-dev"},
             "reason": "Checked", "message": "hello", "type": "Normal"}
    admin_core(px).create_namespaced_event(f"{px.a}-dev", event)
    out = json.loads(px.ok(px.alice, "get", "events", "-n", "dev", "-o", "json",
                           "--field-selector", "involvedObject.namespace=dev"))
    mine = [e for e in out["items"] if e["metadata"]["name"] == "hello"]
    assert mine and mine[0]["involvedObject"]["namespace"] == "dev"
    for other in ("prod", f"{px.g}-dev", f"{px.a}-dev"):
        out = json.loads(px.ok(px.alice, "get", "events", "-n", "dev", "-o", "json",
                               "--field-selector", f"involvedObject.namespace={other}"))
        assert out["items"] == [], other
    out = json.loads(px.ok(px.alice, "get", "events", "-A", "-o", "json",
                           "--field-selector", "metadata.namespace=dev"))
    assert any(e["metadata"]["name"] == "hello" for e in out["items"])
    assert {e["metadata"]["namespace"] for e in out["items"]} == {"dev"}


def test_pods_cannot_be_bound_to_nodes(px):
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "near"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "stub-node"}}
    path = px.tmp / "binding.json"
    path.write_text(json.dumps(binding))
    base = f"/tenants/{px.a}/api/v1/namespaces/dev"
    for url in (f"{base}/pods/near/binding", f"{base}/bindings"):
        r = px.kubectl(px.alice, "create", "--raw", url, "-f", str(path))
        assert r.returncode != 0 and "Forbidden" in r.stderr, (url, r.stderr)


def test_a_claim_names_only_a_volume_pre_bound_to_it(px):
    core = admin_core(px)

    def volume(name, claim_ref=None):
        core.create_persistent_volume({
            "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/tmp/{name}"}, "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", "claimRef": claim_ref}})

    def claim(name, volume_name):
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "dev"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                         "volumeName": volume_name,
                         "resources": {"requests": {"storage": "1Gi"}}}}

    free, other, mine = f"{px.a}-pv-free", f"{px.a}-pv-other", f"{px.a}-pv-mine"
    try:
        volume(free)
        volume(other, {"namespace": f"{px.g}-dev", "name": "data"})
        volume(mine, {"namespace": f"{px.a}-dev", "name": "data"})
        for name in (free, other, f"{px.a}-pv-none"):
            r = px.kubectl(px.alice, "create", "-f", "-", input=json.dumps(claim("data", name)))
            assert r.returncode != 0 and "spec.volumeName" in r.stderr, (name, r.stderr)
        px.ok(px.alice, "create", "-f", "-", input=json.dumps(claim("data", mine)))
        assert core.read_namespaced_persistent_volume_claim(
            "data", f"{px.a}-dev").spec.volume_name == mine
    finally:
        for name in (free, other, mine):
            try:
                core.delete_persistent_volume(name)
            except ApiException:
                pass
