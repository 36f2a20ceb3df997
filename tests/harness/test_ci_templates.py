"""The CI templates in ci/ and the Dockerfile use only what exists: each YAML parses, every ``make`` target is
listed by ``make help``, every make variable is defined in the Makefile, and every ``dra-conformance`` command
line (and every ``RUN_ARGS`` value) is accepted by the CLI's own argparse. Each template publishes the JUnit XML
and the Allure report and carries the Allure history across nights (``--history-from``)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from conformance.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "ci"
GITHUB = CI / "github-actions" / "dra-conformance-nightly.yml"
GITLAB = CI / "gitlab" / "dra-conformance.gitlab-ci.yml"
JENKINS = CI / "jenkins" / "Jenkinsfile"
TEMPLATES = (GITHUB, GITLAB, JENKINS)
OPERATORS = {"&&", "||", ";", "|", ">", ">>"}


def _github_commands() -> list[str]:
    doc = yaml.safe_load(GITHUB.read_text())
    return [step["run"] for job in doc["jobs"].values() for step in job.get("steps", []) if "run" in step]


def _gitlab_commands() -> list[str]:
    doc = yaml.safe_load(GITLAB.read_text())
    jobs = [v for v in doc.values() if isinstance(v, dict) and ("script" in v or "after_script" in v)]
    return [c for job in jobs for key in ("before_script", "script", "after_script") for c in job.get(key, [])]


def _jenkins_commands() -> list[str]:
    text = JENKINS.read_text()
    return re.findall(r"sh\s+'''(.*?)'''", text, re.S) + re.findall(r"sh\s+'([^'\n]*)'", text)


def _incluster_commands() -> list[str]:
    job = yaml.safe_load((CI / "in-cluster" / "job.yaml").read_text())
    return [job["spec"]["template"]["spec"]["containers"][0]["args"][0]]


def _words(command: str) -> list[list[str]]:
    """Shell words of ``command`` (line continuations joined), split into simple commands at newlines and
    operators."""
    out = []
    for line in command.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        current = []
        for word in lexer:
            if word in OPERATORS:
                out.append(current)
                current = []
            else:
                current.append(word)
        out.append(current)
    return [c for c in out if c]


def _invocations(commands: list[str], program: str) -> list[list[str]]:
    """The argument lists following ``program`` (``make``, or any path ending in ``dra-conformance``)."""
    found = []
    for command in commands:
        for words in _words(command):
            for i, w in enumerate(words):
                if w == program or w.endswith("/" + program):
                    found.append(words[i + 1 :])
    return found


def _make_targets() -> set[str]:
    out = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {m[1] for m in re.finditer(r"^  ([a-zA-Z0-9_-]+)\s", out, re.M)}


def _make_variables() -> set[str]:
    return set(re.findall(r"^([A-Z0-9_]+)\s*[?:]?=", (REPO / "Makefile").read_text(), re.M))


def _cli_accepts(argv: list[str]) -> str:
    """'' when the CLI's argparse accepts ``argv`` (no option swallowed as pytest arguments), else its error."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = build_parser().parse_args(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    stray = [a for a in getattr(ns, "pytest_args", None) or [] if a.startswith("-")]
    return f"{stray} would go to pytest" if stray and "--" not in argv else ""


ALL = {
    "github": _github_commands,
    "gitlab": _gitlab_commands,
    "jenkins": _jenkins_commands,
    "in-cluster": _incluster_commands,
}


def test_templates_parse_as_yaml_and_the_jenkinsfile_has_its_sections():
    jobs = yaml.safe_load(GITHUB.read_text())["jobs"]
    assert jobs["cell"]["strategy"]["matrix"] and jobs["merge"]["needs"] == "cell"
    gitlab = yaml.safe_load(GITLAB.read_text())
    assert "dra-qualify-existing" in gitlab and gitlab["dra-cell"]["parallel"]["matrix"]
    docs = list(yaml.safe_load_all((CI / "in-cluster" / "rbac.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    text = JENKINS.read_text()
    for section in ("pipeline {", "stages {", "post {", "withCredentials", "junit testResults", "publishHTML"):
        assert section in text, f"{JENKINS}: no {section!r}"
    assert text.count("{") == text.count("}"), f"{JENKINS}: unbalanced braces"


def test_the_in_cluster_role_grants_every_permission_a_run_needs():
    """ci/in-cluster/rbac.yaml (a wider role) covers each row of conformance/core/permissions.py NEEDED, so a new
    row (e.g. the helper pods' anchor Job) cannot be forgotten there."""
    from conformance.core import permissions  # noqa: PLC0415

    role = next(
        d for d in yaml.safe_load_all((CI / "in-cluster" / "rbac.yaml").read_text()) if d["kind"] == "ClusterRole"
    )

    def granted(row, verb: str) -> bool:
        for rule in role["rules"]:
            if row.url:
                ok = row.url in rule.get("nonResourceURLs", [])
            else:
                groups, resources = rule.get("apiGroups", []), rule.get("resources", [])
                ok = row.group in groups and (row.resource in resources or "*" in resources)
            if ok and (verb in rule["verbs"] or "*" in rule["verbs"]):
                return True
        return False

    missing = [f"{verb} {row.subject}" for row in permissions.NEEDED for verb in row.verbs if not granted(row, verb)]
    assert missing == [], f"ci/in-cluster/rbac.yaml lacks: {missing}"


@pytest.mark.parametrize("template", sorted(ALL))
def test_make_targets_and_variables_exist(template):
    targets, variables = _make_targets(), _make_variables()
    calls = _invocations(ALL[template](), "make")
    if template != "in-cluster":
        assert calls, f"{template}: no make command found"
    for args in calls:
        for word in args:
            if "=" in word:
                assert word.split("=")[0] in variables, f"{template}: make variable {word} is not in the Makefile"
            elif not word.startswith("-"):
                assert word in targets, f"{template}: make target {word!r} is not in `make help`"
            if word.startswith("RUN_ARGS="):
                argv = ["run", *shlex.split(word.split("=", 1)[1])]
                assert not _cli_accepts(argv), f"{template}: RUN_ARGS {argv[1:]}: {_cli_accepts(argv)}"


@pytest.mark.parametrize("template", sorted(ALL))
def test_dra_conformance_command_lines_are_accepted_by_the_cli(template):
    calls = _invocations(ALL[template](), "dra-conformance")
    for call in calls:
        argv = [a for a in call if a != "$RUN_ARGS"]  # the pod's extra options: checked below from the Makefile
        assert not _cli_accepts(argv), f"{template}: dra-conformance {argv}: {_cli_accepts(argv)}"
    if template in ("gitlab", "jenkins", "in-cluster"):
        assert calls, f"{template}: no dra-conformance command found"


def test_in_cluster_defaults_are_accepted_by_the_cli():
    makefile = (REPO / "Makefile").read_text()
    default = re.search(r"^IN_CLUSTER_ARGS \?= (.*)$", makefile, re.M)[1]
    script = (CI / "in-cluster" / "run.sh").read_text()
    fallback = re.search(r"SUITE_ARGS=\$\{SUITE_ARGS:-(.*)\}", script)[1]
    for args in (default, fallback):
        argv = ["run", "--cluster", "existing", "--in-cluster", *shlex.split(args)]
        assert not _cli_accepts(argv), f"{args}: {_cli_accepts(argv)}"


def test_the_in_cluster_job_runs_once_within_a_deadline_and_keeps_the_report_for_its_copy():
    """ci/in-cluster/job.yaml: a Job that never retries (backoffLimit 0, restartPolicy Never), bounded
    (activeDeadlineSeconds), kept a while after it finished (ttlSecondsAfterFinished), whose ``report`` container
    shares the suite's /reports until run.sh has copied it (``collected``) or HOLD_S passed; run.sh fills the
    placeholders it substitutes, and each template runs it."""
    job = yaml.safe_load((CI / "in-cluster" / "job.yaml").read_text())
    assert (job["apiVersion"], job["kind"], job["spec"]["backoffLimit"]) == ("batch/v1", "Job", 0)
    assert job["spec"]["activeDeadlineSeconds"] > 0 and job["spec"]["ttlSecondsAfterFinished"] >= 600
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "dra-conformance"
    suite, report = pod["containers"]
    assert (suite["name"], report["name"]) == ("suite", "report")
    assert {m["mountPath"] for m in suite["volumeMounts"]} == {m["mountPath"] for m in report["volumeMounts"]}
    assert "exit $rc" in suite["args"][0] and "/reports/exit-code" in suite["args"][0]
    assert "/reports/collected" in report["args"][0] and report["env"][0]["name"] == "HOLD_S"
    script = (CI / "in-cluster" / "run.sh").read_text()
    for placeholder in ("image: IMAGE", 'value: \\"RUN_ARGS\\"', "activeDeadlineSeconds: [0-9]*", "name: HOLD_S"):
        assert placeholder in script, f"run.sh does not fill {placeholder}"
    for template in TEMPLATES:
        assert "bash ci/in-cluster/run.sh" in template.read_text(), f"{template.relative_to(REPO)}: no in-cluster mode"


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.parent.name)
def test_each_template_publishes_junit_allure_and_keeps_the_history(template):
    text = template.read_text()
    for needed in ("junit.xml", "allure-report", "--history-from", "history/history.jsonl"):
        assert needed in text, f"{template.relative_to(REPO)} does not mention {needed}"


def test_dockerfile_copies_what_exists_and_pins_what_versions_toml_pins():
    text = (REPO / "Dockerfile").read_text()
    pins = tomllib.loads((REPO / "lab" / "conformance_lab" / "versions.toml").read_text())
    for line in re.findall(r"^COPY (?!--from)(.*)$", text, re.M):
        for source in line.split()[:-1]:
            assert (REPO / source).exists(), f"Dockerfile: COPY source {source} does not exist"
    default_tag = pins["kubernetes"]["releases"][pins["kubernetes"]["default"]]
    assert f"ARG K8S_TAG={default_tag}\n" in text
    assert re.search(r"^ENTRYPOINT \[\"dra-conformance\", \"run\"\]$", text, re.M)
    python_minor = re.search(r"python(3\.\d+)", " ".join(pins["images"]["reference-driver-debian"]))[1]
    assert f"ARG PYTHON_VERSION={python_minor}\n" in text
