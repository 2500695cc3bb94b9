"""Small helpers over the official kubernetes client that several e2e files share: landlord's API
group, unique names, 404-tolerant calls, conditions, and assertions on the API server's refusals
(the status code and the message that names the field, the policy or landlord's webhook)."""

import json
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

GROUP, VERSION = "landlord.dev", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
RBAC_GROUP = "rbac.authorization.k8s.io"
MANAGED_BY = "app.kubernetes.io/managed-by"


def short_id(n=6):
    return uuid.uuid4().hex[:n]


def uniq(prefix):
    """<prefix>-<8 hex digits>: a name unique to this run."""
    return f"{prefix}-{short_id(8)}"


def ignore_404(fn, *args, **kwargs):
    """fn(*args, **kwargs), or None when the object does not exist."""
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        if e.status != 404:
            raise
        return None


def custom(cluster, user="admin"):
    return k8s.CustomObjectsApi(cluster.client(user))


def core(cluster, user="admin"):
    return k8s.CoreV1Api(cluster.client(user))


def condition_of(obj, ctype):
    """The status condition of type ctype of an object as a dict, or None."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def message(e):
    """The message of an ApiException's Status body (its raw body when that is not JSON): in
    the raw JSON, quotes are escaped."""
    try:
        return json.loads(e.body).get("message", "")
    except (TypeError, ValueError, AttributeError):
        return e.body or ""


def api_error(status, fn, *args, **kwargs):
    """Call fn; it must fail with this HTTP status. Returns the ApiException."""
    with pytest.raises(ApiException) as exc:
        fn(*args, **kwargs)
    assert exc.value.status == status, exc.value.body
    return exc.value


def forbidden(fn, *args, **kwargs):
    """Call fn; it must fail with 403. Returns the body."""
    return api_error(403, fn, *args, **kwargs).body


def refusal(call):
    """The message of landlord's webhook when call() is refused by it (403 from a webhook of
    landlord.dev), else None (call() succeeded or was refused by something else)."""
    try:
        call()
        return None
    except ApiException as e:
        msg = json.loads(e.body).get("message", "") if e.body else ""
        return msg if e.status == 403 and "landlord.dev" in msg else None


def refusal_message(call):
    """The Status message of call()'s refusal by anything (RBAC, a policy, a webhook), or None
    when it succeeded."""
    try:
        call()
    except ApiException as e:
        return json.loads(e.body).get("message", "") if e.body else str(e)
    return None


def invalid(fn, *args, **kwargs):
    """Call fn; it must fail with 422 Invalid. Returns the Status message."""
    body = json.loads(api_error(422, fn, *args, **kwargs).body)
    assert body.get("reason") == "Invalid", body
    return body["message"]


def grant_user(admin_client, name, rules, user):
    """Test-only RBAC, as an administrator (@admin_client, an ApiClient): ClusterRole @name of
    @rules, bound cluster-wide to User @user by the ClusterRoleBinding @name."""
    rbac = k8s.RbacAuthorizationV1Api(admin_client)
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user}]})


def revoke(admin_client, name):
    """Undo grant_user(admin_client, name, ...)."""
    rbac = k8s.RbacAuthorizationV1Api(admin_client)
    ignore_404(rbac.delete_cluster_role_binding, name)
    ignore_404(rbac.delete_cluster_role, name)
