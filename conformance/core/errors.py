"""The one error hierarchy of dra-conformance (design.md §9).

Every error the harness raises on purpose derives from :class:`ConformanceError`; its message names the
input or the state and, where there is one, the fix. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any


class ConformanceError(Exception):
    """Base of every harness error. ``str(err)`` is a complete, user-facing message."""


class ConfigError(ConformanceError):
    """A bad option, ini value or driver-profile field.

    ``source``: the file or option (``--profile``, ``fixtures/drivers/x.yaml``); ``field``: the dotted field
    path (``capabilities.shared_claims``); ``fix``: what to write instead.
    """

    def __init__(self, message: str, *, source: str = "", field: str = "", fix: str = "") -> None:
        self.source, self.field, self.fix, self.detail = source, field, fix, message
        where = ": ".join(p for p in (source, field) if p)
        text = f"{where}: {message}" if where else message
        if fix:
            text += f" (fix: {fix})"
        super().__init__(text)


class ClusterUnavailable(ConformanceError):
    """The cluster cannot be brought up or reached (kubeconfig, API server, Docker for kind)."""


class DriverNotReady(ConformanceError):
    """The driver did not become ready: no kubelet plugin, no ResourceSlices, missing DeviceClass.

    ``driver``: the driver name; ``awaited``: what the harness waited for.
    """

    def __init__(self, driver: str, awaited: str, detail: str = "") -> None:
        self.driver, self.awaited = driver, awaited
        text = f"driver {driver!r} not ready: {awaited}"
        super().__init__(text + (f"; {detail}" if detail else ""))


DRIVER = "driver"  # WaitError.party: the driver had to bring the awaited state about
CLUSTER = "cluster"  # WaitError.party: the control plane, a node's runtime or registry, or the harness


class WaitError(ConformanceError):
    """A bounded wait ended without reaching its state: the base of :class:`WaitTimeout` (the deadline
    passed) and :class:`WaitFailed` (a failure predicate ended it early). Catch this when either means
    "did not get there"; catch a subclass when the difference matters (reporting tells them apart).

    ``awaited``: the state (``claim ns/x allocated``); ``timeout``: seconds; ``last_state``: a short text of
    the last observed object; ``events``: recent event lines; ``failed``: the failure predicate's message
    (empty for a timeout); ``party``: who had to bring the state about, :data:`DRIVER` or :data:`CLUSTER` (the
    control plane, the node's runtime or registry, the harness), ``""`` when the wait cannot tell (reporting
    classes a timeout by it: conformance/reporting/classify.py).
    """

    def __init__(
        self,
        awaited: str,
        timeout: float,
        last_state: str = "",
        events: list[str] | None = None,
        failed: str = "",
        party: str = "",
    ) -> None:
        self.party = party
        self.awaited, self.timeout, self.last_state = awaited, timeout, last_state
        self.events, self.failed = list(events or []), failed
        head = (
            f"while waiting for {awaited}: {failed}"
            if failed
            else f"timed out after {timeout:.0f}s waiting for {awaited}"
        )
        parts = [head, "last observed state:\n" + (last_state or "  (nothing observed)")]
        if self.events:
            parts.append("recent events:\n" + "\n".join("  " + e for e in self.events[-15:]))
        super().__init__("\n".join(parts))


class WaitTimeout(WaitError):
    """A bounded wait reached its deadline (``timeout`` seconds) without reaching its state; ``party``: see
    :class:`WaitError` (the waits of conformance/k8s/waits set it where they know)."""

    def __init__(
        self, awaited: str, timeout: float, last_state: str = "", events: list[str] | None = None, party: str = ""
    ) -> None:
        super().__init__(awaited, timeout, last_state, events, party=party)


class WaitFailed(WaitError):
    """A wait ended early because its failure predicate matched (the awaited state can no longer come:
    pod Failed, object deleted, ``FailedPrepareDynamicResources``). Not a timeout: ``failed`` says why."""

    def __init__(
        self,
        awaited: str,
        timeout: float,
        last_state: str = "",
        events: list[str] | None = None,
        failed: str = "the failure predicate matched",
    ) -> None:
        super().__init__(awaited, timeout, last_state, events, failed or "the failure predicate matched")


class LeakError(ConformanceError):
    """Objects survived teardown. ``survivors``: ``kind ns/name`` strings; ``errors``: delete errors."""

    def __init__(self, survivors: list[str], errors: list[str] | None = None) -> None:
        self.survivors, self.errors = list(survivors), list(errors or [])
        text = f"{len(self.survivors)} object(s) survived teardown: " + ", ".join(self.survivors)
        if self.errors:
            text += "\nerrors during teardown:\n" + "\n".join("  " + e for e in self.errors)
        super().__init__(text)


class ProbeDidNotRun(ConformanceError):
    """A container's visibility probe gave no usable answer, so nothing may be judged from its output: the
    end marker never came (the container exited or crashed first, or the deadline passed) or the vendor
    command failed (exit status != 0). Never a pass, never a "sees no device".

    ``pod``: ``namespace/name``; ``container``: its name; ``command``: the profile's probe command;
    ``reason``: what went wrong; ``rc``: the command's exit status (None without the marker); ``output``: the
    tail of the container's output.
    """

    ran = False  # the command ran to its end marker (ProbeCommandFailed)

    def __init__(
        self, pod: str, container: str, command: str, reason: str, output: str = "", rc: int | None = None
    ) -> None:
        self.pod, self.container, self.command, self.reason, self.rc = pod, container, command, reason, rc
        self.output = output
        what = "failed" if self.ran else "did not run"
        text = f"visibility probe {what} in pod {pod} container {container!r} (command {command!r}): {reason}"
        text += "\noutput tail:\n" + (output or "  (empty)")
        super().__init__(text)


class ProbeCommandFailed(ProbeDidNotRun):
    """The probe ran to its end marker in a container that reached Running with the claim, and the vendor
    command exited != 0 (e.g. ``nvidia-smi -L`` or ``ls /dev/dri /dev/kfd`` finding no device): the device the
    driver was to inject is not usable there. Unlike its parent (no marker: the container never got that far,
    or the shell could not run the command), this is the driver's defect (breaker s15 C2)."""

    ran = True


class ApiError(ConformanceError):
    """The API server refused a request. ``status``: HTTP code; ``reason``: Status.reason
    (``NotFound``, ``AlreadyExists``, ``Invalid``, ``Conflict``, ``Forbidden``...); ``body``: the decoded
    server Status (dict) or raw text; ``request``: ``VERB path``.
    """

    def __init__(self, status: int, reason: str, message: str, body: Any = None, request: str = "") -> None:
        self.status, self.reason, self.message, self.body, self.request = status, reason, message, body, request
        super().__init__(f"{request}: {status} {reason}: {message}" if request else f"{status} {reason}: {message}")

    @property
    def causes(self) -> list[dict]:
        """``Status.details.causes`` (field-level validation errors), empty when absent."""
        if isinstance(self.body, dict):
            return list((self.body.get("details") or {}).get("causes") or [])
        return []


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class AlreadyExists(ApiError):
    """409 AlreadyExists."""


class Conflict(ApiError):
    """409 Conflict (stale resourceVersion or failed precondition). Never resent unchanged: the caller re-reads
    the object and re-applies its change (``K8s.update`` does this)."""


class Invalid(ApiError):
    """422 Invalid: validation refused the object; see :attr:`causes`."""


class Forbidden(ApiError):
    """403 Forbidden (RBAC or admission)."""


class Gone(ApiError):
    """410 Gone: a watch's resourceVersion is too old (the wait re-lists)."""


class TransientApiError(ApiError):
    """429 or 5xx: retried by the client with backoff."""


def api_error_for(status: int, reason: str, message: str, body: Any = None, request: str = "") -> ApiError:
    """The ApiError subclass for an HTTP status / Status.reason pair."""
    if status == 404:
        cls: type[ApiError] = NotFound
    elif status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status == 422:
        cls = Invalid
    elif status == 403:
        cls = Forbidden
    elif status == 410:
        cls = Gone
    elif status == 429 or status >= 500:
        cls = TransientApiError
    else:
        cls = ApiError
    return cls(status, reason, message, body, request)
