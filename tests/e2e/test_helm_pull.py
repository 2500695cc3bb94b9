"""The chart pull cache (issue 14; src/templates/helm_pull.h) with the pinned Helm 4, driven by
tests/tools/helm_drive: charts pulled from the real OCI registry of tests/e2e/charts.py (TLS from
a test CA, htpasswd) and from its chart repository behind basic auth (here over TLS too), with
the password on helm_drive's stdin and then helm's, never in a process's arguments or
environment; a cached chart reused without running helm; one helm pull for many threads; Helm's
messages for a wrong password and a missing version. No control plane is needed."""

import hashlib
import json
import os
import pathlib
import secrets
import subprocess
import threading
import time

import pytest

from charts import CHARTS, ChartRepo, Helm, Registry, pinned
from helm_env import helm_running, holders
from helm_env import silent_server  # noqa: F401 (a fixture of this module's tests)
from procs import BUILD

DRIVE = BUILD / "helm_drive"
CHART, VERSION = "hello", "0.1.0"
EACCES, ENOENT, ETIMEDOUT = -13, -2, -110


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def pull(cache, url, *chart_version, username=None, password=None, ca_file=None, parallel=1,
         helm=None, tmpdir=None, timeout_ms=30000):
    """One helm_drive pull into @cache, the password on its stdin: its JSON line."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if tmpdir:
        env["TMPDIR"] = str(tmpdir)
    cmd = [str(DRIVE), "--helm", str(helm or pinned("helm")), "--cache", str(cache),
           "--parallel", str(parallel), "--timeout-ms", str(timeout_ms)]
    if username:
        cmd += ["--username", username, "--password-file", "-"]
    if ca_file:
        cmd += ["--ca-file", str(ca_file)]
    cmd += ["pull", url, *chart_version]
    r = subprocess.run(cmd, input=password or "", capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.stdout.strip(), f"helm_drive printed nothing: {r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert (r.returncode == 0) == (out["rc"] == 0), (r.returncode, out, r.stderr)
    return out


@pytest.fixture(scope="module")
def tgz(tmp_path_factory):
    d = tmp_path_factory.mktemp("packaged")
    return Helm(d / "helm").package(CHARTS / CHART, d)


@pytest.fixture(scope="module")
def registry(tgz, tmp_path_factory):
    """The registry with the chart pushed to oci://<host>/charts/hello:0.1.0."""
    with Registry(tmp_path_factory.mktemp("registry")) as reg:
        pusher = Helm(tmp_path_factory.mktemp("pusher"))
        pusher.registry_login(reg)
        pusher.push(tgz, reg)
        yield reg


def oci_pull(registry, cache, password=None, version=VERSION, **kw):
    return pull(cache, registry.oci(f"charts/{CHART}"), version, username=registry.username,
                password=password or registry.password, ca_file=registry.ca_file, **kw)


def test_oci_pull_with_credentials_and_ca_then_cached(registry, tgz, tmp_path):
    cache = tmp_path / "cache"
    seen = len(registry.access())
    out = oci_pull(registry, cache)
    assert (out["rc"], out["outcome"], out["message"]) == (0, "ok", ""), out
    got = pathlib.Path(out["path"])
    assert got.parent == cache and got.name.endswith(".tgz") and len(got.stem) == 64
    assert sha256(got) == sha256(tgz)
    assert got.stat().st_mode & 0o777 == 0o600 and cache.stat().st_mode & 0o777 == 0o700
    assert list(cache.iterdir()) == [got]
    assert 200 in registry.access("GET", f"/v2/charts/{CHART}/manifests/{VERSION}")[-1:]
    before, asked = got.stat(), len(registry.access())
    assert asked > seen

    # Cached: no helm runs (a "helm" that cannot pull does), the registry is not asked.
    again = oci_pull(registry, cache, helm="/bin/false")
    assert (again["rc"], again["path"]) == (0, out["path"]), again
    after = got.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(registry.access()) == asked


def test_repo_pull_with_credentials_and_ca_then_cached_with_the_server_stopped(tgz, tmp_path):
    cache = tmp_path / "cache"
    with ChartRepo(tmp_path / "repo", [tgz], Helm(tmp_path / "helm"), tls=True) as repo:
        url = repo.url
        assert url.startswith("https://")
        kw = dict(username=repo.username, password=repo.password, ca_file=repo.ca_file)
        out = pull(cache, url, CHART, VERSION, **kw)
        assert (out["rc"], out["outcome"]) == (0, "ok"), out
        assert sha256(out["path"]) == sha256(tgz)
        assert [r for r in repo.requests if r[1] == f"/{tgz.name}"] == \
            [("GET", f"/{tgz.name}", True)]
        before = pathlib.Path(out["path"]).stat()
    # The server is gone: the same source still pulls, from the cache, without helm.
    again = pull(cache, url, CHART, VERSION, **kw)
    assert (again["rc"], again["path"]) == (0, out["path"]), again
    after = pathlib.Path(out["path"]).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # Credentials and CA do not change the chart, nor its key: still the cached file.
    assert pull(cache, url, CHART, VERSION, username=kw["username"],
                password=kw["password"])["rc"] == 0


@pytest.fixture(scope="module")
def repo(tgz, tmp_path_factory):
    d = tmp_path_factory.mktemp("chart-repo")
    with ChartRepo(d / "repo", [tgz], Helm(d / "helm")) as r:
        yield r


def test_a_wrong_password_is_refused_with_helms_message(registry, repo, tmp_path):
    out = oci_pull(registry, tmp_path / "c1", password="not-" + registry.password)
    assert (out["rc"], out["outcome"], out["path"]) == (EACCES, "failed", ""), out
    assert "401" in out["message"] and "unauthorized" in out["message"], out
    assert "reason" not in out
    out = pull(tmp_path / "c2", repo.url, CHART, VERSION, username=repo.username,
               password="not-" + repo.password)
    assert (out["rc"], out["outcome"]) == (EACCES, "failed"), out
    assert "401 Unauthorized" in out["message"], out
    # no credentials at all: the repository demands them
    out = pull(tmp_path / "c3", repo.url, CHART, VERSION)
    assert out["rc"] == EACCES, out
    assert [list((tmp_path / d).iterdir()) for d in ("c1", "c2", "c3")] == [[], [], []]


def test_a_missing_version_is_chart_not_found(registry, repo, tmp_path):
    out = oci_pull(registry, tmp_path / "c1", version="9.9.9")
    assert (out["rc"], out["reason"]) == (ENOENT, "ChartNotFound"), out
    assert out["message"].endswith(f"/charts/{CHART}:9.9.9: not found"), out
    out = pull(tmp_path / "c2", repo.url, CHART, "9.9.9", username=repo.username,
               password=repo.password)
    assert (out["rc"], out["reason"]) == (ENOENT, "ChartNotFound"), out
    assert "no chart version found" in out["message"], out
    out = pull(tmp_path / "c3", repo.url, "nope", VERSION, username=repo.username,
               password=repo.password)
    assert (out["rc"], out["reason"]) == (ENOENT, "ChartNotFound"), out


def test_a_bad_source_runs_nothing(tmp_path):
    out = pull(tmp_path / "c", "ftp://127.0.0.1/charts", CHART, VERSION)
    assert (out["rc"], out["outcome"]) == (-22, "not-started"), out
    assert out["message"] == \
        "chart source: repoUrl: must start with https://, http:// or oci://", out


def test_many_threads_one_helm_pull(registry, repo, tgz, tmp_path):
    """Eight threads pull one chart into a fresh cache: the registry sees what one pull makes
    it see (the same requests as a lone pull before), the repository one download."""
    seen = len(registry.access())
    assert oci_pull(registry, tmp_path / "lone")["rc"] == 0
    lone = registry.access()[seen:]
    out = oci_pull(registry, tmp_path / "many", parallel=8)
    assert out["rcs"] == [0] * 8, out
    assert registry.access()[seen + len(lone):] == lone
    assert len(list((tmp_path / "many").iterdir())) == 1

    fetched = len([r for r in repo.requests if r[1] == f"/{tgz.name}"])
    out = pull(tmp_path / "repo-many", repo.url, CHART, VERSION, username=repo.username,
               password=repo.password, parallel=8)
    assert out["rcs"] == [0] * 8, out
    assert len([r for r in repo.requests if r[1] == f"/{tgz.name}"]) == fetched + 1


@pytest.mark.parametrize("kind", ["oci", "repo"])
def test_the_password_is_in_no_process_arguments_or_environment(kind, silent_server, tmp_path):
    """helm logs in to a server that never answers, for the runner's 4 s; meanwhile every
    process is searched for the password. Only PIDs are reported, never the password."""
    password = secrets.token_hex(24)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    source = ([f"oci://127.0.0.1:{silent_server}/charts/{CHART}", VERSION] if kind == "oci"
              else [f"http://127.0.0.1:{silent_server}", CHART, VERSION])
    result = {}
    t = threading.Thread(target=lambda: result.update(pull(
        tmp_path / "cache", *source, username="reader", password=password, tmpdir=tmp,
        timeout_ms=4000)))
    t.start()
    try:
        deadline = time.monotonic() + 10
        while not helm_running():
            assert time.monotonic() < deadline, "helm never ran"
            time.sleep(0.02)
        assert next(tmp.glob("landlord-helm-*")).stat().st_mode & 0o777 == 0o700
        seen = [holders(password.encode()) for _ in range(5)]
        assert seen == [[]] * 5, seen
    finally:
        t.join(30)
    assert (result["rc"], result["outcome"]) == (ETIMEDOUT, "timed-out"), result
    assert list(tmp.iterdir()) == []  # the pull's directory is gone
