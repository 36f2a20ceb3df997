"""Faults of the disruptive lane: ``no-reregister`` (a restarted plugin never registers again) and
``cdi-not-restored-after-reboot`` (CDI specs a reboot removed are not rewritten). Each is shown to change
exactly its behaviour against the healthy driver on temp dirs (a second instance on the same dirs is the
restarted plugin)."""

from __future__ import annotations

import pytest

from reference_driver.claims import ClaimRef
from reference_driver.faults import Faults
from reference_driver.plugin.server import PluginServer, SocketPaths
from tests.reference_driver.helpers import DRIVER_NAME, claim, rmtree, short_tmpdir

REF = ClaimRef("ns", "claim-1", "uid-1")


@pytest.mark.parametrize("faults", ["", "no-reregister"])
def test_no_reregister_skips_the_registration_socket_only_after_a_restart(make_state, faults):
    """The first start registers either way; the restarted plugin serves DRA and registers only when
    healthy."""
    root = short_tmpdir()
    paths = SocketPaths.for_driver(root / "reg", root / "plugins", DRIVER_NAME)
    try:
        first = PluginServer(DRIVER_NAME, make_state(Faults.parse(faults)), paths, faults=Faults.parse(faults))
        first.start()
        assert paths.registration.exists() and paths.dra.exists()
        first.stop(0)
        second = PluginServer(DRIVER_NAME, make_state(Faults.parse(faults)), paths, faults=Faults.parse(faults))
        second.start()
        try:
            assert paths.dra.exists()
            assert paths.registration.exists() != bool(faults)
        finally:
            second.stop(0)
    finally:
        rmtree(root)


@pytest.mark.parametrize("faults", ["", "cdi-not-restored-after-reboot"])
def test_cdi_not_restored_after_reboot_leaves_the_spec_missing(make_state, source, faults):
    """A reboot clears the CDI directory: the healthy driver rewrites the spec at start-up and on the
    kubelet's repeated prepare; the faulty one does neither (and still answers the prepare)."""
    source.add(claim())
    make_state(Faults.parse(faults)).prepare(REF)
    restarted = make_state(Faults.parse(faults))
    restarted.store.remove("uid-1")  # what the reboot cleared
    report = restarted.recover()
    assert report.claims == 1 and restarted.store.exists("uid-1") != bool(faults)
    restarted.store.remove("uid-1")
    devices = restarted.prepare(REF)
    assert devices and restarted.store.exists("uid-1") != bool(faults)
