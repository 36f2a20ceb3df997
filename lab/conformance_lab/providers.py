"""The lab's cluster providers, registered through the plugin's ``dra_conformance.cluster_providers`` entry
point group (lab/pyproject.toml), exactly as a vendor registers its own. Each factory imports its provider on
first use (the local cluster pulls in PKI and process code). Both create their cluster (``creates_cluster``):
a run owns it, so it may install a driver there."""

from __future__ import annotations

from conformance.core.handles import ClusterProvider, ProviderContext, creates_cluster


@creates_cluster
def local(ctx: ProviderContext) -> ClusterProvider:
    """``local``: a fresh cluster of host processes (conformance_lab/local)."""
    from conformance_lab.local.provider import LocalProvider  # noqa: PLC0415 - heavy, only when chosen

    return LocalProvider(ctx)


@creates_cluster
def kind(ctx: ProviderContext) -> ClusterProvider:
    """``kind``: a kind cluster over the nerdctl (or Docker) provider with the offline node image."""
    from conformance_lab.kind.provider import KindProvider  # noqa: PLC0415

    return KindProvider(ctx)
