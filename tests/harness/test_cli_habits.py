"""The CLI habits of kubectl / helm users (issue 22 §4): one declaration of the run options (same help in
`dra-conformance run --help` and `pytest --help`, every default shown), --version, the commands listed in
--help, -o json, shell completion, images list, help without Sphinx markup, no traceback on a closed pipe."""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import build_parser, main, plain
from conformance.core import options
from conformance.runner import cli as runner_cli

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "conformance.cli"]


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("dra-conformance",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def _subparser(*names: str) -> argparse.ArgumentParser:
    return dict(_walk(build_parser()))[("dra-conformance", *names)]


def test_every_run_option_has_help_stating_its_default():
    run = _subparser("run")
    actions = [a for a in run._actions if a.option_strings and a.dest != "help"]
    assert len(actions) >= len([o for o in options.OPTIONS if not o.pytest_only])
    missing = [a.option_strings[0] for a in actions if not a.help or "default" not in a.help]
    assert missing == [], f"run options without a stated default: {missing}"


def test_run_and_pytest_show_the_same_help_for_the_shared_options():
    run = {a.dest: a.help for a in _subparser("run")._actions}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    ).stdout
    flat = " ".join(out.split())
    shared = [o for o in options.OPTIONS if not o.pytest_only]
    assert shared, "the table declares no run option"
    for opt in shared:
        assert run[opt.dest] == opt.help
        assert f"{opt.flag}" in flat and " ".join(opt.help.split()) in flat, (
            f"pytest --help lacks {opt.flag}: {opt.help}"
        )


def test_run_forwards_every_shared_option_to_pytest():
    args = _subparser("run").parse_args(
        ["--driver", "dra-example-driver", "--nodes", "3", "--keep-cluster", "--kind-name", "k", "--allow-install"]
    )
    forwarded = options.to_pytest(args)
    assert forwarded[:2] == ["--cluster", "local"]
    for item in (["--driver", "dra-example-driver"], ["--nodes", "3"], ["--kind-name", "k"]):
        i = forwarded.index(item[0])
        assert forwarded[i : i + 2] == item
    assert "--keep-cluster" in forwarded and "--allow-install" in forwarded and "--allow-disruptive" not in forwarded
    assert "--report-dir" not in forwarded and "--run-id" not in forwarded  # run computes them


def test_help_lists_every_command_with_a_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ("run", "list", "report", "images", "completion", "versions", "cluster"):
        assert re.search(rf"^\s+{re.escape(name)}\s+\S", out, re.M), f"--help does not describe {name}:\n{out}"


def test_no_command_prints_the_command_list(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+run\s+run the conformance suites", out, re.M), out


def test_version_names_the_distributions_and_the_commit(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    assert re.match(r"dra-conformance \d+\.\d+\.\d+", out), out
    assert "dra-conformance-lab " in out
    if commit.returncode == 0:
        assert f"(commit {commit.stdout.strip()}" in out


def test_help_screens_carry_no_sphinx_markup():
    checked = 0
    for path, parser in _walk(build_parser()):
        text = parser.format_help()
        assert "``" not in text and not re.search(r":[a-z]+:`", text), f"{' '.join(path)} --help:\n{text}"
        checked += 1
    assert checked > 20  # every command and subcommand, not just the top level
    assert plain(":func:`~conformance.a.b` and ``x``") == "b and `x`"


def test_versions_output_json(capsys):
    assert main(["versions", "-o", "json"]) == 0
    pins = json.loads(capsys.readouterr().out)
    assert pins["python"]["shtab"] and pins["kubernetes"]["default"] in pins["kubernetes"]["releases"]
    with pytest.raises(SystemExit) as exc:
        main(["versions", "-o", "yaml"])
    assert exc.value.code == 4


def test_run_verdict_as_json():
    args = argparse.Namespace(driver="reference", profile="core")
    counts = {"passed": 3, "failed": 0, "skipped": 1, "error": 0}
    record = runner_cli.verdict_record(args, "PASS", 0, counts, "r1", Path.cwd() / "reports" / "r1")
    assert record == {
        "verdict": "PASS",
        "exitCode": 0,
        "driver": "reference",
        "profile": "core",
        "counts": counts,
        "runId": "r1",
        "reportDir": str(Path("reports") / "r1"),
    }
    assert runner_cli.verdict_record(args, "FAIL", 1, counts, "r1", None)["reportDir"] is None


def test_run_prints_its_verdict_as_the_last_line_of_json(tmp_path):
    """A real `run` (no cluster: an API server nobody listens on, exit 3): the last stdout line is the verdict."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: x}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    argv = ["run", "--cluster", "existing", "--kubeconfig", str(kubeconfig), "--profile", "core", "--workers", "0"]
    proc = subprocess.run([*CLI, *argv, "-o", "json"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    assert verdict["exitCode"] == proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert verdict["verdict"].startswith("ERROR") and verdict["driver"] == "reference" and verdict["profile"] == "core"
    assert set(verdict["counts"]) == {"passed", "failed", "error", "skipped"} and verdict["runId"].startswith("r")
    assert verdict["reportDir"] is None and not (tmp_path / "reports").exists()
    assert "VERDICT:" not in proc.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts(shell, capsys):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "dra-conformance" in script and "--driver-deploy" in script and "images" in script


def test_bash_completion_completes_a_run_option(capsys, tmp_path):
    assert main(["completion", "bash"]) == 0
    (tmp_path / "c.bash").write_text(capsys.readouterr().out)
    line = "dra-conformance run --driver-d"
    probe = (
        f"source {tmp_path / 'c.bash'}; COMP_WORDS=(dra-conformance run --driver-d); COMP_CWORD=2; "
        f"COMP_LINE='{line}'; COMP_POINT={len(line)}; _shtab_dra_conformance dra-conformance --driver-d run; "
        'echo "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["--driver-deploy"], out


def test_images_list_names_the_run_and_driver_images(capsys):
    assert main(["images", "list", "--driver", "dra-example-driver", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    images = [r["image"] for r in rows]
    assert "busybox:1.36" in images and "dra-conformance.local/busybox:1" in images  # fallback and offline
    assert "dra-example-driver" in images  # the profile's deploy.images
    assert all(set(r) == {"image", "usedBy", "when"} and r["image"] and r["when"] for r in rows)
    assert main(["images", "list", "--driver", "nvidia-gpu"]) == 0
    out = capsys.readouterr().out
    assert "nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04" in out and "oci://registry.k8s.io/dra-driver-nvidia" in out
    assert main(["images", "list", "--driver", "no-such-driver"]) == 4
    assert "unknown driver profile 'no-such-driver'" in capsys.readouterr().err


def test_the_lab_actions_share_the_images_command():
    names = {p[2] for p, _ in _walk(build_parser()) if len(p) == 3 and p[1] == "images"}
    assert names == {"list", "cache", "build", "export", "import", "push"}


@pytest.mark.parametrize("argv", [["list", "--driver", "reference"], ["--help"], ["images", "list"]])
def test_a_closed_pipe_ends_quietly(argv):
    """The reader closes the pipe before the command writes: every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as closed:
        proc = subprocess.run([*CLI, *argv], stdout=closed, stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=180)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 141), proc.stderr
