"""`dra-conformance example-driver-history` (`make example-driver-history`): the suite's regression test against
history. Every release of kubernetes-sigs/dra-example-driver pinned in versions.toml (``[go.dra-example-driver]``,
``[go.dra-example-driver-previous]``, ``[go."dra-example-driver-vX.Y.Z"]``) is qualified with the same profile on
its own local cluster, deployed the way the lab deploys the current one: that release's own Helm chart read from
its Go module, and its image built offline from its binaries (built on first use, cached by version). Then one
table: version x verdict x failures x the upstream change that fixed each failure.

The fixes come from fixtures/driver-history/dra-example-driver.yaml (read from the upstream history: commits and
release notes), each entry naming the tests (or the install step, ``install``) it explains; a failure no entry
explains is shown as ``unexplained`` so that a new one is never hidden.

Source: issue 25 §4 (a later release fixing a bug the suite reported for an earlier one is evidence that the suite
finds real bugs); the child runs are validate-suite's (conformance_tools.validation.runs: one process group per
run, Ctrl-C waits for its cluster tear-down).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance_tools.validation import runs
from conformance_tools.validation.faultfile import REPO_ROOT

BASE_PROFILE = REPO_ROOT / "fixtures" / "drivers" / "dra-example-driver.yaml"
FIXES_FILE = REPO_ROOT / "fixtures" / "driver-history" / "dra-example-driver.yaml"
MODULE = "sigs.k8s.io/dra-example-driver"
CHART = "deployments/helm/dra-example-driver"
INSTALL = "install"  # the pseudo test of a release whose driver never became ready (exit 3/4 before any test)
RUN_TIMEOUT_S = 3600.0
ROW_FILE = "row.json"  # a release's outcome in its report directory: the table is made from every one there


@dataclasses.dataclass(frozen=True)
class Release:
    """One pinned release: ``tool`` (its versions.toml ``[go.<tool>]`` name), ``version`` (``v0.2.1``)."""

    tool: str
    version: str


@dataclasses.dataclass(frozen=True)
class Fix:
    """An upstream change explaining failures: ``tests`` (node ID substrings, or ``install``), ``versions`` it
    was seen on, ``fixed_in`` (first release without it, '' when no pinned release fixes it), ``change`` (commit
    and title), ``why`` (what the suite saw and why that change is the fix)."""

    tests: tuple[str, ...]
    versions: tuple[str, ...]
    fixed_in: str
    change: str
    why: str = ""


@dataclasses.dataclass
class Row:
    """One release's outcome: ``verdict`` (the run's VERDICT line, or the exit text), ``failures`` (node ID ->
    first line of the failure), ``counts`` (status -> tests), ``report_dir``."""

    release: Release
    verdict: str
    failures: dict[str, str]
    counts: dict[str, int]
    report_dir: str


def _semver(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def releases(go_tools: Mapping[str, Any]) -> list[Release]:
    """The pinned dra-example-driver releases (``go_tools``: versions.toml's ``{name: GoTool}``), oldest first."""
    found = [Release(name, t.version) for name, t in go_tools.items() if t.module == MODULE]
    return sorted(found, key=lambda r: _semver(r.version))


def profile_name(release: Release) -> str:
    """The release profile's name, which is also its file's stem (``dra-example-driver-v0.2.1``)."""
    return f"dra-example-driver-{release.version}"


def release_profile(base: Mapping[str, Any], release: Release) -> dict[str, Any]:
    """The base profile (fixtures/drivers/dra-example-driver.yaml as a mapping) deploying ``release``: its chart
    from its own module and its own image; no upgrade lane and no other deploy modes (one release alone)."""
    prof = json.loads(json.dumps(dict(base)))
    prof["name"] = profile_name(release)
    prof["description"] = f"{base.get('description', '')} -- release {release.version} (example-driver-history)"
    deploy = prof["deploy"]
    deploy.pop("upgrade_from", None)
    deploy["chart"] = {"go_module": release.tool, "path": CHART}
    deploy["images"] = [release.tool]
    prof.pop("deploy_alternatives", None)
    return prof


def load_fixes(path: Path = FIXES_FILE) -> list[Fix]:
    """The fixes file's entries. Raises ValueError naming the file and the entry for a malformed one."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = []
    for i, raw in enumerate(data.get("fixes") or []):
        try:
            out.append(
                Fix(
                    tuple(raw["tests"]),
                    tuple(raw.get("versions") or ()),
                    str(raw.get("fixed_in") or ""),
                    str(raw["change"]),
                    str(raw.get("why") or ""),
                )
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: fixes[{i}] needs tests (list) and change: {exc}") from None
    return out


def explain(nodeid: str, version: str, fixes: list[Fix]) -> Fix | None:
    """The fix whose ``tests`` names ``nodeid`` (a substring of it) and whose ``versions`` hold ``version``."""
    for fix in fixes:
        if version in fix.versions and any(t == nodeid or (t != INSTALL and t in nodeid) for t in fix.tests):
            return fix
    return None


def _verdict(log: Path, exit_code: int | None, note: str) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("VERDICT:")]
    if lines:
        return lines[-1].removeprefix("VERDICT:").split(" - driver ", 1)[0].strip()  # the run's tally is counted
    from conformance.runner.cli import EXIT_TEXT  # noqa: PLC0415 - the run CLI's own exit texts

    return note or EXIT_TEXT.get(exit_code, f"exit {exit_code}")


def row_of(release: Release, result: runs.RunResult) -> Row:
    """The table row of ``release`` from its child run (a run refused before any test has one ``install``
    failure carrying the refusal)."""
    failures = {(INSTALL if n == runs.SETUP_RESULT else n): result.messages.get(n, "") for n in result.failed()}
    counts: dict[str, int] = {}
    for status in result.tests.values():
        counts[status] = counts.get(status, 0) + 1
    return Row(
        release,
        _verdict(Path(result.report_dir) / "run.log", result.exit_code, result.note),
        failures,
        counts,
        result.report_dir,
    )


def load_rows(out_dir: Path, pinned: list[Release]) -> list[Row]:
    """The latest outcome of each of ``pinned`` that ran into ``out_dir`` (``<version>/row.json``), oldest
    release first: runs of some releases (``--versions``) add up to one table."""
    rows = []
    for rel in pinned:
        path = out_dir / rel.version / ROW_FILE
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            rows.append(Row(rel, data["verdict"], data["failures"], data["counts"], data["report_dir"]))
    return rows


def render(rows: list[Row], fixes: list[Fix]) -> str:
    """The table as Markdown: one line per failure (the first line of a release carries its verdict)."""
    out = ["| version | verdict | passed/failed/skipped | failure | upstream fix |", "|---|---|---|---|---|"]
    for row in rows:
        c = row.counts
        tally = f"{c.get('passed', 0)}/{c.get('failed', 0) + c.get('broken', 0)}/{c.get('skipped', 0)}"
        head = [row.release.version, row.verdict.split(" - driver ", 1)[0].replace("|", "/")[:160], tally]
        if not row.failures:
            out.append("| " + " | ".join([*head, "none", "-"]) + " |")
        for i, (nodeid, message) in enumerate(sorted(row.failures.items())):
            fix = explain(nodeid, row.release.version, fixes)
            fixed = f"{fix.fixed_in or 'not fixed in a pinned release'}: {fix.change}" if fix else "unexplained"
            failure = f"{nodeid} ({message[:120]})".replace("|", "/")
            out.append("| " + " | ".join([*(head if i == 0 else ["", "", ""]), failure, fixed]) + " |")
    return "\n".join(out)


def _build(release: Release, log: Path) -> None:
    """Build the release's binaries (cached by version) and its image (cached) on first use."""
    from conformance_lab.toolchain import gobuild, versions  # noqa: PLC0415 - the lab builds, only here
    from conformance_lab.toolchain.images import example_driver  # noqa: PLC0415

    gobuild.build_tool(versions.load().go_tools[release.tool], log)
    example_driver.archive(release.tool)


def run_history(
    out_dir: Path,
    chosen: list[Release],
    profile: str,
    run_args: list[str],
    progress: Callable[[str], None] = print,
    timeout_scale: float = 2.0,
) -> list[Row]:  # noqa: PLR0913 - the run's inputs, each used once
    """Build, then qualify each release in turn (``dra-conformance run --cluster local --driver <its profile>
    --profile <profile> --timeout-scale <timeout_scale> <run_args>``, report in ``out_dir/<version>``; the
    default scale 2 keeps a loaded 2-core machine's slowness out of the table); returns the rows. Raises
    runs.Interrupted on Ctrl-C once the running child tore its cluster down."""
    base = yaml.safe_load(BASE_PROFILE.read_text(encoding="utf-8"))
    rows = []
    for rel in chosen:
        rdir = out_dir / rel.version
        rdir.mkdir(parents=True, exist_ok=True)
        progress(f"== {rel.version}: build (cached by version), then the {profile} profile")
        _build(rel, rdir / "build.log")
        prof_path = rdir / f"{profile_name(rel)}.yaml"
        prof_path.write_text(yaml.safe_dump(release_profile(base, rel), sort_keys=False), encoding="utf-8")
        plan = runs.Plan(rel.version, "", (), profile, timeout_scale, ("--driver", str(prof_path), *run_args), (), rdir)
        result = runs.execute(plan, ["--workers", "4"], progress=progress, timeout_s=RUN_TIMEOUT_S)
        rows.append(row_of(rel, result))
        (rdir / ROW_FILE).write_text(json.dumps(dataclasses.asdict(rows[-1]), indent=1), encoding="utf-8")
        progress(f"   {rel.version}: {rows[-1].verdict} ({result.duration_s:.0f} s, {rdir})")
    return rows


def register(sub) -> None:
    """Add ``example-driver-history`` to the ``dra-conformance`` subcommands."""
    p = sub.add_parser("example-driver-history", help="qualify every pinned dra-example-driver release; one table")
    p.add_argument("--versions", default="", help="comma-separated releases (default: every pinned one)")
    p.add_argument("--profile", default="standard", help="the profile every release runs (default: standard)")
    p.add_argument("--out", default="reports/example-driver-history", help="report directory")
    p.add_argument("--feature-gates", default="defaults", help="the clusters' gates (default: defaults)")
    p.add_argument("--k8s-version", default=None, help="Kubernetes minor of the clusters (default: the lab's)")
    p.add_argument("--table-only", action="store_true", help="run nothing: the table of the outcomes in --out")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the chosen releases (none with ``--table-only``) and print the table of every release with an
    outcome in ``--out`` (also ``<out>/history.md`` and ``history.json``). Exit 0 when every failure is explained
    by an upstream fix, 1 otherwise (or when no release has an outcome), 2 on bad input, 130 on Ctrl-C."""
    from conformance_lab.toolchain import versions  # noqa: PLC0415

    pinned = releases(versions.load().go_tools)
    wanted = [v.strip() for v in args.versions.split(",") if v.strip()]
    unknown = sorted(set(wanted) - {r.version for r in pinned})
    if unknown:
        print(
            f"error: --versions {unknown} not pinned; pinned: {', '.join(r.version for r in pinned)}", file=sys.stderr
        )
        return 2
    chosen = [r for r in pinned if not wanted or r.version in wanted]
    run_args = ["--feature-gates", args.feature_gates] + (
        ["--k8s-version", args.k8s_version] if args.k8s_version else []
    )
    out = Path(args.out)
    fixes = load_fixes()
    try:
        if not args.table_only:
            run_history(out, chosen, args.profile, run_args)
    except runs.Interrupted:
        print("interrupted: the running release's cluster was torn down", file=sys.stderr)
        return 130
    rows = load_rows(out, pinned)
    if not rows:
        print(f"error: no release has an outcome in {out}; run without --table-only", file=sys.stderr)
        return 1
    table = render(rows, fixes)
    (out / "history.md").write_text(table + "\n", encoding="utf-8")
    (out / "history.json").write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1), encoding="utf-8")
    print(table)
    unexplained = [n for r in rows for n in r.failures if not explain(n, r.release.version, fixes)]
    return 1 if unexplained else 0
