"""landlord under valgrind memcheck through a run with churn: zero errors, nothing leaked."""

import re
import shutil
import time
import uuid

import pytest
from kubernetes import client as k8s

from procs import LANDLORD, Proc
from test_landlord import installed  # noqa: F401 (fixture)

GROUP, VERSION, PLURAL = "landlord.dev", "v1alpha1", "tenants"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_memcheck_clean_through_tenant_churn(installed, tmp_path):  # noqa: F811
    api = k8s.CustomObjectsApi(installed.client("admin"))
    argv = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--error-exitcode=99", "--track-fds=no", "--num-callers=30",
            f"--log-file={tmp_path}/valgrind.log", LANDLORD, "run",
            "--kubeconfig", installed.kubeconfig("landlord"), "--probe-addr", "127.0.0.1:0",
            "--lease-duration", "15s", "--renew-deadline", "10s", "--retry-period", "2s"]
    proc = Proc(argv, tmp_path / "landlord.log")
    names = [f"vg-{uuid.uuid4().hex[:6]}-{i}" for i in range(12)]
    try:
        proc.wait_probe(timeout=180)
        installed.wait_for(lambda: proc.metric("landlord_leader") == 1.0, timeout=120,
                           what="leadership under valgrind")
        deadline = time.monotonic() + 45
        round_ = 0
        while time.monotonic() < deadline:
            for n in names:
                body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant",
                        "metadata": {"name": n}, "spec": {"plan": f"p{round_}"}}
                if round_ == 0:
                    api.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
                else:
                    api.patch_cluster_custom_object(GROUP, VERSION, PLURAL, n,
                                                    {"spec": {"plan": f"p{round_}"}})
            round_ += 1
            time.sleep(2)
        for n in names[:6]:
            api.delete_cluster_custom_object(GROUP, VERSION, PLURAL, n)
        installed.wait_for(lambda: proc.metric("landlord_reconcile_total") >= len(names) * 2,
                           timeout=120, what="reconciles under valgrind")
    finally:
        code = proc.stop(timeout=120)
        for n in names[6:]:
            try:
                api.delete_cluster_custom_object(GROUP, VERSION, PLURAL, n)
            except k8s.exceptions.ApiException:
                pass
    report = (tmp_path / "valgrind.log").read_text()
    assert code == 0, report[-6000:]
    assert re.search(r"ERROR SUMMARY: 0 errors", report), report[-6000:]
    assert "definitely lost: 0 bytes" in report or "no leaks are possible" in report, \
        report[-6000:]
