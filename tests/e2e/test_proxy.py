"""The tenant API proxy (docs/proxy.md), end to end: real kubectl through `landlord run`'s proxy,
with kubeconfigs from `landlord kubeconfig`, for two tenants that use the same namespace names.

Tenant A (owner alice) has namespaces dev and prod; tenant G (owner carol) has dev. Each user
works in its own view under short names; every way into the other tenant's namespaces fails.
"""

import json
import subprocess

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

import procs
import tenants
from procs import LANDLORD

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
    px.ok(px.alice, "patch", "configmap", "same", "-n", "dev", "--type", "merge",
          "-p", json.dumps({"data": {"target": f"{px.g}-dev"}}))
    r = px.kubectl(px.alice, "patch", "configmap", "same", "-n", "dev", "--type", "json",
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
