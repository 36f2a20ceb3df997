"""The CI templates checked by real tools (issue 25 §5): actionlint on the GitHub workflows, the Groovy compiler on
the Jenkinsfile, act's stand-ins for every action the workflow uses, and the matrix every template shards (the same
Kubernetes version x driver cells, one merge). Running the templates end to end (act, gitlab-ci-local, a cluster
each) is `make ci-templates` (tools/conformance_tools/ci_runners.py), too long for `make test`."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from conformance_lab.toolchain import citools
from conformance_lab.toolchain.steps import SetupError
from conformance_tools import ci_runners
from conformance_tools.ci_standins import standin
from conformance_tools.matrix import adopt_cells

BROKEN_WORKFLOW = """on: push
jobs:
  a:
    runs-on: ubuntu-24.04
    steps:
      - run: echo ${{ matrix.nope }}
"""


def _built(build, *args):
    """The runner ``build`` (a citools function) finds in the cache, never downloading (`make test` stays
    deterministic: `make setup-all` builds them ahead); skipped, naming the fix, when it is not built."""
    try:
        return build(*args, build=False)
    except SetupError as exc:
        pytest.skip(f"runner not built here: {exc}")


def test_actionlint_finds_nothing_in_the_github_workflows_and_flags_a_broken_one(tmp_path):
    binary = _built(citools.go_tool, "actionlint")
    proc = ci_runners.actionlint(binary)
    assert proc.returncode == 0, f"actionlint on {ci_runners.WORKFLOWS}:\n{proc.stdout}{proc.stderr}"
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN_WORKFLOW)
    probe = ci_runners.actionlint(binary, [broken])
    assert probe.returncode == 1 and "matrix" in probe.stdout, f"the probe found nothing: {probe.stdout}"


def test_the_jenkinsfile_parses_with_the_groovy_compiler_which_rejects_a_broken_one(tmp_path):
    cmd = _built(citools.groovy_parser)
    jenkinsfile = str(ci_runners.REPO / "ci" / "jenkins" / "Jenkinsfile")
    ok = subprocess.run([*cmd, jenkinsfile], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "parsed" in ok.stdout, ok.stderr
    broken = tmp_path / "Jenkinsfile"
    broken.write_text("pipeline { stages { stage('x') { steps { sh 'a' } }\n")
    bad = subprocess.run([*cmd, str(broken)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "startup failed" in bad.stderr, f"the probe found nothing: {bad.stdout}"


def test_every_action_the_workflow_uses_has_a_local_stand_in_for_act(tmp_path):
    used = ci_runners.actions_used(ci_runners.NIGHTLY)
    assert "actions/cache/restore@v4" in used and "actions/upload-artifact@v4" in used
    cmd = ci_runners.act_command(ci_runners.REPO / "act", tmp_path)
    mapped = {cmd[i + 1].split("=", 1)[0] for i, word in enumerate(cmd) if word == "--local-repository"}
    assert {"/".join(u.split("@")[0].split("/")[:2]) + "@" + u.split("@")[1] for u in used} <= mapped
    assert "DRA_PROFILE=core" in cmd and "--no-skip-checkout" in cmd


def test_the_stand_ins_hand_one_jobs_upload_to_the_next_jobs_download(tmp_path, monkeypatch):
    cell = tmp_path / "job1" / "reports" / "nightly" / "1.34-reference"
    (cell / "allure-results").mkdir(parents=True)
    (cell / "allure-results" / "a-result.json").write_text("{}")
    (cell / "cell.json").write_text(json.dumps({"exitCode": 0, "durationS": 5, "command": "c"}))
    monkeypatch.setenv("DRA_CI_STANDIN_STORE", str(tmp_path / "store"))
    monkeypatch.chdir(tmp_path / "job1")
    for key, value in {"INPUT_NAME": "cell-1.34-reference", "INPUT_IF-NO-FILES-FOUND": "error"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("INPUT_PATH", f"{cell.relative_to(tmp_path / 'job1')}/allure-results\n{cell}/cell.json\n")
    standin.upload()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INPUT_PATTERN", "cell-*")
    monkeypatch.setenv("INPUT_PATH", "cells")
    standin.download()
    got = tmp_path / "cells" / "cell-1.34-reference"
    assert sorted(p.name for p in got.iterdir()) == ["allure-results", "cell.json"]
    assert adopt_cells(got.parent) == ["cell-1.34-reference"]
    assert json.loads((got.parent / "cells.json").read_text())["cell-1.34-reference"]["exitCode"] == 0


def _github_cells() -> tuple[list[str], list[str]]:
    matrix = yaml.safe_load(ci_runners.NIGHTLY.read_text())["jobs"]["cell"]["strategy"]["matrix"]
    default = [json.loads(re.search(r"'(\[.*\])'", matrix[axis])[1]) for axis in ("k8s", "driver")]
    return default[0], default[1]


def test_the_three_templates_shard_the_same_matrix_and_merge_it_once():
    versions, drivers = _github_cells()
    gitlab = yaml.safe_load(ci_runners.GITLAB.read_text())
    cells = gitlab["dra-cell"]["parallel"]["matrix"][0]
    assert (cells["DRA_K8S_VERSION"], cells["DRA_DRIVER"]) == (versions, drivers)
    assert gitlab["variables"]["DRA_K8S_VERSIONS"].split() == versions
    jenkins = (ci_runners.REPO / "ci" / "jenkins" / "Jenkinsfile").read_text()
    axes = re.findall(r"name '(\w+)'\s+values (.*)", jenkins)
    assert [(n, re.findall(r"'([^']+)'", v)) for n, v in axes] == [("CELL_K8S", versions), ("CELL_DRIVER", drivers)]
    assert f"defaultValue: '{' '.join(versions)}'" in jenkins
    for text in (ci_runners.NIGHTLY.read_text(), ci_runners.GITLAB.read_text(), jenkins):
        assert text.count("bin/dra-conformance matrix --merge-only") == 1 and "cell.json" in text


def test_the_cells_release_is_a_parameter_checked_against_the_pins_and_the_templates_matrix(tmp_path):
    assert ci_runners.cell_version(None) == ("1.34", "v1.34.4")
    minor, tag = ci_runners.cell_version("v1.37")
    assert (minor, tag[:6]) == ("1.37", "v1.37.")
    act = ci_runners.act_command(ci_runners.REPO / "act", tmp_path, "1.35")
    assert 'DRA_K8S_VERSIONS=["1.35"]' in act
    assert "DRA_K8S_VERSIONS=1.37" in ci_runners.gitlab_command(ci_runners.REPO / "gitlab-ci-local", "1.37")
    merged = ci_runners.merged_pattern("1.35")
    assert merged.search("qualification matrix: PASS\n| 1.35-reference (v1.35.4) | PASS |")
    assert not merged.search("qualification matrix: PASS\n| 1.34-reference (v1.34.4) | PASS |")
    for bad, words in (("1.99", "not pinned"), ("nope", "not a Kubernetes version")):
        with pytest.raises(ci_runners.RunnerError, match=words):
            ci_runners.cell_version(bad)
    assert ci_runners.main(["--k8s-version", "1.99", "--only", "actionlint"]) == 4
