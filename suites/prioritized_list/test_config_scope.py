"""Opaque configs with firstAvailable: a config scoped to the parent request or to the chosen subrequest
reaches the container; one scoped to a subrequest that was not chosen does not; containers reference the
parent request.

Sources: upstream test/e2e/dra/dra.go "uses the config for the selected subrequest", "filters config correctly
for multiple devices"; resource.k8s.io/v1 DeviceClaimConfiguration.requests (``<request>/<subrequest>``).
"""

import pytest

from conformance.api import NEVER_MATCHES, container, first_available, opaque_config, subrequest, timeouts, waits

pytestmark = [
    pytest.mark.prioritized_list,
    pytest.mark.standard,
    pytest.mark.kep(4816),
    pytest.mark.requires("gate.DRAPrioritizedList", "driver.prioritized_list", "driver.opaque_config"),
]


def _fallback_request():
    """gpu: "none" (matches nothing) then "one": the scheduler always picks gpu/one."""
    return first_available("gpu", subrequest("none", selectors=NEVER_MATCHES), subrequest("one"))


@pytest.mark.scenario("PL-02")
@pytest.mark.parametrize("scope", [["gpu"], ["gpu/one"]], ids=["parent-request", "chosen-subrequest"])
@pytest.mark.shard_devices()
def test_config_for_parent_or_chosen_subrequest_reaches_container(k8s, tracker, builder, profile, probe, scope):
    """An opaque config scoped to the parent request, or to the subrequest that was chosen, reaches the
    container referencing the parent request.
    Source: upstream "uses the config for the selected subrequest"."""
    # given: the fallback request with the profile's config scoped as parametrized
    claim = tracker.create(
        builder.claim(requests=[_fallback_request()], config=[opaque_config(profile.opaque_parameters, requests=scope)])
    )
    # when: a container references the parent request
    pod = tracker.create(builder.pod(containers=[container("ctr", uses=[(claim, "gpu")])]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: gpu/one was chosen and the container shows device and config
    allocated = waits.claim_allocated(k8s, claim, timeout=timeouts.ALLOCATION)
    assert [r.request for r in allocated.results] == ["gpu/one"], allocated.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence
    assert probe.shows_config(pod), probe.evidence(pod)


@pytest.mark.scenario("PL-02", "PL-04")
@pytest.mark.shard_devices()
def test_config_for_an_unchosen_subrequest_does_not_reach_container(k8s, tracker, builder, profile, probe):
    """An opaque config scoped to a subrequest the scheduler did not choose is not applied.
    Source: upstream "uses the config for the selected subrequest" (configs of unchosen subrequests don't
    apply)."""
    # given: the fallback request with the config scoped to the unchosen gpu/none
    claim = tracker.create(
        builder.claim(
            requests=[_fallback_request()], config=[opaque_config(profile.opaque_parameters, requests=["gpu/none"])]
        )
    )
    # when: a container references the parent request
    pod = tracker.create(builder.pod(containers=[container("ctr", uses=[(claim, "gpu")])]))
    waits.pod_running(k8s, pod, timeout=timeouts.POD_START)
    # then: the device is visible but the config is not
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence
    assert not probe.shows_config(pod), probe.evidence(pod)
