"""The symptoms of fixtures/faults.yaml against recorded failure texts (no cluster): the text each fault's
expected test prints is *caught*; the misleading texts of breaker findings 3 and 11 (the tracker's teardown
LeakError, a precondition listing the node's other CDI specs, a node-access error, the opposite direction of a
node mismatch, a pod that ran without any CDI device) are *accidents*."""

from __future__ import annotations

import pytest
from conformance_tools.validation import faultfile, runs, verdict
from conformance_tools.validation.verdict import RunResult

from reference_driver.faults import FAULTS

ENTRIES = faultfile.load(known=FAULTS).entries
UID = "3f1c2a9e-7b1d-4c55-9a0e-2d6f1e8b4c70"
SPEC = f"dra-conformance.test_claim-{UID}.json"
# the tracker's LeakError when a claim stays prepared (tracker.py _wait_unprepared + prepared.PreparedClaims)
LEAK = (
    "conformance.core.errors.LeakError: 1 object(s) survived teardown: ResourceClaim t-1/c-1 still prepared on "
    f"node dra-node-0 (CDI spec {SPEC} names its UID {UID})"
)
LEFT_BEHIND = (
    f"AssertionError: CDI spec(s) ['{SPEC}'] of claim t-1/c-1 (UID {UID}) left on node dra-node-0 after its unprepare"
)
# a precondition `assert cdi.claim_specs(...), node_access.cdi_specs(node)`: the claim's own spec is MISSING
OTHER_SPECS = (
    "AssertionError: {'dra-conformance.test_claim-0a1b2c3d-0000-4000-8000-000000000001.json': '{\"cdiVersion\": "
    '"0.6.0"}\'}'
)
ENV_HEAD = "\n".join(f"  KUBERNETES_VAR_{i}=tcp://10.0.4.1:443" for i in range(24))  # env lines before the marker


def _judge(fault: str, text: str, nodeid: str | None = None) -> str:
    """accident() of ``fault``'s entry over ``text``, cut as runs.read_result cuts a recorded failure."""
    entry = ENTRIES[fault]
    nodeid = nodeid or entry.expect[0]
    text = "\n".join(text.strip().splitlines()[: runs.DETAIL_LINES])[: runs.DETAIL_CHARS]
    run = RunResult(fault, 1, {nodeid: "failed"}, 1.0, messages={nodeid: text.splitlines()[0]}, details={nodeid: text})
    return verdict.accident(entry, run, nodeid)


CAUGHT = [
    ("unprepare-keeps-cdi", f"AssertionError: node dra-node-0: found ['CDI spec {SPEC} names its UID {UID}']; read 3"),
    ("unprepare-keeps-cdi", LEFT_BEHIND),
    ("forget-prepared-on-restart", LEFT_BEHIND),
    ("checkpoint-not-migrated", LEFT_BEHIND),
    (
        "unprepare-needs-claim",
        f"conformance.core.errors.WaitTimeout: timed out after 60s waiting for claim t-1/c-1 (UID {UID}) unprepared "
        "on node dra-node-0",
    ),
    (
        "no-reregister",
        "AssertionError: GetInfo answers of dra-conformance.test on dra-node-0: []; sockets the kubelet registered: "
        "['dra-conformance.test-reg.sock']",
    ),
    (
        "skip-cdi-env",
        "AssertionError: container ctr references c-1; expected ['gpu-0'], the probe shows no device; probe output "
        f"of p-1/ctr (exit status 0):\n{ENV_HEAD}\n  DRA_REFERENCE_FAULT=skip-cdi-env\n  HOME=/root",
    ),
    (
        "publishes-on-some-nodes-only",
        "AssertionError: the driver shows no devices on node(s) ['dra-node-1'] (expected driver nodes ['dra-node-0', "
        "'dra-node-1']: DaemonSet dra/plugin)",
    ),
    (
        "prepare-fails-once",
        "conformance.core.errors.WaitFailed: while waiting for pod t/p Running: kubelet could not prepare the pod's "
        "claims: Warning FailedPrepareDynamicResources Pod/p: Failed to prepare dynamic resources: "
        "NodePrepareResources failed for ResourceClaim c-1: t/c-1 (UID u): injected fault prepare-fails-once",
    ),
    ("request-names-rotated", "AssertionError: request first; expected ['gpu-0'], the probe shows ['gpu-1']; probe"),
    ("config-requests-ignored", "AssertionError: config of another request in this container: probe output of p/x"),
    (
        "duplicate-device-across-slices",
        "AssertionError: slice.duplicate-device: pool/dra-node-0: device names published more than once (device: "
        "slices): {'gpu-0': ['dra-node-0-x-0', 'dra-node-0-x-1']} [resource.k8s.io/v1 Device.name]",
    ),
    (
        "device-by-position",
        "AssertionError: 3 of 4 devices of dra-node-0 prepared wrong: gpu-1: expected ['gpu-1'], the probe shows "
        "['gpu-0']; probe output of t/p-1 | gpu-2: expected ['gpu-2'], the probe shows ['gpu-0']; probe output",
    ),
]


@pytest.mark.parametrize(("fault", "text"), CAUGHT, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CAUGHT)])
def test_the_texts_the_expected_tests_print_are_caught(fault, text):
    assert _judge(fault, text) == ""


ACCIDENTS = [
    # finding 3: a teardown leak is an accident before any symptom is tried, whatever it names
    ("unprepare-needs-claim", LEAK, "teardown leak"),
    ("unprepare-keeps-cdi", LEAK, "teardown leak"),
    ("forget-prepared-on-restart", LEAK, "teardown leak"),
    ("checkpoint-not-migrated", LEAK, "teardown leak"),
    ("unprepare-keeps-cdi", LEAK + "\n" + LEFT_BEHIND, "teardown leak"),
    # finding 3: the opposite defect (the claim's own spec is missing; the message lists the node's others)
    ("unprepare-keeps-cdi", OTHER_SPECS, "other message"),
    ("forget-prepared-on-restart", OTHER_SPECS, "other message"),
    ("checkpoint-not-migrated", OTHER_SPECS, "other message"),
    # finding 11: a node-access error, the registry path, a socket list
    ("no-reregister", "AssertionError: plugin registry of dra-node-0 unreadable: no helper pod", "other message"),
    (
        "no-reregister",
        "AssertionError: GetInfo answers of drv on dra-node-0: [{'name': 'drv', 'socket': 'drv-reg.sock'}]; sockets "
        "the kubelet registered: ['/var/lib/kubelet/plugins_registry/x.sock']",
        "other message",
    ),
    # finding 11: a pod that ran without any CDI device shows no device too, without the driver's CDI edits
    (
        "skip-cdi-env",
        f"AssertionError: expected ['gpu-0'], the probe shows no device; probe output of p/ctr (exit status 0):\n"
        f"{ENV_HEAD}\n  HOME=/root",
        "other message",
    ),
    # finding 11: the other direction is an error of the placement emulation, not this fault
    (
        "publishes-on-some-nodes-only",
        "AssertionError: it shows devices on node(s) ['dra-control-plane'] it was not deployed to (expected driver "
        "nodes ['dra-node-0']: DaemonSet dra/plugin)",
        "other message",
    ),
    # new faults: their neighbours' symptoms are not theirs
    ("request-names-rotated", "AssertionError: expected ['gpu-0'], the probe shows ['gpu-0', 'gpu-1']", "other"),
    ("request-names-rotated", "AssertionError: expected ['gpu-0'], the probe shows no device", "other message"),
    # device-by-position: every device shifted (wrong-cdi-device: gpu-0 is wrong too), or one shows nothing
    (
        "device-by-position",
        "AssertionError: 4 of 4 devices of dra-node-0 prepared wrong: gpu-0: expected ['gpu-0'], the probe shows "
        "['gpu-1']; probe output | gpu-1: expected ['gpu-1'], the probe shows ['gpu-0']",
        "other message",
    ),
    (
        "device-by-position",
        "AssertionError: 1 of 4 devices of dra-node-0 prepared wrong: gpu-2: expected ['gpu-2'], the probe shows "
        "no device; probe output",
        "other message",
    ),
    (
        "prepare-fails-once",
        "conformance.core.errors.WaitFailed: kubelet could not prepare the pod's claims: Warning "
        "FailedPrepareDynamicResources Pod/p: injected fault prepare-error",
        "other message",
    ),
]


@pytest.mark.parametrize(
    ("fault", "text", "kind"), ACCIDENTS, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(ACCIDENTS)]
)
def test_misleading_texts_are_accidents(fault, text, kind):
    why = _judge(fault, text)
    assert why.startswith(kind), why


def test_a_teardown_leak_is_an_accident_even_when_the_symptom_matches_it():
    """The recorded teardown text of unprepare-needs-claim, under a symptom written loosely enough to match it."""
    entry = faultfile.FaultEntry(
        "unprepare-needs-claim", "c", ("s.py",), ("s.py::t",), symptom="still prepared on node"
    )
    run = RunResult("unprepare-needs-claim", 1, {"s.py::t": "broken"}, 1.0, details={"s.py::t": LEAK})
    assert verdict.accident(entry, run, "s.py::t").startswith("teardown leak: the test's own checks passed")
    assert verdict.cells(entry, run) == {"s.py::t": verdict.ACCIDENT}


RESULTS_BY_NAME = "results-by-request-name"
COUNT_TEST = "suites/allocation/test_selectors.py::test_count_allocates_that_many_distinct_devices"
PL03_TEST = "suites/prioritized_list/test_first_available.py::test_constraints_on_the_parent_request_steer_the_choice"
# as recorded by validate-suite --faults results-by-request-name (s17, PL-03 on v1.34.4)
PL_REFUSED = (
    "conformance.core.errors.WaitFailed: while waiting for pod t/p Running: kubelet could not prepare the pod's "
    "claims: Warning FailedPrepareDynamicResources Pod/p: Failed to prepare dynamic resources: prepare dynamic "
    "resources: NodePrepareResources failed for ResourceClaim c-1: ResourceClaim t/c-1 (UID u): no allocation result "
    "for request gpu (the results name gpu/one): injected fault results-by-request-name"
)


@pytest.mark.parametrize(
    ("nodeid", "text", "kind"),
    [
        (COUNT_TEST, "AssertionError: expected ['gpu-0', 'gpu-1'], the probe shows ['gpu-1']; probe output of p/c", ""),
        (COUNT_TEST, "AssertionError: expected ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3'], the probe shows ['gpu-1']", ""),
        (PL03_TEST, PL_REFUSED, ""),
        # neighbours: wrong-cdi-device (another device), fewer/none shown, all shown, another fault's refusal
        (COUNT_TEST, "AssertionError: expected ['gpu-1', 'gpu-2'], the probe shows ['gpu-3']", "other message"),
        (COUNT_TEST, "AssertionError: expected ['gpu-1'], the probe shows ['gpu-1']", "other message"),
        (COUNT_TEST, "AssertionError: expected ['gpu-1', 'gpu-2'], the probe shows no device", "other message"),
        (COUNT_TEST, "AssertionError: expected ['gpu-1', 'gpu-2'], the probe shows ['gpu-1', 'gpu-2']", "other"),
        (PL03_TEST, PL_REFUSED.replace("no allocation result for request gpu (the results name gpu/one)", ""), "other"),
    ],
)
def test_results_by_request_name_symptoms(nodeid, text, kind):
    """The fault's two symptoms (two or more devices expected, exactly one of them shown; a firstAvailable claim
    refused naming its request and the results' names) are caught; its neighbours' texts are accidents."""
    why = _judge(RESULTS_BY_NAME, text, nodeid)
    assert why.startswith(kind) and bool(why) == bool(kind), why
