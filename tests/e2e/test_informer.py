"""The informer (list + watch + cache) against the real API server, through informer_probe."""

import json

from kubernetes import client as k8s

from procs import start_informer_probe


def server_state(list_fn, namespace):
    items = list_fn(namespace).items
    return {f"{namespace}/{o.metadata.name}": o.metadata.resource_version for o in items}


def cache_state(proc, resource):
    status, body = proc.get(f"/debug/cache?resource={resource}")
    assert status == 200, body
    return json.loads(body)


def converged(cluster, proc, resource, list_fn, namespace):
    want = server_state(list_fn, namespace)

    def check():
        return cache_state(proc, resource)["objects"] == want
    cluster.wait_for(check, timeout=60, what=f"{resource} cache to match the server")
    return want


def configmap(name, data):
    return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name), data=data)


def test_cache_converges_through_changes_and_an_apiserver_restart(cluster, namespace, tmp_path):
    core = k8s.CoreV1Api(cluster.client("admin"))
    for i in range(20):
        core.create_namespaced_config_map(namespace, configmap(f"cm-{i}", {"i": str(i)}))
    proc = start_informer_probe(cluster, tmp_path, "v1/configmaps", namespace=namespace)
    try:
        lst = core.list_namespaced_config_map
        converged(cluster, proc, "configmaps", lst, namespace)
        assert cache_state(proc, "configmaps")["synced"] is True

        for i in range(0, 20, 3):
            core.patch_namespaced_config_map(f"cm-{i}", namespace, {"data": {"v": "2"}})
        for i in range(1, 20, 4):
            core.delete_namespaced_config_map(f"cm-{i}", namespace)
        converged(cluster, proc, "configmaps", lst, namespace)
        restarts_before = proc.metric("landlord_watch_restarts_total", resource="configmaps")

        cluster.restart_apiserver()
        # Changes right after the restart must reach the cache through the resumed watch.
        core = k8s.CoreV1Api(cluster.client("admin"))
        for i in range(20, 30):
            core.create_namespaced_config_map(namespace, configmap(f"cm-{i}", {"i": str(i)}))
        core.delete_namespaced_config_map("cm-0", namespace)
        core.patch_namespaced_config_map("cm-2", namespace, {"data": {"v": "3"}})
        state = converged(cluster, proc, "configmaps", lst, namespace)
        assert f"{namespace}/cm-0" not in state and f"{namespace}/cm-29" in state
        assert proc.metric("landlord_watch_restarts_total",
                           resource="configmaps") > restarts_before
    finally:
        assert proc.stop() == 0


def podtemplate(name):
    spec = k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[
        k8s.V1Container(name="c", image="registry.example/app:1")]))
    return k8s.V1PodTemplate(metadata=k8s.V1ObjectMeta(name=name), template=spec)


def test_forced_410_relists_and_delivers_deletes_made_meanwhile(cluster, namespace, tmp_path):
    """The test cluster serves podtemplates without a watch cache, so a watch resumed from a
    compacted revision gets 410 Gone from etcd; the informer must relist and reconcile."""
    core = k8s.CoreV1Api(cluster.client("admin"))
    lst = core.list_namespaced_pod_template
    for i in range(6):
        core.create_namespaced_pod_template(namespace, podtemplate(f"pt-{i}"))
    proc = start_informer_probe(cluster, tmp_path, "v1/podtemplates", namespace=namespace)
    try:
        converged(cluster, proc, "podtemplates", lst, namespace)
        relists_before = proc.metric("landlord_informer_relists_total", resource="podtemplates")

        status, body = proc.get("/debug/pause-watch?resource=podtemplates&paused=true")
        assert status == 200, body
        for i in range(3):
            core.delete_namespaced_pod_template(f"pt-{i}", namespace)
        core.create_namespaced_pod_template(namespace, podtemplate("pt-new"))
        core.patch_namespaced_pod_template("pt-4", namespace,
                                           {"metadata": {"labels": {"changed": "yes"}}})
        cluster.etcd_compact()
        # While paused, the cache still holds the deleted objects.
        assert f"{namespace}/pt-0" in cache_state(proc, "podtemplates")["objects"]

        status, body = proc.get("/debug/pause-watch?resource=podtemplates&paused=false")
        assert status == 200, body
        state = converged(cluster, proc, "podtemplates", lst, namespace)
        assert set(state) == {f"{namespace}/pt-{i}" for i in (3, 4, 5)} | {f"{namespace}/pt-new"}
        assert proc.metric("landlord_informer_relists_total",
                           resource="podtemplates") > relists_before
        assert cache_state(proc, "podtemplates")["stats"]["relists"] >= 1
    finally:
        assert proc.stop() == 0
