"""What a container shows: the driver profile's visibility probe, its opaque-config marker and its
admin-access signal, matched against the container's output, and the devices named there compared with the
devices allocated to the claims the container references.

A probe container prints the end marker ``DRA_CONFORMANCE_PROBE_END rc=<n>`` after the vendor command
(:mod:`conformance.core.probe_marker`). Every judgement first waits for it (bounded by
``timeouts.PROBE_OUTPUT``) and raises :class:`~conformance.core.errors.ProbeDidNotRun` when it never comes or
the command failed: an empty or cut-off output never passes a negative check.
The output comes from the API (pods/log); when the API server cannot reach the kubelet, from the node's CRI
log files through node access. One probe hit is one device or request (``DRA_GPU_DEVICE_<n>=``,
``GPU_DEVICE_<n>=``, ``claim_<c>_<r>=true``).
Sources: KEP-5970 behaviour 5 (driver-injected env through CDI); ai-conformance KAR-0049
(PositiveAccessTest, NegativeIsolationTest, MultiContainerIsolationTest); resource.k8s.io/v1
Container.resources.claims (name, request); dra-example-driver ``DRA_ADMIN_ACCESS=true`` CDI env.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from conformance.core import probe_marker, timeouts
from conformance.core.errors import ApiError, ProbeCommandFailed, ProbeDidNotRun
from conformance.core.objects import Obj
from conformance.core.probe_marker import ProbeRun
from conformance.core.profile import DriverProfile
from conformance.k8s.client import K8s
from conformance.k8s.waits import poll

EVIDENCE_TAIL = 2000  # characters of output shown in assertion messages
POLL_INTERVAL = 0.25  # seconds between two reads of a log without the end marker


class Shown(NamedTuple):
    """A probe judgement: ``ok`` and the ``evidence`` for the assertion message. Unpacks as
    ``ok, evidence``; truthy exactly when ``ok``."""

    ok: bool
    evidence: str

    def __bool__(self) -> bool:
        return self.ok


def container_claims(pod: Obj, container: str) -> list[tuple[str, str | None]]:
    """``[(ResourceClaim name, request or None)]`` that ``container`` (a container or init container of
    ``pod``, as read from the API) references in ``resources.claims``, with pod claim names resolved through
    ``spec.resourceClaims`` and, for templates, ``status.resourceClaimStatuses``. Raises LookupError for a
    container the pod does not have or a generated claim not recorded yet."""
    spec = pod.get("spec") or {}
    found = [c for c in (spec.get("containers") or []) + (spec.get("initContainers") or []) if c["name"] == container]
    if not found:
        raise LookupError(f"pod {pod.namespace}/{pod.name} has no container {container!r}")
    generated = {s["name"]: s.get("resourceClaimName") for s in pod.get("status.resourceClaimStatuses") or []}
    by_pod_name = {
        c["name"]: c.get("resourceClaimName") or generated.get(c["name"]) for c in spec.get("resourceClaims") or []
    }
    refs = []
    for ref in (found[0].get("resources") or {}).get("claims") or []:
        claim = by_pod_name.get(ref["name"])
        if not claim:
            raise LookupError(
                f"pod {pod.namespace}/{pod.name}: pod claim {ref['name']!r} has no ResourceClaim yet "
                "(status.resourceClaimStatuses): pass the pod waits.pod_running returned"
            )
        refs.append((claim, ref.get("request")))
    return refs


def _names(hit: str, device: str) -> bool:
    """Whether probe line ``hit`` names ``device`` as a whole word (``gpu-1`` is not in ``gpu-10``)."""
    return re.search(rf"(?<![\w-]){re.escape(device)}(?![\w-])", hit) is not None


class Probe:
    """Reads a container's probe output and matches the profile. ``node_access``: None when the cluster offers
    none (then a pods/log failure is raised as the ApiError it is); ``inventory``: the driver's published
    devices (:class:`~conformance.dra.inventory.Inventory`), needed by :meth:`shows_claimed_devices`."""

    def __init__(self, k8s: K8s, profile: DriverProfile, node_access=None, inventory=None) -> None:
        self.k8s, self.profile, self.node_access, self.inventory = k8s, profile, node_access, inventory

    # -- reading ------------------------------------------------------------------------------------
    def read(self, pod: Obj, container: str | None = None) -> tuple[str, str]:
        """``(log text, source note)`` of the container (default: the first) as it is now, marker and all; the
        note is "" for pods/log and says why the node's log files were read otherwise. Raises ApiError (no node
        access) or NodeAccessUnavailable (no log file either)."""
        try:
            return self.k8s.logs(pod, container=container, retry=False), ""
        except ApiError as exc:
            if self.node_access is None:
                raise
            current = self.k8s.get("Pod", pod.name, pod.namespace)
            name = container or current.get("spec.containers.0.name")
            text = self.node_access.container_log(
                current.get("spec.nodeName"), pod.namespace, pod.name, current.uid, name
            )
            return text, f"(read from the node's log files: pods/log failed with {exc.status} {exc.reason})"

    def _name(self, pod: Obj, container: str | None) -> str:
        return container or pod.get("spec.containers.0.name") or self._pod(pod).get("spec.containers.0.name")

    def _pod(self, pod: Obj) -> Obj:
        return self.k8s.get("Pod", pod.name, pod.namespace)

    def ended(self, pod: Obj, container: str | None = None, *, allow_failure: bool = False) -> tuple[ProbeRun, str]:
        """``(run, source note)`` once the container's probe printed its end marker; waits for it with
        :func:`~conformance.k8s.waits.poll` up to ``timeouts.PROBE_OUTPUT`` (scaled). Raises ProbeDidNotRun when
        the container exited without the marker, the deadline passed, the shell could not run the command
        (exit 126/127, a signal) or, unless ``allow_failure``, raises its subclass ProbeCommandFailed when the
        command exited != 0 (a "shows no device" check allows that: ``ls /dev/dri`` fails in a container without
        devices)."""
        name, seen = self._name(pod, container), {}

        def done() -> bool:
            seen["text"], seen["note"] = self.read(pod, name)
            if probe_marker.parse(seen["text"]).ended:
                return True
            state = _container_state(self._pod(pod), name)
            if state is None:
                return False
            seen["text"], seen["note"] = self.read(pod, name)  # it exited: its log is complete now
            if probe_marker.parse(seen["text"]).ended:
                return True
            raise self._did_not_run(pod, name, seen["text"], f"the container {state} without the end marker")

        if not poll(done, timeout=timeouts.PROBE_OUTPUT, interval=POLL_INTERVAL):
            wait = timeouts.scaled(timeouts.PROBE_OUTPUT)
            raise self._did_not_run(pod, name, seen.get("text", ""), f"no end marker within {wait:.0f}s")
        run = probe_marker.parse(seen["text"])
        if run.command_missing:
            raise self._did_not_run(
                pod, name, seen["text"], f"the command could not be run by sh (exit status {run.rc})", run.rc
            )
        if run.rc and not allow_failure:
            why = f"the command failed (exit status {run.rc})"
            raise self._did_not_run(pod, name, seen["text"], why, run.rc, ProbeCommandFailed)
        return run, seen["note"]

    def _did_not_run(
        self, pod: Obj, container: str, text: str, reason: str, rc: int | None = None, kind=ProbeDidNotRun
    ) -> ProbeDidNotRun:
        pod_name = f"{pod.namespace}/{pod.name}"
        return kind(pod_name, container, self.profile.visibility.command, reason, text[-EVIDENCE_TAIL:], rc)

    def output(self, pod: Obj, container: str | None = None) -> str:
        """The vendor command's output (before the end marker) once the probe ended; raises ProbeDidNotRun."""
        return self.ended(pod, container)[0].output

    def _hits(self, output: str) -> list[str]:
        vis = self.profile.visibility
        pattern = vis.env_regex or vis.expected_output
        return sorted(set(m.group(0) for m in re.finditer(pattern, output, re.M)))

    def hits(self, pod: Obj, container: str | None = None) -> list[str]:
        """The distinct lines of the probe output that match the profile's visibility regex (one per device or
        request). Raises ProbeDidNotRun. Suites judge with :meth:`shows_claimed_devices` instead: a count
        does not say which devices."""
        return self._hits(self.output(pod, container))

    # -- judgements -----------------------------------------------------------------------------------
    def sees(self, pod: Obj, container: str | None = None) -> tuple[bool, str]:
        """``(visible, evidence)``: whether the profile's visibility probe matched the output. Raises
        ProbeDidNotRun."""
        run, note = self.ended(pod, container)
        visible, why = self.profile.visibility.matches(run.output)
        return visible, f"{why}\n{note}" if note else why

    def shows_devices(
        self, pod: Obj, devices: Iterable[str], universe: Iterable[str], container: str | None = None, inventory=None
    ) -> Shown:
        """Whether the container shows exactly ``devices`` (names) among ``universe`` (all device names the
        driver publishes on that node), and no probe line naming something else. Probes that name devices
        (``GPU_DEVICE_0=gpu-0``) are compared by name, or, with the profile's ``visibility.device_attribute``,
        by that attribute's value read from ``inventory`` (default: this Probe's). A probe line naming no device
        of ``universe`` fails the check (``NVIDIA_VISIBLE_DEVICES=all`` would let a driver leak every device),
        unless the profile declares ``visibility.names_devices: false`` (upstream test driver
        ``claim_<c>_<r>=true``): then a hit suffices, the evidence says only visibility is proven, and the
        summary lists the waiver (capability ``driver.names_devices``). An empty ``devices`` is a "shows no
        device" check. Raises ProbeDidNotRun."""
        devices, universe, how = self._as_shown(pod, devices, universe, inventory or self.inventory)
        expected, names = set(devices), list(universe)
        run, note = self.ended(pod, container, allow_failure=not expected)
        hits = self._hits(run.output)
        per_hit = {h: {d for d in names if _names(h, d)} for h in hits}
        named = set().union(*per_hit.values()) if per_hit else set()
        if not self.profile.visibility.names_devices:
            waived = "profile declares visibility.names_devices: false: only visibility is proven, not which device: "
            ok = bool(hits) == bool(expected)
            evidence = f"{waived}expected {sorted(expected) or 'no device'}, the probe shows {hits or 'nothing'}"
            return Shown(ok, f"{evidence}; {self._evidence(pod, container, run, note)}")
        other = sorted(h for h, ds in per_hit.items() if not ds)
        ok = named == expected and not other
        evidence = f"expected {sorted(expected) or 'no device'}, the probe shows {sorted(named) or 'no device'}"
        if other:
            evidence += (
                f" and lines naming no device of this node {other} (a line naming no device proves no device; a "
                "probe that cannot name devices declares visibility.names_devices: false)"
            )
        if run.rc:
            evidence += f" (the command exited {run.rc}: read as no device)"
        return Shown(ok, f"{how}{evidence}; {self._evidence(pod, container, run, note)}")

    def shows_allocation(self, pod: Obj, claim: Obj, inventory, container: str | None = None) -> Shown:
        """:meth:`shows_devices` for the devices of ``claim``'s allocation results among those ``inventory``
        (:class:`~conformance.dra.inventory.Inventory`) publishes on the pod's node. Raises ValueError for a pod
        not bound to a node (pass the pod a wait returned): without the node there are no device names to
        compare and any output would pass. Raises ProbeDidNotRun."""
        node = pod.get("spec.nodeName")
        if not node:
            raise ValueError(
                f"pod {pod.namespace}/{pod.name} has no spec.nodeName: pass the pod waits.pod_running returned"
            )
        names = [r.device for r in claim.results]
        return self.shows_devices(pod, names, inventory.names_on(node), container, inventory=inventory)

    def _as_shown(self, pod: Obj, devices: Iterable[str], universe: Iterable[str], inventory):
        """``(devices, universe, note)`` as the probe names them: device names, or with the profile's
        ``visibility.device_attribute`` the value of that attribute of each device published on the pod's node
        (dranet: the interface name ``dra.net/ifName``); a device without it keeps its name. Raises ValueError
        when the profile names an attribute but there is no inventory to read it from."""
        devices, universe, attr = sorted(devices), list(universe), self.profile.visibility.device_attribute
        if not attr:
            return devices, universe, ""
        if inventory is None:
            raise ValueError("the profile's probe names devices by an attribute: build the Probe with an inventory")
        key, node = self.profile.qualified(attr), pod.get("spec.nodeName") or self._pod(pod).get("spec.nodeName")
        shown = {d.name: str(d.attributes.get(key, d.name)) for d in inventory.on_node(node)}
        names = [shown.get(d, d) for d in devices]
        note = (
            f"devices named by {key} ({', '.join(f'{d}={n}' for d, n in zip(devices, names, strict=True)) or 'none'}): "
        )
        return names, [shown.get(d, d) for d in universe], note

    def shows_claimed_devices(self, pod: Obj, container: str | None = None) -> Shown:
        """Whether ``container`` (default: the first) shows exactly the devices allocated to what it references
        in ``resources.claims``: every result of a referenced claim, only the named request's results
        (``req`` and ``req/<subrequest>``) for a request-scoped reference, the union over several references,
        and no device for a container that references none. Reads the pod and its claims from the API.
        Raises ProbeDidNotRun, LookupError (unknown container, unresolved claim), ValueError (no inventory, pod
        not bound)."""
        if self.inventory is None:
            raise ValueError("this Probe has no inventory: build it with Probe(..., inventory=Inventory.read(...))")
        current = self._pod(pod)
        node, name = current.get("spec.nodeName"), self._name(current, container)
        if not node:
            raise ValueError(f"pod {pod.namespace}/{pod.name} is not bound to a node: wait until it runs")
        refs, devices = container_claims(current, name), set()
        for claim_name, request in refs:
            claim = self.k8s.get("ResourceClaim", claim_name, pod.namespace)
            devices |= {
                r.device
                for r in claim.results
                if r.driver == self.inventory.driver and request in (None, r.request.split("/", 1)[0])
            }
        shown = self.shows_devices(current, devices, self.inventory.names_on(node), name)
        scope = ", ".join(f"{c}" + (f" request {r}" if r else "") for c, r in refs) or "no claim"
        return Shown(shown.ok, f"container {name} references {scope}; {shown.evidence}")

    def shows_no_device(self, pod: Obj, container: str | None = None) -> Shown:
        """Whether the container's probe ran to its end and shows no device (no line matching the profile's
        visibility regex). A command that ran and exited != 0 counts as showing none (``ls /dev/dri`` in a
        container without devices); one the shell could not run raises ProbeDidNotRun."""
        run, note = self.ended(pod, container, allow_failure=True)
        hits = self._hits(run.output)
        rc = f" (the command exited {run.rc})" if run.rc else ""
        return Shown(
            not hits, f"expected no device, the probe shows {hits}{rc}; {self._evidence(pod, container, run, note)}"
        )

    def shows_config(self, pod: Obj, container: str | None = None, *, override: bool = False) -> bool:
        """Whether the profile's opaque-config marker (``opaque_config.shows_as``; with ``override``, that of
        ``opaque_config.override``) is in the probe output. Raises ProbeDidNotRun, and ValueError for
        ``override`` when the profile gives no override sample."""
        pattern = self.profile.opaque_override_shows_as if override else self.profile.opaque_shows_as
        if not pattern:
            raise ValueError(f"profile {self.profile.name} gives no opaque_config{'.override' if override else ''}")
        return bool(re.search(pattern, self.output(pod, container), re.M))

    def shows_consumed(self, pod: Obj, value: str, container: str | None = None) -> Shown:
        """Whether the probe output shows ``value`` (a consumedCapacity quantity) through the profile's
        ``consumed_capacity_signal``, with the output as evidence. Raises ProbeDidNotRun, and ValueError when the
        profile gives no signal. Source: KEP-5075 consumedCapacity (what the driver granted the share)."""
        if not self.profile.consumed_capacity_signal:
            raise ValueError(f"profile {self.profile.name} gives no consumed_capacity_signal")
        pattern = self.profile.consumed_capacity_signal.replace("{value}", re.escape(str(value)))
        run, note = self.ended(pod, container)
        found = bool(re.search(pattern, run.output, re.M))
        return Shown(found, f"expected {pattern!r}; {self._evidence(pod, container, run, note)}")

    def shows_admin_access(self, pod: Obj, container: str | None = None) -> bool:
        """Whether the driver's admin-access signal (profile ``admin_access_signal``) is in the probe output.
        Raises ProbeDidNotRun."""
        return bool(re.search(self.profile.admin_access_signal, self.output(pod, container), re.M))

    # -- evidence -------------------------------------------------------------------------------------
    def _evidence(self, pod: Obj, container: str | None, run: ProbeRun, note: str) -> str:
        where = f"{pod.name}/{container or 'first container'}"
        head = f"probe output of {where} (exit status {run.rc}){' ' + note if note else ''}:\n"
        return head + run.output[-EVIDENCE_TAIL:]

    def evidence(self, pod: Obj, container: str | None = None) -> str:
        """The probe output's tail, for assertion messages (the raw log when the probe did not end)."""
        try:
            run, note = self.ended(pod, container, allow_failure=True)
        except ProbeDidNotRun as exc:
            return str(exc)
        return self._evidence(pod, container, run, note)


def _container_state(pod: Obj, container: str) -> str | None:
    """How ``container`` ended ("exited with 1 (Error)", "is restarting after exit 1"), or None while it has not
    ended (or has no status yet)."""
    statuses = (pod.get("status.containerStatuses") or []) + (pod.get("status.initContainerStatuses") or [])
    status = next((s for s in statuses if s.get("name") == container), None)
    if status is None:
        return None
    ended = (status.get("state") or {}).get("terminated")
    if ended:
        return f"exited with {ended.get('exitCode')} ({ended.get('reason', '')})"
    last = (status.get("lastState") or {}).get("terminated")
    if last and (status.get("state") or {}).get("waiting"):
        return f"is restarting after exit {last.get('exitCode')} ({last.get('reason', '')})"
    return None
