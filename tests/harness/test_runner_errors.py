"""Bad inputs end a run with a clear message and a non-zero exit, before anything is created:
unreachable cluster, ``--cluster kind`` without Docker, unknown driver profile, invalid profile field,
invalid option. These run the real CLI (``dra-conformance run``) in a subprocess; no cluster is needed."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CLI = [sys.executable, "-m", "conformance.cli"]
UNREACHABLE = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "c",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
}


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        CLI + ["run", "--report-dir", str(tmp_path / "report"), "--no-report", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_unreachable_cluster_is_a_clear_environment_error(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(UNREACHABLE))
    proc = _run(tmp_path, "--cluster", "existing", "--kubeconfig", str(kubeconfig), "--driver-deploy", "preinstalled")
    said = proc.stdout + proc.stderr  # the reason once, on stderr (pytest's "Exit:" line; breaker B6)
    assert proc.returncode == 3, said
    assert said.count("ClusterUnavailable") == 1 and "127.0.0.1:9" in proc.stderr and "VERDICT: ERROR" in proc.stdout


def test_missing_kubeconfig_file_names_the_file(tmp_path):
    proc = _run(tmp_path, "--cluster", "existing", "--kubeconfig", str(tmp_path / "nope"))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 4 and said.count(f"no such kubeconfig file {tmp_path / 'nope'}") == 1, said


@pytest.mark.parametrize(
    "args, text",
    [
        (["--driver", "no-such-driver"], "unknown driver profile 'no-such-driver'"),
        (["--profile", "gold"], "--profile: 'gold' is not accepted"),
        (["--profile", "disruptive"], "--allow-disruptive"),
        (["--timeout-scale", "-1"], "--timeout-scale"),
    ],
)
def test_bad_input_exits_4_with_the_fix(tmp_path, args, text):
    proc = _run(tmp_path, *args)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert text in proc.stdout + proc.stderr and "VERDICT: ERROR (bad input)" in proc.stdout


def test_invalid_profile_field_names_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bad",
                "driver": "gpu.example.com",
                "device_classes": ["gpu.example.com"],
                "visibility": {"env_regex": "x"},
                "capabilities": {"shared_claims": "maybe"},
            }
        )
    )
    proc = _run(tmp_path, "--driver", str(path))
    assert proc.returncode == 4
    assert f"{path}: capabilities.shared_claims: must be true or false" in proc.stdout + proc.stderr


def test_list_prints_profile_selection_without_a_cluster():
    proc = subprocess.run(
        CLI + ["list", "--profile", "core"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "suites/smoke/test_smoke.py::test_pod_with_claim_runs_and_sees_its_device" in proc.stdout


def test_run_selects_only_the_suite_paths_it_is_given():
    import argparse

    from conformance.runner import cli as runner_cli

    def args(*extra):
        return argparse.Namespace(pytest_args=["--", *extra], allow_disruptive=False, keep_cluster=False)

    everything = runner_cli.build_pytest_args(args("-k", "smoke"), "r1", Path("reports") / "reports" / "r1")
    assert everything[0] == str(runner_cli.SUITES)
    one_area = runner_cli.build_pytest_args(args(str(runner_cli.SUITES / "node")), "r1", Path("reports") / "r")
    assert str(runner_cli.SUITES) not in one_area and one_area[-1] == str(runner_cli.SUITES / "node")
    long_k = " or ".join(f"test_{i}_{'x' * 40}" for i in range(10))  # longer than NAME_MAX (255)
    assert runner_cli.build_pytest_args(args("-k", long_k), "r1", Path("reports") / "r")[0] == str(runner_cli.SUITES)


def test_host_deployers_report_the_driver_version_they_run(tmp_path):
    from conformance.drivers import profiles
    from conformance.drivers.host import HostDeployer

    class Cluster:
        k8s_version = "v1.34.4"

    got = {
        n: HostDeployer(Cluster(), profiles.load(n).for_mode("host"), None, "r", state_root=tmp_path)._version()
        for n in ("reference", "dra-example-driver", "k8s-test-driver")
    }
    assert got["reference"].startswith("reference_driver ")
    from conformance_lab.toolchain import versions

    assert (
        got["dra-example-driver"]
        == "sigs.k8s.io/dra-example-driver@" + versions.load().go_tools["dra-example-driver"].version
    )
    assert got["k8s-test-driver"] == "k8s.io/kubernetes@v1.34.4"
