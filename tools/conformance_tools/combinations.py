"""`dra-conformance feature-combinations` (`make feature-combinations`): the whole ``full`` profile on each profile
that switches on the features a real driver ships together (issue 24 §3, "features in combination"), one local
cluster after another, then one table: profile x verdict x passed/failed/skipped x time x failures.

Each newer feature has a self-validation profile that switches on that feature alone and is run on the feature's
own folder (fixtures/self-validation/reference-<feature>.yaml). Real drivers enable them together: a GPU driver
that attaches devices before binding publishes binding conditions and writes device status; a partitioning driver
publishes taints on partitions and streams their health; a shared-GPU driver serves consumable capacity to
monitoring claims with admin access. :data:`COMBINATIONS` names those profiles; every test of ``full`` runs on
each (a test that assumed one feature alone fails there).

A combination whose features do not work together on an older release runs on the oldest that works
(:data:`MIN_MINOR`, with the upstream evidence), so the default `make feature-combinations` judges the driver, not
a known kube-scheduler crash; the table names each run's Kubernetes minor.

The child runs are validate-suite's (conformance_tools.validation.runs: one process group per run, Ctrl-C waits
for its cluster tear-down), on 4 workers (`run`'s default).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from conformance_tools.history import _verdict
from conformance_tools.validation import runs
from conformance_tools.validation.faultfile import REPO_ROOT

PROFILES = REPO_ROOT / "fixtures" / "self-validation"
# profile file stem -> the features it switches on together
COMBINATIONS = {
    "reference-status-binding": "device status + binding conditions",
    "reference-partitions-taints-health": "partitions + published taints + health",
    "reference-capacity-admin": "consumable capacity + admin access",
}
# profile stem -> (the oldest Kubernetes minor its features work together on, the upstream evidence): without
# --k8s-version a combination runs on the later of the lab's default and this minor; an explicit older one is
# honoured with the evidence printed beside it
MIN_MINOR = {
    "reference-capacity-admin": (
        "1.35",
        "the v1.34 kube-scheduler panics on a consumable-capacity request over a device's capacity "
        "(CmpRequestOverCapacity, kubernetes#133705, fixed in v1.35 by kubernetes#133706; seen on v1.34.4 in s14 "
        "and s15)",
    ),
}
RUN_TIMEOUT_S = 3600.0
TIMEOUT_SCALE = 2.0  # as example-driver-history: a loaded 2-core machine's slowness stays out of the table


@dataclasses.dataclass
class Outcome:
    """One combination's run: ``verdict`` (the run's VERDICT line without its tally, or the exit text),
    ``counts`` (Allure status -> tests), ``failures`` (node ID -> first line of the message), ``seconds`` (wall
    time of the whole run, cluster up and down included), ``report_dir``."""

    name: str
    features: str
    verdict: str
    counts: dict[str, int]
    failures: dict[str, str]
    seconds: float
    report_dir: str
    k8s_version: str = ""


def _minor(version: str) -> tuple[int, int]:
    """``"1.35"`` / ``"v1.35.6"`` -> ``(1, 35)``."""
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def k8s_minor(name: str, requested: str | None, default: str) -> tuple[str, str]:
    """``(minor, note)``: the Kubernetes minor combination ``name`` runs on and why, when that is not simply
    ``requested`` (``--k8s-version``; None: the lab's ``default``). Without a request a combination listed in
    :data:`MIN_MINOR` runs on its minimum when the default is older (note: the upstream evidence); an explicit
    older request is honoured and the note warns with the same evidence. Raises ValueError on a version that is
    not ``major.minor[.patch]``."""
    wanted = requested or default
    floor = MIN_MINOR.get(name)
    if not floor or not wanted or _minor(wanted) >= _minor(floor[0]):
        return wanted, ""
    if requested:
        return wanted, f"asked for {requested}, kept; expect a failure there: {floor[1]}"
    return floor[0], f"runs on {floor[0]}, not the default {default}: {floor[1]}"


def outcome(name: str, result, k8s_version: str = "") -> Outcome:
    """The :class:`Outcome` of combination ``name`` from its child run (a runs.RunResult) on ``k8s_version``."""
    counts: dict[str, int] = {}
    for status in result.tests.values():
        counts[status] = counts.get(status, 0) + 1
    verdict = _verdict(Path(result.report_dir) / "run.log", result.exit_code, result.note)
    failures = {n: result.messages.get(n, "") for n in result.failed()}
    seconds = round(result.duration_s)
    return Outcome(name, COMBINATIONS[name], verdict, counts, failures, seconds, result.report_dir, k8s_version)


def render(rows: list[Outcome]) -> str:
    """The table as Markdown: one line per combination, then one per failure."""
    out = ["| profile | features | Kubernetes | verdict | passed/failed/skipped | time |", "|---|---|---|---|---|---|"]
    for r in rows:
        c = r.counts
        tally = f"{c.get('passed', 0)}/{c.get('failed', 0) + c.get('broken', 0)}/{c.get('skipped', 0)}"
        verdict = r.verdict.replace("|", "/")[:200]
        out.append(f"| {r.name} | {r.features} | {r.k8s_version or '?'} | {verdict} | {tally} | {r.seconds:.0f} s |")
    for r in rows:
        out += [f"- {r.name}: `{n}`: {m[:200]}" for n, m in sorted(r.failures.items())]
    return "\n".join(out)


def run_all(
    out_dir: Path,
    names: list[str],
    run_args: list[str],
    progress: Callable[[str], None] = print,
    k8s_version: str | None = None,
    default_minor: str = "",
):
    """Run ``full`` on each combination in turn (``dra-conformance run --cluster local --driver <profile> --profile
    full --workers 4 --timeout-scale 2 --k8s-version <minor> <run_args>``, the minor from :func:`k8s_minor` of
    ``k8s_version`` and the lab's ``default_minor``; report in ``out_dir/<name>``, an earlier one there removed
    first: the run refuses a used report dir, and its results must never be read as this run's); returns the
    outcomes. Raises runs.Interrupted on Ctrl-C once the running child tore its cluster down."""
    rows = []
    for name in names:
        rdir = out_dir / name
        if rdir.exists():  # this tool's own earlier report of the combination: replaced, never read as this run's
            shutil.rmtree(rdir)
        minor, note = k8s_minor(name, k8s_version, default_minor or k8s_version or "")
        progress(f"== {name} ({COMBINATIONS[name]}): the full profile on Kubernetes {minor or 'the default'}")
        if note:
            progress(f"   {name}: {note}")
        version_args = ("--k8s-version", minor) if minor else ()
        args = ("--driver", str(PROFILES / f"{name}.yaml"), *version_args, *run_args)
        plan = runs.Plan(name, "", (), "full", TIMEOUT_SCALE, args, (), rdir)
        result = runs.execute(plan, ["--workers", "4"], progress=progress, timeout_s=RUN_TIMEOUT_S)
        rows.append(outcome(name, result, minor))
        (rdir / "outcome.json").write_text(json.dumps(dataclasses.asdict(rows[-1]), indent=1), encoding="utf-8")
        progress(f"   {name}: {rows[-1].verdict} ({result.duration_s:.0f} s, {rdir})")
    return rows


def register(sub) -> None:
    """Add ``feature-combinations`` to the ``dra-conformance`` subcommands."""
    p = sub.add_parser("feature-combinations", help="the full profile on each feature-combination profile")
    p.add_argument("--only", default="", help=f"comma-separated profiles (default all: {', '.join(COMBINATIONS)})")
    p.add_argument("--out", default="reports/feature-combinations", help="report directory")
    p.add_argument("--feature-gates", default="all", help="the clusters' gates (default: all)")
    p.add_argument("--k8s-version", default=None, help="Kubernetes minor of the clusters (default: the lab's)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the chosen combinations and print the table (also ``<out>/combinations.md`` and ``.json``). Exit 0
    when every run passed, 1 otherwise, 2 on bad input, 130 on Ctrl-C."""
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(COMBINATIONS)
    unknown = sorted(set(names) - set(COMBINATIONS))
    if unknown:
        print(f"error: --only {unknown} unknown; known: {', '.join(COMBINATIONS)}", file=sys.stderr)
        return 2
    from conformance_lab.toolchain import versions  # noqa: PLC0415 - the lab pins the releases

    pins = versions.load()
    try:
        for version in filter(None, [args.k8s_version]):
            pins.k8s_tag(version)
    except versions.VersionError as exc:
        print(f"error: --k8s-version: {exc}", file=sys.stderr)
        return 2
    run_args = ["--feature-gates", args.feature_gates]
    out = Path(args.out)
    try:
        rows = run_all(out, names, run_args, k8s_version=args.k8s_version, default_minor=pins.k8s_default)
    except runs.Interrupted:
        print("interrupted: the running combination's cluster was torn down", file=sys.stderr)
        return 130
    table = render(rows)
    (out / "combinations.md").write_text(table + "\n", encoding="utf-8")
    (out / "combinations.json").write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1), "utf-8")
    print(table)
    return 0 if all(r.verdict.startswith("PASS") for r in rows) else 1
