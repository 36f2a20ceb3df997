"""The cluster providers shipped with dra-conformance, registered the way a vendor registers its own: this
module is a pytest plugin (the harness registers it) implementing ``pytest_dra_cluster_providers``
(conformance/hookspecs.py). It does not import pytest: pluggy finds the hook by its name. The factories import
their provider on first use (the local cluster pulls in PKI and process code). ``local`` and ``kind`` create
their cluster (:func:`~conformance.core.handles.creates_cluster`); ``existing`` does not.
"""

from __future__ import annotations

from conformance.core.handles import ClusterProvider, ClusterProviderFactory, ProviderContext, creates_cluster


@creates_cluster
def local(ctx: ProviderContext) -> ClusterProvider:
    """``local``: a fresh cluster of host processes (conformance/clusters/local)."""
    from .local.provider import LocalProvider  # noqa: PLC0415 - heavy, only when chosen

    return LocalProvider(ctx)


def existing(ctx: ProviderContext) -> ClusterProvider:
    """``existing``: the cluster of ``--kubeconfig``/``--context`` (not marked :func:`creates_cluster`: the run
    does not own it, so it installs nothing there unless ``--allow-install``)."""
    from .existing import ExistingProvider  # noqa: PLC0415

    return ExistingProvider(ctx)


@creates_cluster
def kind(ctx: ProviderContext) -> ClusterProvider:
    """``kind``: checks Docker; creating kind clusters is not implemented yet (a clear ClusterUnavailable)."""
    from .kind import KindProvider  # noqa: PLC0415

    return KindProvider(ctx)


def pytest_dra_cluster_providers() -> dict[str, ClusterProviderFactory]:
    """``{provider name: factory(ProviderContext) -> ClusterProvider}`` of the shipped providers."""
    return {"local": local, "existing": existing, "kind": kind}
