"""Isolation between tenants (docs/tenants.md): Pod Security levels on tenant namespaces, and the
NetworkPolicy landlord-isolation.

There is no kubelet and no network plugin in the test cluster, so traffic cannot be sent. The
NetworkPolicies landlord wrote are read back from the API server and evaluated with a small
implementation of Kubernetes' ingress semantics (below, with its own checks on hand-built
policies) for every pair of pods across two isolated tenants, a tenant without isolation,
privileged namespaces and an unrelated namespace.
"""

import pytest
from kubernetes import client as k8s

import tenants
from kube import forbidden
from tenants import MANAGED_BY, TENANT_LABEL, ignore_404

LIMITS = [{"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}}]
PORT = ("TCP", 8080)


# ---------- a NetworkPolicy ingress evaluator ----------

def selector_matches(sel, labels):
    """A LabelSelector (dict, JSON field names) against a label map. {} matches everything."""
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown operator {op}")
    return True


def policy_types(spec):
    if spec.get("policyTypes"):
        return spec["policyTypes"]
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def peer_admits(peer, policy_ns, src):
    """One NetworkPolicyPeer against a source pod. ipBlock peers never match a pod here (pods
    have no IPs without a kubelet; landlord does not use them)."""
    if "ipBlock" in peer and peer["ipBlock"] is not None:
        return False
    pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
    if pod_sel is None and ns_sel is None:
        raise ValueError("a peer needs podSelector, namespaceSelector or ipBlock")
    if ns_sel is None:
        ns_ok = src["namespace"] == policy_ns
    else:
        ns_ok = selector_matches(ns_sel, src["namespaceLabels"])
    pod_ok = pod_sel is None or selector_matches(pod_sel, src["labels"])
    return ns_ok and pod_ok


def port_matches(np_port, dst, port):
    protocol, number = port
    if (np_port.get("protocol") or "TCP") != protocol:
        return False
    want = np_port.get("port")
    if want is None:
        return True
    if isinstance(want, str):
        named = {p["name"]: p["containerPort"] for p in dst.get("ports") or [] if p.get("name")}
        return named.get(want) == number
    end = np_port.get("endPort")
    return want == number if end is None else want <= number <= end


def rule_admits(rule, policy_ns, src, dst, port):
    ports = rule.get("ports") or []
    if ports and not any(port_matches(p, dst, port) for p in ports):
        return False
    peers = rule.get("from") or []
    return not peers or any(peer_admits(p, policy_ns, src) for p in peers)


def ingress_allowed(policies, src, dst, port=PORT):
    """Is a connection from pod src to pod dst on port allowed for ingress? Pods are dicts with
    namespace, namespaceLabels, labels and ports; policies are NetworkPolicy dicts. A pod is
    isolated for ingress when any policy in its namespace selects it with policyType Ingress;
    then the connection is allowed if any ingress rule of any of those policies admits it."""
    selecting = [p for p in policies
                 if p["metadata"]["namespace"] == dst["namespace"]
                 and "Ingress" in policy_types(p["spec"])
                 and selector_matches(p["spec"].get("podSelector") or {}, dst["labels"])]
    if not selecting:
        return True
    return any(rule_admits(r, p["metadata"]["namespace"], src, dst, port)
               for p in selecting for r in p["spec"].get("ingress") or [])


# ---------- checks of the evaluator itself ----------

def _pod(ns, labels=None, ns_labels=None, ports=None):
    return {"namespace": ns, "labels": labels or {}, "namespaceLabels": ns_labels or {},
            "ports": ports or [{"name": "http", "containerPort": 8080}]}


def _policy(ns, spec):
    return {"metadata": {"namespace": ns, "name": "p"}, "spec": spec}


def test_evaluator_on_hand_built_policies():
    a_web = _pod("a", {"app": "web"}, {"team": "a"})
    a_db = _pod("a", {"app": "db"}, {"team": "a"})
    b_web = _pod("b", {"app": "web"}, {"team": "b", "env": "prod"})
    c_web = _pod("c", {"app": "web"}, {"env": "dev"})
    deny_all = _policy("a", {"podSelector": {}, "policyTypes": ["Ingress"]})
    allow_all = _policy("a", {"podSelector": {}, "ingress": [{}]})
    same_ns = _policy("a", {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})
    team_a = _policy("a", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]})
    db_only = _policy("a", {"podSelector": {"matchLabels": {"app": "db"}},
                            "policyTypes": ["Ingress"]})
    egress_only = _policy("a", {"podSelector": {}, "policyTypes": ["Egress"]})
    by_name = _policy("a", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}]}]})
    not_dev = _policy("a", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}}]}]})
    has_env = _policy("a", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchExpressions": [{"key": "env", "operator": "Exists"}]}}]}]})
    no_env = _policy("a", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}}]}]})
    # AND in one peer versus OR across two peers.
    and_peer = _policy("a", {"podSelector": {}, "ingress": [{"from": [{
        "namespaceSelector": {"matchLabels": {"team": "b"}},
        "podSelector": {"matchLabels": {"app": "db"}}}]}]})
    or_peers = _policy("a", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "b"}}},
        {"podSelector": {"matchLabels": {"app": "db"}}}]}]})
    port_9090 = _policy("a", {"podSelector": {}, "ingress": [{"ports": [{"port": 9090}]}]})
    port_range = _policy("a", {"podSelector": {}, "ingress": [{"ports": [
        {"port": 8000, "endPort": 8100}]}]})
    named = _policy("a", {"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]})
    udp = _policy("a", {"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP"}]}]})
    ipblock = _policy("a", {"podSelector": {}, "ingress": [{"from": [
        {"ipBlock": {"cidr": "0.0.0.0/0"}}]}]})

    cases = [
        ([], b_web, a_web, True),
        ([deny_all], a_db, a_web, False),
        ([deny_all], b_web, a_web, False),
        ([allow_all], c_web, a_web, True),
        ([deny_all, allow_all], c_web, a_web, True),  # policies only ever add
        ([same_ns], a_db, a_web, True),
        ([same_ns], b_web, a_web, False),
        ([team_a], a_db, a_web, True),
        ([team_a], b_web, a_web, False),
        ([db_only], b_web, a_web, True),   # web is not selected, so not isolated
        ([db_only], a_web, a_db, False),
        ([egress_only], b_web, a_web, True),
        ([deny_all], a_web, b_web, True),  # policies in a do not isolate pods in b
        ([by_name], b_web, a_web, True),
        ([by_name], c_web, a_web, False),
        ([not_dev], b_web, a_web, True),
        ([not_dev], c_web, a_web, False),
        ([not_dev], a_db, a_web, True),    # no env label: NotIn holds
        ([has_env], c_web, a_web, True),
        ([has_env], a_db, a_web, False),
        ([no_env], a_db, a_web, True),
        ([no_env], b_web, a_web, False),
        ([and_peer], b_web, a_web, False),
        ([and_peer], _pod("b", {"app": "db"}, {"team": "b"}), a_web, True),
        ([and_peer], a_db, a_web, False),
        ([or_peers], b_web, a_web, True),
        ([or_peers], a_db, a_web, True),
        ([or_peers], c_web, a_web, False),
        ([port_9090], a_db, a_web, False),
        ([port_range], c_web, a_web, True),
        ([named], c_web, a_web, True),
        ([named], c_web, _pod("a", {"app": "web"}, ports=[{"name": "grpc",
                                                          "containerPort": 8080}]), False),
        ([udp], a_db, a_web, False),
        ([ipblock], c_web, a_web, False),
    ]
    wrong = [(i, want) for i, (pols, src, dst, want) in enumerate(cases)
             if ingress_allowed(pols, src, dst) != want]
    assert not wrong, wrong
    assert ingress_allowed([port_9090], a_db, a_web, ("TCP", 9090))
    assert ingress_allowed([udp], a_db, a_web, ("UDP", 53))
    with pytest.raises(ValueError):
        selector_matches({"matchExpressions": [{"key": "k", "operator": "Gt"}]}, {"k": "1"})


# ---------- fixtures ----------

@pytest.fixture
def privileged_namespaces(kit):
    """LandlordConfig "landlord" (a singleton) with privileged namespaces, restored afterwards.
    Yields a predicate: the configuration is accepted and in force."""
    with kit.landlord_config({"privileged": {"namespaces": [
            "kube-.*", "monitoring", f"netpriv-{kit.id}"]}}) as accepted:
        yield accepted


# ---------- Pod Security ----------

def baseline_pod(name):
    """Admitted by baseline, not by restricted (no securityContext at all)."""
    body = tenants.restricted_pod(name)
    body["spec"]["securityContext"] = {}
    body["spec"]["containers"][0]["securityContext"] = {}
    return body


def test_pod_security_levels(kit):
    plan = kit.plan(hard={"pods": "20"}, limits=LIMITS)
    strict = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"])
    loose = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev"],
                       podSecurity="baseline")
    s_ns, l_ns = kit.expect_namespace(f"{strict}-dev"), kit.expect_namespace(f"{loose}-dev")
    kit.start()
    kit.wait_ready(strict, [s_ns])
    kit.wait_ready(loose, [l_ns])
    for ns, level in ((s_ns, "restricted"), (l_ns, "baseline")):
        kit.wait_provisioned(ns, kit.labels(ns).get(TENANT_LABEL))
        labels = kit.labels(ns)
        for mode in ("enforce", "warn", "audit"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == level, labels
        kit.wait_default_sa(ns)
        kit.wait_can_i("alice", "create", "pods", ns)
    alice = k8s.CoreV1Api(kit.client("alice"))

    def rejected(ns, body):
        msg = forbidden(alice.create_namespaced_pod, ns, body)
        assert "violates PodSecurity" in msg, msg
        return msg

    assert '"restricted:' in rejected(s_ns, tenants.privileged_pod("priv"))
    rejected(s_ns, baseline_pod("base"))
    alice.create_namespaced_pod(s_ns, tenants.restricted_pod("ok"))
    assert '"baseline:' in rejected(l_ns, tenants.privileged_pod("priv"))
    alice.create_namespaced_pod(l_ns, baseline_pod("base"))
    alice.create_namespaced_pod(l_ns, tenants.restricted_pod("ok"))
    # No kubelet: admitted pods stay Pending, which is all this needs.
    assert alice.read_namespaced_pod("ok", s_ns).status.phase == "Pending"


# ---------- NetworkPolicy ----------

def snapshot(kit, pod_label):
    """Pods (with this test's label), namespaces and NetworkPolicies as the API has them."""
    ser = kit.admin.sanitize_for_serialization
    ns_labels = {n.metadata.name: n.metadata.labels or {}
                 for n in kit.core.list_namespace().items}
    pods = []
    for p in kit.core.list_pod_for_all_namespaces(label_selector=pod_label).items:
        ports = [ser(port) for c in p.spec.containers for port in (c.ports or [])]
        pods.append({"name": f"{p.metadata.namespace}/{p.metadata.name}",
                     "namespace": p.metadata.namespace, "labels": p.metadata.labels or {},
                     "namespaceLabels": ns_labels[p.metadata.namespace], "ports": ports})
    policies = [ser(p) for p in kit.net.list_network_policy_for_all_namespaces().items]
    return pods, policies


def test_network_isolation_between_tenants(kit, privileged_namespaces):
    plan = kit.plan(hard={"pods": "20"}, limits=LIMITS)
    a = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["one", "two"])
    b = kit.tenant(plan=plan, owners={"users": ["erin"]}, prefixed=["one"])
    c = kit.tenant(plan=plan, owners={"users": ["frank"]}, prefixed=["open"],
                   networkIsolation=False)
    a1, a2 = kit.expect_namespace(f"{a}-one"), kit.expect_namespace(f"{a}-two")
    b1, c1 = kit.expect_namespace(f"{b}-one"), kit.expect_namespace(f"{c}-open")
    plain = kit.namespace(kit.name("plain"))
    own_monitoring = kit.read_namespace("monitoring") is None
    if own_monitoring:
        kit.namespace("monitoring")
    kit.start()
    kit.cluster.wait_for(privileged_namespaces, 60, what="the LandlordConfig to be accepted")
    for t, nss in ((a, [a1, a2]), (b, [b1]), (c, [c1])):
        kit.wait_ready(t, nss)
        for ns in nss:
            kit.wait_provisioned(ns, t)

    tenant_of = {a1: a, a2: a, b1: b, c1: c}
    privileged = {"kube-system", "monitoring"}
    label = f"e2e-netpol={kit.id}"
    placed = []

    def place(ns, name, app):
        kit.wait_default_sa(ns)
        body = tenants.restricted_pod(name, {"e2e-netpol": kit.id, "app": app})
        kit.core.create_namespaced_pod(ns, body)
        placed.append((ns, name))

    try:
        for ns in (a1, a2, b1, c1, plain, *sorted(privileged)):
            place(ns, f"web-{kit.id}", "web")
        place(a1, f"db-{kit.id}", "db")

        for ns in (a1, a2, b1):
            np = kit.net.read_namespaced_network_policy("landlord-isolation", ns)
            assert np.metadata.labels[MANAGED_BY] == "landlord"
            assert np.metadata.labels[TENANT_LABEL] == tenant_of[ns]
        assert ignore_404(kit.net.read_namespaced_network_policy, "landlord-isolation",
                          c1) is None, "networkIsolation: false still got landlord-isolation"

        def expected(src, dst):
            d_ns, s_ns = dst["namespace"], src["namespace"]
            if d_ns not in (a1, a2, b1):
                return True   # not isolated: no isolation asked for, or not a tenant's
            return tenant_of.get(s_ns) == tenant_of[d_ns] or s_ns in privileged

        def wrong_pairs():
            pods, policies = snapshot(kit, label)
            assert len(pods) == len(placed), [p["name"] for p in pods]
            return [(s["name"], d["name"], ingress_allowed(policies, s, d))
                    for s in pods for d in pods
                    if ingress_allowed(policies, s, d) != expected(s, d)]
        last = {}

        def all_right():
            last["wrong"] = wrong_pairs()
            return not last["wrong"]
        # The configuration is in force; landlord may still be reconciling with it.
        try:
            kit.cluster.wait_for(all_right, 30, interval=0.3, what="the expected matrix")
        except pytest.fail.Exception:
            pytest.fail(f"(source, destination, evaluated as allowed): {last['wrong']}")

        # A privileged namespace that appears later is added to the list, and removed again
        # when it goes.
        late = kit.namespace(f"netpriv-{kit.id}")
        privileged.add(late)
        place(late, f"web-{kit.id}", "web")
        try:
            kit.cluster.wait_for(all_right, 30, interval=0.3,
                                 what=f"{late} admitted into isolated tenants")
        except pytest.fail.Exception:
            pytest.fail(f"still wrong after {late} was created: {last['wrong']}")
        kit.core.delete_namespace(late)
        placed.remove((late, f"web-{kit.id}"))

        def late_forgotten():
            return all(late not in str(kit.net.read_namespaced_network_policy(
                "landlord-isolation", ns).spec.to_dict()) for ns in (a1, a2, b1))
        kit.cluster.wait_for(lambda: kit.read_namespace(late) is None, 60,
                             what=f"{late} deleted")
        kit.cluster.wait_for(late_forgotten, 30, interval=0.3,
                             what=f"{late} removed from landlord-isolation")
        wrong = wrong_pairs()
        assert not wrong, wrong
    finally:
        for ns, name in placed:
            if ns in privileged:
                ignore_404(kit.core.delete_namespaced_pod, name, ns)
