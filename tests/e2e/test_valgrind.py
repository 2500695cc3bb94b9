"""landlord under valgrind memcheck through a run with churn: zero errors, nothing leaked."""

import re
import shutil
import time

import pytest

import tenants
from kube import GROUP, VERSION, custom, ignore_404, short_id
from procs import LANDLORD, Proc

PLURAL = "tenants"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_memcheck_clean_through_tenant_churn(installed, tmp_path):
    api = custom(installed)
    argv = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--error-exitcode=99", "--track-fds=no", "--num-callers=30",
            f"--log-file={tmp_path}/valgrind.log", LANDLORD, "run",
            "--kubeconfig", installed.kubeconfig("landlord"), "--probe-addr", "127.0.0.1:0",
            "--webhook-addr", "127.0.0.1:0", "--lease-duration", "15s", "--renew-deadline", "10s", "--retry-period", "2s"]
    proc = Proc(argv, tmp_path / "landlord.log")
    names = [f"vg-{short_id()}-{i}" for i in range(12)]
    try:
        proc.wait_probe(timeout=180)
        installed.wait_for(lambda: proc.metric("landlord_leader") == 1.0, timeout=120,
                           what="leadership under valgrind")
        deadline = time.monotonic() + 45
        round_ = 0
        while time.monotonic() < deadline:
            for n in names:
                if round_ == 0:
                    tenants.create_tenant(installed, n, f"p{round_}")
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
            ignore_404(api.delete_cluster_custom_object, GROUP, VERSION, PLURAL, n)
    report = (tmp_path / "valgrind.log").read_text()
    assert code == 0, report[-6000:]
    assert re.search(r"ERROR SUMMARY: 0 errors", report), report[-6000:]
    assert "definitely lost: 0 bytes" in report or "no leaks are possible" in report, \
        report[-6000:]
