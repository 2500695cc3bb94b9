"""What landlord tells the platform team: Events on the Tenant for every namespace created,
adopted, released or purged; Plan status counts and the maxNamespaces report; privileged
namespaces reported and never created or touched."""

import tenants


def wait_event(kit, tenant, reason, needle):
    """An Event on the Tenant with this reason whose message names needle."""
    def seen():
        return [e for e in kit.events_for("Tenant", tenant)
                if e.reason == reason and needle in (e.message or "")]
    return kit.cluster.wait_for(seen, tenants.TIMEOUT, interval=0.3,
                                what=f"{reason} Event on {tenant} naming {needle}")


def events_naming(kit, tenant, reason, ns):
    return [e for e in kit.events_for("Tenant", tenant)
            if e.reason == reason and ns in (e.message or "")]


def test_events_record_every_namespace_created_adopted_released_and_purged(kit):
    plan = kit.plan(hard={"pods": "8"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a", "b"])
    a, b = kit.expect_namespace(f"{t}-a"), kit.expect_namespace(f"{t}-b")
    kit.start()
    kit.wait_ready(t, [a, b])
    # one Event names every namespace the pass created
    created = wait_event(kit, t, "NamespaceCreated", a)
    assert b in created[0].message and created[0].type == "Normal"

    adopted = kit.namespace(labels={tenants.TENANT_LABEL: t})
    wait_event(kit, t, "NamespaceAdopted", adopted)

    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": ["a"]}})
    wait_event(kit, t, "NamespaceReleased", b)

    kit.patch_tenant(t, {"namespaces": {"withTenantPrefix": [], "onDeletePurge": True}})
    wait_event(kit, t, "NamespacePurged", a)
    # The adopted namespace still carries the tenant label: it stays, whatever onDeletePurge
    # says. A later pass (the barrier) has finished, so every Event before it is recorded.
    prefixed, first = kit.barrier(t, [])
    wait_event(kit, t, "NamespaceCreated", first)
    assert not events_naming(kit, t, "NamespacePurged", adopted)
    assert not events_naming(kit, t, "NamespaceReleased", adopted)
    assert kit.read_namespace(adopted).metadata.deletion_timestamp is None
    assert adopted in kit.status(t)["namespaces"]

    # Unlabelled, an adopted namespace is released, never purged, whatever onDeletePurge says;
    # not in its own pass and not in a later one (up to the barrier's).
    kit.core.patch_namespace(adopted, {"metadata": {"labels": {tenants.TENANT_LABEL: None}}})
    released = wait_event(kit, t, "NamespaceReleased", adopted)
    assert released[0].type == "Normal"
    _, second = kit.barrier(t, prefixed)
    wait_event(kit, t, "NamespaceCreated", second)
    assert not events_naming(kit, t, "NamespacePurged", adopted)
    obj = kit.read_namespace(adopted)
    assert obj.metadata.deletion_timestamp is None and obj.status.phase == "Active"
    assert adopted in kit.status(t)["released"]


def test_plan_status_counts_its_tenants_and_reports_max_namespaces(kit):
    plan = kit.plan(hard={"pods": "4"}, maxNamespaces=1)
    small = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a"])
    big = kit.tenant(plan=plan, owners={"users": ["carol"]}, prefixed=["a", "b"])
    for ns in (f"{small}-a", f"{big}-a", f"{big}-b"):
        kit.expect_namespace(ns)
    kit.start()
    kit.wait_ready(small)
    kit.wait_ready(big)

    def over(st):
        limits = kit.condition_of({"status": st}, "WithinLimits") or {}
        return (st.get("tenants") == 2 and st.get("namespaces") == 3
                and limits.get("status") == "False"
                and (st.get("quota") or {}).get("hard") == {"pods": "8"})
    st = kit.wait_plan(plan, over, "2 tenants, 3 namespaces, one over maxNamespaces, "
                                   "both tenants' quota summed")
    limits = kit.condition_of({"status": st}, "WithinLimits")
    assert limits["reason"] == "TooManyNamespaces"
    assert limits["message"] == \
        f"1 tenant has more namespaces than maxNamespaces (1): {big} (2)"
    # both tenants' quota summed; nothing runs, so no tenant is near its limit
    assert st["quota"] == {"hard": {"pods": "8"}, "used": {"pods": "0"}}, st
    assert st["tenantsNearLimit"] == [], st
    assert "perTenant" not in st

    kit.patch_plan(plan, {"maxNamespaces": 2})
    kit.wait_plan(plan, lambda s: (kit.condition_of({"status": s}, "WithinLimits") or {})
                  .get("status") == "True", "every tenant within maxNamespaces again")


def test_a_privileged_namespace_is_never_created_or_touched(kit):
    existing = kit.namespace(f"platform-{kit.id}")
    missing = kit.expect_namespace(f"platform-{kit.id}-new")
    kit.start()
    with kit.landlord_config({"privileged": {"namespaces": ["platform-.*"]}}) as accepted:
        kit.cluster.wait_for(accepted, tenants.TIMEOUT, what="LandlordConfig accepted")
        plan = kit.plan(hard={"pods": "4"})
        t = kit.tenant(plan=plan, owners={"users": ["alice"]},
                       unprefixed=[existing, missing])
        obj = kit.wait_tenant(t, lambda o: len(o["status"].get("collisions") or []) == 2,
                              "both privileged names reported")
        for c in obj["status"]["collisions"]:
            assert "privileged" in c["reason"], c
        ready = kit.condition_of(obj, "NamespacesReady")
        assert ready["status"] == "False" and ready["reason"] == "Collision"
        assert tenants.TENANT_LABEL not in kit.labels(existing)
        assert kit.landlord_rolebindings(existing) == {} and kit.quota(existing) is None
        assert kit.read_namespace(missing) is None
