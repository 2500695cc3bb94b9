"""The real CRDs of KEDA, Argo CD and Argo Rollouts, at the versions pinned in
tests/cluster/versions.env, for tests of tenants that use them: tests/cluster/ecosystem-crds.sh
fetches each set from its Go module once (checked against the pinned zip hash, cached outside the
repository, never committed) and prints the files; install_ecosystem_crds() applies them."""

import subprocess

import pytest

from conftest import run_script

SETS = ("keda", "argocd", "rollouts")


def install_ecosystem_crds(cluster, *which, only=None):
    """Apply the CRDs of the named sets (any of SETS; none: all three) as the cluster admin and
    wait until every one is established; returns their names. Applied server-side, like
    conftest.install_gateway_api: most of these CRDs (Argo CD's ApplicationSet is 1.5 MB) are far
    too large for the annotation of a client-side apply. Applying again is harmless. @only: the
    files whose names start with one of these prefixes (e.g. "appproject"), not the whole set."""
    try:
        files = run_script("ecosystem-crds.sh", *which).stdout.split()
    except subprocess.CalledProcessError as e:
        pytest.fail(f"ecosystem-crds.sh {' '.join(which)} failed:\n{e.stderr}")
    if only:
        files = [f for f in files if any(f.rsplit("/", 1)[-1].startswith(o) for o in only)]
        assert files, f"no CRD file of {which} starts with any of {only}"
    r = cluster.kubectl("admin", "apply", "--server-side", "--force-conflicts", "-o", "name",
                        *(a for f in files for a in ("-f", f)))
    assert r.returncode == 0, r.stderr
    names = [line.split("/", 1)[1] for line in r.stdout.split()]
    cluster.wait_crds_established(*names)
    return names
