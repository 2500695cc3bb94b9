"""landlord's own identity is not cluster-admin in effect (deploy/rbac.yaml, docs/usage.md
"Identity and permissions"): it may bind only the ClusterRoles its LandlordConfig maps, by
resourceNames, never escalate, and the list it may bind is rendered from the same defaults as
the configuration. Requests here are made as landlord's own identity (cluster.client("landlord"),
bound to exactly deploy/rbac.yaml), and every refusal is a real attempt.
"""

import subprocess

import yaml
from kubernetes import client as k8s

from kube import RBAC_GROUP, forbidden, ignore_404, short_id
from procs import REPO
from tenants import (LANDLORD_SA, RENDER_RBAC, landlord_can_i, rendered_roles,
                     shipped_bind_roles)

NOT_HELD = "attempting to grant RBAC permissions not currently held"


def crd_default_roles():
    crd = yaml.safe_load((REPO / "deploy/crds/landlordconfigs.landlord.dev.yaml").read_text())
    props = (crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
             ["properties"]["tenantRoles"]["properties"]["default"]["properties"])
    return sorted({props[k]["default"] for k in ("owner", "editor", "viewer")})


OPS_CONFIG = """\
apiVersion: landlord.dev/v1alpha1
kind: LandlordConfig
metadata: {name: landlord}
spec:
  tenantRoles:
    default: {owner: "", viewer: team-view}
    custom:
    - labelSelector: {matchLabels: {landlord.dev/kind: sandbox}}
      owner: "ops:admin"
      editor: ""
"""


def test_the_bind_rule_is_rendered_from_the_default_roles(tmp_path):
    # deploy/rbac.yaml's list is the renderer's for the defaults, which are the CRD's (landlord's
    # own defaults are checked against it in test_landlordconfig_controller.py).
    assert shipped_bind_roles() == rendered_roles() == crd_default_roles() == \
        ["admin", "edit", "view"]
    r = subprocess.run([str(RENDER_RBAC), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # `make run` applies the rendering for the sample, which maps edit for owners in prod
    # namespaces: covered.
    assert rendered_roles(REPO / "samples/landlordconfig.yaml") == ["admin", "edit", "view"]
    # The rendering is the whole of deploy/rbac.yaml, only the bind rule changes.
    config = tmp_path / "landlordconfig.yaml"
    config.write_text(OPS_CONFIG)
    rendered = subprocess.run([str(RENDER_RBAC), str(config)], capture_output=True, text=True,
                              check=True).stdout
    shipped = (REPO / "deploy/rbac.yaml").read_text()
    assert rendered == shipped.replace("resourceNames: [admin, edit, view]",
                                       'resourceNames: [admin, edit, "ops:admin", team-view]')


def binding(kind, name, role, subject, ns=None):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [subject]}


def test_landlord_cannot_bind_cluster_admin_nor_a_role_it_does_not_hand_out(installed, namespace):
    admin = k8s.RbacAuthorizationV1Api(installed.client("admin"))
    me = k8s.RbacAuthorizationV1Api(installed.client("landlord"))
    alice = {"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"}
    # A role landlord's LandlordConfig does not map, with a rule landlord does not hold.
    secrets = f"e2e-nodes-{short_id()}"
    admin.create_cluster_role({"metadata": {"name": secrets}, "rules": [{
        "apiGroups": [""], "resources": ["nodes"], "verbs": ["delete"]}]})
    created = []
    try:
        for role in ("cluster-admin", secrets):
            name = f"e2e-{short_id()}"
            created.append(name)
            # cluster-wide, to itself
            body = forbidden(me.create_cluster_role_binding,
                             binding("ClusterRoleBinding", name, role, LANDLORD_SA))
            assert NOT_HELD in body, body
            # in a namespace, to itself and to a tenant user
            for subject in (LANDLORD_SA, alice):
                body = forbidden(me.create_namespaced_role_binding, namespace,
                                 binding("RoleBinding", name, role, subject, namespace))
                assert NOT_HELD in body, body
            assert not landlord_can_i(installed, "bind", f"clusterroles/{role}")
            assert not landlord_can_i(installed, "bind", f"clusterroles/{role}", namespace)
        assert not landlord_can_i(installed, "escalate", "clusterroles")
        assert not landlord_can_i(installed, "escalate", "clusterroles/cluster-admin")
        assert not landlord_can_i(installed, "bind", "clusterroles")  # no unnamed bind

        # What it does hand out, it may: admin for alice in a namespace.
        assert landlord_can_i(installed, "bind", "clusterroles/admin")
        rb = me.create_namespaced_role_binding(namespace, binding(
            "RoleBinding", "e2e-alice-admin", "admin", alice, namespace))
        assert rb.role_ref.name == "admin"
    finally:
        for name in created:
            ignore_404(admin.delete_cluster_role_binding, name)
        admin.delete_cluster_role(secrets)


def test_every_authenticated_user_may_ask_what_it_may_do(installed):
    # landlord's check (a SelfSubjectAccessReview) needs no grant of ours: Kubernetes gives it to
    # every authenticated user through system:basic-user; deploy/rbac.yaml states it anyway.
    basic = k8s.RbacAuthorizationV1Api(installed.client("admin")).read_cluster_role(
        "system:basic-user")
    assert any("selfsubjectaccessreviews" in (r.resources or []) and "create" in r.verbs
               for r in basic.rules), basic.rules
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "bind", "group": RBAC_GROUP,
                                              "resource": "clusterroles", "name": "admin"}}}
    for user, allowed in (("alice", False), ("landlord", True)):
        api = k8s.AuthorizationV1Api(installed.client(user))
        answer = api.create_self_subject_access_review(review)
        assert answer.status.allowed is allowed, (user, answer.status)
