"""The parts of a PASS that say what was *not* fully tested (issue 24 §1: no bare PASS over an untested area).

Three summary.json lists, each named on the verdict line (conformance/reporting/scope.py ``verdict_line``) and in
its own row of the scope box; none changes the verdict or the exit code (a PASS with qualifications exits 0, like
``not qualified``):

* ``partlyTested`` (:func:`partly_tested`): a capability the profile declares whose tests partly skipped without
  excuse (``coverage.mark``: ``partial``), e.g. ``driver.health — test_device_turning_unhealthy_...: health switch
  not available: profile X gives no health_switch.node_annotation`` (breaker s15 C6). The declared features of
  ``coverage.FEATURES`` already fail the verdict instead and are not listed.
* ``notTestable`` (:func:`not_testable`): tests skipped because the cluster cannot reach what they need
  (``coverage.CLUSTER_LACKS``: node access that cannot reach the DRA plugin socket, i.e. no relay image on the
  nodes), grouped by what is missing, with what would enable them (breaker s15 C7). The skip stays excused (the
  driver is not blamed) but the verdict line says the plugin contract was not tested.
* ``untested`` (:func:`untested_by_omission`): features the driver profile neither claims nor waives although the
  suite tests them whenever the profile gives what they need (:data:`NEEDS_PROFILE`): opaque config without an
  ``opaque_config.parameters`` sample, the admin access signal without ``admin_access_signal``, CDI device identity
  without a ``cdi_identity`` pattern (breaker s15 C9). Leaving the key out must never read cleaner than the
  explicit ``false`` the verdict line names as a waiver.
"""

from __future__ import annotations

from conformance.reporting import coverage

# not-claimed features (scope.NOT_CLAIMED labels) the suite tests whenever the profile gives what they need:
# label -> (the waiver that makes it moot, what the profile must give)
NEEDS_PROFILE = {
    "opaque config": (
        "opaque_config",
        "give opaque_config.parameters (a config sample) or declare opaque_config: false",
    ),
    "admin access signal": (
        "admin_access",
        "name admin_access_signal (what the driver shows for an adminAccess result)",
    ),
    "CDI device identity": ("cdi", "give a cdi_identity pattern (the device node/mount/env of an allocated device)"),
}
# what a cluster-lack skip reason is about -> (what was not tested, what would enable it)
CLUSTER_LACK_TOPICS = {
    "cannot reach the DRA plugin socket": (
        "DRA plugin contract (NodePrepare/NodeUnprepare over the driver's gRPC socket)",
        "load the suite's relay image onto every node (`dra-conformance images export` / `images import`) and run "
        "with --node-access privileged-pod",
    ),
}


def _reason(text: str | None) -> str:
    """A skip reason without pytest's ``Skipped: `` prefix, first line only."""
    first = coverage.first_line(text)
    return first.removeprefix("Skipped: ")


def _short(gap: str) -> str:
    """``"<node id>: <reason>"`` of a coverage gap as ``"<test name>: <reason>"`` (at most 160 characters)."""
    node_id, _, why = gap.partition(": ")
    name = node_id.rsplit("::", 1)[-1]
    return f"{name}: {why}"[:160]


def partly_tested(capabilities: list[dict]) -> list[str]:
    """``"<capability> — <test name>: <skip reason>"`` (gaps joined by ``"; "``) of every declared capability of
    the summary's ``capabilities`` that ended ``partial`` and does not already fail the verdict
    (:func:`conformance.reporting.coverage.holds_verdict`)."""
    out = []
    for cap in capabilities:
        if cap["status"] != "partial" or not cap.get("declared") or coverage.holds_verdict(cap):
            continue
        out.append(f"{cap['name']} — " + "; ".join(_short(g) for g in cap["coverage"]["gaps"]))
    return out


def not_testable(tests: list[dict]) -> list[str]:
    """``"<what was not tested> (<n> test(s)) — <why>; to test it: <fix>"`` for the skipped ``tests`` (summary test
    entries) whose reason says the cluster cannot reach what they need (:data:`coverage.CLUSTER_LACKS`), one line
    per topic of :data:`CLUSTER_LACK_TOPICS` (other cluster-lack reasons: one line per distinct reason)."""
    groups: dict[str, list[str]] = {}
    for t in tests:
        reason = _reason(t.get("reason"))
        if t["status"] != "skipped" or not reason.startswith(coverage.CLUSTER_LACKS):
            continue
        topic = next((k for k in CLUSTER_LACK_TOPICS if k in reason), reason[:120])
        groups.setdefault(topic, []).append(reason)
    out = []
    for topic, reasons in groups.items():
        what, fix = CLUSTER_LACK_TOPICS.get(topic, (topic, "a cluster whose node access reaches it"))
        why = reasons[0].split(": ", 1)[-1][:120] if topic in CLUSTER_LACK_TOPICS else "the cluster lacks it"
        out.append(f"{what} ({len(reasons)} test(s)) — {why}; to test it: {fix}")
    return out


def untested_by_omission(not_claimed: list[str], waived: list[str]) -> list[str]:
    """``"<feature> — <what the profile must give>"`` for each not-claimed feature (``notClaimed``) of
    :data:`NEEDS_PROFILE` whose base capability is not waived (``waived``: profile keys declared false; e.g. the
    admin access signal is moot when ``admin_access: false``)."""
    return [
        f"{label} — {need}"
        for label, (base, need) in NEEDS_PROFILE.items()
        if label in not_claimed and base not in waived
    ]


def fields(capabilities: list[dict], tests: list[dict], not_claimed: list[str], waived: list[str]) -> dict:
    """The summary.json fields of this module: ``{"partlyTested", "notTestable", "untested"}`` (lists of
    strings, see the module docstring)."""
    return {
        "partlyTested": partly_tested(capabilities),
        "notTestable": not_testable(tests),
        "untested": untested_by_omission(not_claimed, waived),
    }


def verdict_parts(summary: dict) -> list[str]:
    """The verdict-line parts of a summary.json document's ``partlyTested``, ``notTestable`` and ``untested``
    (``["partly tested: driver.health — ...", "not testable on this cluster: ...", "not tested (profile gives
    nothing to test it with): opaque config — ..."]``; empty lists give no part)."""
    parts = []
    if summary.get("partlyTested"):
        parts.append(f"partly tested: {'; '.join(summary['partlyTested'])}")
    if summary.get("notTestable"):
        parts.append(f"not testable on this cluster: {'; '.join(summary['notTestable'])}")
    if summary.get("untested"):
        parts.append(f"not tested (profile gives nothing to test it with): {'; '.join(summary['untested'])}")
    return parts
