"""--helm-binary (issue 14, point 2; docs/helm.md) on the real control plane: `landlord run` with
the pinned Helm 4 (tests/cluster/build-helm.sh) logs its version and starts; given a binary
that says it is Helm 3 (a shell script here, standing in for a wrong binary) or one that cannot
run, `landlord run` and `landlord controller` refuse to start, before they connect, with one
line naming the path and what to give, and exit 1. Without the flag no helm runs."""

from charts import pinned, versions
from procs import start_controllers, start_landlord

WRONG = "landlord needs Helm 4 (v4.x): give a Helm 4 binary"


def refused(proc):
    """@proc exited 1 with exactly one error record, before connecting; its error line."""
    assert proc.popen.wait(30) == 1, proc.log_path.read_text()
    errors = [r for r in proc.records() if r.get("level") == "error"]
    assert [r["msg"] for r in errors] == ["landlord cannot use its Helm binary"], errors
    assert not proc.find("connected to the API server")
    assert "\n" not in errors[0]["error"]
    return errors[0]["error"]


def test_landlord_starts_with_helm_4_and_logs_its_version(installed, tmp_path):
    helm = str(pinned("helm"))
    p = start_controllers(installed, tmp_path, "--helm-binary", helm)
    rec = p.wait_record("helm binary")
    assert (rec["path"], rec["version"]) == (helm, versions()["HELM_VERSION"]), rec
    p.wait_record("connected to the API server")
    assert p.stop() == 0, p.log_path.read_text()[-4000:]
    # without the flag, no helm runs
    q = start_controllers(installed, tmp_path, name="no-helm")
    q.wait_record("connected to the API server")
    assert not q.find("helm binary") and not q.find("landlord cannot use its Helm binary")
    assert q.stop() == 0


def test_another_major_version_is_refused_with_one_line(installed, tmp_path):
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\necho v3.15.0\n")
    fake.chmod(0o755)
    p = start_landlord(installed, tmp_path, "run", "--leader-elect", "false",
                       "--helm-binary", str(fake))
    assert refused(p) == f"--helm-binary {fake}: helm v3.15.0, {WRONG}"
    # the variable, and `landlord controller`, alike
    p = start_landlord(installed, tmp_path, "controller", "--leader-elect", "false",
                       name="controller", env={"LANDLORD_HELM_BINARY": str(fake)})
    assert refused(p) == f"--helm-binary {fake}: helm v3.15.0, {WRONG}"


def test_a_binary_that_cannot_run_is_refused_naming_path_and_errno(installed, tmp_path):
    missing = tmp_path / "no-such-helm"
    p = start_landlord(installed, tmp_path, "run", "--leader-elect", "false",
                       "--helm-binary", str(missing))
    assert refused(p) == (f"--helm-binary {missing}: cannot run it: No such file or directory "
                          "(ENOENT)")
    plain = tmp_path / "helm-not-executable"
    plain.write_text("#!/bin/sh\necho v4.3.1\n")
    plain.chmod(0o644)
    p = start_landlord(installed, tmp_path, "run", "--leader-elect", "false",
                       "--helm-binary", str(plain), name="plain")
    assert refused(p) == f"--helm-binary {plain}: cannot run it: Permission denied (EACCES)"
