"""What the device state machine hands out and reports: the prepared device (the kubelet's
NodePrepareResourceResponse.devices[] entry, also the checkpoint's form), the claim source it reads, its errors and
its recovery report. Split from :mod:`reference_driver.state` (module size); imported from there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ClaimSource(Protocol):
    """Reads ResourceClaims (``resource.k8s.io/v1``, decoded JSON)."""

    def get_claim(self, namespace: str, name: str) -> dict:
        """The claim object. Raises LookupError when it does not exist, other exceptions on API errors."""


@dataclass(frozen=True)
class PreparedDevice:
    """One device as returned to the kubelet (NodePrepareResourceResponse.devices[])."""

    request_names: tuple[str, ...]
    pool: str
    device: str
    cdi_ids: tuple[str, ...]
    share_id: str | None = None

    def to_json(self) -> dict:
        """Checkpoint form."""
        return {
            "requestNames": list(self.request_names),
            "pool": self.pool,
            "device": self.device,
            "cdiDeviceIDs": list(self.cdi_ids),
            "shareID": self.share_id,
        }

    @classmethod
    def from_json(cls, raw: dict) -> PreparedDevice:
        """Inverse of to_json. Raises KeyError/TypeError on a malformed entry."""
        return cls(
            tuple(raw["requestNames"]), raw["pool"], raw["device"], tuple(raw["cdiDeviceIDs"]), raw.get("shareID")
        )


class UnprepareError(RuntimeError):
    """Unprepare failed for one claim; returned to the kubelet, which retries."""


@dataclass
class RecoveryReport:
    """What ``recover()`` found: claims loaded, CDI specs rewritten, quarantined checkpoint (if any)."""

    claims: int = 0
    rewritten: tuple[str, ...] = ()
    quarantined: str | None = None
