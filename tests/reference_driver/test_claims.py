"""Which results and configs of a claim belong to this driver (claims.py)."""

from __future__ import annotations

import pytest

from reference_driver import DRIVER_NAME
from reference_driver.claims import ClaimError, ClaimRef, allocated_devices, applies
from tests.reference_driver.helpers import NODE, claim, config, gpu_config, result

REF = ClaimRef("ns", "claim-1", "uid-1")


def devices(obj, **kw):
    return allocated_devices(obj, REF, DRIVER_NAME, {NODE}, **kw)


def test_uid_mismatch_means_replaced():
    """A claim whose API UID differs from the kubelet's is refused (upstream test-driver 'got replaced')."""
    with pytest.raises(ClaimError, match="got replaced"):
        devices(claim(uid="other"))
    assert devices(claim(uid="other"), check_uid=False)[0].device == "gpu-0"


def test_unallocated_claim_is_refused():
    with pytest.raises(ClaimError, match="not allocated"):
        devices(claim(allocated=False))


def test_only_this_drivers_results_and_pools():
    """Results of another driver are skipped; a result in another node's pool is refused."""
    obj = claim(results=[result("gpu-1"), result("nic-0", driver="net.example.com")])
    assert [d.device for d in devices(obj)] == ["gpu-1"]
    with pytest.raises(ClaimError, match="no devices allocated by driver"):
        devices(claim(results=[result("nic-0", driver="net.example.com")]))
    with pytest.raises(ClaimError, match="not in a pool of this node"):
        devices(claim(results=[result("gpu-0", pool="node-b")]))


def test_config_for_another_driver_is_ignored_even_if_invalid():
    """Opaque config whose driver is not ours is never parsed."""
    obj = claim(configs=[config({"anything": 1}, driver="other.example.com")])
    assert devices(obj)[0].config_sources == ()


def test_invalid_config_for_this_driver_is_a_claim_error():
    with pytest.raises(ClaimError, match=r"config\[0\] \(FromClaim\).*unknown kind 'Nope'"):
        devices(claim(configs=[config(gpu_config() | {"kind": "Nope"})]))


def test_claim_config_overrides_class_config():
    """FromClass applies first, FromClaim overrides it (whatever the list order)."""
    obj = claim(
        configs=[
            config(gpu_config("SpacePartitioning"), source="FromClaim"),
            config(gpu_config("Exclusive"), source="FromClass"),
        ]
    )
    dev = devices(obj)[0]
    assert dev.config.sharing.strategy == "SpacePartitioning"
    assert dev.config_sources == ("FromClass[1]", "FromClaim[0]")


def test_request_scoped_configs_and_subrequests():
    """No requests = all; listed requests only; a parent name covers its subrequests."""
    obj = claim(
        results=[result("gpu-0", "a"), result("gpu-1", "b/small"), result("gpu-2", "c/large")],
        configs=[
            config(gpu_config("Exclusive")),
            config(gpu_config("SpacePartitioning"), requests=["b"]),
            config(gpu_config("TimeSlicing"), requests=["c/small"]),
        ],
    )
    got = {d.device: (d.config.sharing.strategy, d.base_request) for d in devices(obj)}
    assert got == {"gpu-0": ("Exclusive", "a"), "gpu-1": ("SpacePartitioning", "b"), "gpu-2": ("Exclusive", "c")}
    assert applies(None, "x/y") and applies(["x"], "x/y") and applies(["x/y"], "x/y")
    assert not applies(["x/z"], "x/y") and not applies(["y"], "x")


def test_admin_access_share_id_and_consumed_capacity_are_kept():
    obj = claim(
        results=[result("gpu-0", adminAccess=True, shareID="abcdef12-0000", consumedCapacity={"memory": "4Gi"})]
    )
    dev = devices(obj)[0]
    assert dev.admin_access and dev.share_id == "abcdef12-0000" and dev.consumed_capacity == (("memory", "4Gi"),)


def test_ignore_claim_config_drops_claim_config_only():
    obj = claim(configs=[config(gpu_config("Exclusive"), source="FromClass"), config(gpu_config("SpacePartitioning"))])
    assert devices(obj, ignore_claim_config=True)[0].config.sharing.strategy == "Exclusive"
