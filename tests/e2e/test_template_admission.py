"""Who may instantiate what, and whose rights (issue 13, points 3 and 4; docs/templates.md), on
the real API server as real users: with landlord's webhook registered a TemplateInstance is
refused, naming Template, field and namespace, when its Template is not instantiable there or
refuses its parameters, a Template that does not render (an undeclared ${{X}}; one in a
resourceMapping or a chart's source the CRD's schema refuses already) is refused when it is
written, and the mutating webhook records the last writer (editor, owner, privileged) whatever
the client sent; with the webhook not registered, the policy landlord-last-writer
(deploy/policies/last-writer.yaml) still refuses a forged "owner" or "privileged"."""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import GROUP, VERSION, api_error
from tenants import REPO, TENANT_LABEL

LAST_WRITER = "landlord.dev/last-writer"
WEBHOOK = 'admission webhook "tenant-objects.landlord.dev" denied the request'
TEMPLATE_WEBHOOK = 'admission webhook "templates.landlord.dev" denied the request'
POLICY = "ValidatingAdmissionPolicy 'landlord-last-writer'"
POLICY_FILE = REPO / "deploy" / "policies" / "last-writer.yaml"


def template(name, tenant=None, mappings=None):
    """A Template instantiable in @tenant's namespaces (None: instantiableIn unset)."""
    spec = {"parameters": [{"name": "TEAM", "value": "web", "validation": "^[a-z]+$"}],
            "resources": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "${{TEAM}}-config"},
                                         "data": {"ns": "${namespace}"}}]}}
    if tenant:
        spec["instantiableIn"] = {"matchLabels": {TENANT_LABEL: tenant}}
    if mappings:
        spec["resources"]["resourceMappings"] = mappings
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Template",
            "metadata": {"name": name}, "spec": spec}


def instance(name, tmpl, team="shop", writer=None):
    meta = {"name": name}
    if writer:
        meta["annotations"] = {LAST_WRITER: writer}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateInstance", "metadata": meta,
            "spec": {"template": tmpl, "parameters": [{"name": "TEAM", "value": team}]}}


def create_ti(kit, user, ns, body, **kw):
    return k8s.CustomObjectsApi(kit.client(user)).create_namespaced_custom_object(
        GROUP, VERSION, ns, "templateinstances", body, **kw)


def refused(kit, user, ns, body):
    """The message of a 403 refusal of @user's create of @body in @ns."""
    e = api_error(403, create_ti, kit, user, ns, body)
    return json.loads(e.body)["message"]


@pytest.fixture
def tenants(kit, created):
    """Tenant t (owner alice, editor bob, namespace t-dev) and tenant g (owner erin, namespace
    g-web), provisioned by landlord; Templates web (instantiable in t's namespaces) and closed
    (instantiableIn unset)."""
    plan = kit.plan(hard={"pods": "4"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"])
    g = kit.tenant(plan=plan, owners={"users": ["erin"]}, prefixed=["web"])
    kit.expect_namespace(f"{t}-dev")
    kit.expect_namespace(f"{g}-web")
    kit.start()
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_ready(g, [f"{g}-web"])
    web, closed = kit.name("web"), kit.name("closed")
    for body in (template(web, t), template(closed)):
        kit.custom.create_cluster_custom_object(GROUP, VERSION, "templates", body)
        created.append(("templates", body["metadata"]["name"]))
    for user, ns in (("alice", f"{t}-dev"), ("bob", f"{t}-dev"), ("erin", f"{g}-web")):
        kit.wait_can_i(user, "create", "templateinstances.landlord.dev", ns)

    def known(name, *, allowed):
        """The webhook's cache has Template @name: bob's dry run is admitted (@allowed) or
        refused for a reason other than a missing Template."""
        try:
            create_ti(kit, "bob", f"{t}-dev", instance("probe", name), dry_run="All")
            return allowed
        except ApiException as e:
            return not allowed and e.status == 403 and "not instantiable" in (e.body or "")
    kit.cluster.wait_for(lambda: known(web, allowed=True) and known(closed, allowed=False), 30,
                         interval=0.2, what="the Templates in the webhook's cache")
    return t, g, web, closed


def writer(kit, ns, name):
    obj = kit.custom.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    return (obj["metadata"].get("annotations") or {}).get(LAST_WRITER)


def test_the_webhook_refuses_what_may_not_be_instantiated_and_records_the_writer(
        kit, created, tenants):
    t, g, web, closed = tenants
    ns = f"{t}-dev"
    msg = refused(kit, "bob", ns, instance("a", closed))
    assert WEBHOOK in msg, msg
    assert (f'TemplateInstance {ns}/a: Template "{closed}" is not instantiable in namespace '
            f'{ns} (spec.instantiableIn selects no namespace)') in msg, msg
    msg = refused(kit, "erin", f"{g}-web", instance("b", web))
    assert (f'TemplateInstance {g}-web/b: Template "{web}" is not instantiable in namespace '
            f'{g}-web (spec.instantiableIn)') in msg, msg
    msg = refused(kit, "bob", ns, instance("c", web, team="NOT VALID"))
    assert (f'Template "{web}" refuses its parameters: spec.parameters[TEAM]: "NOT VALID" '
            'does not match ^[a-z]+$') in msg, msg
    msg = refused(kit, "bob", ns, instance("d", kit.name("nope")))
    assert "does not exist (spec.template)" in msg, msg
    # a parameter in a resourceMapping: the CRD's schema refuses it first (422), naming the field
    bad = template(kit.name("bad"), t, {"secrets": [{"namespace": "${{TEAM}}", "name": "x"}]})
    e = api_error(422, kit.custom.create_cluster_custom_object, GROUP, VERSION, "templates", bad)
    assert "spec.resources.resourceMappings.secrets[0].namespace" in e.body, e.body
    # what only rendering finds: an undeclared ${{X}}, refused by the webhook
    bad = template(kit.name("bad"), t)
    bad["spec"]["resources"]["manifests"][0]["metadata"]["name"] = "${{X}}"
    e = api_error(403, kit.custom.create_cluster_custom_object, GROUP, VERSION, "templates", bad)
    msg = json.loads(e.body)["message"]
    assert TEMPLATE_WEBHOOK in msg, msg
    assert ("spec.resources.manifests[0].metadata.name: ${{X}} names no parameter of the "
            "Template") in msg, msg
    # a chart's source: the schema refuses a parameter in repoUrl, naming the field; the
    # webhook one in a setValues name (never substituted), and values that are no YAML mapping
    # or hold a key with ${ or an undeclared reference; a valid chart passes both
    bad = template(kit.name("bad"), t)
    bad["spec"]["resources"]["helm"] = {"repoUrl": "https://${{TEAM}}.example.com",
                                        "chart": "web", "version": "1.0.0"}
    e = api_error(422, kit.custom.create_cluster_custom_object, GROUP, VERSION, "templates", bad)
    assert "spec.resources.helm.repoUrl" in e.body, e.body
    assert "chart sources are never parameterised" in e.body, e.body
    bad["spec"]["resources"]["helm"] = {"path": "/charts/web",
                                        "setValues": [{"name": "a.${{TEAM}}", "value": "x"}]}
    e = api_error(403, kit.custom.create_cluster_custom_object, GROUP, VERSION, "templates", bad)
    msg = json.loads(e.body)["message"]
    assert TEMPLATE_WEBHOOK in msg, msg
    assert 'spec.resources.helm.setValues[0].name: a name may not hold "${"' in msg, msg
    bad["spec"]["resources"]["helm"]["setValues"][0]["name"] = "team"
    bad["spec"]["resources"]["helm"]["setValues"][0]["value"] = "${{TEAM}}-${namespace}"
    for values, want in (("image: [\n", "spec.resources.helm.values: line 2: "),
                         ("- a\n", "spec.resources.helm.values: must be a YAML mapping"),
                         ("${{TEAM}}: x\n", 'spec.resources.helm.values["${{TEAM}}"]: a key may '
                                          'not hold "${"'),
                         ("a:\n  b: ${{NOPE}}\n", "spec.resources.helm.values.a.b: ${{NOPE}} "
                                                 "names no parameter of the Template")):
        bad["spec"]["resources"]["helm"]["values"] = values
        e = api_error(403, kit.custom.create_cluster_custom_object, GROUP, VERSION, "templates",
                      bad)
        msg = json.loads(e.body)["message"]
        assert TEMPLATE_WEBHOOK in msg and want in msg, (values, msg)
    bad["spec"]["resources"]["helm"]["values"] = "image:\n  tag: ${{TEAM}}-${tenant}\n"
    kit.custom.create_cluster_custom_object(GROUP, VERSION, "templates", bad, dry_run="All")
    # the last writer, whatever the client sent
    create_ti(kit, "bob", ns, instance("by-editor", web, writer="owner"))
    assert writer(kit, ns, "by-editor") == "editor"
    create_ti(kit, "alice", ns, instance("by-owner", web))
    assert writer(kit, ns, "by-owner") == "owner"
    create_ti(kit, "admin", ns, instance("by-admin", closed, writer="editor"))
    assert writer(kit, ns, "by-admin") == "privileged"
    kit.custom.patch_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances",
                                              "by-owner", {"metadata": {"labels": {"x": "y"}}})
    assert writer(kit, ns, "by-owner") == "privileged"  # the admin wrote it last
    k8s.CustomObjectsApi(kit.client("bob")).patch_namespaced_custom_object(
        GROUP, VERSION, ns, "templateinstances", "by-owner",
        {"metadata": {"annotations": {LAST_WRITER: "privileged"}}})
    assert writer(kit, ns, "by-owner") == "editor"


def test_the_policy_refuses_a_forged_writer_with_the_webhook_down(kit, tenants):
    t, _, web, _ = tenants
    ns = f"{t}-dev"
    kit.stop()  # removes landlord's webhook configurations
    r = kit.cluster.kubectl("admin", "apply", "-f", POLICY_FILE)
    assert r.returncode == 0, r.stderr
    try:
        def in_force():
            try:
                create_ti(kit, "bob", ns, instance("probe", web, writer="owner"), dry_run="All")
                return False
            except ApiException as e:
                return e.status == 403 and POLICY in (e.body or "")
        kit.cluster.wait_for(in_force, 60, interval=0.3, what="landlord-last-writer in force")
        msg = refused(kit, "bob", ns, instance("e", web, writer="owner"))
        assert POLICY in msg and f"only an owner of tenant {t}" in msg, msg
        msg = refused(kit, "bob", ns, instance("f", web, writer="privileged"))
        assert POLICY in msg and "only privileged users" in msg, msg
        msg = refused(kit, "alice", ns, instance("g", web, writer="privileged"))
        assert POLICY in msg, msg
        # positive controls: the owner's own claim, no claim at all, an administrator's
        create_ti(kit, "alice", ns, instance("h", web, writer="owner"))
        assert writer(kit, ns, "h") == "owner"
        create_ti(kit, "bob", ns, instance("i", web))
        assert writer(kit, ns, "i") is None
        create_ti(kit, "admin", ns, instance("j", web, writer="privileged"))
    finally:
        kit.cluster.kubectl("admin", "delete", "--ignore-not-found", "-f", POLICY_FILE)
