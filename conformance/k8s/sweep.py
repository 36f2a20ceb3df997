"""The session sweep: delete everything labelled with the run ID, in DRA order, and wait (design.md §6).

Covers Ctrl-C, crashed xdist workers and tests whose tracker teardown failed; :func:`request_deletion` is what is
left to do when Ctrl-C cuts the sweep itself short. Uses an unguarded client: it
only ever touches objects carrying ``dra-conformance.test/run=<run id>``.
"""

from __future__ import annotations

from conformance.core import errors, names, timeouts
from conformance.k8s import waits
from conformance.k8s.client import K8s
from conformance.k8s.tracker import Tracker

OWNER_LABEL = f"{names.LABEL_PREFIX}/owner"  # "driver": removed by the driver deployer, not the sweep
SWEEP_KINDS = (
    "Pod",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
    "DeviceClass",
    "ResourceSlice",
    "Namespace",
)


def labelled(k8s: K8s, run_id: str, kinds=SWEEP_KINDS) -> list:
    """Every object of ``kinds`` carrying the run label (kinds the server does not serve are skipped)."""
    selector = f"{names.RUN_LABEL}={names.label_value(run_id)}"
    found = []
    for kind in kinds:
        try:
            found.extend(k8s.list(kind, None, label_selector=selector))
        except errors.NotFound:
            continue
    return found


def driver_owned(obj) -> bool:
    """Whether ``obj`` is the driver deployer's to remove (label ``dra-conformance.test/owner=driver``), not
    the sweep's."""
    return obj.labels.get(OWNER_LABEL) == "driver"


def run_ids(k8s: K8s, kinds=SWEEP_KINDS) -> list[str]:
    """The run IDs (label values) of every object of ``kinds`` carrying the run label, sorted (kinds the server
    does not serve are skipped): what ``cleanup --all`` sweeps."""
    found = set()
    for kind in kinds:
        try:
            found.update(o.labels[names.RUN_LABEL] for o in k8s.list(kind, None, label_selector=names.RUN_LABEL))
        except errors.NotFound:
            continue
    return sorted(found)


def sweep_run(k8s: K8s, run_id: str, *, wait_namespaces: bool = True) -> list[str]:
    """Delete all objects of run ``run_id`` and wait for them to go (also those already terminating); return
    ``kind ns/name`` of the objects that were still live (empty = teardown had left nothing). Raises LeakError
    when something survives."""
    tracker = Tracker(k8s.unguarded())
    found = [o for o in labelled(k8s, run_id) if not driver_owned(o)]
    for obj in found:
        tracker.adopt(obj)
    refs = [o.ref for o in found if not o.get("metadata.deletionTimestamp")]  # not already being deleted
    if found:
        tracker.cleanup()
    if wait_namespaces:
        _wait_namespaces_gone(k8s, run_id, [o for o in found if o.kind == "Namespace"])
    return refs


def _wait_namespaces_gone(k8s: K8s, run_id: str, namespaces: list) -> None:
    """Wait until the run's ``namespaces`` are gone (or replaced by another UID) within one NAMESPACE_DELETE
    deadline: one LIST and one watch of the run's labelled Namespaces, not one per namespace. Raises LeakError
    naming those still there."""
    if not namespaces:
        return
    uids = {ns.name: ns.uid for ns in namespaces}
    try:
        waits.each_until(
            k8s,
            "Namespace",
            None,
            uids,
            done=lambda name, o: o is None or bool(uids[name]) and o.uid != uids[name],
            timeout=timeouts.NAMESPACE_DELETE,
            awaited=lambda name: f"Namespace {name} deleted",
            label_selector=f"{names.RUN_LABEL}={names.label_value(run_id)}",
        )
    except waits.ManyTimeout as exc:
        raise errors.LeakError([f"Namespace {name}" for name in exc.pending], [str(exc)]) from exc
    except errors.WaitError as exc:
        raise errors.LeakError([f"Namespace {name}" for name in sorted(uids)], [str(exc)]) from exc


def request_deletion(k8s: K8s, run_id: str) -> list[str]:
    """Ask for the deletion of every object of run ``run_id`` not already being deleted and wait for none (the
    sweep cut short by Ctrl-C: a namespace takes its content with it, the API server finishes the rest).
    Returns ``kind ns/name`` of the deletions requested; raises ApiError other than NotFound."""
    client = k8s.unguarded()
    asked = []
    for obj in labelled(k8s, run_id):
        if driver_owned(obj) or obj.get("metadata.deletionTimestamp"):
            continue
        try:
            client.delete(obj.kind, obj.name, obj.namespace or None)
        except errors.NotFound:
            continue
        asked.append(obj.ref)
    return asked
