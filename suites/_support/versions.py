"""Served-version facts for the cross-version API tests: the server's minor version, the release from which
each beta version of resource.k8s.io is deprecated (and so answers with a Warning header), and a device's
fields in any version (v1beta1 wraps them in ``basic``).

Sources: feature-catalog.md §1.2 (v1beta1 deprecated in v1.35, removal planned v1.38; v1beta2 deprecated in
v1.36, removal v1.39 — both "(verify)" upstream, k/k staging/src/k8s.io/api/resource/*/
zz_generated.prerelease-lifecycle.go); KEP-1693 deprecation warnings. Observed: v1.34.4 sends none for either.
Belongs in: conformance/k8s/discovery.py.
"""
from __future__ import annotations

import re

DEPRECATED_IN_MINOR = {"v1beta1": 35, "v1beta2": 36}


def server_minor(k8s) -> int:
    """The API server's minor version (``/version`` ``minor``, "34+" -> 34)."""
    return int(re.sub(r"\D.*$", "", str(k8s.get_json("/version").get("minor", "0"))) or 0)


def expects_deprecation_warning(k8s, version: str) -> bool:
    """Whether reading resource.k8s.io/``version`` must warn on this server."""
    return server_minor(k8s) >= DEPRECATED_IN_MINOR[version]


def device_fields(device: dict) -> tuple[str, dict, dict]:
    """``(name, attributes, capacity)`` of a slice device in any version."""
    body = device.get("basic") or device
    return device.get("name"), body.get("attributes") or {}, body.get("capacity") or {}
