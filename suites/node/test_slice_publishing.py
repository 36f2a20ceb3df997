"""ResourceSlice publishing over time: the driver's slices do not churn, a deleted slice is republished, and a pool
republished across several slices moves to a higher generation.

The tests that delete one of the driver's own slices (as the kubelet does at start-up) are in the
``dra-cluster-state`` xdist group: they run alone, so the one that watches the slices for churn (which only
reads) never sees their deletions, nor those of any other test that changes the driver's slices.

Sources: KEP-4381; upstream "ResourceSlice must be removed on kubelet startup" and "kubelet must manage
ResourceSlices" (test/e2e_node, test/e2e/dra); k8s.io/dynamic-resource-allocation resourceslice controller;
resource.k8s.io/v1 ResourcePool; feature-catalog PUB-01, PUB-03, PUB-09, PUB-11.
"""

import pytest

from conformance.api import (
    check_slices,
    current_slices,
    describe_violations,
    driver_slices,
    pool_devices,
    remove_driver_slice,
    slice_state,
    timeouts,
    waits,
)

pytestmark = [
    pytest.mark.publishing,
    pytest.mark.standard,
    pytest.mark.kep(4381),
]


@pytest.mark.scenario("PUB-01")
@pytest.mark.long_window  # 60 s of reading: under xdist it starts early among the sharded tests, beside them
@pytest.mark.shard_devices()
def test_published_slices_do_not_churn(k8s, tracker, builder, driver):
    """While a claim is prepared and unprepared, and over the node consistency window (60 s) after, the driver's
    slices stay the same objects (names, UIDs) with the same pool generations, slice counts and device names: a
    healthy driver writes only when its devices change, never per allocation (breaker s14 B8: a driver
    republishing its pool on every NodePrepareResources passed an idle window). Under xdist the window holds
    no device: other tests start pods beside it, so a driver that writes per allocation is seen the more surely
    (tests that change the slices on purpose run in the ``dra-cluster-state`` group, never beside it).
    Source: upstream "kubelet must manage ResourceSlices" (gomega.Consistently on the slices); feature-catalog
    PUB-01 "stable (no churn)"."""
    # given: the driver's pools as published
    waits.slices_published(k8s, driver.name, timeout=timeouts.SLICES_PUBLISHED)
    before = slice_state(driver_slices(k8s, driver.name))
    # when: a pod's claim is prepared and unprepared, then the slices are read every 2 s over the window
    pod = tracker.create(builder.pod(uses=tracker.create(builder.claim())))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    tracker.release_devices()  # pod and claim gone, unprepared: other tests use every device during the window
    state = waits.stays_equal(
        lambda: slice_state(driver_slices(k8s, driver.name)), duration=timeouts.CONSISTENTLY_PENDING_NODE
    )
    # then: the window saw the driver's slices, the same as before the claim was used
    assert state, f"driver {driver.name} published no ResourceSlice during the window"
    assert state == before, f"slices republished after a claim's use, no device changed: {before!r} -> {state!r}"


@pytest.mark.scenario("PUB-03", "PUB-09")
@pytest.mark.xdist_group("dra-cluster-state")  # deletes one of the driver's slices
@pytest.mark.requires("driver_slices_writable")  # never a customer's driver (preinstalled)
def test_deleted_slice_is_republished(k8s, driver, profile):
    """When one of the driver's ResourceSlices is deleted (the kubelet deletes its node's slices at start-up),
    the driver publishes that pool again, complete, with the same devices (names, attributes, capacities).
    Source: upstream "ResourceSlice must be removed on kubelet startup" (the driver must republish); e2e_dra
    upgradedowngrade "wait for ResourceSlices"; k8s.io/dynamic-resource-allocation resourceslice controller."""
    # given: the driver's pool with the most devices, as published now
    pools = current_slices(driver_slices(k8s, driver.name))
    assert pools, f"driver {driver.name} publishes no ResourceSlice"
    pool = max(sorted(pools), key=lambda name: len(pool_devices(pools[name])))
    victim, devices = pools[pool][-1], pool_devices(pools[pool])
    # when: one of its slices is deleted
    remove_driver_slice(k8s, driver.name, victim)
    # then: the pool comes back complete with the same devices, and the driver's slices keep the rules
    waits.pool_republished(
        k8s, driver.name, pool, devices=devices, removed=[victim.uid], timeout=timeouts.SLICES_PUBLISHED
    )
    violations = check_slices(driver_slices(k8s, driver.name), driver.name, profile.attributes)
    assert violations == [], describe_violations(violations)


@pytest.mark.scenario("PUB-11")
@pytest.mark.xdist_group("dra-cluster-state")  # deletes one of the driver's slices
@pytest.mark.requires("driver_slices_writable")  # never a customer's driver (preinstalled)
def test_pool_republished_across_slices_moves_to_a_higher_generation(k8s, driver, multi_slice_pool):
    """When one slice of a pool published as several slices is deleted, the driver republishes the pool at a
    higher pool.generation: restoring it takes more than one write, and consumers must never see slices of two
    publications under one generation.
    Source: resource.k8s.io/v1 ResourcePool.generation; KEP-4381; k8s.io/dynamic-resource-allocation
    resourceslice controller (the generation is bumped unless at most one update call is needed)."""
    # given: the slices of a pool of several slices, at their generation
    before = current_slices(driver_slices(k8s, driver.name))[multi_slice_pool]
    generation = int(before[0].get("spec.pool.generation") or 0)
    # when: one of them is deleted
    remove_driver_slice(k8s, driver.name, before[-1])
    # then: the pool comes back with the same devices, every slice at a higher generation
    after = waits.pool_republished(
        k8s,
        driver.name,
        multi_slice_pool,
        devices=pool_devices(before),
        removed=[before[-1].uid],
        timeout=timeouts.SLICES_PUBLISHED,
    )
    generations = {s.name: s.get("spec.pool.generation") for s in after}
    assert all(int(g or 0) > generation for g in generations.values()), f"before: {generation}, after: {generations}"
