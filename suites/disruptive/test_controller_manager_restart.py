"""kube-controller-manager down while pods with claims are deleted, then started again: nothing is orphaned
afterwards. The resourceclaim controller deletes the claims generated for the deleted pod, clears the deleted
pod from a standalone claim's reservedFor and releases its allocation; the kubelet and the driver unprepared
both claims on the node (their CDI specs are gone).

Sources: KEP-4381 (resourceclaim controller: generated claims are deleted with their pod, reservedFor entries
of pods that are gone are removed, unreserved claims are deallocated); pkg/controller/resourceclaim;
upstream test/e2e/dra "deallocation" and "removes reservation from claim when pod is done".
"""

import pytest

from conformance.api import cdi, timeouts, waits

pytestmark = [
    pytest.mark.allocation,
    pytest.mark.disruptive,
    pytest.mark.kep(4381),
    pytest.mark.scenario("ALLOC-13", "ALLOC-14"),
]


@pytest.mark.requires("node_access", "controller_manager_restart")
def test_nothing_orphaned_after_a_controller_manager_restart(k8s, tracker, builder, cluster, node_access):
    """Pods deleted while kube-controller-manager is down leave their claims behind only until it is back:
    then the generated claim is deleted, the standalone claim is deallocated with an empty reservedFor, and
    no CDI spec of either claim stays on the node."""
    # given: a running pod with a claim from a template and one with a standalone claim, both prepared
    templated = waits.pod_running(
        k8s, tracker.create(builder.pod(uses=tracker.create(builder.claim_template()))), timeout=timeouts.POD_START
    )
    standalone = tracker.create(builder.claim())
    user = waits.pod_running(k8s, tracker.create(builder.pod(uses=standalone)), timeout=timeouts.POD_START)
    generated, orphans = waits.pod_claims(k8s, templated), {}
    claims = {c.name: (c, pod.spec.node_name) for pod, c in [(templated, generated[0]), (user, standalone)]}
    prepared = {name: cdi.claim_specs(node_access, node, c) for name, (c, node) in claims.items()}
    assert all(prepared.values()), prepared

    # when: kube-controller-manager is stopped, both pods are deleted (gone), and it is started again
    def delete_pods_while_stopped():
        for pod in (templated, user):
            k8s.delete("Pod", pod.name, pod.namespace)
            waits.pod_gone(k8s, pod, timeout=timeouts.POD_DELETE)
        orphans["generated"] = waits.still_present(k8s, generated)
        orphans["reserved"] = k8s.get("ResourceClaim", standalone.name, standalone.namespace).reserved_for

    cluster.restart_controller_manager(while_stopped=delete_pods_while_stopped)
    assert orphans["generated"] and orphans["reserved"], f"no orphan to clean while it was down: {orphans}"
    # then: the generated claim is deleted and the standalone claim is deallocated, reserved for no pod
    waits.claim_gone(k8s, generated[0], timeout=timeouts.DEALLOCATION)
    released = waits.claim_deallocated(k8s, standalone, timeout=timeouts.DEALLOCATION)
    assert released is not None and not released.reserved_for, released
    # and: no CDI spec of either claim stays on its node
    left = [
        cdi.left_behind(node_access, node, c) for c, node in claims.values() if cdi.claim_specs(node_access, node, c)
    ]
    assert left == [], left
