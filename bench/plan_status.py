#!/usr/bin/env python3
"""Plan status with 1,000 and 5,000 tenants on one plan whose usage keeps changing.

Runs build/release/bench_plan_status (bench/plan_status.c) RUNS times per tenant count and
records the medians in docs/benchmarks.md. Each run: the Plan controller in the real manager
against the in-process fake API server (tests/fake; no control plane), one Plan with five
resources and N Tenants carrying the status the Tenant controller would give them; RATE tenants a
second change their usage for SECONDS seconds. Measured: the Plan status written (bytes, writes
a second), the plan reconcile's mean time, tenants read again and summaries built, the summary's
memory per tenant, and a restart's writes. Floors and baselines from the same run: the status
the old controller wrote (perTenant: every tenant's namespaces, used and hard) for the same
tenants; one write a second (the coalescing interval: a plan whose tenants change every second
needs that many); building the summary afresh from every tenant (a non-incremental reconcile)
and the old perTenant tree.
"""

import argparse
import json
import subprocess

from common import BUILD, REPO, median, record, save_json


def build():
    subprocess.run(["cmake", "--preset", "release"], cwd=REPO, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "--preset", "release", "--target", "bench_plan_status"],
                   cwd=REPO, check=True, capture_output=True)


def one_run(tenants, args, seed):
    out = subprocess.run([BUILD / "bench_plan_status", "--tenants", str(tenants), "--rate",
                          str(args.rate), "--seconds", str(args.seconds), "--seed", str(seed)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def medians(runs):
    def m(part, key):
        return median([r[part][key] for r in runs])
    c, b = "controller", "baseline"
    return {"status_bytes": m(c, "max_status_bytes"), "first_status_bytes": m(c, "first_status_bytes"),
            "old_status_bytes": m(b, "old_status_bytes"),
            "writes_per_s": median([r[c]["writes"] / r[c]["drive_seconds"] for r in runs]),
            "changes_per_s": median([r[c]["changes"] / r[c]["drive_seconds"] for r in runs]),
            "reconcile_mean_us": m(c, "reconcile_mean_us"),
            "reconciles_per_change": median([r[c]["reconciles"] / r[c]["changes"] for r in runs]),
            "updates_per_change": median([r[c]["tenant_updates"] / r[c]["changes"] for r in runs]),
            "summary_build_us": m(b, "summary_build_us"), "old_tree_us": m(b, "old_tree_us"),
            "summary_bytes_per_tenant": m(b, "summary_bytes_per_tenant"),
            "first_status_ms": m(c, "first_status_ms"), "lag_ms": m(c, "lag_ms"),
            "max_builds_while_driving": max(r[c]["builds_while_driving"] for r in runs),
            "max_restart_writes": max(r[c]["restart_writes"] for r in runs),
            "max_first_writes": max(r[c]["first_writes"] for r in runs)}


def rows(s):
    """(measure, {tenants: value}, floor, ratio) for the table."""
    def kib(n):
        return f"{n / 1024:.1f} KiB"
    out = []
    for n, v in s.items():
        out.append({
            "status": (kib(v["status_bytes"]), kib(v["old_status_bytes"]),
                       f"{v['status_bytes'] / v['old_status_bytes']:.3f}x"),
            "writes": (f"{v['writes_per_s']:.2f}", "1.00", f"{v['writes_per_s']:.2f}x"),
            "reconcile": (f"{v['reconcile_mean_us']:.0f} us", f"{v['summary_build_us']:.0f} us",
                          f"{v['reconcile_mean_us'] / v['summary_build_us']:.3f}x"),
            "old_tree": (f"{v['old_tree_us']:.0f} us", "", ""),
            "memory": (f"{v['summary_bytes_per_tenant']:.0f} B", "", ""),
            "first": (f"{v['first_status_ms']:.0f} ms", "", ""),
            "updates": (f"{v['updates_per_change']:.2f}", "", ""),
            "writes_other": (f"{v['max_first_writes']:.0f}, {v['max_builds_while_driving']:.0f}, "
                             f"{v['max_restart_writes']:.0f}", "", ""),
        })
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", default="1000,5000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    build()
    counts = [int(x) for x in args.tenants.split(",")]
    runs = {n: [] for n in counts}
    for i in range(args.runs):
        for n in counts:
            r = one_run(n, args, 0x9e3779b97f4a7c15 + 2 * i)
            runs[n].append(r)
            c = r["controller"]
            print(f"{n} tenants, run {i + 1}: status {c['max_status_bytes']} B, "
                  f"{c['writes']} writes in {c['drive_seconds']:.0f} s, reconcile "
                  f"{c['reconcile_mean_us']:.0f} us, restart writes {c['restart_writes']}",
                  flush=True)
    summary = {n: medians(rs) for n, rs in runs.items()}
    print(json.dumps(summary, indent=2))
    if args.no_record:
        return
    save_json("plan_status", {"rate": args.rate, "seconds": args.seconds, "runs": args.runs,
                              "summary": summary, "raw": runs})
    cols = rows(summary)
    head = " | ".join(f"{n:,} tenants" for n in counts)

    def line(label, key, target=""):
        vals = " | ".join(c[key][0] for c in cols)
        floors = " / ".join(c[key][1] for c in cols if c[key][1])
        ratios = " / ".join(c[key][2] for c in cols if c[key][2])
        ratios = f"{ratios} ({target})" if ratios and target else ratios or target
        return f"| {label} | {vals} | {floors} | {ratios} |"
    record("Plan status at 1,000 tenants", f"""
`python3 bench/plan_status.py`: the Plan controller in the real manager against the in-process
fake API server (`bench/plan_status.c`; no control plane, so the numbers are the controller's
own), one Plan with five resources (bench/tenants.py's) and N Tenants on it with the status the
Tenant controller gives them (4 namespaces, quota used and hard); {args.rate} tenants a second
change their usage for {args.seconds} s. Floors and baselines are measured in the same run from
the same tenants: the status the old controller wrote (`perTenant`), one write a second (the
coalescing interval), and a reconcile that builds the summary afresh from every tenant.
Medians of {args.runs} runs per size, on 2 shared cores.

| measure | {head} | floor / before | ratio / target |
|---|{"---|" * len(counts)}---|---|
{line("Plan status written (largest) / the old perTenant status", "status", "target < 64 KiB")}
{line(f"status writes a second, {args.rate} tenant changes a second", "writes", "target <= 1")}
{line("plan reconcile, mean / building the summary afresh", "reconcile")}
{line("building the old perTenant tree once", "old_tree")}
{line("summary memory per tenant", "memory")}
{line("first status after a start (summary built from the cache)", "first")}
{line("tenants read again per change", "updates")}
{line("writes at start, summaries rebuilt while driving, writes by a restart", "writes_other", "1, 0, 0")}

Raw numbers: `bench/results/plan_status.json`.
""")


if __name__ == "__main__":
    main()
