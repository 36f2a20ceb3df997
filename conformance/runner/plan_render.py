"""Text and JSON of ``run --plan`` and the driver-aware ``list`` (conformance/runner/plan.py decides). Pure.

Decisions: run | skip | waived | fail | at-start (see :class:`conformance.runner.plan.TestDecision`); the run's
objects are those of design.md §6 (a namespace per test labelled ``dra-conformance.test/run=<run id>``).
"""

from __future__ import annotations

import json
from collections import Counter

from conformance.core import names
from conformance.reporting.markdown import WAIVER  # the summary's waiver rule: a skip the profile opts into

__all__ = ["WAIVER", "ORDER", "counts", "count_line", "as_json", "plan", "listing"]

ORDER = ("run", "skip", "waived", "fail", "at-start")
WORDS = {"fail": "fail (declared but not delivered)", "at-start": "decided when the run starts"}


def counts(decisions) -> dict[str, int]:
    """``{decision: tests}`` over :data:`ORDER` (0 where none) for ``decisions`` (TestDecision-like)."""
    found = Counter(d.decision for d in decisions)
    return {k: found.get(k, 0) for k in ORDER}


def count_line(decisions, profile: str, by_profile: int, narrowed: int = 0) -> str:
    """``tests (profile P): N selected: a run, b skip, ...; M deselected by the profile[, K by -k/-m]``."""
    c = counts(decisions)
    parts = ", ".join(f"{n} {WORDS.get(k, k)}" for k, n in c.items())
    extra = f", {narrowed} by pytest arguments (-k, -m)" if narrowed else ""
    return (
        f"tests (profile {profile}): {len(decisions)} selected: {parts}; {by_profile} deselected by the profile{extra}"
    )


def as_json(decisions) -> str:
    """``list -o json``: a JSON list of ``{id, area, decision, reason}`` in collection order."""
    return json.dumps([d.as_dict() for d in decisions], indent=2)


def _rows(decisions) -> list[str]:
    width = max((len(d.decision) for d in decisions), default=3)
    return [f"  {d.decision:<{width}}  {d.id}" + (f"  -- {d.reason}" if d.reason else "") for d in decisions]


def _cluster_lines(survey) -> list[str]:
    cfg = survey.cfg
    if survey.owned:
        version = f"Kubernetes {cfg.k8s_version}" if cfg.k8s_version else "the default Kubernetes version"
        kept = "kept (--keep-cluster)" if cfg.keep_cluster else "removed at the end"
        return [
            f"  cluster      {cfg.cluster}: created by the run ({version}, --feature-gates "
            f"{cfg.feature_gates}), {kept}",
            f"  nodes        {', '.join(survey.nodes)}",
            "  capabilities known after `cluster up`: skips are decided then; the tests below are those the profile "
            "selects (each would run or skip with the cluster's evidence)",
        ]
    spread = ", ".join(f"{n} ({k} device(s))" for n, k in sorted(survey.driver_nodes.items()))
    return [
        f"  cluster      {cfg.cluster}: {survey.server}, Kubernetes {survey.k8s_version}",
        f"  kubeconfig   {survey.kubeconfig}",
        f"  nodes        {', '.join(survey.nodes) or 'none'}",
        f"  driver nodes {spread or 'none'} (the ResourceSlices of {survey.driver})",
    ]


def _driver_lines(survey) -> list[str]:
    cfg, mode = survey.cfg, survey.deploy_mode
    what = (
        "installs nothing; checks its DeviceClasses and that its ResourceSlices are published"
        if mode == "preinstalled"
        else f"installs the driver ({mode}) and removes it at the end"
    )
    if survey.helper:
        access = f"privileged-pod: {survey.helper}, on {', '.join(survey.nodes)}"
    elif survey.owned:
        access = f"{cfg.node_access} (the cluster's own node access where it has one)"
    else:
        access = f"{cfg.node_access}: no helper pod (node checks skip; opt in with --node-access privileged-pod)"
    return [f"  driver       {survey.driver}, deploy mode {mode}: {what}", f"  node access  {access}"]


def _creates_line(decisions, cfg) -> str:
    using = [d for d in decisions if d.namespaces and d.decision in ("run", "at-start")]
    admin = sum(1 for d in using if d.namespaces > 1)
    return (
        f"  creates      a namespace per test for {len(using)} test(s) ({admin} with a second, admin-access one), "
        f"named t-<hash>-<test> and labelled {names.RUN_LABEL}=<run id>, with the test's ResourceClaims, templates "
        f"and pods; each removed after its test, the run label swept at the end; report in "
        f"{cfg.report_dir or 'reports/<run id>'}"
    )


def plan(decisions, survey, profile: str, by_profile: int, deselected: int) -> str:
    """The text of ``run --plan``: the cluster, nodes, driver, node access, what the run would create, the
    problems it would stop on, the count line and one row per selected test (decision, ID, evidence)."""
    lines = ["PLAN of `dra-conformance run` (nothing was created; a run with the same options would do this):"]
    if survey is not None:
        lines += _cluster_lines(survey) + _driver_lines(survey) + [_creates_line(decisions, survey.cfg)]
        lines += [f"  WOULD STOP   {note} (exit 3)" for note in survey.notes]
    lines += [count_line(decisions, profile, by_profile, deselected - by_profile)]
    lines += _rows(decisions)
    if not decisions:
        lines.append("  (nothing selected: the run would exit 5)")
    return "\n".join(lines)


def listing(decisions, survey, profile: str, by_profile: int) -> str:
    """The text of ``list --kubeconfig``: one row per selected test (decision, ID, evidence) and the count line."""
    head = []
    if survey is not None and not survey.owned:
        head = [f"cluster {survey.server} (Kubernetes {survey.k8s_version}), driver {survey.driver}:"]
    return "\n".join(head + _rows(decisions) + [count_line(decisions, profile, by_profile)])
