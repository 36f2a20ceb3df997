"""Real NVIDIA GPUs discovered through NVML (``nvidia-ml-py``, imported lazily; optional extra ``gpu``).

Attributes follow what real GPU drivers publish: index, uuid, productName/model, architecture, brand,
cudaComputeCapability and driverVersion/cudaDriverVersion as semver versions, PCI bus ID and pcieRoot
(from sysfs), memory capacity in bytes. Device nodes ``/dev/nvidia<minor>`` and ``/dev/nvidiactl`` are
injected through CDI. Source: NVML API (nvmlDeviceGet*), resource.k8s.io/v1 well-known attributes.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import quantities
from .base import Attribute, Capacity, Device, InventoryError, Snapshot

_ARCH = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
}


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def semver(text: str) -> str:
    """NVIDIA version strings (``535.104.05``, ``12.4``, ``9.0``) as semver: 3 numeric parts, no leading
    zeros. Raises ValueError for text without numbers."""
    parts = [str(int(p)) for p in text.strip().split(".")[:3] if p.strip().isdigit()]
    if not parts:
        raise ValueError(f"no version numbers in {text!r}")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def pcie_root(bus_id: str, sysfs: Path = Path("/sys/bus/pci/devices")) -> str | None:
    """``pci<domain>:<bus>`` of the PCIe root complex above ``bus_id`` (extended BDF), from sysfs; None if
    sysfs does not know the device."""
    try:
        real = (sysfs / bus_id.lower()).resolve(strict=True)
    except OSError:
        return None
    for part in real.parts:
        if part.startswith("pci") and ":" in part:
            return part
    return None


def available() -> bool:
    """True when nvidia-ml-py is installed and NVML initialises (i.e. an NVIDIA driver is loaded)."""
    try:
        import pynvml  # noqa: PLC0415 - optional dependency

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:  # noqa: BLE001 - any NVML/import failure means "not available"
        return False


class NvmlInventory:
    """GPUs of this host as NVML reports them. Raises InventoryError when NVML is missing or fails."""

    kind = "nvml"

    def __init__(self) -> None:
        try:
            import pynvml  # noqa: PLC0415 - optional dependency
        except ImportError as err:
            raise InventoryError(
                "source nvml needs the optional dependency nvidia-ml-py (pip install 'dra-conformance[gpu]')"
            ) from err
        self._nvml = pynvml

    def snapshot(self) -> Snapshot:
        """One device ``gpu-<index>`` per NVML device."""
        nv = self._nvml
        try:
            nv.nvmlInit()
        except Exception as err:  # noqa: BLE001
            raise InventoryError(f"NVML initialisation failed: {err} (is the NVIDIA driver loaded?)") from err
        try:
            driver = semver(_text(nv.nvmlSystemGetDriverVersion()))
            cuda = nv.nvmlSystemGetCudaDriverVersion_v2()
            cuda_version = f"{cuda // 1000}.{(cuda % 1000) // 10}.0"
            return Snapshot(
                devices=tuple(self._device(i, driver, cuda_version) for i in range(nv.nvmlDeviceGetCount()))
            )
        except InventoryError:
            raise
        except Exception as err:  # noqa: BLE001
            raise InventoryError(f"NVML query failed: {err}") from err
        finally:
            nv.nvmlShutdown()

    def _device(self, index: int, driver: str, cuda: str) -> Device:
        nv = self._nvml
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        bus_id = _text(nv.nvmlDeviceGetPciInfo(handle).busId).lower()
        bus_id = bus_id[-12:] if len(bus_id) > 12 else bus_id  # NVML pads the domain to 8 digits
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
        name = _text(nv.nvmlDeviceGetName(handle))[:64]
        attrs = {
            "type": Attribute("string", "gpu"),
            "index": Attribute("int", index),
            "uuid": Attribute("string", _text(nv.nvmlDeviceGetUUID(handle))),
            "model": Attribute("string", name),
            "productName": Attribute("string", name),
            "architecture": Attribute("string", _ARCH.get(major, f"sm{major}{minor}")),
            "cudaComputeCapability": Attribute("version", f"{major}.{minor}.0"),
            "driverVersion": Attribute("version", driver),
            "cudaDriverVersion": Attribute("version", cuda),
            "resource.kubernetes.io/pciBusID": Attribute("string", bus_id),
        }
        root = pcie_root(bus_id)
        if root:
            attrs["resource.kubernetes.io/pcieRoot"] = Attribute("string", root)
        memory = nv.nvmlDeviceGetMemoryInfo(handle).total
        dev_minor = nv.nvmlDeviceGetMinorNumber(handle)
        nodes = tuple(p for p in (f"/dev/nvidia{dev_minor}", "/dev/nvidiactl") if os.path.exists(p))
        return Device(
            name=f"gpu-{index}",
            attributes=attrs,
            capacity={"memory": Capacity(quantities.canonical(memory))},
            device_nodes=nodes,
        )
