"""A namespace per test, labelled with the run and test IDs (design.md §6), created through a tracker so it
is removed last."""

from __future__ import annotations

import hashlib

from conformance.core import names, timeouts
from conformance.core.objects import Obj
from conformance.k8s import waits
from conformance.k8s.tracker import Tracker


def namespace_name(run_id: str, test_id: str) -> str:
    """``t-<6 hex of run+test>-<test>`` cut to a DNS label: unique per run and readable."""
    digest = hashlib.sha1(f"{run_id}/{test_id}".encode()).hexdigest()[:6]
    return names.dns_label(f"t-{digest}-{test_id}", 63)


def make_namespace(
    tracker: Tracker, run_id: str, test_id: str, *, admin_access: bool = False, labels: dict[str, str] | None = None
) -> Obj:
    """Create the test's namespace via ``tracker``. ``admin_access`` adds the
    ``resource.kubernetes.io/admin-access: "true"`` label (KEP-5018) that allows adminAccess requests."""
    all_labels = {**names.run_labels(run_id, test_id), **(labels or {})}
    if admin_access:
        all_labels[names.ADMIN_ACCESS_LABEL] = "true"
    ns = tracker.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace_name(run_id, test_id), "labels": all_labels},
        }
    )
    waits.default_service_account(tracker.k8s, ns.name, timeout=timeouts.API_SHORT)
    return ns
