"""Generic object waits: gone, and a field reaching a value."""

from __future__ import annotations

from collections.abc import Callable

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.client import K8s
from conformance.k8s.waits.core import blames, until


def object_gone(k8s: K8s, obj: Obj, *, timeout: float) -> None:
    """Wait until ``obj`` (any kind) no longer exists, or was replaced by an object with another UID (an ``obj``
    without UID, e.g. a reference built from a name, only counts as gone when nothing has its name)."""
    until(
        k8s,
        obj.kind,
        obj.name,
        obj.namespace or None,
        done=lambda o: o is None or bool(obj.uid) and o.uid != obj.uid,
        timeout=timeout,
        awaited=f"{obj.ref} deleted",
        version=obj.api_version.rsplit("/", 1)[-1] or None,
    )


@blames(errors.CLUSTER)
def default_service_account(k8s: K8s, namespace: str, *, timeout: float) -> None:
    """Wait until ``namespace`` has its ``default`` ServiceAccount: pods are refused until the ServiceAccount
    admission plugin has one to mount (kube-controller-manager's serviceaccount controller creates it)."""
    until(
        k8s,
        "ServiceAccount",
        "default",
        namespace,
        done=lambda o: o is not None,
        timeout=timeout,
        awaited=f"ServiceAccount {namespace}/default created",
    )


def object_matches(k8s: K8s, obj: Obj, predicate: Callable[[Obj], bool], *, timeout: float, awaited: str) -> Obj:
    """Wait until ``predicate(current object)``; fails early when the object is deleted."""
    return until(
        k8s,
        obj.kind,
        obj.name,
        obj.namespace or None,
        done=lambda o: o is not None and predicate(o),
        failed=lambda o, _e: f"{obj.ref} was deleted" if o is None else None,
        timeout=timeout,
        awaited=awaited,
        version=obj.api_version.rsplit("/", 1)[-1] or None,
    )
