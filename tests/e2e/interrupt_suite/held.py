"""A suite-shaped test module used only by tests/e2e/test_harness_interrupt.py (and test_harness_run.py): its one
test holds the run inside a wait until the e2e test releases it, so a signal can be sent while the run is
provably inside a test. Not named ``test_*.py``: the project's own pytest run never collects it; the e2e
tests pass its path to ``dra-conformance run``, which collects a path it is given.

Protocol: the test creates a ResourceClaim labelled with the run (nothing else follows but the wait), then
waits until the claim carries the label :data:`RELEASE` — a state only the e2e test can bring about.
"""

import pytest

from conformance.api import timeouts, waits

RELEASE = "dra-conformance.test/e2e-release"


@pytest.mark.core
@pytest.mark.allocation
def test_held_until_released(k8s, tracker, builder):
    """Creates a claim and waits (bounded by POD_START, scaled) until the e2e test labels it released."""
    # given: a claim of the run (the e2e test's signal that the test body runs)
    claim = tracker.create(builder.claim())
    # when/then: the e2e test releases it
    waits.object_matches(
        k8s,
        claim,
        lambda o: RELEASE in o.labels,
        timeout=timeouts.POD_START,
        awaited=f"{claim.ref} labelled {RELEASE} by the e2e test",
    )
