"""The C library's live tests (cmocka executables) against the session's control plane.

The unit-test executables of the client, informer, discovery, lease and manager modules have live
tests that run only when LANDLORD_TEST_KUBECONFIG is set; here they always run, under ASan and
UBSan when the asan build exists, and a skipped test counts as a failure. With
LANDLORD_LIVE_BUILD=tsan they run the ThreadSanitizer build instead (make tsan; .ci/run does).
"""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
LIVE_MODULES = ("kube", "kube_request", "kube_watch", "informer", "discovery", "lease", "manager")


BUILDS = (os.environ["LANDLORD_LIVE_BUILD"],) if os.environ.get("LANDLORD_LIVE_BUILD") \
    else ("asan", "release")


def built_test_binary(name):
    for build in BUILDS:
        path = REPO / "build" / build / f"test_{name}"
        if path.exists():
            return path
    pytest.fail(f"test_{name} is not built in build/{'|'.join(BUILDS)}; run 'make asan'")


@pytest.mark.parametrize("module", LIVE_MODULES)
def test_live_module_tests_pass_against_the_real_api_server(cluster, module):
    env = {**os.environ,
           "LANDLORD_TEST_KUBECONFIG": cluster.kubeconfig("admin"),
           "LANDLORD_TEST_STATE_DIR": str(cluster.state_dir),
           "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
           "TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1:"
                           f"suppressions={REPO / 'tsan.supp'}"}
    r = subprocess.run([built_test_binary(module)], env=env, capture_output=True, text=True,
                       timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "SKIPPED" not in out, f"live tests were skipped:\n{out[-3000:]}"
    assert "PASSED" in out, out[-3000:]
