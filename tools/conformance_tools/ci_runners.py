"""Run the CI templates of ci/ with real runners on this host (`make ci-templates`, ``python -m
conformance_tools.ci_runners``): actionlint on the GitHub workflows, act running the nightly workflow (its cell job
for one Kubernetes version x driver, core profile, the lab's local cluster, then its merge job), gitlab-ci-local
running the GitLab pipeline with its shell executor (the same cell and merge). Each run starts one local cluster
and tears it down (``make conformance``); the runs go one after another. ``--k8s-version MINOR`` (``make
ci-templates K8S_VERSION=1.35``) picks the cell's Kubernetes minor (default 1.34); the merged matrix must show that
cell PASS on that release (its binaries are built by the cell's ``make setup``, or taken from the cache).

No Docker: act runs the jobs on the host (``-P ubuntu-24.04=-self-hosted``) and every ``uses:`` action is replaced
by a local stand-in (``--local-repository``, tools/conformance_tools/ci_standins/), whose artifacts and caches live
in a scratch store, so the merge job downloads what the cell job uploaded. The runners are pinned in
lab/conformance_lab/versions.toml ``[ci]`` and built or installed on first use (conformance_lab.toolchain.citools).
Upstream: github.com/nektos/act (``--local-repository``, ``-P <label>=-self-hosted``), github.com/rhysd/actionlint,
gitlab-ci-local (``--variable``, shell executor).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / "ci" / "github-actions").glob("*.yml"))
NIGHTLY = REPO / "ci" / "github-actions" / "dra-conformance-nightly.yml"
GITLAB = REPO / "ci" / "gitlab" / "dra-conformance.gitlab-ci.yml"
STANDINS = pathlib.Path(__file__).resolve().parent / "ci_standins"
PLATFORM = "ubuntu-24.04=-self-hosted"
CELL = {"DRA_PROFILE": "core", "DRA_CLUSTER": "local"}  # one cell: core profile, the lab's local cluster
DEFAULT_VERSION, DRIVERS = "1.34", '["reference"]'
RUN_TIMEOUT_S = 30 * 60


class RunnerError(RuntimeError):
    """A template references an action without a local stand-in, or a runner is missing."""


def actions_used(workflow: pathlib.Path) -> list[str]:
    """Every ``uses:`` of ``workflow`` (``owner/repo[/path]@ref``), in order, without repeats."""
    doc = yaml.safe_load(workflow.read_text())
    uses = [s["uses"] for job in doc["jobs"].values() for s in job.get("steps", []) if "uses" in s]
    return list(dict.fromkeys(uses))


def local_repositories(workflow: pathlib.Path) -> list[str]:
    """act's ``--local-repository owner/repo@ref=DIR`` arguments for every action ``workflow`` uses (a sub-path
    action such as ``actions/cache/restore@v4`` maps its repository). Raises RunnerError naming an action that has
    no stand-in under ci_standins/ (add ``ci_standins/<owner>/<repo>/action.yml``)."""
    args = []
    for use in actions_used(workflow):
        name, ref = use.split("@", 1)
        repo = "/".join(name.split("/")[:2])
        if not (STANDINS / name / "action.yml").is_file():
            raise RunnerError(f"{workflow.name}: `uses: {use}` has no stand-in {STANDINS / name / 'action.yml'}")
        arg = f"{repo}@{ref}={STANDINS / repo}"
        if arg not in args:
            args += [arg]
    return [w for a in args for w in ("--local-repository", a)]


def actionlint(binary: pathlib.Path, workflows: list[pathlib.Path] = WORKFLOWS) -> subprocess.CompletedProcess:
    """actionlint on ``workflows`` (exit 0: no finding; stdout lists each finding as ``file:line:col: message``)."""
    return subprocess.run([str(binary), *map(str, workflows)], capture_output=True, text=True, cwd=REPO, timeout=120)


def act_command(binary: pathlib.Path, store: pathlib.Path, version: str = DEFAULT_VERSION) -> list[str]:
    """The act command line running the nightly workflow's cell and merge jobs on the
    host: one cell (Kubernetes minor ``version``, e.g. "1.35", x ``DRIVERS``), core profile, local cluster, the
    workspace linking the working tree (the checkout stand-in)."""
    cmd = [
        str(binary),
        "workflow_dispatch",
        "-W",
        str(NIGHTLY),
        "-P",
        PLATFORM,
        "--action-offline-mode",
        "--no-skip-checkout",
    ]
    cmd += local_repositories(NIGHTLY)
    cmd += [
        w
        for k, v in {**CELL, "DRA_K8S_VERSIONS": json.dumps([version]), "DRA_DRIVERS": DRIVERS}.items()
        for w in ("--var", f"{k}={v}")
    ]
    env = {"DRA_CI_STANDIN_STORE": store, "DRA_CI_STANDINS": STANDINS, "DRA_CI_CHECKOUT": REPO}
    return cmd + [w for k, v in env.items() for w in ("--env", f"{k}={v}")]


def gitlab_command(binary: pathlib.Path, version: str = DEFAULT_VERSION) -> list[str]:
    """gitlab-ci-local running the GitLab pipeline (shell executor, the working tree itself) for one cell (Kubernetes
    minor ``version``; the template's other cells skip themselves), core profile, local cluster, as a web-started
    pipeline (the template's rules)."""
    cmd = [str(binary), "--file", str(GITLAB.relative_to(REPO)), "--no-color"]
    cmd += ["--ignore-predefined-vars", "CI_PIPELINE_SOURCE"]
    variables = {
        "CI_PIPELINE_SOURCE": "web",
        "DRA_PROFILE": "core",
        "DRA_CLUSTER": "local",
        "DRA_K8S_VERSIONS": version,
    }
    return cmd + [w for k, v in variables.items() for w in ("--variable", f"{k}={v}")]


def _venv_current() -> None:
    """Bring the checkout's .venv up to date first (`make venv`), so no job reinstalls it from inside a runner's
    workspace (a reinstall there would point the console scripts at that throw-away folder)."""
    subprocess.run(["bash", "scripts/bootstrap-venv.sh"], cwd=REPO, check=True)


def _run(name: str, cmd: list[str], log: pathlib.Path, ok: re.Pattern) -> dict:
    """Run one runner, its output teed to ``log``; returns ``{name, exitCode, seconds, passed}`` where passed needs
    exit 0 and ``ok`` found in the output (the merged matrix's verdict line). The templates' report directory
    (``reports/nightly`` in the working tree, which gitlab-ci-local's shell executor uses in place) is emptied
    first, as a fresh CI checkout would be: a cell left by an earlier run (another release) is no artifact of this
    pipeline (its skipped cell would export it and the merge would report that release instead)."""
    shutil.rmtree(REPO / "reports" / "nightly", ignore_errors=True)
    start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = []
        for line in proc.stdout:
            fh.write(line)
            out.append(line)
            print(f"[{name}] {line}", end="", flush=True)
        code = proc.wait(timeout=RUN_TIMEOUT_S)
    seconds = round(time.monotonic() - start)
    return {"name": name, "exitCode": code, "seconds": seconds, "passed": code == 0 and bool(ok.search("".join(out)))}


def cell_version(requested: str | None) -> tuple[str, str]:
    """``(minor, tag)`` of the cell's Kubernetes release: ``requested`` ("1.35", "v1.35.4"; None = the templates'
    first cell, 1.34) mapped through versions.toml. Raises RunnerError naming the fix for a release that is not
    pinned or not one of the templates' matrix cells (GitLab's matrix is fixed: any other cell would not run)."""
    from conformance_lab.toolchain import versions  # noqa: PLC0415 - the lab pins the releases

    try:
        tag = versions.load().k8s_tag(requested or DEFAULT_VERSION)
    except versions.VersionError as exc:
        raise RunnerError(f"--k8s-version: {exc}") from exc
    minor = ".".join(tag.lstrip("v").split(".")[:2])
    cells = yaml.safe_load(GITLAB.read_text())["dra-cell"]["parallel"]["matrix"][0]["DRA_K8S_VERSION"]
    if minor not in cells:
        raise RunnerError(f"--k8s-version {requested}: not a cell of the templates ({', '.join(cells)}); add it there")
    return minor, tag


def merged_pattern(minor: str) -> re.Pattern:
    """The merged matrix's verdict for the one cell: overall PASS and the row ``<minor>-reference (v<minor>.N) |
    PASS`` (a cell of another release, or a skipped cell, does not match)."""
    return re.compile(
        rf"qualification matrix: PASS.*?\| {re.escape(minor)}-reference \(v{re.escape(minor)}\.\d+\) \| PASS", re.S
    )


def main(argv: list[str] | None = None) -> int:
    """`make ci-templates [K8S_VERSION=1.35]`: actionlint, then act, then gitlab-ci-local (``--only`` one of them)
    for one cell (``--k8s-version``, default 1.34); prints one line per runner and returns 0 when all passed, 1
    otherwise, 4 for a release that is not a pinned cell. Logs in ``reports/ci-templates/<minor>/``."""
    from conformance_lab.toolchain import citools  # noqa: PLC0415 - the lab builds the runners (tools may use it)

    parser = argparse.ArgumentParser(prog="python -m conformance_tools.ci_runners", description=__doc__)
    parser.add_argument("--only", choices=["actionlint", "act", "gitlab-ci-local"], action="append")
    parser.add_argument("--k8s-version", default=None, help="the cell's Kubernetes minor, e.g. 1.35 (default 1.34)")
    args = parser.parse_args(argv)
    only = set(args.only or ["actionlint", "act", "gitlab-ci-local"])
    try:
        minor, tag = cell_version(args.k8s_version)
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    print(f"ci-templates: one cell, Kubernetes {minor} ({tag}) x reference, core profile, local cluster", flush=True)
    logs = REPO / "reports" / "ci-templates" / minor
    logs.mkdir(parents=True, exist_ok=True)
    merged = merged_pattern(minor)
    results = []
    if "actionlint" in only:
        proc = actionlint(citools.go_tool("actionlint"))
        results.append(
            {"name": "actionlint", "exitCode": proc.returncode, "seconds": 0, "passed": proc.returncode == 0}
        )
        print(proc.stdout, end="")
    if only & {"act", "gitlab-ci-local"}:
        _venv_current()
    if "act" in only:
        store = pathlib.Path(tempfile.mkdtemp(prefix="dra-ci-act-"))
        results.append(_run("act", act_command(citools.go_tool("act"), store, minor), logs / "act.log", merged))
        shutil.rmtree(store, ignore_errors=True)
    if "gitlab-ci-local" in only:
        cmd = gitlab_command(citools.gitlab_ci_local(), minor)
        results.append(_run("gitlab-ci-local", cmd, logs / "gitlab-ci-local.log", merged))
    for r in results:
        print(f"{r['name']:<16} {'PASS' if r['passed'] else 'FAIL'} exit {r['exitCode']} in {r['seconds']} s ({minor})")
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
