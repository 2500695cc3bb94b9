"""Self-service namespaces through the webhook (issue 12, point 6), on the real API server with
landlord's webhook registered: owners hold `create` on namespaces through landlord's ClusterRole
landlord:tenant:<t>:owners (no test grant here), `kubectl create namespace <t>-<name>` by an
owner is labelled for the tenant by the mutating webhook and provisioned, every other attempt is
refused with its reason, owners delete only their tenant's namespaces, and the Plan's
maxNamespaces holds when many creates race, within one replica and across two.
"""

import base64
import json
import ssl
import threading
import urllib.request
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from procs import start_landlord
from tenants import TENANT_LABEL

NS = "landlord-system"
WEBHOOK = 'admission webhook "namespaces.landlord.dev" denied the request'
RESERVATIONS = "landlord-reservations."


@pytest.fixture
def owned(kit):
    """acme-like tenant t (owners alice and group team-b, editor bob, spec namespace t-dev) and
    tenant other (owner erin, spec namespace other-web), both on a plan of 4 namespaces."""
    plan = kit.plan(hard={"pods": "4"}, maxNamespaces=4)
    t = kit.tenant(plan=plan, owners={"users": ["alice"], "groups": ["team-b"]},
                   editors={"users": ["bob"]}, prefixed=["dev"])
    other = kit.tenant(plan=plan, owners={"users": ["erin"]}, prefixed=["web"])
    kit.expect_namespace(f"{t}-dev")
    kit.expect_namespace(f"{other}-web")
    kit.start()
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_ready(other, [f"{other}-web"])
    for user in ("alice", "carol"):  # RBAC reaches the authorizer's cache asynchronously
        kit.wait_can_i(user, "create", "namespaces", None)
    yield t, other


def create(kit, user, name, labels=None, api=None):
    kit.expect_namespace(name)
    meta = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return (api or k8s.CoreV1Api(kit.client(user))).create_namespace({"metadata": meta})


def refusal(kit, user, name, labels=None):
    with pytest.raises(ApiException) as e:
        create(kit, user, name, labels)
    assert e.value.status == 403, e.value.body
    assert kit.read_namespace(name) is None
    return json.loads(e.value.body)["message"]


def test_an_owner_creates_a_namespace_by_name_and_landlord_labels_and_provisions_it(kit, owned):
    t, _ = owned
    r = kit.cluster.kubectl("alice", "create", "namespace", f"{t}-feature")
    kit.expect_namespace(f"{t}-feature")
    assert r.returncode == 0, r.stderr
    create(kit, "carol", f"{t}-team")  # an owner through group team-b; no labels at all
    for name in (f"{t}-feature", f"{t}-team"):
        assert kit.labels(name)[TENANT_LABEL] == t  # set by the mutating webhook
        kit.wait_provisioned(name, t)
    kit.wait_tenant(t, lambda o: sorted(o["status"].get("adopted") or []) ==
                    sorted([f"{t}-feature", f"{t}-team"]), "status.adopted lists both")
    assert kit.can_i("alice", "create", "configmaps", f"{t}-team")


def test_every_other_namespace_create_is_refused_with_its_reason(kit, owned):
    t, other = owned
    # an editor holds no create right at all: RBAC refuses before any webhook
    body = refusal(kit, "bob", f"{t}-by-editor")
    assert 'cannot create resource "namespaces"' in body, body
    body = refusal(kit, "alice", kit.name("unrelated"))
    assert WEBHOOK in body and "belongs to no tenant you own" in body, body
    body = refusal(kit, "alice", f"{other}-mine")
    assert f'the prefix belongs to tenant "{other}"' in body, body
    body = refusal(kit, "alice", f"{other}-mine", {TENANT_LABEL: other})
    assert f'only owners of tenant "{other}" may create its namespaces' in body, body
    body = refusal(kit, "alice", kit.name("zz"), {TENANT_LABEL: t})
    assert f'must be named "{t}-<name>"' in body, body
    body = refusal(kit, "alice", f"{t}-ghost", {TENANT_LABEL: "no-such-tenant"})
    assert 'tenant "no-such-tenant"' in body and "does not exist" in body, body
    # positive control: the same owner, her own tenant's prefix
    assert create(kit, "alice", f"{t}-ok").metadata.labels[TENANT_LABEL] == t


def test_owners_delete_only_their_tenants_namespaces(kit, owned):
    t, other = owned
    create(kit, "alice", f"{t}-gone")
    kit.wait_can_i("alice", "delete", f"namespaces/{t}-gone", None)  # the role follows
    assert not kit.can_i("alice", "delete", f"namespaces/{other}-web")
    assert not kit.can_i("bob", "delete", f"namespaces/{t}-gone")  # an editor
    with pytest.raises(ApiException) as e:
        k8s.CoreV1Api(kit.client("alice")).delete_namespace(f"{other}-web")
    assert e.value.status == 403
    k8s.CoreV1Api(kit.client("alice")).delete_namespace(f"{t}-gone")
    kit.cluster.wait_for(lambda: kit.read_namespace(f"{t}-gone") is None, 120,
                         what=f"{t}-gone deleted")


def race(kit, names, attempt):
    """attempt(name) from one thread per name, all released at once: {name: None or error}."""
    out, gate = {}, threading.Barrier(len(names))

    def run(name):
        gate.wait()
        try:
            attempt(name)
            out[name] = None
        except Exception as e:  # noqa: BLE001 - the outcome is what is asserted
            out[name] = e
    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    return out


def test_max_namespaces_holds_under_20_concurrent_creates(kit, owned):
    t, _ = owned
    names = [f"{t}-c{i}" for i in range(20)]
    for n in names:
        kit.expect_namespace(n)

    def attempt(name):
        api = k8s.CoreV1Api(kit.fresh_client("alice"))
        api.create_namespace({"metadata": {"name": name}})
    out = race(kit, names, attempt)
    won = sorted(n for n, e in out.items() if e is None)
    assert len(won) == 3, out  # t-dev and three more make the plan's 4
    for n, e in out.items():
        if e is not None:
            assert isinstance(e, ApiException) and e.status == 403, e
            assert "maxNamespaces 4" in e.body, e.body
    assert kit.tenant_namespaces(t) == sorted([f"{t}-dev", *won])
    # the slots are released once the namespaces exist; a deleted one frees its place
    kit.cluster.wait_for(lambda: reservations(kit, t) is None, 60,
                         what="the reservations released")
    k8s.CoreV1Api(kit.client("alice")).delete_namespace(won[0])
    kit.cluster.wait_for(lambda: kit.read_namespace(won[0]) is None, 120,
                         what=f"{won[0]} deleted")
    create(kit, "alice", f"{t}-after")
    assert refusal(kit, "alice", f"{t}-over").count("maxNamespaces 4") == 1


def reservations(kit, tenant):
    try:
        cm = kit.core.read_namespaced_config_map(RESERVATIONS + tenant, NS)
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    return cm.data or {}


def review(name, tenant, user):
    labels = {TENANT_LABEL: tenant} if tenant else {}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "operation": "CREATE", "name": name, "namespace": name,
        "kind": {"group": "", "version": "v1", "kind": "Namespace"},
        "resource": {"group": "", "version": "v1", "resource": "namespaces"},
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": name, "labels": labels}}}}


def test_max_namespaces_holds_across_two_replicas(kit, owned, tmp_path):
    """Twenty reviews at once, alternately to two replicas with their own caches and no shared
    state but the API server: exactly the free slots are admitted."""
    t, _ = owned
    second = start_landlord(kit.cluster, tmp_path, "webhook", "--no-webhook-url",
                            name="second-replica")
    try:
        second.wait_probe()
        ports = [kit.landlord.wait_record("webhook listening")["port"],
                 second.wait_record("webhook listening")["port"]]
        secret = kit.core.read_namespaced_secret("landlord-webhook-tls", NS)
        ctx = ssl.create_default_context(
            cadata=base64.b64decode(secret.data["ca-bundle.crt"]).decode())
        ctx.check_hostname = False  # the certificate names the Service and the loopback URL
        # a namespace of no tenant by an outsider: admitted once the caches are loaded (503
        # until then), and it takes no slot
        probe = review(kit.name("probe"), None, "frank")
        kit.cluster.wait_for(lambda: post(ctx, ports[1], probe)["response"]["allowed"], 60,
                             what="the second replica's caches loaded")
        names = [f"{t}-r{i}" for i in range(20)]
        answers = {}

        def attempt(name):
            answers[name] = post(ctx, ports[names.index(name) % 2], review(name, t, "alice"))
        assert all(e is None for e in race(kit, names, attempt).values())
        allowed = sorted(n for n, a in answers.items() if a["response"]["allowed"])
        assert len(allowed) == 3, answers  # t-dev and three more make the plan's 4
        for n, a in answers.items():
            if n not in allowed:
                assert "maxNamespaces 4" in a["response"]["status"]["message"], a
        assert set(allowed) <= set(reservations(kit, t))
        for proc in (kit.landlord, second):  # each replica answered its ten
            assert proc.metric("landlord_admission_requests_total", webhook="validate") >= 10
    finally:
        second.stop()


def post(ctx, port, body):
    req = urllib.request.Request(f"https://127.0.0.1:{port}/validate",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return json.loads(r.read())
