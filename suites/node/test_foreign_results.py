"""A claim whose allocation also names another driver's devices: the kubelet calls each driver named in the
claim's results for that claim, and each driver prepares only the results whose ``driver`` is its own, even
where another driver's pool and device carry the same names as its own (pool names are per driver).

Sources: resource.k8s.io/v1 DeviceRequestAllocationResult.driver; KEP-4381 (the kubelet groups a claim's
results by driver and calls each driver's plugin); k8s.io/dynamic-resource-allocation kubeletplugin and
dra-example-driver state.go (``if result.Driver != DriverName { continue }``); issue 24 §4.
"""

import pytest

from conformance.api import allocate, device, free_device, request, result

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.requires("node_access")
@pytest.mark.xdist_group("dra-cluster-state")
def test_prepare_handles_only_its_own_results_of_a_claim_naming_another_driver(
    k8s, tracker, builder, driver, inventory, node_access, dra_plugin
):
    """NodePrepareResources of a claim allocated one device of this driver (request ``own``) and one of
    another driver under the same pool and device names (request ``other``) answers, without error, exactly
    the driver's own device for request ``own`` (one device: a driver reading every result answers two)."""
    # given: another driver's device on the node of a free device of this driver, same pool and device names
    mine, other = free_device(k8s, inventory), builder.test_driver_name()
    tracker.create(builder.resource_slice([device(mine.name)], node=mine.node, pool=mine.pool, driver=other))
    foreign_class = tracker.create(builder.device_class(driver=other))
    # and: a claim with one request per driver, allocated one device of each on that node
    claim = tracker.create(builder.claim(requests=[request("own"), request("other", device_class=foreign_class.name)]))
    results = [result("own", driver.name, *mine.key), result("other", other, *mine.key)]
    claim = allocate(k8s, claim, results, mine.node)
    # when: the driver's NodePrepareResources is called for the claim on that node
    answer = dra_plugin(mine.node).prepare(claim)
    # then: no error, and only its own device, for its own request
    assert answer.error == "", answer
    requests = [d.request_names for d in answer.devices]
    assert requests == [("own",)], f"prepared for requests {requests}, expected only ('own',): {answer}"
    assert answer.device_names == {mine.key}, answer
