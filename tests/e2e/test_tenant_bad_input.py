"""Bad input to a Tenant is reported and never costs what is already provisioned."""

def test_a_new_name_colliding_with_a_sandbox_keeps_the_sandbox_provisioned(kit):
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["dev"]}, sandboxes={"enabled": True})
    sandbox = kit.expect_namespace(f"{t}-dev-sandbox")
    kit.start()
    kit.wait_ready(t, [sandbox])
    kit.wait_provisioned(sandbox, t)

    # withTenantPrefix "dev-sandbox" produces the sandbox's name too
    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": ["dev-sandbox"]}})
    obj = kit.wait_tenant(t, lambda o: any(c["name"] == sandbox
                                           for c in o["status"].get("collisions") or []),
                          "the collision reported")
    ready = kit.condition_of(obj, "NamespacesReady")
    assert ready["status"] == "False" and ready["reason"] == "Collision"
    # the pass that reported the collision has finished its writes: nothing was torn down
    assert kit.quota(sandbox) is not None
    assert "landlord-owners-admin" in kit.landlord_rolebindings(sandbox)
    assert kit.status(t)["namespaces"] == [sandbox]

    # fixing the spec clears the report; the sandbox was never touched
    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": []}})
    kit.wait_ready(t, [sandbox])
    assert kit.status(t)["collisions"] == []
