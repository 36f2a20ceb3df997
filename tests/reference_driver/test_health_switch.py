"""The reference driver's runtime health switch (KEP-4680 health transition): the DRAResourceHealth response
reports UNHEALTHY exactly the devices the switch names, HEALTHY again once it names none; the fault
``health-never-unhealthy`` ignores the switch. The profile key ``health_switch`` parses and refuses mistakes
naming the key. Sources: KEP-4680; upstream test/e2e_node/dra_test.go ResourceHealthStatus."""

from __future__ import annotations

import threading

import pytest

from conformance.core import profile
from conformance.core.errors import ConfigError
from reference_driver.faults import FAULTS, Faults
from reference_driver.inventory import SimulatedInventory, SimulatedSpec
from reference_driver.plugin import wire
from reference_driver.plugin.health import HealthService

GOOD = {
    "name": "mine",
    "driver": "gpu.example.com",
    "device_classes": ["gpu.example.com"],
    "visibility": {"env_regex": "^GPU_DEVICE_\\d+="},
    "deploy": {"mode": "preinstalled"},
}


def _healths(faults: Faults, switched: set[str]) -> dict[str, str]:
    msgs = wire.health_v1()
    snapshot = SimulatedInventory(SimulatedSpec(count=3), "node-a").snapshot
    service = HealthService(msgs, "node-a", snapshot, threading.Event(), faults, 0.1, lambda: frozenset(switched))
    return {d.device.device_name: msgs.HealthStatus.Name(d.health) for d in service.response().devices}


@pytest.mark.parametrize("faults", ["", "health-never-unhealthy"])
def test_switch_turns_the_named_device_unhealthy_unless_the_fault_ignores_it(faults):
    """Given the switch naming gpu-1, then gpu-1 alone is UNHEALTHY (all HEALTHY under the fault); given it
    naming none, all are HEALTHY."""
    got = _healths(Faults.parse(faults), {"gpu-1"})
    assert got == {"gpu-0": "HEALTHY", "gpu-1": "HEALTHY" if faults else "UNHEALTHY", "gpu-2": "HEALTHY"}
    assert set(_healths(Faults.parse(faults), set()).values()) == {"HEALTHY"}
    assert len(FAULTS["health-never-unhealthy"]) > 30


def test_profile_health_switch_parses_and_refuses_mistakes_naming_the_key():
    """A node_annotation key parses; a missing section is no switch; another key or a bad annotation key is a
    ConfigError naming health_switch with a fix."""
    assert profile.parse({**GOOD, "health_switch": {"node_annotation": "{driver}/unhealthy"}}).health_annotation
    assert profile.parse(dict(GOOD)).health_annotation == ""
    for bad in ({"annotation": "x/y"}, {"node_annotation": "bad key/with space"}):
        with pytest.raises(ConfigError) as info:
            profile.parse({**GOOD, "health_switch": bad}, source="mine.yaml")
        assert info.value.field.startswith("health_switch") and info.value.fix


def test_fault_health_all_unhealthy_turns_every_device_when_the_switch_names_one():
    """Fault ``health-all-unhealthy``: the switch naming gpu-1 turns every device UNHEALTHY (HLTH-02's second
    pod on another device of the node sees it); naming none, all stay HEALTHY."""
    faults = Faults.parse("health-all-unhealthy")
    assert set(_healths(faults, {"gpu-1"}).values()) == {"UNHEALTHY"}
    assert set(_healths(faults, set()).values()) == {"HEALTHY"}


@pytest.mark.parametrize(("allowed", "said"), [(True, ""), (False, 'cannot patch resource "nodes"'), (None, "")])
def test_a_user_who_may_not_patch_nodes_is_told_so_instead_of_a_403_failure(allowed, said):
    """The health switch is a Node annotation: a user whose SelfSubjectAccessReview for ``patch nodes`` answers
    no gets the reason naming the verb and resource (the fixture skips with it); allowed, or the review itself
    refused (None here): "" (issue 27 §4: the printed role does not grant it)."""
    from conformance.core import errors
    from conformance.fixtures import health_switch_refusal

    class K8s:
        def request(self, method, path, body=None):
            if allowed is None:
                raise errors.Forbidden(403, "Forbidden", "selfsubjectaccessreviews is forbidden")
            assert body["spec"]["resourceAttributes"] == {
                "verb": "patch",
                "group": "",
                "resource": "nodes",
                "namespace": "",
            }
            return {"status": {"allowed": allowed}}, 201

    got = health_switch_refusal(K8s())
    assert (said in got) if said else got == "", got
