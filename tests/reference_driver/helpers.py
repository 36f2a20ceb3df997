"""Builders for unit tests of the reference driver: ResourceClaim JSON and a fake claim source.

The fake claim source stands in for the API server in unit tests only; e2e tests use the real one.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from reference_driver import CONFIG_API_VERSION, DRIVER_NAME

NODE = "node-a"


def gpu_config(strategy: str | None = "TimeSlicing", **extra) -> dict:
    """GpuConfig parameters."""
    params = {"apiVersion": CONFIG_API_VERSION, "kind": "GpuConfig", **extra}
    if strategy:
        params["sharing"] = {"strategy": strategy}
    return params


def config(
    params: dict, source: str = "FromClaim", requests: list[str] | None = None, driver: str = DRIVER_NAME
) -> dict:
    """One allocation.devices.config[] entry."""
    entry = {"source": source, "opaque": {"driver": driver, "parameters": params}}
    if requests:
        entry["requests"] = requests
    return entry


def result(device: str, request: str = "gpu", pool: str = NODE, driver: str = DRIVER_NAME, **extra) -> dict:
    """One allocation.devices.results[] entry."""
    return {"request": request, "driver": driver, "pool": pool, "device": device, **extra}


def claim(
    uid: str = "uid-1",
    name: str = "claim-1",
    namespace: str = "ns",
    results: list[dict] | None = None,
    configs: list[dict] | None = None,
    allocated: bool = True,
) -> dict:
    """A resource.k8s.io/v1 ResourceClaim as JSON."""
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"devices": {}},
        "status": {},
    }
    if allocated:
        obj["status"]["allocation"] = {
            "devices": {"results": results if results is not None else [result("gpu-0")], "config": configs or []}
        }
    return obj


class FakeClaimSource:
    """Claims by (namespace, name); counts reads. Unit tests only."""

    def __init__(self, *claims: dict) -> None:
        self.claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        self.reads = 0
        self.fail: Exception | None = None

    def add(self, obj: dict) -> None:
        self.claims[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj

    def get_claim(self, namespace: str, name: str) -> dict:
        self.reads += 1
        if self.fail:
            raise self.fail
        try:
            return self.claims[(namespace, name)]
        except KeyError:
            raise LookupError(f"{namespace}/{name}") from None


def short_tmpdir() -> Path:
    """A short directory under /tmp (unix socket paths are limited to 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="rd-", dir="/tmp"))


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
