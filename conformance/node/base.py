"""Node access: the error an implementation raises for an operation it cannot do. The NodeAccess Protocol
itself (and the optional RestartsKubelet ability) is declared once in :mod:`conformance.core.handles`."""

from __future__ import annotations

from conformance.core.handles import NodeAccess

__all__ = ["NodeAccess", "NodeAccessUnavailable"]


class NodeAccessUnavailable(Exception):
    """The node access implementation cannot do this operation (the message says why)."""
