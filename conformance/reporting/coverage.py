"""Coverage of a capability in summary.json: which skips of its tests are gaps the driver's inventory left open.

A capability whose tests partly passed and partly skipped is ``pass`` only when every skip is *excused*: the
skip names another capability as the missing one (``core.selection``: ``"<capability> not available: ..."``,
e.g. an allocator gap of the Kubernetes release, or the ``node_access`` fixture), or the cluster cannot reach
what the test needs (node access that cannot reach the DRA plugin socket). Any other skip comes from a fixture
that found nothing fitting in the driver's published devices (``conformance.fixtures._pick``: "<what> not
available: ...; published (first devices): ..."), i.e. part of the capability was never checked. Such a
capability is ``partial``, with a ``coverage`` entry ``{run, skipped, gaps: ["<node id>: <reason>", ...]}``.

A *declared* driver feature of :data:`FEATURES` that ends ``partial`` fails the verdict (review 5 finding 4: a
driver must not pass its partition or capacity suite because its inventory dodged the test that would catch it);
the others (``baseline``, ``allocator.*``, ``platform.*``, and driver capabilities whose tests need an inventory
shape an honest driver may lack: one device per node, no attributes) only show the gap (review 6 finding 1:
``driver.taints``, on by default, skipped its rule tests on one-device nodes and failed honest GPU drivers).
"""

from __future__ import annotations

import re

BLAMED = re.compile(r"^(\S+) not available:")  # the skip reason of a missing capability (core.selection)
CLUSTER_LACKS = ("node access ",)
# declared driver features whose own inventory is what their tests pick from (a driver that declares partitions
# publishes counter sets, one that declares consumable capacity publishes multi-allocatable devices): a fixture
# skip of their tests is a gap the driver's published devices left open, and fails the verdict
FEATURES = frozenset(
    {
        "driver.partitions",
        "driver.consumable_capacity",
        "driver.device_status",
        "driver.binding_conditions",
        "driver.binding_failure",
        "driver.published_taints",
        "driver.extended_resource_name",
    }
)


def skipped_for_another(test: dict | None, name: str) -> bool:
    """A skipped ``test`` (a summary test entry) whose reason names another of its capabilities than ``name``
    as the missing one, or a Kubernetes release gap (``allocator.*``, ``platform.*``: never the driver's) that a
    fixture found (e.g. ``allocator.admin_access_counters`` for the admin test on partitioned devices)."""
    if test is None or test["status"] != "skipped":
        return False
    blamed = BLAMED.match(test.get("reason") or "")
    if not blamed or blamed.group(1) == name:
        return False
    return blamed.group(1) in test["capabilities"] or blamed.group(1).startswith(("allocator.", "platform."))


def excused(test: dict, name: str, known: dict) -> bool:
    """Whether the skip of ``test`` does not count against capability ``name``: it is
    :func:`skipped_for_another`, names a run capability (``known``: run.json ``capabilities``) other than
    ``name`` that is unavailable, or says the cluster lacks what the test needs (:data:`CLUSTER_LACKS`)."""
    reason = test.get("reason") or ""
    blamed = BLAMED.match(reason)
    other = (
        blamed is not None and blamed.group(1) != name and (known.get(blamed.group(1)) or {}).get("available") is False
    )
    return skipped_for_another(test, name) or other or reason.startswith(CLUSTER_LACKS)


def first_line(text: str | None) -> str:
    """The first line of ``text``, at most 300 characters (``""`` when empty)."""
    return (text or "").strip().splitlines()[0][:300] if (text or "").strip() else ""


def gaps(tests: list[dict], name: str, known: dict) -> list[str]:
    """``"<node id>: <reason>"`` of each skipped test of ``tests`` that :func:`excused` does not excuse."""
    return [
        f"{t['id']}: {first_line(t.get('reason')) or 'no reason given'}"
        for t in tests
        if t["status"] == "skipped" and not excused(t, name, known)
    ]


def mark(entry: dict, tests: list[dict], known: dict) -> dict:
    """Turn a ``pass`` capability ``entry`` of summary.json (with ``tests``, its test entries) into
    ``partial`` when some of its tests skipped without excuse, adding ``coverage``; other entries unchanged."""
    if entry["status"] != "pass":
        return entry
    open_gaps = gaps(tests, entry["name"], known)
    if not open_gaps:
        return entry
    run = sum(1 for t in tests if t["status"] in ("passed", "failed", "broken"))
    entry.update(status="partial", coverage={"run": run, "skipped": len(open_gaps), "gaps": open_gaps})
    return entry


def holds_verdict(cap: dict) -> bool:
    """Whether a ``partial`` capability fails the run: a declared driver feature of :data:`FEATURES`."""
    return cap["status"] == "partial" and cap["declared"] and cap["name"] in FEATURES


def verdict_reason(cap: dict) -> str:
    """The verdict line of a :func:`holds_verdict` capability."""
    cov = cap["coverage"]
    return (
        f"declared capability {cap['name']} is partial: {cov['skipped']} of {len(cap['tests'])} test(s) could not "
        "run with the published inventory: " + "; ".join(cov["gaps"])
    )
