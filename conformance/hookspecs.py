"""Hook specifications of the harness (design.md §9: extension points are pytest hookspecs), added by
conformance/plugin.py with ``pluginmanager.add_hookspecs``.

A vendor ships a cluster provider or a driver deployer as a pytest plugin (``-p my_package.plugin``, a
conftest, or a ``pytest11`` entry point) implementing one of the registry hooks; the harness merges every
answer into one :class:`conformance.runner.registry.Registry` before the session starts. Plain functions with
these names work too (no pytest import needed): conformance/clusters/builtin.py and conformance/drivers/builtin.py
register the shipped ones that way.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_dra_cluster_providers():
    """Cluster providers this plugin adds: ``{name: factory}``, where ``factory(ctx)`` takes a
    :class:`conformance.core.handles.ProviderContext` (``cfg``: RunConfig, ``report_dir``, ``progress``) and
    returns a :class:`conformance.core.handles.ClusterProvider` (``up``, ``down``, ``node_access``, ``state``,
    ``attach``). ``--cluster name`` selects it. Return ``None`` or ``{}`` for none. A name registered twice is
    a ConfigError naming both plugins."""


@pytest.hookspec
def pytest_dra_driver_deployers():
    """Driver deployers this plugin adds: ``{name: factory}``, where ``factory(ctx)`` takes a
    :class:`conformance.drivers.base.DeployContext` (``mode``, ``cluster``, ``profile``, ``k8s``, ``run_id``,
    ``state_root``, ``image_repo``) and returns a :class:`conformance.drivers.base.DriverDeployer` (``deploy``,
    ``attach``, ``teardown``). ``--driver-deploy name`` (or a profile's ``deploy.mode``) selects it."""


@pytest.hookspec
def pytest_dra_report_dir(config):
    """The harness has chosen this run's report directory (``config.option.report_dir``, absolute); called
    from its ``tryfirst`` ``pytest_configure``, before allure-pytest and junitxml read their output paths.
    Reporting plugins turn themselves on here. Return value ignored."""
