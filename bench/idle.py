#!/usr/bin/env python3
"""Idle memory of `landlord run`, mapping by mapping, against the libcurl floor.

A private control plane with landlord's CRDs, RBAC and namespace and nothing else. landlord
(`landlord run --leader-elect=false`, least-privilege identity) runs until its workers have
started and its caches are synced, then idles for a few seconds; its /proc/PID/smaps is read and
grouped by what is mapped (each shared library, the binary, the heap, anonymous mappings such as
malloc arenas and thread stacks). The floor is tests/tools/curl_floor: a process that only
initialises Debian's libcurl and makes one HTTPS request with a client certificate. Both are
measured in the same run; medians of N runs.
"""

import argparse
import collections
import os
import subprocess
import sys
import time

from common import BUILD, REPO, Cluster, median, record, save_json


def smaps(pid):
    """{mapping: {"rss": kB, "pss": kB, "anon": kB}} and the totals, from /proc/PID/smaps."""
    groups = collections.defaultdict(lambda: collections.Counter())
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                path = parts[5] if len(parts) > 5 else "[anon]"
                name = os.path.basename(path) if path.startswith("/") else path
                if name.startswith("[stack:"):
                    name = "[stack]"
                continue
            key = {"Rss:": "rss", "Pss:": "pss", "Anonymous:": "anon"}.get(parts[0])
            if key:
                groups[name][key] += int(parts[1])
    total = collections.Counter()
    for g in groups.values():
        total.update(g)
    return {k: dict(v) for k, v in groups.items()}, dict(total)


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def wait_line(path, text, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in open(path).read():
            return
        time.sleep(0.1)
    raise SystemExit(f"'{text}' never appeared in {path}")


def measure(argv, log, ready_text, settle):
    with open(log, "w") as out:
        p = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_line(log, ready_text)
        time.sleep(settle)
        groups, total = smaps(p.pid)
        return {"groups": groups, "total": total, "threads": threads(p.pid)}
    finally:
        p.terminate()
        p.wait(30)


def install(cluster):
    cluster.kubectl("apply", "-f", REPO / "deploy/namespace.yaml", "-f",
                    REPO / "deploy/crds", "-f", REPO / "deploy/rbac.yaml")
    for _ in range(60):
        try:
            cluster.kubectl("wait", "--for", "condition=established", "crd/tenants.landlord.dev")
            return
        except subprocess.CalledProcessError:
            time.sleep(1)


def one_run(state, settle):
    with Cluster(state) as cluster:
        install(cluster)
        pki = cluster.dir / "pki"
        landlord = measure([BUILD / "landlord", "run", "--kubeconfig",
                            cluster.kubeconfig("landlord"), "--leader-elect", "false",
                            "--probe-addr", "127.0.0.1:0"],
                           f"{state}-landlord.log", "workers started", settle)
        floor = measure([BUILD / "curl_floor", "--url", cluster.env["API_URL"] + "/version",
                         "--cacert", cluster.env["CA"], "--cert", pki / "admin.crt",
                         "--key", pki / "admin.key"], f"{state}-floor.log", "ready", settle)
    return landlord, floor


def med(runs, who, group, key):
    return median([r[who]["groups"].get(group, {}).get(key, 0) for r in runs])


def table(runs):
    """Rows for every mapping that holds at least 64 KiB in either process."""
    names = set()
    for r in runs:
        for who in ("landlord", "floor"):
            names |= {g for g, v in r[who]["groups"].items() if v.get("rss", 0) >= 64}
    rows = []
    for g in sorted(names, key=lambda g: -med(runs, "landlord", g, "rss")):
        rows.append((g, med(runs, "landlord", g, "rss"), med(runs, "landlord", g, "anon"),
                     med(runs, "floor", g, "rss"), med(runs, "floor", g, "anon")))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--settle", type=float, default=5.0, help="idle seconds before reading")
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-idle"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        ll, fl = one_run(f"{args.state_dir}-{i}", args.settle)
        runs.append({"landlord": ll, "floor": fl})
        print(f"run {i + 1}: landlord RSS {ll['total']['rss'] / 1024:.1f} MiB "
              f"(anon {ll['total']['anon'] / 1024:.1f}, PSS {ll['total']['pss'] / 1024:.1f}, "
              f"{ll['threads']} threads) | floor RSS {fl['total']['rss'] / 1024:.1f} MiB "
              f"(anon {fl['total']['anon'] / 1024:.1f})", flush=True)
    tot = {who: {k: median([r[who]["total"][k] for r in runs]) for k in ("rss", "pss", "anon")}
           for who in ("landlord", "floor")}
    summary = {"runs": args.runs, "settle_seconds": args.settle, "total": tot,
               "threads": median([r["landlord"]["threads"] for r in runs]),
               "by_mapping": table(runs)}
    if args.no_record:
        print(summary)
        return
    save_json("idle", {"summary": summary, "runs": runs})
    mib = lambda kib: f"{kib / 1024:.2f}"  # noqa: E731
    rows = "\n".join(f"| `{g}` | {mib(a)} | {mib(b)} | {mib(c)} | {mib(d)} |"
                     for g, a, b, c, d in summary["by_mapping"])
    L, F = tot["landlord"], tot["floor"]
    record("Idle memory", f"""
`python3 bench/idle.py`: `landlord run` (`--leader-elect=false`, least-privilege identity, CRDs
installed, nothing to reconcile) once its workers have started and its caches are synced, idle
for {args.settle:g} s; against the floor `tests/tools/curl_floor`, a process that only
initialises Debian's libcurl and makes one HTTPS request with a client certificate. Both read
from `/proc/PID/smaps` in the same run; medians of {args.runs} runs.

| measure | landlord | floor | target |
|---|---|---|---|
| RSS | {mib(L['rss'])} MiB | {mib(F['rss'])} MiB | landlord <= 11 MiB |
| private (RssAnon) | {mib(L['anon'])} MiB | {mib(F['anon'])} MiB | landlord <= 2.5 MiB |
| PSS | {mib(L['pss'])} MiB | {mib(F['pss'])} MiB | reported |
| threads | {summary['threads']:g} | 1 | |

By mapping (MiB; mappings of at least 64 KiB in either process):

| mapping | landlord RSS | landlord private | floor RSS | floor private |
|---|---|---|---|---|
{rows}

Raw numbers: `bench/results/idle.json`.
""")


if __name__ == "__main__":
    sys.exit(main())
