"""landlord's flags and environment variables, as a person meets them: the help lists every
option, a bad value is one line that names it and what is expected, exit code 2, and a flag on
the command line beats its environment variable. No control plane needed."""

import os
import re
import subprocess

import pytest

from procs import LANDLORD

# Every option: its flag, its environment variable and its default ("" when it has none).
OPTIONS = [
    ("kubeconfig", "KUBECONFIG", ""),
    ("context", "LANDLORD_CONTEXT", ""),
    ("probe-addr", "LANDLORD_PROBE_ADDR", "127.0.0.1:8081"),
    ("leader-elect", "LANDLORD_LEADER_ELECT", "true"),
    ("leader-election-namespace", "LANDLORD_LEADER_ELECTION_NAMESPACE", "landlord-system"),
    ("lease-duration", "LANDLORD_LEASE_DURATION", "15s"),
    ("renew-deadline", "LANDLORD_RENEW_DEADLINE", "10s"),
    ("retry-period", "LANDLORD_RETRY_PERIOD", "2s"),
    ("kube-api-qps", "LANDLORD_KUBE_API_QPS", "500"),
    ("kube-api-burst", "LANDLORD_KUBE_API_BURST", "1000"),
    ("kube-api-http2", "LANDLORD_KUBE_API_HTTP2", "false"),
    ("helm-binary", "LANDLORD_HELM_BINARY", ""),
    ("webhook-addr", "LANDLORD_WEBHOOK_ADDR", "127.0.0.1:9443"),
    ("webhook-url", "LANDLORD_WEBHOOK_URL", ""),
    ("webhook-service", "LANDLORD_WEBHOOK_SERVICE", "landlord"),
    ("webhook-cert-ip", "LANDLORD_WEBHOOK_CERT_IP", ""),
    ("tls-cert-file", "LANDLORD_TLS_CERT_FILE", ""),
    ("tls-key-file", "LANDLORD_TLS_KEY_FILE", ""),
    ("shutdown-delay", "LANDLORD_SHUTDOWN_DELAY", "5s"),
    ("v", "LANDLORD_V", "0"),
    ("enable-test-hooks", "LANDLORD_ENABLE_TEST_HOOKS", ""),
    ("test-crash-after-writes", "LANDLORD_TEST_CRASH_AFTER_WRITES", "0"),
    ("test-webhook-ca-lifetime", "LANDLORD_TEST_WEBHOOK_CA_LIFETIME", "0s"),
    ("test-webhook-serving-lifetime", "LANDLORD_TEST_WEBHOOK_SERVING_LIFETIME", "0s"),
    ("test-webhook-publish-grace", "LANDLORD_TEST_WEBHOOK_PUBLISH_GRACE", "0s"),
    ("test-webhook-drain", "LANDLORD_TEST_WEBHOOK_DRAIN", "0s"),
    ("test-webhook-cert-period", "LANDLORD_TEST_WEBHOOK_CERT_PERIOD", "0s"),
]


def run(*args, env=None, tmp_path=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("LANDLORD_") and k != "KUBECONFIG"}
    # A kubeconfig that does not exist: a run that gets past its flags stops there, with 1.
    e["KUBECONFIG"] = str(tmp_path / "absent.kubeconfig") if tmp_path else "/nonexistent"
    e.update(env or {})
    return subprocess.run([LANDLORD, *args], env=e, capture_output=True, text=True, timeout=30)


def help_entry(text, flag):
    """The help text of one flag: from its line to the next flag's."""
    m = re.search(r"^  --%s\b(.*?)(?=^  --|\Z)" % re.escape(flag), text, re.M | re.S)
    assert m, f"--{flag} is not in the help:\n{text}"
    return " ".join(m.group(1).split())


def test_help_lists_every_option_with_its_variable_and_default():
    p = run("--help")
    assert p.returncode == 0, p.stderr
    for flag, env, default in OPTIONS:
        entry = help_entry(p.stdout, flag)
        assert f"[{env}]" in entry, (flag, entry)
        if default:
            assert entry.endswith(f"({default})"), (flag, entry)


@pytest.mark.parametrize("argv, names", [
    (["run", "--nope"], 'unknown flag "--nope"'),
    (["run", "--probe-addr"], "flag --probe-addr needs a value"),
    (["run", "--lease-duration", "nan"], '--lease-duration: "nan": expected a duration'),
    (["run", "--lease-duration", "1e300"], '--lease-duration: "1e300": expected a duration'),
    (["run", "--renew-deadline=-5s"], '--renew-deadline: "-5s": expected a duration'),
    (["run", "--retry-period", "99999999999999999h"], '--retry-period: "99999999999999999h"'),
    (["run", "--kube-api-qps", "0"], '--kube-api-qps: "0": expected an integer from 1 to 100000'),
    (["run", "--kube-api-burst", "12abc"], '--kube-api-burst: "12abc"'),
    (["run", "--leader-elect", "maybe"], '--leader-elect: "maybe": expected true or false'),
    (["run", "--webhook-addr", "127.0.0.1:70000"], '--webhook-addr: "127.0.0.1:70000"'),
    (["run", "stray"], 'unexpected argument "stray"'),
])
def test_a_bad_flag_is_one_line_naming_it_and_exit_2(argv, names, tmp_path):
    p = run(*argv, tmp_path=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    first = p.stderr.splitlines()[0]
    assert names in first, p.stderr
    assert "landlord --help" in p.stderr


def test_a_bad_environment_variable_names_the_variable(tmp_path):
    p = run("run", env={"LANDLORD_LEASE_DURATION": "soon"}, tmp_path=tmp_path)
    assert p.returncode == 2
    assert 'LANDLORD_LEASE_DURATION="soon": expected a duration' in p.stderr


def test_an_unknown_command_is_refused_with_the_usage(tmp_path):
    p = run("frobnicate", tmp_path=tmp_path)
    assert p.returncode == 2
    assert "usage: landlord COMMAND" in p.stderr


def test_a_flag_beats_its_variable_and_the_variable_beats_the_default(tmp_path):
    # The variable alone is used: its bad value stops landlord at the flags (2).
    p = run("run", env={"LANDLORD_KUBE_API_QPS": "0"}, tmp_path=tmp_path)
    assert p.returncode == 2 and "LANDLORD_KUBE_API_QPS" in p.stderr
    # The flag wins over the bad variable: landlord gets past its flags and stops at the
    # missing kubeconfig instead (1).
    p = run("run", "--kube-api-qps", "50", env={"LANDLORD_KUBE_API_QPS": "0"}, tmp_path=tmp_path)
    assert p.returncode == 1, p.stderr
    assert "no kubeconfig" in p.stderr
    # A variable beats the default: a good one is taken (and the run goes on to the same stop).
    p = run("run", env={"LANDLORD_KUBE_API_QPS": "50"}, tmp_path=tmp_path)
    assert p.returncode == 1, p.stderr
    # --kubeconfig is used over $KUBECONFIG, and named when it is missing.
    p = run("run", "--kubeconfig", str(tmp_path / "flag.kubeconfig"), tmp_path=tmp_path)
    assert p.returncode == 1
    assert "flag.kubeconfig" in p.stderr
