"""A TemplateInstance applied by a landlord killed right after its Nth API write, for every N,
converges after a restart to the uninterrupted end state (issue 13, crash loop).

--test-crash-after-writes N makes landlord exit (86, no cleanup) just after its Nth successful
write; dry runs write nothing and do not count. For N = 1..8 a fresh instance of one Template
(a Secret, a ConfigMap and a Service) is applied by a landlord that dies there, then by a
normal one: the writes of one apply (finalizer, status kinds, account, binding, three objects,
status) are 8, so every one of them has a crash right after it.
"""
from kubernetes import client as k8s

from kube import GROUP, VERSION
from procs import start_controllers

CRASH_EXIT = 86
CRASH_POINTS = 8  # issue 13: N = 1..8


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


def end_state(kit, ns, name):
    """What the instance produced in its namespace, and its own state."""
    core = kit.core
    sel = f"landlord.dev/ti={name}"
    ti = kit.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    conds = {c["type"]: (c["status"], c["reason"])
             for c in (ti.get("status") or {}).get("conditions") or []}
    def short(n):
        return n.replace(name, "ID", 1)
    return {
        "configmaps": sorted((short(c.metadata.name), tuple(sorted((c.data or {}).items())))
                             for c in core.list_namespaced_config_map(ns, label_selector=sel).items),
        "secrets": sorted(short(s.metadata.name)
                          for s in core.list_namespaced_secret(ns, label_selector=sel).items),
        "services": sorted(short(s.metadata.name)
                           for s in core.list_namespaced_service(ns, label_selector=sel).items),
        "finalizers": ti["metadata"].get("finalizers"),
        "conditions": conds,
        "kinds": sorted(ti["status"].get("kinds") or []),
        "binding": k8s.RbacAuthorizationV1Api(kit.admin).read_namespaced_role_binding(
            "landlord-ti-editor", ns).role_ref.name,
    }


def ready(kit, ns, name):
    ti = kit.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    for c in (ti.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready" and c["status"] == "True":
            return ti
    return None


def test_an_instance_converges_after_a_crash_after_every_write(kit, created, tmp_path):
    plan = kit.plan(hard={"pods": "4"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"])
    ns = f"{t}-dev"
    kit.expect_namespace(ns)
    kit.start()
    kit.wait_ready(t, [ns])
    tmpl = kit.name("tpl")
    kit.custom.create_cluster_custom_object(GROUP, VERSION, "templates", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": tmpl},
        "spec": {"instantiableIn": {"matchExpressions": [
            {"key": "landlord.dev/tenant", "operator": "Exists"}]},
            "parameters": [{"name": "ID", "required": True, "validation": "^[a-z0-9]+$"}],
            "resources": {"manifests": manifests()}}})
    created.append(("templates", tmpl))
    bob = k8s.CustomObjectsApi(kit.client("bob"))

    def instance(name):
        bob.create_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateInstance",
            "metadata": {"name": name},
            "spec": {"template": tmpl, "sync": True, "parameters": [{"name": "ID",
                                                                      "value": name}]}})

    instance("reference")  # instance names are the objects' prefixes: [a-z0-9]
    kit.cluster.wait_for(lambda: ready(kit, ns, "reference"), 60, what="the reference Ready")
    kit.stop()
    want = end_state(kit, ns, "reference")
    crashed = []
    assert want["conditions"]["Ready"] == ("True", "Applied")
    assert want["kinds"] == ["v1/ConfigMap", "v1/Secret", "v1/Service"]

    for n in range(1, CRASH_POINTS + 1):
        name = f"crash{n}"
        instance(name)
        crashing = start_controllers(kit.cluster, tmp_path, "--test-crash-after-writes", str(n),
                                     name=f"crash-{n}", wait=False)
        kit.cluster.wait_for(lambda: crashing.popen.poll() is not None or ready(kit, ns, name),
                             60, what=f"N={n}: a crash or convergence")
        code = crashing.popen.poll()
        converged = code is None
        if converged:
            code = crashing.stop()
        assert code in ((0, CRASH_EXIT) if converged else (CRASH_EXIT,)), f"N={n}: exit {code}"
        healthy = start_controllers(kit.cluster, tmp_path, name=f"after-{n}", wait=False)
        try:
            healthy.wait_probe()
            kit.cluster.wait_for(lambda: ready(kit, ns, name), 60,
                                 what=f"N={n}: Ready after the restart")
        finally:
            assert healthy.stop() == 0
        got = end_state(kit, ns, name)
        # the reference's objects carry its own label: compare what each instance applied
        assert got == want, f"after a crash following write {n}"
        crashed.append(not converged)
    assert crashed[:4] == [True] * 4, f"the first writes did not crash: {crashed}"
    # the instances' finalizers need a landlord to go
    kit.start()
    for ti in kit.custom.list_namespaced_custom_object(GROUP, VERSION, ns,
                                                       "templateinstances")["items"]:
        bob.delete_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances",
                                            ti["metadata"]["name"])
    kit.cluster.wait_for(lambda: not kit.custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, "templateinstances")["items"], 60, what="every instance cleaned")
    assert kit.core.list_namespaced_config_map(ns, label_selector="landlord.dev/ti").items == []
