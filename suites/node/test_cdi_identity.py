"""Device identity beyond the env line: the CDI edits the runtime applies for a claim carry its allocated device's
device nodes, env and mounts, as the profile's ``cdi_identity`` patterns render them from the device's published
attributes, and nothing rendered for another device of the node; inside the container the device's nodes and
mounts are there (``ls -ld``) and no other device's are (a spec can name a node the runtime never injects), and
its device nodes have the major:minor of the host nodes behind them where node access stats node files.

The probe tests (PREP-11, KEP5970-5) read what the container prints, which for many drivers is one env line the
driver writes from the device name: a driver that names the right device there but injects another device's
node (``/dev/dri/card1`` for card0) or UUID passes them. This test judges the CDI spec itself. A profile without
a pattern leaves it untested (capability ``driver.cdi_identity``: "not claimed" in the report). The edits are
those of the CDI IDs the driver answered, as the kubelet's PodResources reports them: like the PodResources suite
it requires the KubeletPodResourcesDynamicResources gate, and where node access cannot read PodResources it skips
naming the node access mode (as the ``dra_plugin`` fixture does), never judging the claim's spec files alone.

Sources: CDI SPEC.md ``containerEdits`` (``env``, ``deviceNodes``, ``mounts``); KEP-4381 (prepared devices are
the allocation results, ``Device.cdi_device_ids``); KEP-3695 PodResources ``cdi_devices``; issue 24 §3.
"""

import pytest

from conformance.api import cdi_identity, timeouts, waits

pytestmark = [pytest.mark.node, pytest.mark.standard, pytest.mark.kep(4381)]


@pytest.mark.scenario("PREP-12")
@pytest.mark.requires("driver.cdi_identity", "node_access", "gate.KubeletPodResourcesDynamicResources")
def test_cdi_edits_of_a_claim_carry_its_devices_identity(k8s, tracker, builder, inventory, node_access, probe, profile):
    """A claim pinned to the last device (by name) of a node: inside its container every device node and mount
    path the profile's ``cdi_identity`` renders for that device exists and none rendered for another device of
    the node does; the CDI edits of the IDs PodResources reports for it carry every entry rendered for that device
    and none rendered for another; when the probe command is ``env`` and the pattern has ``env`` entries, the
    container's env shows the device's lines and no other device's. Declared host nodes rendered alike for two
    devices that are not partitions of one parent fail the test: it cannot tell them apart (breaker s13 B3).
    Source: CDI SPEC.md containerEdits; KEP-4381 (prepared devices are the allocation results); issue 24 §3."""
    # given: a claim pinned to one device (not the first an idle node hands out)
    node = inventory.nodes()[0]
    device = sorted((d for d in inventory.on_node(node) if not d.taints), key=lambda d: d.name)[-1]
    claim = tracker.create(builder.claim(selectors=inventory.selector_for(device)))
    listing = cdi_identity.path_listing(profile.cdi_identity, profile.driver, device, inventory.on_node(node))
    # when: its pod runs on that node, listing those paths after the probe
    pod = builder.pod(uses=claim, node_name=node, command=builder.probe_pod_command(then=listing.script))
    pod = waits.pod_running(k8s, tracker.create(pod), timeout=timeouts.POD_START)
    # then: the container holds that device's nodes and mounts only; the CDI edits and the env carry its identity
    output = probe.output(pod)
    inside = f"in the container of pod {pod.name} (claim {claim.name} holds {device.name}): "
    inside += "; ".join(listing.problems(output)) or "right"
    try:
        found, source = cdi_identity.claim_edits(node_access, pod, claim)
    except cdi_identity.PodResourcesUnread as exc:
        assert inside.endswith(": right"), inside
        pytest.skip(f"PodResources not readable: {exc}")
    wrong = cdi_identity.problems(profile.cdi_identity, profile.driver, device, inventory.on_node(node), found)
    wrong += cdi_identity.number_problems(node_access, node, found, listing, output)
    edits = f"CDI edits of claim {claim.name} (holds {device.name}): {'; '.join(wrong) or 'right'}; from {source}"
    assert not wrong and inside.endswith(": right"), f"{inside}; {edits}"
    if profile.visibility.command.strip() == "env" and profile.cdi_identity.get("env"):
        shown = {"env": set(output.splitlines()), "device_nodes": set(), "mounts": set()}
        env_only = {"env": profile.cdi_identity["env"]}
        wrong = cdi_identity.problems(env_only, profile.driver, device, inventory.on_node(node), shown)
        assert not wrong, f"the env of pod {pod.name} (claim holds {device.name}): {'; '.join(wrong)}"
