#!/usr/bin/env python3
"""Informer initial sync against the floor, and memory per cached object.

Creates N namespaces and N ConfigMaps of 1 KiB (one per namespace) in a private control plane,
lets kube-controller-manager settle (every namespace has its default ServiceAccount), then,
RUNS times each, alternating:
  floor:    a bare keep-alive HTTPS client doing the same paginated LISTs (same page size, same
            Accept headers: metadata-only for namespaces, full objects for ConfigMaps), both
            resources concurrently, reading every byte and parsing only the continue token;
  landlord: informer_probe --sync-report (landlord's informers: list, parse each item straight
            into a compact document without managedFields, cache) for the same two resources,
            from process start to both synced.
Memory per cached object is reported per kind from landlord_informer_bytes (inf_bytes(): the
documents plus the store), and for the process as RSS, RssAnon and PSS (smaps_rollup).
Also measures the idle RSS of `landlord run` with nothing cached.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import threading
import time

from common import (BUILD, REPO, Cluster, bare_paginated_list, median, proc_status_kib, record,
                    save_json)

METADATA_ACCEPT = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                   "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                   "application/json")


def populate(cluster, n, threads=8):
    payload = "x" * 1024
    lock = threading.Lock()
    conns = threading.local()

    def post(path, body):
        if not hasattr(conns, "c"):
            conns.c = cluster.connection()
        conns.c.request("POST", path, body=json.dumps(body),
                        headers={"Content-Type": "application/json"})
        r = conns.c.getresponse()
        data = r.read()
        assert r.status in (201, 409), data[:300]

    def one(i):
        ns = f"bench-{i:05d}"
        post("/api/v1/namespaces", {"metadata": {"name": ns, "labels": {"bench": "yes"}}})
        post(f"/api/v1/namespaces/{ns}/configmaps",
             {"metadata": {"name": "payload"}, "data": {"payload": payload}})

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(one, range(n)))
    with lock:
        print(f"created {n} namespaces + {n} configmaps in {time.monotonic() - t0:.1f}s")


def settle(cluster, n, timeout=900):
    """Wait until kube-controller-manager has created every default ServiceAccount."""
    conn = cluster.connection()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn.request("GET", "/api/v1/serviceaccounts?limit=1",
                     headers={"Accept": "application/json"})
        r = conn.getresponse()
        body = json.loads(r.read())
        remaining = body["metadata"].get("remainingItemCount", 0) + len(body["items"])
        if remaining >= n:
            return
        time.sleep(2)
    raise SystemExit("kube-controller-manager did not settle")


def floor_run(cluster, page):
    def ns():
        return bare_paginated_list(cluster.connection(), "/api/v1/namespaces", page,
                                   METADATA_ACCEPT)

    def cms():
        return bare_paginated_list(cluster.connection(), "/api/v1/configmaps", page)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        a, b = ex.submit(ns), ex.submit(cms)
        (pa, ba), (pb, bb) = a.result(), b.result()
    return time.monotonic() - t0, pa + pb, ba + bb


def landlord_run(cluster, page):
    t0 = time.monotonic()
    out = subprocess.run([BUILD / "informer_probe", "--kubeconfig", cluster.kubeconfig("admin"),
                          "--metadata-only", "v1/namespaces", "--resource", "v1/configmaps",
                          "--page-size", str(page), "--sync-report"], check=True,
                         capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    report = json.loads(out.strip().splitlines()[-1])
    report["wall_seconds"] = wall
    return report


def idle_rss(cluster, tmp):
    cluster.kubectl("apply", "-f", REPO / "deploy/namespace.yaml", "-f", REPO / "deploy/crds",
                    "-f", REPO / "deploy/rbac.yaml")
    for _ in range(60):  # kubectl wait fails while a new CRD has no conditions yet
        try:
            cluster.kubectl("wait", "--for", "condition=established", "crd/tenants.landlord.dev")
            break
        except subprocess.CalledProcessError:
            time.sleep(1)
    log = open(os.path.join(tmp, "landlord-idle.log"), "w")
    p = subprocess.Popen([BUILD / "landlord", "run", "--kubeconfig",
                          cluster.kubeconfig("landlord"), "--leader-elect", "false",
                          "--probe-addr", "127.0.0.1:0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "workers started" in open(log.name).read():
                break
            time.sleep(0.1)
        time.sleep(2)
        return (proc_status_kib(p.pid, "VmRSS"), proc_status_kib(p.pid, "VmHWM"),
                proc_status_kib(p.pid, "RssAnon"))
    finally:
        p.terminate()
        p.wait(30)


def per_kind(report):
    """Cache bytes per object for each informer (landlord_informer_bytes / objects)."""
    return {i["resource"]: i["bytes"] / max(i["objects"], 1) for i in report["informers"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--page-size", type=int, default=500)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-cluster"))
    args = ap.parse_args()

    with Cluster(args.state_dir) as cluster:
        idle_kib, idle_hwm, idle_anon = idle_rss(cluster, args.state_dir)
        populate(cluster, args.objects)
        settle(cluster, args.objects)
        floors, runs = [], []
        for i in range(args.runs):
            f = floor_run(cluster, args.page_size)
            r = landlord_run(cluster, args.page_size)
            floors.append(f[0])
            runs.append(r)
            print(f"run {i + 1}: floor {f[0]:.3f}s ({f[1]} pages, {f[2] / 1e6:.1f} MB) | "
                  f"landlord sync {r['sync_seconds']:.3f}s, {r['objects']} objects, "
                  f"RSS {r['rss_kib'] / 1024:.1f} MiB, HWM {r['hwm_kib'] / 1024:.1f} MiB, "
                  f"PSS {r['pss_kib'] / 1024:.1f} MiB | " +
                  ", ".join(f"{k} {v:.0f} B/object" for k, v in per_kind(r).items()))

    floor = median(floors)
    sync = median([r["sync_seconds"] for r in runs])
    rss = median([r["rss_kib"] for r in runs])
    hwm = median([r["hwm_kib"] for r in runs])
    anon = median([r["anon_kib"] for r in runs])
    base = median([r["rss_before_kib"] for r in runs])
    pss = median([r["pss_kib"] for r in runs])
    pss_anon = median([r["pss_anon_kib"] for r in runs])
    objects = runs[0]["objects"]
    per_obj = (rss - base) * 1024 / objects
    kinds = {k: median([per_kind(r)[k] for r in runs]) for k in per_kind(runs[0])}
    counts = {i["resource"]: i["objects"] for i in runs[0]["informers"]}
    result = {"objects": objects, "runs": args.runs, "page_size": args.page_size,
              "floor_seconds": floors, "landlord": runs, "idle_rss_kib": idle_kib,
              "idle_hwm_kib": idle_hwm, "idle_anon_kib": idle_anon, "median_floor_s": floor,
              "median_sync_s": sync, "ratio": sync / floor, "median_rss_kib": rss,
              "median_hwm_kib": hwm, "median_anon_kib": anon, "median_pss_kib": pss,
              "median_pss_anon_kib": pss_anon, "bytes_per_object": per_obj,
              "cache_bytes_per_object": kinds}
    save_json("informer_sync", result)
    record("Informer initial sync and cache memory", f"""
`bench/informer_sync.py` (`make bench`): {args.objects:,} namespaces (metadata-only informer) and
{args.objects:,} ConfigMaps of 1 KiB (full objects) in a private local control plane, after
kube-controller-manager settled. Objects are cached as compact documents (lib/base/jdoc.h)
without managedFields. Floor: a bare keep-alive HTTPS
client doing the same paginated LISTs (page size {args.page_size}, same Accept headers, both
resources concurrently), reading every byte. Medians of {args.runs} alternating runs on 2 shared
cores.

| measure | landlord | floor | ratio / target |
|---|---|---|---|
| initial sync of {objects:,} objects | {sync:.2f} s | {floor:.2f} s | **{sync / floor:.2f}x** (target <= 1.2x) |
| cache per metadata-only namespace ({counts.get("namespaces", 0):,}) | {kinds.get("namespaces", 0):.0f} B | | target <= 600 B |
| cache per ConfigMap ({counts.get("configmaps", 0):,}, 1 KiB data) | {kinds.get("configmaps", 0):.0f} B | | target <= 1.6 KB |
| RSS after sync | {rss / 1024:.1f} MiB | | target <= 64 MiB |
| of which private (RssAnon) | {anon / 1024:.1f} MiB | | the rest is shared library code |
| PSS (smaps_rollup) / of it anonymous | {pss / 1024:.1f} / {pss_anon / 1024:.1f} MiB | | |
| peak RSS (VmHWM) during sync | {hwm / 1024:.1f} MiB | | |
| RSS before any informer (client only) | {base / 1024:.1f} MiB | | |
| idle `landlord run`, nothing cached | {idle_kib / 1024:.1f} MiB (private {idle_anon / 1024:.1f}) | | see "Idle memory" |
| RSS per cached object | {per_obj:.0f} bytes | | (RSS after - before) / objects |

Raw numbers: `bench/results/informer_sync.json`.
""")
    print(json.dumps({k: v for k, v in result.items() if k not in ("landlord",)}, indent=1))


if __name__ == "__main__":
    main()
