"""Cross-version round trips: objects written through v1 read the same through v1beta1/v1beta2 (in that
version's shape) and back, the driver's slices look the same through every served version, a pod works with
a template written in a beta version, and beta access warns once the version is deprecated.

Sources: upstream "kubelet with v1beta1 API supports simple ResourceClaim" / "with v1beta2 API"
(test/e2e/dra/dra.go); integration "Convert" (VER-05); KEP-1693 deprecation warnings (VER-06).
"""

import pytest

from conformance.api import (
    api_verbs,
    device_fields,
    driver_slices,
    expects_deprecation_warning,
    server_minor,
    timeouts,
    waits,
)

pytestmark = [pytest.mark.api_v1, pytest.mark.standard, pytest.mark.kep(4381)]

BETAS = [
    pytest.param("v1beta1", marks=pytest.mark.requires("api.v1beta1"), id="v1beta1"),
    pytest.param("v1beta2", marks=pytest.mark.requires("api.v1beta2"), id="v1beta2"),
]
SELECTOR = "device.driver == device.driver"


@pytest.mark.scenario("VER-05")
@pytest.mark.parametrize("version", BETAS)
def test_claim_written_in_v1_reads_the_same_through_a_beta_version(k8s, tracker, builder, version):
    """A claim created through v1 is returned through the beta version with the same spec in that
    version's shape (v1beta1 flattens ``exactly``).
    Source: integration "Convert"; resource.k8s.io/v1beta1 and v1beta2 types."""
    # given: a claim written through v1
    claim = tracker.create(builder.claim(count=2, selectors=SELECTOR))
    # when: it is read through the beta version
    body, _ = api_verbs.get_with_warnings(k8s, "ResourceClaim", claim.name, claim.namespace, version)
    # then: the spec is what the builder renders for that version
    assert body["spec"] == builder.claim(count=2, selectors=SELECTOR, version=version).get("spec"), body


@pytest.mark.scenario("VER-05")
@pytest.mark.parametrize("version", BETAS)
def test_claim_written_in_a_beta_version_reads_the_same_through_v1(k8s, tracker, builder, version):
    """A claim created through the beta version reads back through v1 with the v1 spec.
    Source: integration "Convert"."""
    # given: a claim written through the beta version
    claim = tracker.create(builder.claim(count=2, selectors=SELECTOR, version=version))
    # when: it is read through v1
    stored = k8s.get("ResourceClaim", claim.name, claim.namespace)
    # then: the v1 spec is what the builder renders for v1
    assert stored.get("spec") == builder.claim(count=2, selectors=SELECTOR).get("spec"), stored.describe()


@pytest.mark.scenario("VER-05")
@pytest.mark.parametrize("version", BETAS)
def test_driver_slices_read_the_same_through_a_beta_version(k8s, driver, version):
    """The driver's slices expose the same devices, attributes and capacities through the beta version.
    Source: integration "Convert" + PublishResourceSlices under v1beta1/v1beta2 (VER-05)."""
    # given: the driver's slices through v1
    v1 = {s.name: s for s in driver_slices(k8s, driver.name)}
    # when: they are listed through the beta version
    beta = {s.name: s for s in driver_slices(k8s, driver.name, version)}
    # then: same slices, same devices
    assert set(beta) == set(v1) and v1, (sorted(v1), sorted(beta))
    for name, s in v1.items():
        assert [device_fields(d) for d in beta[name].get("spec.devices") or []] == [
            device_fields(d) for d in s.get("spec.devices") or []
        ], name


@pytest.mark.scenario("VER-01", "VER-02")
@pytest.mark.parametrize("version", BETAS)
@pytest.mark.shard_devices()
def test_pod_runs_with_a_template_written_in_a_beta_version(k8s, tracker, builder, probe, version):
    """A ResourceClaimTemplate created through the beta version works end to end.
    Source: upstream "kubelet with v1beta1 API supports simple ResourceClaim" / "with v1beta2 API"."""
    # given: a template written through the beta version
    template = tracker.create(builder.claim_template(version=version))
    # when: a pod uses it
    pod = waits.pod_running(k8s, tracker.create(builder.pod(uses=template)), timeout=timeouts.POD_START)
    # then: its claim is allocated and the device visible
    assert [bool(c.allocation) for c in waits.pod_claims(k8s, pod)] == [True], pod.describe()
    shown, evidence = probe.shows_claimed_devices(pod)
    assert shown, evidence


@pytest.mark.scenario("VER-06")
@pytest.mark.parametrize("version", BETAS)
def test_beta_access_warns_once_the_version_is_deprecated(k8s, namespace, version):
    """Reading through a beta version answers with a deprecation Warning header on releases where that
    version is deprecated (v1beta1 from 1.35, v1beta2 from 1.36), and without one before.
    Source: KEP-1693 warnings; prerelease-lifecycle of resource.k8s.io betas (feature-catalog §1.2)."""
    # given: whether this server must warn
    expected = expects_deprecation_warning(k8s, version)
    # when: claims are listed through the beta version
    _, warnings = api_verbs.get_with_warnings(k8s, "ResourceClaim", None, namespace, version)
    # then: a deprecation warning exactly when expected
    assert any("deprecated" in w for w in warnings) == expected, (server_minor(k8s), warnings)
