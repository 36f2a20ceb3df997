"""The ``kind`` cluster provider: needs a running Docker engine; creating kind clusters is not implemented
yet, so ``up()`` ends with ClusterUnavailable naming the way forward (``--cluster local`` or a kind cluster
made by hand passed as ``--cluster existing``). Node access is ``docker exec`` into the node containers.
"""

from __future__ import annotations

import shutil
import subprocess

from conformance.core import errors
from conformance.core.handles import NodeAccess
from conformance.node.kind import KindNodeAccess

from .existing import ExistingCluster, ExistingProvider


def docker_available() -> tuple[bool, str]:
    """``(available, why)``: whether a Docker engine answers ``docker info`` (needed by kind)."""
    docker = shutil.which("docker")
    if not docker:
        return False, "the docker CLI is not installed"
    try:
        proc = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"docker info failed: {exc}"
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or ["docker info failed"])[-1]


class KindProvider(ExistingProvider):
    """``--cluster kind``: checks Docker, then says that cluster creation is not implemented."""

    def up(self) -> ExistingCluster:
        """Raises ClusterUnavailable: without Docker (why), or because creating kind clusters is not implemented."""
        ok, why = docker_available()
        if not ok:
            raise errors.ClusterUnavailable(
                f"--cluster kind needs a running Docker engine: {why}; use "
                "--cluster local (no Docker needed) or --cluster existing --kubeconfig"
            )
        raise errors.ClusterUnavailable(
            "--cluster kind: creating kind clusters is not implemented by this "
            "harness yet; create one with `kind create cluster` and pass "
            "--cluster existing --kubeconfig <its kubeconfig>"
        )

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None:
        """``docker exec`` into the kind node containers (None for ``--node-access none``)."""
        if choice == "none" or self.handle is None:
            return None
        return KindNodeAccess([n.name for n in self.handle.nodes])
