#!/usr/bin/env python3
"""Run every benchmark in bench/ and record the results in docs/benchmarks.md."""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
for script in ("informer_sync.py", "tenants.py", "restart.py", "idle.py", "plan_status.py",
               "quota_window.py", "admission_latency.py", "webhook_pods.py", "templates.py",
               "helm.py", "hibernation.py"):
    subprocess.run([sys.executable, here / script, *sys.argv[1:]], check=True)
