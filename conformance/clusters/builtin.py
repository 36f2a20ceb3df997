"""The cluster provider shipped with the plugin, registered the way a vendor registers its own: this module is
a pytest plugin (the harness registers it) implementing ``pytest_dra_cluster_providers``
(conformance/hookspecs.py). It does not import pytest: pluggy finds the hook by its name. The lab's ``local``
and ``kind`` providers come in through the ``dra_conformance.cluster_providers`` entry points
(conformance_lab/providers.py), as a vendor's would, marked :func:`~conformance.core.handles.creates_cluster`.
"""

from __future__ import annotations

from conformance.core.handles import ClusterProvider, ClusterProviderFactory, ProviderContext


def existing(ctx: ProviderContext) -> ClusterProvider:
    """``existing``: the cluster of ``--kubeconfig``/``--context`` (not marked :func:`creates_cluster`: the run
    does not own it, so it installs nothing there unless ``--allow-install``)."""
    from conformance.clusters.existing import ExistingProvider  # noqa: PLC0415

    return ExistingProvider(ctx)


def pytest_dra_cluster_providers() -> dict[str, ClusterProviderFactory]:
    """``{provider name: factory(ProviderContext) -> ClusterProvider}`` of the shipped providers."""
    return {"existing": existing}
