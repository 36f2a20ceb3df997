"""Driver readiness shared by all deployers: DeviceClasses exist, ResourceSlices published.

Source: KEP-5970 expected failures ("no slices for the driver -> clear error", "wrong DeviceClass -> clear
error"); KEP-4381 (a driver publishes ≥ 1 slice per served node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from conformance.core import errors, names, timeouts
from conformance.core.objects import Obj
from conformance.core.profile import DriverProfile
from conformance.dra.inventory import complete_pools
from conformance.k8s import waits
from conformance.k8s.client import K8s
from conformance.node import kubelet

DRIVER_OWNER_LABEL = f"{names.LABEL_PREFIX}/owner"


def device_class_object(name: str, driver: str, run_id: str) -> dict:
    """A DeviceClass selecting every device of ``driver`` (what drivers' own charts ship), run-labelled."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {**names.run_labels(run_id), DRIVER_OWNER_LABEL: "driver"}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def ensure_device_classes(k8s: K8s, profile: DriverProfile, run_id: str) -> list[str]:
    """Create the profile's DeviceClasses that do not exist yet; return the names created by us."""
    created = []
    for name in profile.device_classes:
        if k8s.exists("DeviceClass", name):
            continue
        k8s.create(device_class_object(name, profile.driver, run_id))
        created.append(name)
    return created


def delete_device_classes(k8s: K8s, names_: Iterable[str]) -> None:
    """Delete DeviceClasses we created (NotFound ignored)."""
    for name in names_:
        try:
            k8s.unguarded().delete("DeviceClass", name)
        except errors.NotFound:
            pass


def check_device_classes(k8s: K8s, profile: DriverProfile) -> None:
    """Raise DriverNotReady naming the first DeviceClass of the profile that does not exist."""
    for name in profile.device_classes:
        if not k8s.exists("DeviceClass", name):
            raise errors.DriverNotReady(
                profile.driver,
                f"DeviceClass {name!r} (profile {profile.source or profile.name}, field device_classes) does not exist",
                "install the driver's DeviceClass or correct device_classes in the profile",
            )


def await_slices(
    k8s: K8s,
    profile: DriverProfile,
    nodes: Iterable[str] = (),
    *,
    timeout: float = timeouts.SLICES_PUBLISHED,
    logs: Callable[[], dict[str, str]] | None = None,
    failed: Callable[[], str | None] | None = None,
) -> list:
    """Wait for the driver's ResourceSlices (≥ 1 device on each of ``nodes``, any node when empty), at least
    ``timeout`` seconds whatever the run's timeout scale below 1 (a larger one lengthens it).

    A driver that publishes on some of ``nodes`` (within ``timeout``) but not on the others within a further
    :data:`~conformance.core.timeouts.SLICES_PUBLISHED` is deployed all the same: KEP5970-1/-2 and the smoke
    test then fail naming the missing nodes (issue 24 §2), which a refused deploy would not show.
    Raises DriverNotReady with what was awaited, the slices seen and the tail of the plugin logs (``logs()``);
    early when ``failed()`` returns a message (a plugin process exited).
    """
    nodes = list(nodes)
    # a deploy's wait, not a test's: a --timeout-scale below 1 (the fault matrix's 0.2 and 0.5) does not shorten
    # it below its own length; the plugin's start on a loaded host took 12 s once (s14 matrix: "within 12s")
    timeout = timeout / min(1.0, timeouts.scale())
    try:
        waits.slices_published(k8s, profile.driver, min_devices=1, timeout=timeout, failed=failed)
        grace = min(timeout, timeouts.SLICES_PUBLISHED / min(1.0, timeouts.scale()))
        return waits.slices_published(k8s, profile.driver, nodes=nodes, min_devices=1, timeout=grace, failed=failed)
    except errors.WaitError as exc:  # a timeout, or failed() ended it early
        seen = k8s.list("ResourceSlice", field_selector=f"spec.driver={profile.driver}") if nodes else []
        # "publishes" means complete pools (resourceSliceCount slices of the highest generation), as the
        # scheduler reads them: a pool that never looks complete is no publication (fault wrong-slice-count)
        complete = [s for pool in complete_pools(seen).values() for s in pool]
        if isinstance(exc, errors.WaitTimeout) and any(waits.devices_by_node(complete).get(n) for n in nodes):
            return complete  # some of the nodes publish: the suites name the others
        detail = exc.last_state or "  (no slices)"
        if exc.failed:
            detail = f"  {exc.failed}\n" + detail
        for source, text in (logs() if logs else {}).items():
            detail += f"\n--- last log lines of {source} ---\n" + "\n".join(text.splitlines()[-15:])
        target = f"nodes {nodes}" if nodes else "any node"
        when = "(gave up: a plugin process exited)" if exc.failed else f"within {exc.timeout:.0f}s"
        raise errors.DriverNotReady(
            profile.driver, f"ResourceSlices with at least one device on {target} {when}", "seen:\n" + detail
        ) from None


def delete_slices(k8s: K8s, driver: str) -> list[str]:
    """Delete every ResourceSlice of ``driver`` (``spec.driver``; what a removed driver leaves when the kubelet
    does not wipe them); returns the names deleted. API errors end it quietly (tear-down continues)."""
    deleted = []
    try:
        for s in k8s.list("ResourceSlice", field_selector=f"spec.driver={driver}"):
            try:
                k8s.unguarded().delete("ResourceSlice", s.name)
                deleted.append(s.name)
            except errors.NotFound:
                pass
    except errors.ApiError:
        pass
    return deleted


def daemonset_ready(ds: Obj) -> bool:
    """A DaemonSet whose current generation runs a Ready pod on every node it schedules to (``status``:
    observedGeneration, desiredNumberScheduled >= 1, updatedNumberScheduled and numberReady equal to it)."""
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled", 0)
    return (
        st.get("observedGeneration", 0) >= ds.get("metadata.generation", 1)
        and desired >= 1
        and st.get("updatedNumberScheduled", 0) == desired
        and st.get("numberReady", 0) == desired
    )


def await_daemonsets(k8s: K8s, driver: str, refs: Iterable[tuple[str, str]], *, timeout: float) -> None:
    """Wait until every DaemonSet ``(namespace, name)`` is ready (:func:`daemonset_ready`). Raises
    DriverNotReady with the DaemonSet's last status and events."""
    for namespace, name in refs:
        ref = Obj({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace}})
        try:
            waits.object_matches(
                k8s, ref, daemonset_ready, timeout=timeout, awaited=f"DaemonSet {namespace}/{name} Ready on its nodes"
            )
        except errors.WaitError as exc:
            pods = unready_pods(k8s, driver, namespace, name)
            raise errors.DriverNotReady(driver, exc.awaited, str(exc) + (f"\n{pods}" if pods else "")) from None


def unready_pods(k8s: K8s, driver: str, namespace: str, name: str) -> str:
    """For a DaemonSet that did not get Ready: each of its pods not Ready, with its node and what that node's
    kubelet holds as registered (``plugin_manager_total_plugins``: socket paths naming ``driver``), ``""`` when
    none or unreadable. A plugin the kubelet holds whose pod stays unready often waits for the kubelet's one
    NotifyRegistrationStatus (5 s deadline, never resent: kubelet pluginmanager operation_generator.go)."""
    try:
        ds = k8s.get("DaemonSet", name, namespace)
        match = ds.get("spec.selector.matchLabels") or {}
        pods = k8s.list("Pod", namespace, label_selector=",".join(f"{k}={v}" for k, v in sorted(match.items())))
    except (errors.ConformanceError, OSError):
        return ""
    lines = []
    for pod in pods:
        ready = [c for c in pod.get("status.conditions") or [] if c.get("type") == "Ready"]
        if ready and ready[0].get("status") == "True":
            continue
        node = pod.get("spec.nodeName") or ""
        held = registered_sockets(k8s, [node]).get(node) if node else None
        mine = sorted(s for s in held or () if driver in s)
        kubelet_says = (
            "its kubelet's metrics are unreadable"
            if held is None
            else f"its kubelet holds as registered: {mine}"
            if mine
            else "its kubelet holds no socket naming the driver"
        )
        lines.append(f"  pod {pod.name} on node {node or '(none)'} not Ready; {kubelet_says}")
    return ("pods not Ready:\n" + "\n".join(lines)) if lines else ""


def registered_sockets(k8s: K8s, nodes: Iterable[str]) -> dict[str, set[str] | None]:
    """``{node: registration sockets its kubelet's plugin manager holds as registered}`` (None: metrics
    unreadable, e.g. no ``nodes/proxy`` permission). Source: kubelet metric plugin_manager_total_plugins."""
    out: dict[str, set[str] | None] = {}
    for node in nodes:
        try:
            out[node] = set(kubelet.accepted_sockets(kubelet.metrics(k8s, node)))
        except (errors.ApiError, OSError):
            out[node] = None
    return out


def await_registered(
    k8s: K8s, driver: str, before: dict[str, set[str] | None], *, timeout: float, logs: Callable | None = None
) -> dict[str, list[str]]:
    """Wait until the kubelet of every node of ``before`` (:func:`registered_sockets` read before the deploy)
    holds a registration socket it did not hold then: the plugin the deploy started registered there (KEP-4381
    plugin registration). Nodes whose metrics were unreadable are not awaited. Returns ``{node: new sockets}``;
    raises DriverNotReady naming the nodes still missing, with the plugin logs."""
    nodes = [n for n, seen in before.items() if seen is not None]
    new: dict[str, list[str]] = {}

    def check() -> bool:
        for node, now in registered_sockets(k8s, [n for n in nodes if not new.get(n)]).items():
            new[node] = sorted((now or set()) - (before[node] or set()))
        return all(new.get(n) for n in nodes)

    if nodes and not waits.poll(check, timeout=timeout, interval=1.0):
        missing = [n for n in nodes if not new.get(n)]
        detail = "".join(
            f"\n--- {src} ---\n" + "\n".join(t.splitlines()[-15:]) for src, t in (logs() if logs else {}).items()
        )
        raise errors.DriverNotReady(
            driver, f"a new plugin registration with the kubelets of {missing} within {timeout:.0f}s", detail
        )
    return new


def pod_logs(k8s: K8s, namespaces: Iterable[str], tail_lines: int = 300) -> dict[str, str]:
    """The last ``tail_lines`` log lines of every container of every pod in ``namespaces``, keyed
    ``pod/container`` (best effort: an unreadable log or namespace is noted or skipped, never raised)."""
    out = {}
    for ns in namespaces:
        try:
            for pod in k8s.list("Pod", ns):
                for c in pod.get("spec.containers") or []:
                    try:
                        out[f"{pod.name}/{c['name']}"] = k8s.logs(pod, container=c["name"], tail_lines=tail_lines)
                    except errors.ApiError as exc:
                        out[f"{pod.name}/{c['name']}"] = f"(logs unavailable: {exc})"
        except errors.ApiError:
            pass
    return out
