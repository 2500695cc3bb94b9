"""A TemplateInstance, and a TemplateGroupInstance, applied by a landlord killed right after its
Nth API write, for every N, converge after a restart to the uninterrupted end state (issue 13,
crash loop).

--test-crash-after-writes N makes landlord exit (86, no cleanup) just after its Nth successful
write; dry runs write nothing and do not count. The crashing landlord registers no webhook
(that would be its first writes) and is the only one running; each instance is deleted (and
cleaned, its finalizer dropped) by the restarted landlord before the next N, so that the only
writes a crashing landlord has to make are those of the one new instance's apply.

The uninterrupted apply of a reference instance, by a landlord logging its API requests (--v 4),
gives the sequence of writes; each crash N must hit its Nth write (the one the hook logs), so
N = 1..8 covers the first eight of them:
- TemplateInstance (one Template of a Secret, a ConfigMap and a Service, in one namespace): 8
  writes, finalizer, the apply account, its RoleBinding, status.kinds, the three objects,
  status: a crash right after every one of them.
- TemplateGroupInstance (the same Template, a tenant's two namespaces): 9 writes, finalizer,
  status.kinds, the three objects in the first namespace, the three in the second, status: a
  crash after each of the first 8; the 9th, the status write, is the last thing the apply does
  (nothing is left to converge after it).
"""
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import GROUP, MANAGED_BY, VERSION, condition_of, message
from procs import start_controllers

CRASH_EXIT = 86
CRASH_POINTS = 8  # issue 13: N = 1..8
TIMEOUT = 60
HOOK = "test hook: exiting right after a write"
SYSTEM = "landlord-system"


def manifests():
    """Named after the instance (parameter ID), so that instances never share an object."""
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${{ID}}-settings"},
         "data": {"where": "${namespace}"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "${{ID}}-token"},
         "stringData": {"t": "x"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "${{ID}}-web"},
         "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}},
    ]


def create_template(kit, created):
    """The Template of both loops: parameter ID names the objects."""
    tmpl = kit.name("tpl")
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": tmpl},
            "spec": {"instantiableIn": {"matchExpressions": [
                {"key": "landlord.dev/tenant", "operator": "Exists"}]},
                "parameters": [{"name": "ID", "required": True, "validation": "^[a-z0-9]+$"}],
                "resources": {"manifests": manifests()}}}

    def create():  # the webhook answers 503 while landlord's caches load
        try:
            return kit.custom.create_cluster_custom_object(GROUP, VERSION, "templates", body)
        except ApiException as e:
            if e.status != 503:
                raise
            return None
    kit.cluster.wait_for(create, TIMEOUT, what=f"Template {tmpl} admitted")
    created.append(("templates", tmpl))
    return tmpl


def objects_in(kit, ns, sel, name):
    """What an instance applied in @ns (selected by its label @sel), its name abstracted."""
    core, cms = kit.core, kit.core.list_namespaced_config_map(ns, label_selector=sel).items

    def short(o, what):
        return (o.metadata.name.replace(name, "ID", 1), what,
                (o.metadata.labels or {}).get(MANAGED_BY))
    return {
        "configmaps": sorted(short(c, tuple(sorted((c.data or {}).items())))
                             for c in cms),
        "secrets": sorted(short(s, tuple(sorted((s.data or {}).items())))
                          for s in core.list_namespaced_secret(ns, label_selector=sel).items),
        "services": sorted(short(s, tuple(p.port for p in s.spec.ports))
                           for s in core.list_namespaced_service(ns, label_selector=sel).items),
    }


def conditions(obj):
    return {c["type"]: (c["status"], c["reason"])
            for c in (obj.get("status") or {}).get("conditions") or []}


def apply_writes(proc, since, mine):
    """The writes of one apply that landlord @proc made after its first @since log records, in
    order, from its request log (--v 4): 2xx POST, PUT and PATCH that are not dry runs and whose
    path is @mine (not, say, a Plan's status, which the Plan controller rewrites when it will),
    up to the first DELETE (the instance's deletion, asked for once it was ready)."""
    out = []
    for r in proc.records()[since:]:
        if r.get("msg") != "api request" or r.get("method") in ("GET", "HEAD"):
            continue
        path = r.get("path", "")
        if not 200 <= int(r.get("status", 0)) <= 299 or "dryRun=" in path or not mine(path):
            continue
        if r["method"] == "DELETE":
            break
        out.append((r["method"], path))
    return out


def crash_write(proc):
    """The write after which the test hook made @proc exit, as (method, path); None if none."""
    found = proc.find(HOOK)
    return (found[0]["method"], found[0]["path"]) if found else None


def abstract(write, name, namespaces):
    """A write with the instance's name and the namespaces' names abstracted: writes of two
    instances compare equal when they write the same thing."""
    method, path = write
    path = path.replace(name, "ID")
    for ns in sorted(namespaces, key=len, reverse=True):
        path = path.replace(ns, "NS")
    return method, path


def leftovers(kit):
    """What other tests left that a fresh landlord would write about: instances, apply
    accounts, Tenants being deleted, roles of Tenants gone. The running landlord clears them
    (finalizers, accounts of namespaces gone, orphaned roles) as their namespaces finish
    terminating."""
    api = kit.custom
    tenants = api.list_cluster_custom_object(GROUP, VERSION, "tenants")["items"]
    names = {t["metadata"]["name"] for t in tenants}
    return {
        "templateinstances": [
            f'{i["metadata"]["namespace"]}/{i["metadata"]["name"]}'
            for i in api.list_cluster_custom_object(GROUP, VERSION, "templateinstances")["items"]],
        "templategroupinstances": [
            i["metadata"]["name"]
            for i in api.list_cluster_custom_object(GROUP, VERSION,
                                                    "templategroupinstances")["items"]],
        "apply accounts": [sa.metadata.name for sa in kit.core.list_namespaced_service_account(
            SYSTEM, label_selector="landlord.dev/ti-account").items],
        "tenants being deleted": [
            t["metadata"]["name"] for t in tenants if t["metadata"].get("deletionTimestamp")],
        # landlord:tenant:<tenant>[:<role>] of a Tenant gone (its finalizer removed by hand)
        "roles of tenants gone": [
            o.metadata.name for o in [
                *kit.rbac.list_cluster_role(label_selector=f"{MANAGED_BY}=landlord").items,
                *kit.rbac.list_cluster_role_binding(label_selector=f"{MANAGED_BY}=landlord").items]
            if o.metadata.name.startswith("landlord:tenant:") and
            o.metadata.name.split(":")[2] not in names],
    }


def wait_quiet(kit, plan, tenant):
    """Before the reference: the cluster holds nothing for a fresh landlord to write but what
    the crash loop creates (a crashing landlord's Nth write must be the instance's)."""
    kit.wait_settled(plan, tenant)
    last = {}

    def quiet():
        last["left"] = {k: v for k, v in leftovers(kit).items() if v}
        return not last["left"]
    try:
        kit.cluster.wait_for(quiet, TIMEOUT, interval=0.2, what="other tests' leftovers gone")
    except pytest.fail.Exception:
        pytest.fail(f"other tests left, for {TIMEOUT}s: {last['left']}")


def crash_loop(kit, tmp_path, what, create, ready, end_state, delete, reference):
    """For N = 1..8: create(N) makes instance N (a name), a landlord with
    --test-crash-after-writes N runs until it exits 86 (or the instance is ready: then it must
    not have had N writes to make), a normal landlord runs until ready(name), end_state(name)
    must equal reference["state"], the crash must have come right after the Nth write of
    reference["writes"] (abstracted by reference["abstract"]), and delete(name) must clean
    the instance while that landlord runs."""
    want, writes, norm = reference["state"], reference["writes"], reference["abstract"]
    for n in range(1, CRASH_POINTS + 1):
        name = create(n)
        crashing = start_controllers(kit.cluster, tmp_path, "--no-webhook-url",
                                     "--test-crash-after-writes", str(n),
                                     name=f"{what}-crash-{n}", wait=False)
        kit.cluster.wait_for(lambda: crashing.popen.poll() is not None or ready(name),
                             TIMEOUT, what=f"{what} N={n}: a crash or convergence")
        code = crashing.popen.poll()
        converged = code is None
        if converged:
            code = crashing.stop()
        assert code in ((0, CRASH_EXIT) if converged else (CRASH_EXIT,)), \
            f"{what} N={n}: exit {code}\n{crashing.log_path.read_text()[-3000:]}"
        hit = crash_write(crashing)
        if n <= len(writes):
            # an apply of more than N writes: the hook fired, right after the Nth of them
            assert code == CRASH_EXIT and hit, f"{what} N={n}: no crash"
            assert norm(hit, name) == writes[n - 1], \
                f"{what} N={n}: crashed after {hit}, not after write {n} of {writes}"
        healthy = start_controllers(kit.cluster, tmp_path, "--no-webhook-url",
                                    name=f"{what}-after-{n}", wait=False)
        try:
            healthy.wait_probe()
            kit.cluster.wait_for(lambda: ready(name), TIMEOUT,
                                 what=f"{what} N={n}: ready after the restart")
            got = end_state(name)
            assert got == want, f"{what}: after a crash following write {n} ({hit})"
            delete(name)
        finally:
            assert healthy.stop() == 0


# ---------- TemplateInstance ----------

def ti_end_state(kit, ns, name):
    """What the instance produced in its namespace, and its own state."""
    ti = kit.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    return {
        **objects_in(kit, ns, f"landlord.dev/ti={name}", name),
        "finalizers": ti["metadata"].get("finalizers"),
        "conditions": conditions(ti),
        "kinds": sorted(ti["status"].get("kinds") or []),
        "binding": k8s.RbacAuthorizationV1Api(kit.admin).read_namespaced_role_binding(
            "landlord-ti-editor", ns).role_ref.name,
    }


def ti_ready(kit, ns, name):
    ti = kit.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    c = condition_of(ti, "Ready")
    return ti if c and c["status"] == "True" else None


def test_an_instance_converges_after_a_crash_after_every_write(kit, created, tmp_path):
    plan = kit.plan(hard={"pods": "4"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"])
    ns = f"{t}-dev"
    kit.expect_namespace(ns)
    kit.start("--v", "4")
    kit.wait_ready(t, [ns])
    wait_quiet(kit, plan, t)
    tmpl = create_template(kit, created)
    bob = k8s.CustomObjectsApi(kit.client("bob"))

    def instance(name):
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateInstance",
                "metadata": {"name": name},
                "spec": {"template": tmpl, "sync": True, "parameters": [{"name": "ID",
                                                                          "value": name}]}}

        def create():  # the webhook learns of the new Template through its watch
            try:
                return bob.create_namespaced_custom_object(GROUP, VERSION, ns,
                                                           "templateinstances", body)
            except ApiException as e:
                if e.status == 403 and f'Template "{tmpl}" does not exist' in message(e):
                    return None
                raise
        kit.cluster.wait_for(create, 10, what=f"the webhook knows Template {tmpl}")
        return name

    def gone(name):
        """Bob deletes the instance; its finalizer cleans what it applied, the apply account
        too once no instance of the namespace is left."""
        bob.delete_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
        kit.cluster.wait_for(lambda: not kit.custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, "templateinstances")["items"], TIMEOUT,
            what=f"instance {name} cleaned")
        assert kit.core.list_namespaced_config_map(
            ns, label_selector=f"landlord.dev/ti={name}").items == []

    def norm(write, name):
        return abstract(write, name, [ns])

    since = len(kit.landlord.records())  # the tenant is provisioned: the rest is the apply's
    ref = instance(kit.name("ref"))  # instance names are the objects' prefixes: [a-z0-9]
    kit.cluster.wait_for(lambda: ti_ready(kit, ns, ref), TIMEOUT, what="the reference Ready")
    want = ti_end_state(kit, ns, ref)
    gone(ref)

    def mine(path):  # the instance, its objects, its apply account and that one's binding
        return (ref in path or f"/namespaces/{SYSTEM}/serviceaccounts" in path or
                "/rolebindings/landlord-ti-" in path)
    writes = [norm(w, ref) for w in apply_writes(kit.landlord, since, mine)]
    kit.stop()
    assert want["conditions"]["Ready"] == ("True", "Applied")
    assert want["kinds"] == ["v1/ConfigMap", "v1/Secret", "v1/Service"]
    assert want["finalizers"] == ["landlord.dev/finalizer"]
    # finalizer, kinds, account, binding, 3 objects, status
    assert len(writes) == 8, writes
    crash_loop(kit, tmp_path, "ti", lambda n: instance(f"crash{n}"),
               lambda name: ti_ready(kit, ns, name), lambda name: ti_end_state(kit, ns, name),
               gone, {"state": want, "writes": writes, "abstract": norm})


# ---------- TemplateGroupInstance ----------

def tgi_end_state(kit, namespaces, name):
    """What the group instance produced in each namespace, and its own state."""
    tgi = kit.custom.get_cluster_custom_object(GROUP, VERSION, "templategroupinstances", name)
    st = tgi.get("status") or {}
    return {
        "objects": {ns: objects_in(kit, ns, f"landlord.dev/tgi={name}", name)
                    for ns in namespaces},
        "finalizers": tgi["metadata"].get("finalizers"),
        "conditions": conditions(tgi),
        "kinds": sorted(st.get("kinds") or []),
        "namespaces": st.get("namespaces"),
        "rows": sorted((r["namespace"], tuple(sorted(r.items()))) for r in st.get("rows") or []),
    }


def tgi_ready(kit, name, count):
    tgi = kit.custom.get_cluster_custom_object(GROUP, VERSION, "templategroupinstances", name)
    st = tgi.get("status") or {}
    c = condition_of(tgi, "Ready")
    return (st.get("observedGeneration") == tgi["metadata"]["generation"] and c and
            c["status"] == "True" and (st.get("namespaces") or {}).get("ready") == count)


def test_a_group_instance_converges_after_a_crash_after_every_write(kit, created, tmp_path):
    plan = kit.plan(hard={"pods": "4"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["dev", "qa"])
    namespaces = [kit.expect_namespace(f"{t}-dev"), kit.expect_namespace(f"{t}-qa")]
    kit.start("--v", "4")
    kit.wait_ready(t, namespaces)
    wait_quiet(kit, plan, t)
    tmpl = create_template(kit, created)
    api = kit.custom  # the cluster admin: TemplateGroupInstances are theirs

    def group(name):
        api.create_cluster_custom_object(GROUP, VERSION, "templategroupinstances", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateGroupInstance",
            "metadata": {"name": name},
            "spec": {"template": tmpl, "sync": True,
                     "selector": {"matchLabels": {"landlord.dev/tenant": t}},
                     "parameters": [{"name": "ID", "value": name}]}})
        return name

    def gone(name):
        """The admin deletes it; its finalizer cleans both namespaces first."""
        api.delete_cluster_custom_object(GROUP, VERSION, "templategroupinstances", name)
        kit.cluster.wait_for(lambda: not [
            i for i in api.list_cluster_custom_object(GROUP, VERSION,
                                                      "templategroupinstances")["items"]
            if i["metadata"]["name"] == name], TIMEOUT, what=f"group instance {name} cleaned")
        for ns in namespaces:
            assert objects_in(kit, ns, f"landlord.dev/tgi={name}", name) == {
                "configmaps": [], "secrets": [], "services": []}, ns

    def norm(write, name):
        return abstract(write, name, namespaces)

    since = len(kit.landlord.records())  # the tenant is provisioned: the rest is the apply's
    ref = group(kit.name("gref"))
    kit.cluster.wait_for(lambda: tgi_ready(kit, ref, 2), TIMEOUT, what="the reference Ready")
    want = tgi_end_state(kit, namespaces, ref)
    gone(ref)
    # the instance and its objects (their field manager names it)
    writes = [norm(w, ref) for w in apply_writes(kit.landlord, since, lambda p: ref in p)]
    kit.stop()
    assert want["conditions"]["Ready"] == ("True", "Applied"), want
    assert want["kinds"] == ["v1/ConfigMap", "v1/Secret", "v1/Service"]
    assert want["finalizers"] == ["landlord.dev/finalizer"]
    assert want["namespaces"]["matched"] == 2 and want["namespaces"]["ready"] == 2, want
    for ns in namespaces:
        assert want["objects"][ns]["configmaps"] == [
            ("ID-settings", (("where", ns),), "landlord")], want
        assert [s[0] for s in want["objects"][ns]["secrets"]] == ["ID-token"]
        assert [s[0] for s in want["objects"][ns]["services"]] == ["ID-web"]
    # finalizer, kinds, 3 objects in each namespace, status
    assert len(writes) == 9, writes
    crash_loop(kit, tmp_path, "tgi", lambda n: group(kit.name("g")),
               lambda name: tgi_ready(kit, name, 2),
               lambda name: tgi_end_state(kit, namespaces, name),
               gone, {"state": want, "writes": writes, "abstract": norm})
