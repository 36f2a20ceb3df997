"""Sample suite for the reporting tests: one pass, one failure, one reasoned skip, one broken fixture."""

import os

import pytest

from conformance.core.errors import ClusterUnavailable

FAIL = os.environ.get("SAMPLE_FAIL", "1") == "1"


@pytest.fixture
def broken_cluster():
    if not FAIL:
        return "cluster"
    raise ClusterUnavailable("API server at https://127.0.0.1:6443 refused the connection")


@pytest.mark.allocation
@pytest.mark.core
@pytest.mark.scenario("ALLOC-01")
@pytest.mark.kep(4381)
def test_claim_allocated():
    assert 1 + 1 == 2


@pytest.mark.allocation
@pytest.mark.standard
@pytest.mark.requires("driver.shared_claims")
@pytest.mark.scenario("ALLOC-04")
@pytest.mark.kep(4381)
def test_pods_sharing_a_claim_see_the_same_device():
    seen = {"pod-a": "gpu-0", "pod-b": "gpu-1" if FAIL else "gpu-0"}
    assert seen["pod-a"] == seen["pod-b"], f"pods saw different devices: {seen}"


@pytest.mark.prioritized_list
@pytest.mark.full
@pytest.mark.requires("gate.DRAPrioritizedList")
@pytest.mark.scenario("PL-01")
@pytest.mark.kep(4816)
def test_first_available_picks_second_alternative():
    pytest.skip("gate.DRAPrioritizedList not available: kubernetes_feature_enabled{name=DRAPrioritizedList} 0")


@pytest.mark.node
@pytest.mark.standard
@pytest.mark.requires("node_access")
@pytest.mark.scenario("PREP-01")
def test_prepare_on_unreachable_cluster(broken_cluster):
    assert broken_cluster
