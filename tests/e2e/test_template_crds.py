"""The Template, TemplateInstance and TemplateGroupInstance CRDs (issue 13, point 1;
docs/templates.md) against the real API server: they install, a valid object of each is stored
with the schema's defaults (a Template's helm source from a repository, a registry or a path
too), every schema rule refuses its mistake with 422 and a message naming
the field, kubectl prints their columns, and the ClusterRole landlord:templateinstances-edit
(deploy/rbac.yaml), aggregated into edit, lets a namespace's editor write TemplateInstances there
but not Templates."""

import copy

import pytest
from kubernetes import client as k8s

from kube import GROUP, VERSION, custom, forbidden, ignore_404, invalid, uniq

KINDS = {  # CRD name: (kind, scope, short name)
    "templates.landlord.dev": ("Template", "Cluster", "tpl"),
    "templateinstances.landlord.dev": ("TemplateInstance", "Namespaced", "ti"),
    "templategroupinstances.landlord.dev": ("TemplateGroupInstance", "Cluster", "tgi"),
}
PLURALS = {kind: name.split(".")[0] for name, (kind, _, _) in KINDS.items()}
LONG = "x" * 4097


@pytest.fixture
def api(installed):
    return custom(installed)


@pytest.fixture
def ns(installed):
    name = installed.create_namespace("tplcrd")
    yield name
    installed.delete_namespace(name)


def template(name=None, **spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Template",
            "metadata": {"name": name or uniq("tpl")},
            "spec": {"parameters": [{"name": "TEAM", "value": "web",
                                     "validation": "^[a-z]+$"},
                                    {"name": "REPLICAS", "value": "2", "type": "number"},
                                    {"name": "DEBUG", "type": "boolean", "value": "false"},
                                    {"name": "OWNER", "required": True}],
                     "instantiableIn": {
                         "matchLabels": {"landlord.dev/kind": "dev"},
                         "matchExpressions": [{"key": "landlord.dev/tenant",
                                               "operator": "In", "values": ["acme"]}]},
                     "resources": {
                         "manifests": [
                             {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "${{TEAM}}-config",
                                           "namespace": "${namespace}",
                                           "labels": {"team": "${{TEAM}}"},
                                           "annotations": {"by": "${tenant}"}},
                              "data": {"ns": "${namespace}", "tenant": "${tenant}"}},
                             {"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web"},
                              "spec": {"replicas": "${{REPLICAS}}"}}],
                         "resourceMappings": {
                             "secrets": [{"namespace": "shared", "name": "registry-creds"}],
                             "configMaps": [{"namespace": "shared", "name": "ca.bundle"}]}}}}
    body["spec"].update(spec)
    return body


def helm_template(name=None, **helm):
    """A Template whose chart comes from a repository (@helm's fields over the defaults)."""
    body = template(name)
    body["spec"]["resources"]["helm"] = {
        "repoUrl": "https://charts.example.com/stable", "chart": "web", "version": "1.2.3",
        "releaseName": "web", "values": "replicas: 2\nteam: ${{TEAM}}\n",
        "setValues": [{"name": "image.tag", "value": "${{TEAM}}", "forceString": True}],
        "credentials": {"secretRef": {"namespace": "platform", "name": "chart-repo"}}, **helm}
    for key in [k for k, v in helm.items() if v is None]:
        del body["spec"]["resources"]["helm"][key]
    return body


def instance(name=None, namespace="default", **spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateInstance",
            "metadata": {"name": name or uniq("ti"), "namespace": namespace},
            "spec": {"template": "web", "parameters": [{"name": "TEAM", "value": "shop"}]}}
    body["spec"].update(spec)
    return body


def group_instance(name=None, **spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateGroupInstance",
            "metadata": {"name": name or uniq("tgi")},
            "spec": {"template": "web", "sync": True,
                     "selector": {"matchLabels": {"landlord.dev/tenant": "acme"}},
                     "parameters": [{"name": "TEAM", "value": "shop"}]}}
    body["spec"].update(spec)
    return body


def create(api, body, dry_run=True):
    kw = {"dry_run": "All"} if dry_run else {}
    plural = PLURALS[body["kind"]]
    if body["kind"] == "TemplateInstance":
        return api.create_namespaced_custom_object(GROUP, VERSION, body["metadata"]["namespace"],
                                                   plural, body, **kw)
    return api.create_cluster_custom_object(GROUP, VERSION, plural, body, **kw)


def rejection(api, body):
    """The API server's 422 message for a server-side dry run of body."""
    return invalid(create, api, body)


def test_template_crds_are_established_and_labelled(installed):
    ext = k8s.ApiextensionsV1Api(installed.client("admin"))
    for name, (kind, scope, short) in KINDS.items():
        crd = ext.read_custom_resource_definition(name)
        conds = {c.type: c.status for c in crd.status.conditions}
        assert conds.get("Established") == "True", (name, conds)
        assert conds.get("NamesAccepted") == "True", (name, conds)
        assert "NonStructuralSchema" not in conds, (name, conds)
        assert crd.metadata.labels.get("app.kubernetes.io/managed-by") == "landlord"
        assert (crd.spec.names.kind, crd.spec.scope) == (kind, scope)
        assert crd.spec.names.short_names == [short]
        assert crd.spec.versions[0].subresources.status is not None


def test_valid_objects_are_stored_with_defaults(api, created, ns):
    body = template()
    create(api, copy.deepcopy(body), dry_run=False)
    created.append(("templates", body["metadata"]["name"]))
    got = api.get_cluster_custom_object(GROUP, VERSION, "templates", body["metadata"]["name"])
    params = {p["name"]: p for p in got["spec"]["parameters"]}
    # type defaults to string, required to false; the manifests are kept verbatim, references
    # and all, in names, namespaces and labels too (landlord, not the API server, renders them;
    # this is why they are not x-kubernetes-embedded-resource, whose metadata checks would refuse
    # them)
    assert params["TEAM"] == {"name": "TEAM", "value": "web", "validation": "^[a-z]+$",
                              "type": "string", "required": False}
    assert params["OWNER"] == {"name": "OWNER", "type": "string", "required": True}
    assert got["spec"]["resources"] == body["spec"]["resources"]
    assert got["spec"]["instantiableIn"] == body["spec"]["instantiableIn"]

    ti = instance(namespace=ns)
    create(api, ti, dry_run=False)
    got = api.get_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances",
                                           ti["metadata"]["name"])
    assert got["spec"] == {"template": "web", "sync": False,
                           "parameters": [{"name": "TEAM", "value": "shop"}]}

    tgi = group_instance("g" * 63)
    create(api, tgi, dry_run=False)
    created.append(("templategroupinstances", tgi["metadata"]["name"]))
    got = api.get_cluster_custom_object(GROUP, VERSION, "templategroupinstances", "g" * 63)
    assert got["spec"] == tgi["spec"]


def test_names_at_the_limits_are_accepted(api, ns):
    create(api, instance("i" * 52, namespace=ns))
    create(api, template(parameters=[{"name": f"P{i}", "value": "v" * 4096}
                                     for i in range(64)]))
    create(api, instance(namespace=ns, parameters=[{"name": "_" + "A" * 62, "value": "v" * 4096}]))


# (body maker, how it is broken, strings the message must hold)
CASES = {
    "template type not in the enum": (
        template, lambda b: b["spec"]["parameters"][0].update(type="int"),
        ["spec.parameters[0].type", 'Unsupported value: "int"']),
    "template 65 parameters": (
        template, lambda b: b["spec"].update(
            parameters=[{"name": f"P{i}"} for i in range(65)]),
        ["spec.parameters", "must have at most 64 items"]),
    "template value of 4097 bytes": (
        template, lambda b: b["spec"]["parameters"][0].update(value=LONG),
        ["spec.parameters[0].value", "4096"]),
    "template parameter name with a dash": (
        template, lambda b: b["spec"]["parameters"][0].update(name="A-B"),
        ["spec.parameters[0].name", "a parameter name is letters, digits and _"]),
    "template parameter name starting with a digit": (
        template, lambda b: b["spec"]["parameters"][0].update(name="1A"),
        ["spec.parameters[0].name", "a parameter name is letters, digits and _"]),
    "template parameter name of 64": (
        template, lambda b: b["spec"]["parameters"][0].update(name="A" * 64),
        ["spec.parameters[0].name", "63"]),
    "template parameter declared twice": (
        template, lambda b: b["spec"]["parameters"][1].update(name="TEAM"),
        ["spec.parameters[1]", "Duplicate value"]),
    "template boolean value not true or false": (
        template, lambda b: b["spec"]["parameters"][2].update(value="yes"),
        ["spec.parameters[2]", "the value of a boolean parameter must be true or false"]),
    "template manifest without kind": (
        template, lambda b: b["spec"]["resources"]["manifests"][1].pop("kind"),
        ["spec.resources.manifests[1]", "a manifest must have a kind"]),
    "template manifest without apiVersion": (
        template, lambda b: b["spec"]["resources"]["manifests"][0].pop("apiVersion"),
        ["spec.resources.manifests[0]", "a manifest must have an apiVersion"]),
    "template manifest without metadata.name": (
        template, lambda b: b["spec"]["resources"]["manifests"][0]["metadata"].pop("name"),
        ["spec.resources.manifests[0]", "a manifest must have a metadata.name"]),
    "template ${ in a secret mapping's name": (
        template, lambda b: b["spec"]["resources"]["resourceMappings"]["secrets"][0].update(
            name="${{X}}"),
        ["spec.resources.resourceMappings.secrets[0].name",
         'must not hold "${": resource mappings are never parameterised']),
    "template ${ in a configMap mapping's namespace": (
        template, lambda b: b["spec"]["resources"]["resourceMappings"]["configMaps"][0].update(
            namespace="${namespace}"),
        ["spec.resources.resourceMappings.configMaps[0].namespace",
         'must not hold "${": resource mappings are never parameterised']),
    "template mapping name not a DNS name": (
        template, lambda b: b["spec"]["resources"]["resourceMappings"]["secrets"][0].update(
            name="Bad_Name"),
        ["spec.resources.resourceMappings.secrets[0].name",
         "must be an object name (a DNS subdomain)"]),
    "template mapping without namespace": (
        template, lambda b: b["spec"]["resources"]["resourceMappings"]["secrets"][0].pop(
            "namespace"),
        ["spec.resources.resourceMappings.secrets[0].namespace", "Required value"]),
    "helm repoUrl ftp://": (
        lambda: helm_template(repoUrl="ftp://charts.example.com"), lambda b: None,
        ["spec.resources.helm.repoUrl", "must start with https://, http:// or oci://"]),
    "helm ${ in repoUrl": (
        lambda: helm_template(repoUrl="https://${{TEAM}}.example.com"), lambda b: None,
        ["spec.resources.helm.repoUrl",
         'must not hold "${": chart sources are never parameterised']),
    "helm ${ in the credentials": (
        helm_template, lambda b: b["spec"]["resources"]["helm"]["credentials"][
            "secretRef"].update(name="${tenant}"),
        ["spec.resources.helm.credentials.secretRef.name",
         'must not hold "${": chart sources are never parameterised']),
    "helm repoUrl without version": (
        lambda: helm_template(version=None), lambda b: None,
        ["spec.resources.helm", "version is required with repoUrl"]),
    "helm version a range": (
        lambda: helm_template(version="^1.2"), lambda b: None,
        ["spec.resources.helm.version", "must be one exact version, not a range"]),
    "helm repoUrl and path": (
        lambda: helm_template(path="/charts/web"), lambda b: None,
        ["spec.resources.helm", "exactly one of repoUrl or path must be set"]),
    "helm neither repoUrl nor path": (
        lambda: helm_template(repoUrl=None, version=None, chart=None), lambda b: None,
        ["spec.resources.helm", "exactly one of repoUrl or path must be set"]),
    "helm https repoUrl without chart": (
        lambda: helm_template(chart=None), lambda b: None,
        ["spec.resources.helm", "chart is required with an http(s) repoUrl"]),
    "helm oci repoUrl with chart": (
        lambda: helm_template(repoUrl="oci://registry.example.com/charts/web"), lambda b: None,
        ["spec.resources.helm", "chart must not be set with an oci:// repoUrl"]),
    "helm relative path": (
        lambda: helm_template(repoUrl=None, chart=None, path="charts/web"), lambda b: None,
        ["spec.resources.helm.path", "must be an absolute path"]),
    "helm releaseName of 54": (
        lambda: helm_template(releaseName="r" * 54), lambda b: None,
        ["spec.resources.helm.releaseName", "53"]),
    "helm releaseName not a DNS label": (
        lambda: helm_template(releaseName="Web.1"), lambda b: None,
        ["spec.resources.helm.releaseName", "must be a DNS label"]),
    "helm no releaseName and a Template name that is none": (
        lambda: helm_template(uniq("tpl.web"), releaseName=None), lambda b: None,
        ["spec.resources.helm.releaseName is required when the Template's name is no release "
         "name"]),
    "helm 65 setValues": (
        lambda: helm_template(setValues=[{"name": f"v{i}", "value": ""} for i in range(65)]),
        lambda b: None, ["spec.resources.helm.setValues", "must have at most 64 items"]),
    "helm values over 256 KiB": (
        lambda: helm_template(values="a: " + "x" * 262144), lambda b: None,
        ["spec.resources.helm.values", "262144"]),
    "helm credentials without secretRef": (
        lambda: helm_template(credentials={}), lambda b: None,
        ["spec.resources.helm.credentials.secretRef", "Required value"]),
    "template instantiableIn operator not in the enum": (
        template, lambda b: b["spec"]["instantiableIn"]["matchExpressions"][0].update(
            operator="Equals"),
        ["spec.instantiableIn.matchExpressions[0].operator", 'Unsupported value: "Equals"']),
    "template instantiableIn In without values": (
        template, lambda b: b["spec"]["instantiableIn"]["matchExpressions"][0].pop("values"),
        ["spec.instantiableIn.matchExpressions[0]", "values must be set for In and NotIn"]),
    "ti name of 53": (
        lambda: instance("i" * 53), lambda b: None,
        ["metadata.name must be at most 52 characters"]),
    "ti without template": (
        instance, lambda b: b["spec"].pop("template"),
        ["spec.template", "Required value"]),
    "ti 65 parameters": (
        instance, lambda b: b["spec"].update(
            parameters=[{"name": f"P{i}", "value": ""} for i in range(65)]),
        ["spec.parameters", "must have at most 64 items"]),
    "ti value of 4097 bytes": (
        instance, lambda b: b["spec"]["parameters"][0].update(value=LONG),
        ["spec.parameters[0].value", "4096"]),
    "ti parameter without value": (
        instance, lambda b: b["spec"]["parameters"][0].pop("value"),
        ["spec.parameters[0].value", "Required value"]),
    "ti parameter name with a dot": (
        instance, lambda b: b["spec"]["parameters"][0].update(name="a.b"),
        ["spec.parameters[0].name", "a parameter name is letters, digits and _"]),
    "ti sync not a boolean": (
        instance, lambda b: b["spec"].update(sync="yes"),
        ["spec.sync", "boolean"]),
    "tgi without selector": (
        group_instance, lambda b: b["spec"].pop("selector"),
        ["spec.selector", "Required value"]),
    "tgi name of 64": (
        lambda: group_instance("g" * 64), lambda b: None,
        ["metadata.name must be at most 63 characters"]),
    "tgi 65 parameters": (
        group_instance, lambda b: b["spec"].update(
            parameters=[{"name": f"P{i}", "value": ""} for i in range(65)]),
        ["spec.parameters", "must have at most 64 items"]),
    "tgi value of 4097 bytes": (
        group_instance, lambda b: b["spec"]["parameters"][0].update(value=LONG),
        ["spec.parameters[0].value", "4096"]),
    "tgi selector operator not in the enum": (
        group_instance, lambda b: b["spec"]["selector"].update(
            matchExpressions=[{"key": "a", "operator": "Is"}]),
        ["spec.selector.matchExpressions[0].operator", 'Unsupported value: "Is"']),
}


@pytest.mark.parametrize("helm", [
    {},
    {"repoUrl": "oci://registry.example.com/charts/web", "chart": None, "releaseName": None},
    {"repoUrl": None, "version": None, "chart": None, "path": "/var/lib/charts/web-1.2.3.tgz",
     "credentials": None, "values": None, "setValues": None},
])
def test_a_helm_source_is_stored(api, helm):
    body = helm_template(**helm)
    got = create(api, copy.deepcopy(body))
    for key, value in body["spec"]["resources"]["helm"].items():
        assert got["spec"]["resources"]["helm"][key] == value, key


@pytest.mark.parametrize("case", CASES)
def test_schema_rules_refuse_with_their_message(api, ns, case):
    make, breaks, want = CASES[case]
    body = make()
    if body["kind"] == "TemplateInstance":
        body["metadata"]["namespace"] = ns
    breaks(body)
    msg = rejection(api, body)
    for s in want:
        assert s in msg, (case, s, msg)


def test_status_is_bounded(api, created, ns):
    ti = instance(namespace=ns)
    create(api, ti, dry_run=False)
    name = ti["metadata"]["name"]
    failing = [{"namespace": ns, "object": f"ConfigMap/c{i}", "reason": "Forbidden",
                "message": "m"} for i in range(21)]
    msg = invalid(api.patch_namespaced_custom_object_status, GROUP, VERSION, ns,
                  "templateinstances", name, {"status": {"failing": failing}})
    assert "status.failing" in msg and "20" in msg, msg
    msg = invalid(api.patch_namespaced_custom_object_status, GROUP, VERSION, ns,
                  "templateinstances", name,
                  {"status": {"failing": [dict(failing[0], message="m" * 257)]}})
    assert "status.failing[0].message" in msg and "256" in msg, msg
    # 20 entries, a full row and conditions are accepted
    api.patch_namespaced_custom_object_status(GROUP, VERSION, ns, "templateinstances", name, {
        "status": {"observedGeneration": 1, "failing": failing[:20], "rows": [{
            "namespace": ns, "ready": False, "applied": 1, "rendered": 2,
            "deployments": {"ready": 0, "desired": 1}, "statefulSets": {"ready": 0, "desired": 0},
            "daemonSets": {"ready": 0, "desired": 0},
            "pods": {"pending": 1, "running": 0, "succeeded": 0, "failed": 0, "unknown": 0}}]}})
    # the counts src/tenancy/tplstatus.c writes for both kinds are kept, not pruned
    counts = {"failingOmitted": 3, "rowsOmitted": 0, "namespaces": {"matched": 1, "ready": 0}}
    got = api.patch_namespaced_custom_object_status(GROUP, VERSION, ns, "templateinstances", name,
                                                    {"status": counts})
    assert {k: got["status"].get(k) for k in counts} == counts, got["status"]

    tgi = group_instance()
    create(api, tgi, dry_run=False)
    created.append(("templategroupinstances", tgi["metadata"]["name"]))
    rows = [{"namespace": f"ns-{i}", "ready": True, "applied": 1, "rendered": 1}
            for i in range(2001)]
    msg = invalid(api.patch_cluster_custom_object_status, GROUP, VERSION,
                  "templategroupinstances", tgi["metadata"]["name"], {"status": {"rows": rows}})
    assert "status.rows" in msg and "2000" in msg, msg
    got = api.patch_cluster_custom_object_status(
        GROUP, VERSION, "templategroupinstances", tgi["metadata"]["name"],
        {"status": {"rows": rows[:2000], "rowsOmitted": 1, "failingOmitted": 4,
                    "namespaces": {"matched": 2001, "ready": 2001}}})
    assert got["status"]["failingOmitted"] == 4 and got["status"]["rowsOmitted"] == 1, got


def header_and_row(installed, *args):
    r = installed.kubectl("admin", "get", *args)
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()[:2]
    return header.split(), row.split()


def test_kubectl_short_names_and_printer_columns(installed, api, created, ns):
    tpl = template()
    create(api, tpl, dry_run=False)
    created.append(("templates", tpl["metadata"]["name"]))
    ti = instance(namespace=ns, sync=True)
    create(api, ti, dry_run=False)
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, "templateinstances", ti["metadata"]["name"], {"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "Applied",
                            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    # the counts are status, which landlord will write
    api.patch_cluster_custom_object_status(GROUP, VERSION, "templates", tpl["metadata"]["name"],
                                           {"status": {"parameters": 4, "manifests": 2}})
    tgi = group_instance()
    create(api, tgi, dry_run=False)
    created.append(("templategroupinstances", tgi["metadata"]["name"]))
    api.patch_cluster_custom_object_status(
        GROUP, VERSION, "templategroupinstances", tgi["metadata"]["name"],
        {"status": {"namespaces": {"matched": 5, "ready": 3}}})

    header, row = header_and_row(installed, "tpl", tpl["metadata"]["name"])
    assert header == ["NAME", "PARAMETERS", "MANIFESTS", "AGE"]
    assert row[:3] == [tpl["metadata"]["name"], "4", "2"], row
    header, row = header_and_row(installed, "ti", "-n", ns, ti["metadata"]["name"])
    assert header == ["NAME", "TEMPLATE", "SYNC", "READY", "AGE"]
    assert row[:4] == [ti["metadata"]["name"], "web", "true", "True"], row
    header, row = header_and_row(installed, "tgi", tgi["metadata"]["name"])
    assert header == ["NAME", "TEMPLATE", "SYNC", "READY", "MATCHED", "AGE"]
    assert row[:5] == [tgi["metadata"]["name"], "web", "true", "3", "5"], row
    # all three at once, as the issue asks
    r = installed.kubectl("admin", "get", "ti,tgi,tpl", "-n", ns)
    assert r.returncode == 0, r.stderr
    for kind, name in (("templateinstance", ti), ("templategroupinstance", tgi),
                       ("template", tpl)):
        assert f"{kind}.landlord.dev/{name['metadata']['name']}" in r.stdout, r.stdout


def test_an_editor_may_write_template_instances_but_not_templates(installed, api, ns):
    rbac = k8s.RbacAuthorizationV1Api(installed.client("admin"))
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "e2e-alice-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]})
    # kube-controller-manager aggregates landlord:templateinstances-edit into edit
    installed.wait_for(lambda: installed.kubectl(
        "alice", "auth", "can-i", "create", "templateinstances.landlord.dev", "-n", ns
    ).stdout.strip() == "yes", 60, interval=0.3, what="edit to aggregate templateinstances")
    edit = rbac.read_cluster_role("edit")
    admin = rbac.read_cluster_role("admin")
    for role in (edit, admin):
        assert any("templateinstances" in (r.resources or []) for r in role.rules), role.rules
        assert not any("templates" in (r.resources or []) or
                       "templategroupinstances" in (r.resources or []) for r in role.rules)

    alice = custom(installed, "alice")
    ti = instance(namespace=ns)
    create(alice, ti, dry_run=False)
    name = ti["metadata"]["name"]
    alice.patch_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name,
                                         {"spec": {"sync": True}})
    assert alice.list_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances")["items"]
    # her instance's status is landlord's to write
    forbidden(alice.patch_namespaced_custom_object_status, GROUP, VERSION, ns,
              "templateinstances", name, {"status": {"observedGeneration": 9}})
    alice.delete_namespaced_custom_object(GROUP, VERSION, ns, "templateinstances", name)
    # Templates and TemplateGroupInstances are for administrators: neither written nor read
    forbidden(create, alice, template(), dry_run=False)
    forbidden(create, alice, group_instance(), dry_run=False)
    forbidden(alice.list_cluster_custom_object, GROUP, VERSION, "templates")
    for verb, res in (("get", "templates"), ("list", "templategroupinstances"),
                      ("create", "templateinstances")):
        r = installed.kubectl("alice", "auth", "can-i", verb, f"{res}.landlord.dev",
                              "-n", "default")
        assert r.stdout.strip() == "no", (verb, res, r.stdout)
