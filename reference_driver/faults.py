"""Named fault switches: one registry, each fault one small documented change in behaviour.

Faults are off by default and switched on with ``--faults a,b`` or ``DRA_REFERENCE_FAULTS=a,b``. They
exist so the conformance suite can prove that its checks fail against a broken driver (self-validation).
Unknown names are rejected with the list of known ones, so a typo never silently runs a healthy driver.
"""

from __future__ import annotations

from dataclasses import dataclass

FAULTS: dict[str, str] = {
    "prepare-error": "NodePrepareResources answers every claim with a per-claim error "
    "(contract: pod must not start; upstream 'must retry NodePrepareResources').",
    "unprepare-error": "NodeUnprepareResources answers every claim with a per-claim error "
    "(upstream 'must call NodeUnprepareResources for deleted pod').",
    "skip-cdi-env": "CDI device entries carry no device env vars (only a marker), so containers do not "
    "see which device they got.",
    "leak-device-to-all-containers": "Devices are returned without request_names, so every container "
    "referencing the claim gets every device of it, whatever request it "
    "names (upstream 'must map configs and devices to the right containers').",
    "ignore-claim-config": "Opaque configuration with source FromClaim is ignored; only class config applies.",
    "skip-uid-check": "NodePrepareResources does not compare the claim UID with the API object's UID "
    "(upstream test-driver 'got replaced' check).",
    "unprepare-keeps-cdi": "NodeUnprepareResources forgets the claim but leaves its CDI spec file behind.",
    "unhealthy-devices": "The DRAResourceHealth stream reports every device UNHEALTHY (HLTH-01).",
    "no-slices": "No ResourceSlice is published for the node (PUB-01/PUB-08).",
    "no-republish": "Slices deleted by someone else (e.g. the kubelet at start-up) are not re-created (PUB-03).",
    "wrong-pool-generation": "Changed pool content is republished without bumping pool.generation, and a "
    "re-created pool restarts at generation 1 (PUB-11).",
    "wrong-slice-count": "pool.resourceSliceCount is one more than the number of slices published, so the "
    "pool never looks complete (PUB-11).",
    "slices-no-owner": "Node-local ResourceSlices carry no ownerReference to their Node, so they are not "
    "garbage-collected with it (PUB-01).",
    "attribute-missing": "The profile-declared attribute 'model' is left out of every published device.",
    "attribute-wrong-type": "The attribute 'index' is published as a string instead of an int.",
    "oversized-slice": "All devices of the pool go into one slice, ignoring the 128-devices-per-slice limit "
    "(the API server refuses it: shows with more than 128 devices per node, LIM-01).",
    "wrong-cdi-device": "NodePrepareResources returns, and writes the CDI spec for, another device of this node "
    "than the one allocated (the next by name), so containers get a device the claim does not hold "
    "(driver contract: prepared devices are the allocation results; KAR-0049 isolation).",
    "register-v1beta1-only": "GetInfo advertises only v1beta1.DRAPlugin (not the GA v1.DRAPlugin of KEP-4381 / "
    "1.34), so the kubelet prepares through the deprecated v1beta1 service (REG-01).",
    "ignore-class-config": "Opaque configuration with source FromClass (from the DeviceClass) is ignored; only "
    "claim config applies (upstream 'supports claim and class parameters').",
    "admin-access-refused-in-use": "NodePrepareResources refuses an adminAccess claim whose device is already "
    "prepared for another claim on the node (KEP-5018; upstream 'DRA admin access' / 'kubelet DaemonSet with "
    "admin access').",
    "slow-prepare": "NodePrepareResources answers only after the kubelet's 45 s deadline for DRA calls "
    "(pkg/kubelet/cm/dra/plugin defaultClientCallTimeout), so every prepare ends in DeadlineExceeded.",
    "kubelet-device-mismatch": "The NodePrepareResources response names another device of the node than the "
    "one allocated, while the CDI spec and its IDs are for the allocated one, so PodResources reports a device "
    "the container does not have.",
    "prepare-not-idempotent": "A second NodePrepareResources of an already prepared claim answers that claim "
    "with a per-claim error instead of the same devices (the kubelet re-prepares after a restart).",
    "unprepare-unknown-error": "NodeUnprepareResources of a claim this driver never prepared (or already "
    "unprepared) answers a per-claim error instead of success (the kubelet unprepares claims whose state it lost).",
    "forget-prepared-on-restart": "Prepared claims are kept only in memory (the checkpoint is not read back at "
    "start), so after a plugin restart the driver does not know them and their unprepare leaves the CDI specs.",
    "counters-understated": "A partition of more than one memory slice publishes consumesCounters for only its "
    "first slice (KEP-4815), so the scheduler packs partitions that overlap on the GPU and preparing the later "
    "one fails (its slices are in use).",
    "partition-not-freed": "NodeUnprepareResources of a partition or whole partitionable GPU keeps its memory "
    "slices held, so a partition allocated on them after the pod is gone cannot be prepared (KEP-4815 "
    "'must consume and free up counters').",
    "share-ignored": "A device with allowMultipleAllocations is prepared as if exclusive: a second claim's share "
    "of it is refused while the first is prepared (KEP-5075 consumable capacity).",
    "capacity-overstated": "Devices with allowMultipleAllocations publish twice their real capacity, so a share "
    "the scheduler grants within the published capacity exceeds the device and cannot be prepared (KEP-5075).",
    "partition-cdi-parent": "The CDI spec of a partition injects its parent GPU instead of the partition, so the "
    "container sees the whole GPU it was not allocated (KEP-4815 partitionable devices).",
    "taint-dropped": "Device taints configured for the node (device config 'taints') are not published in the "
    "ResourceSlices, so the scheduler puts claims on, and keeps pods on, devices the driver knows are unusable "
    "(KEP-5055 driver-published taints; TAINT-01/05).",
    "tainted-prepare-refused": "NodePrepareResources refuses a device the driver publishes with a taint even when "
    "the claim tolerates it, so a tolerating pod (maintenance tooling) never starts (KEP-5055 tolerations).",
    "renamed-after-unprepare": "A device comes back under a new name (<name>-reset-<n>) once a claim using it is "
    "unprepared, so DeviceTaintRules naming it stop applying and a device taken out of service is handed out "
    "again (KEP-5055 DeviceTaintSelector.device; stable device names).",
    "no-device-status": "With --device-status, the driver writes no ResourceClaim status.devices entry after "
    "NodePrepareResources (KEP-4817; upstream 'must be possible for the driver to update the "
    "ResourceClaim.Status.Devices once allocated').",
    "partial-device-status": "With --device-status, only the first prepared device of a claim gets its "
    "status.devices entry; the claim's other devices have none (KEP-4817).",
    "binding-never-ready": "With --binding-conditions, the driver publishes devices with bindingConditions but "
    "never sets them True in the claim's status.devices, so the scheduler never binds the pod (KEP-5007).",
    "no-reregister": "After a restart (the state directory holds the marker the first start wrote) the plugin "
    "serves DRA but never creates its registration socket, so the kubelet does not use it again.",
    "cdi-not-restored-after-reboot": "CDI specs of prepared claims that vanished (a reboot cleared the runtime's "
    "CDI directory) are not rewritten, neither at start-up from the checkpoint nor when the kubelet prepares the "
    "claim again, so the restarted containers cannot get their devices.",
    "checkpoint-not-migrated": "A checkpoint in the previous format (1, written by the version before an upgrade) "
    "is ignored at start-up instead of migrated to format 2, so after the upgrade the driver does not know the "
    "claims prepared before it and their unprepare leaves the CDI specs behind.",
    "binding-failure-unreported": "With --binding-conditions, a device named by --binding-failure-devices (its "
    "attach fails) gets its bindingConditions set True instead of its bindingFailureConditions, so the scheduler "
    "binds the pod to a device that was never attached (KEP-5007 bindingFailureConditions).",
    "toleration-seconds-refused": "NodePrepareResources refuses a device whose allocation result tolerates a "
    "NoExecute taint only for a time (tolerationSeconds), as a driver does that treats a pending eviction as a "
    "reason not to hand the device out, so a pod KEP-5055 lets run until tolerationSeconds pass never starts.",
    "class-without-extended-resource": "The deploy creates the driver's DeviceClass without spec.extendedResourceName "
    "(the chart's faults value; the bundled deploy reads DRA_REFERENCE_FAULTS), so a pod asking for the driver's "
    "extended resource (dra-conformance.test/gpu) in resources.limits never gets a device (KEP-5004).",
    "upgrade-rewrites-cdi-spec": "After an upgrade (a checkpoint of the previous format migrated at start-up) the "
    "driver rewrites the CDI specs of the claims prepared before it for another device (the next by name, as after "
    "a changed device enumeration), under the same CDI device names, so the running pod's containers would get a "
    "device the claim does not hold when they restart (KEP-4381: prepared claims survive a driver upgrade).",
    "publishes-on-some-nodes-only": "On a node whose name ends in a digit other than 0 (local clusters' "
    "<name>-node-1, kind's <name>-worker2) the plugin registers with its kubelet but publishes no ResourceSlice, "
    "as a driver whose device discovery fails on some nodes: its DaemonSet asks for every node, it serves only "
    "some (issue 24 §2: KEP5970-1 names the missing node).",
    "multi-claim-first-only": "NodePrepareResources and NodeUnprepareResources naming several claims answer only the "
    "first one: the others get no entry in the response map, so the kubelet reports them skipped and a pod with "
    "two claims never starts (dra-protocols.md §2.3: every requested claim UID is answered on its own).",
    "prepare-unallocated": "NodePrepareResources of a claim without status.allocation succeeds with no devices "
    "instead of a per-claim error (upstream test-driver kubeletplugin.go refuses unallocated claims).",
    "unprepare-needs-claim": "NodeUnprepareResources reads the ResourceClaim from the API server and fails while it "
    "is gone, so a claim deleted before its unprepare ran (force-deleted pod) stays prepared (upstream 'must "
    "unprepare resources for force-deleted pod').",
    "class-config-last": "Opaque configuration from the DeviceClass (FromClass) is applied after the claim's own "
    "(FromClaim), so the class overrides the claim (upstream 'supports claim and class parameters': claim wins).",
    "foreign-config-parsed": "Opaque configuration entries of other drivers (opaque.driver not this driver) are "
    "parsed as this driver's own, so a claim that carries another driver's config fails to prepare (KEP-4381: "
    "a driver ignores configs of other drivers).",
    "invalid-config-ignored": "Opaque configuration of this driver that does not validate is silently ignored "
    "instead of failing the claim, so a pod runs with a config it never got (KEP-4381: NodePrepareResources "
    "reports invalid config as a per-claim error).",
    "prepare-not-concurrent": "NodePrepareResources takes 2 s and a call that arrives while another is being "
    "answered fails every claim with a 'busy' error instead of being served (the kubelet's pod workers call the "
    "driver concurrently: pkg/kubelet/cm/dra/manager.go makes the gRPC calls outside its cache lock).",
    "cdi-ids-change-on-repeat": "A repeated NodePrepareResources of an already prepared claim answers other CDI "
    "device IDs each time (a counter appended), IDs no spec defines (upstream kubeletplugin helper: prepare is "
    "idempotent; the kubelet repeats it after a restart and must get the same IDs).",
    "fewer-devices-prepared": "NodePrepareResources of a claim allocated several devices prepares (CDI spec and "
    "response) only the first of them; a container referencing another request gets no device (driver "
    "contract: one prepared device per allocation result).",
    "admin-signal-on-normal-claim": "The CDI spec of every claim carries the admin-access signal "
    "(DRA_ADMIN_ACCESS=true), not only of adminAccess claims, so a normal container is told it has monitoring "
    "access to devices it holds exclusively (KEP-5018; dra-example-driver cdi.go).",
    "unprepare-removes-other-cdi": "NodeUnprepareResources of one claim removes the CDI spec files of every claim "
    "prepared on the node (a cleanup by glob), so the other running pods' containers lose their devices when they "
    "restart (driver contract: unprepare touches only its own claim).",
    "slices-churn": "The node's ResourceSlices are republished every few seconds with a new pool generation "
    "although nothing changed (PUB-01 'stable (no churn)'; upstream 'kubelet must manage ResourceSlices').",
    "health-never-unhealthy": "The DRAResourceHealth stream ignores the runtime health switch (the Node "
    "annotation <driver>/unhealthy) and reports every device HEALTHY, so a device that failed never shows "
    "Unhealthy in the pod status (KEP-4680; upstream test/e2e_node/dra_test.go ResourceHealthStatus).",
    "unprepare-needs-claim-cdi-only": "NodeUnprepareResources of a claim whose ResourceClaim is gone from the API "
    "server removes its CDI spec and answers success but keeps its devices held (its release needs the API "
    "object), so a later claim allocated the same device fails to prepare with 'already held by' (upstream 'must "
    "unprepare resources for force-deleted pod'; dra-protocols.md §2.4: unprepare needs only the claim UID).",
    "prepare-fails-once": "The first NodePrepareResources of each claim answers a per-claim error; the kubelet's "
    "retry succeeds, so the pod starts late after a FailedPrepareDynamicResources event (KEP-5970 behaviour 4: "
    "preparation passes without errors).",
    "request-names-rotated": "NodePrepareResources of a claim with several results answers each device under the "
    "next result's request name, so the kubelet hands a container the device of another request (upstream 'must "
    "map configs and devices to the right containers'; NodePrepareResources Device.request_names).",
    "config-requests-ignored": "An opaque configuration scoped to some requests (DeviceClaimConfiguration.requests) "
    "is applied to every request of the claim (resource.k8s.io/v1: a config with requests applies only to them).",
    "duplicate-device-across-slices": "The node's pool gets one more slice repeating the first device of the pool, "
    "so one device name is published twice in the pool (resource.k8s.io/v1 Device.name is unique in its pool; "
    "an allocation result names a device by driver/pool/device).",
    "cdi-undeclared": "With --no-cdi (a driver without CDI, whose profile declares cdi: false) the driver still "
    "writes a CDI spec per claim and names its CDI device: the profile's cdi: false waiver is not true of the "
    "driver (breaker finding 4: a waiver is checked, not believed).",
    "device-by-position": "NodePrepareResources prepares (CDI spec, CDI ID, answer) a claim's k-th allocated device "
    "as the node's k-th device in name order, as a driver indexing devices by their position in the allocation: "
    "right for the first free devices of an idle node (gpu-0 alone, or all of them), wrong for a claim on any "
    "other device (breaker finding 3: which devices a test gets depends on device shards and scheduling).",
    "cdi-undeclared-by-name": "With --no-cdi the driver still writes a CDI spec per claim, with no claim UID in "
    "its file name or text (a token of it), and names no CDI device: a look for the UID misses it, the file's "
    "appearance on the node does not (s10 breaker finding 1).",
    "health-all-unhealthy": "The DRAResourceHealth stream reports every device of the node UNHEALTHY while the "
    "runtime health switch names any one of them, so a healthy device's pod shows Unhealthy too (KEP-4680: "
    "health is per device; s10 breaker finding 8).",
    "cdi-identity-swapped": "Each device's CDI entry carries the uuid env and device nodes of the next device of "
    "the node in name order, under its own name (a hardware table indexed off by one), so the container gets "
    "another device while its device-name env line is right (issue 24 §3).",
    "cdi-spec-all-devices": "The claim's CDI spec carries, in its spec-wide containerEdits, the uuid env and device "
    "nodes of every device of the node (a driver-wide spec listing all devices), so every container of the "
    "claim is handed all of them (issue 24 §3).",
    "capacity-granted-whole": "A share of a multi-allocatable device is prepared with the device's whole capacity "
    "in its CDI env (DRA_GPU_<dev>_CONSUMED_<cap>), ignoring the allocation's consumedCapacity; the driver's own "
    "holds stay right (KEP-5075; issue 24 §3).",
    "foreign-results-prepared": "NodePrepareResources takes every result of a claim's allocation as its own, "
    "whatever its driver, so a claim that also names another driver's device of the same pool and device names "
    "gets that device twice (resource.k8s.io/v1 DeviceRequestAllocationResult.driver; issue 24 §4).",
    "surge-socket-collision": "The pod UID of --rolling-update-uid is ignored: every instance listens on the "
    "fixed <driver>-reg.sock and dra.sock, so during a DaemonSet rolling update with maxSurge the new instance "
    "unlinks the old one's sockets and the old one, stopping, removes the new one's: the kubelet loses the "
    "driver on that node (kubelet pluginwatcher README 'Seamless Upgrade'; kubeletplugin RollingUpdate).",
    "unprepare-cdi-deferred": "NodeUnprepareResources answers success at once and deletes the claim's CDI spec "
    "a minute later on a background timer (a cleanup loop); a driver uninstalled before then leaves the spec on "
    "the node for good (issue 24 §4: after an uninstall nothing is left prepared).",
    "downgrade-forgets-newer-checkpoint": "A checkpoint in a newer format than the one this driver writes (2, "
    "written by the deployed version before a downgrade to the version writing format 1) is ignored at start-up, as "
    "an older release that does not know the newer layout does, so after the downgrade the driver does not know the "
    "claims the newer version prepared and their unprepare leaves the CDI specs behind.",
    "prepare-connection-refused": "NodePrepareResources answers every claim with a per-claim error whose text "
    "says '[Errno 111] Connection refused' (a driver whose own backend refused it): the failure is the driver's, "
    "never an API server outage (s11 breaker finding 2: ERROR (cluster) only on what the harness observed).",
    "cdi-node-unanswered": "The claim's CDI spec names each device's node (/dev/dra-gpu-0) in a second CDI device "
    "entry (<entry>-node) that NodePrepareResources does not answer: the spec on the node names the node, the "
    "runtime never injects it, so the container lacks the device node (a driver that splits a device's edits "
    "and answers only one; CDI SPEC.md containerEdits; issue 24 §3 device nodes seen inside the container).",
    "cdi-node-hostpath-swapped": "Each device's CDI device node keeps its own container path (/dev/dra-gpu-3) but "
    "its hostPath is the host node behind the next device of the node in name order with another one: the right "
    "name, another device behind it (a driver mapping container paths to host nodes off by one; CDI SPEC.md "
    "deviceNodes hostPath; breaker s12 F1).",
    "cdi-after-reply": "NodePrepareResources answers before the claim's CDI spec is on the node: the spec is "
    "written 30 s after the answer, so the runtime's first container create is refused ('CDI device injection "
    "failed: unresolvable CDI devices') and a later kubelet retry runs the pod (a kubelet plugin writes its CDI "
    "spec before it returns; breaker s14 B7).",
    "slices-churn-on-use": "After every NodePrepareResources and NodeUnprepareResources the node's pool is "
    "republished at a new generation although no device changed (a driver writing per-allocation state into its "
    "slices; PUB-01 'stable (no churn)'; breaker s14 B8).",
    "device-config-sticks": "Each device keeps the opaque config (GpuConfig and its sources) of the last claim "
    "prepared on it with one, and a later claim of that device without config gets it (a GPU sharing mode never "
    "reset between claims; KEP-4381: the config of a claim applies to that claim's devices only; breaker s14 B9).",
    "cdi-node-numbers-swapped": "Each device's CDI device node keeps its own container path and hostPath but "
    "carries type c with the major:minor of the next device's host node (name order, another host node): the "
    "runtime creates the node from those numbers, so the container gets another device under the right name and "
    "hostPath (CDI SPEC.md deviceNodes type/major/minor; container-device-interface fillMissingInfo).",
    "results-by-request-name": "NodePrepareResources looks a claim's allocation results up by the names of its "
    "spec requests, one result per name (a map from result.request to the result, as a driver written for one "
    "device per exact request): a request's later result replaces the earlier one, so a count 2 or allocationMode "
    "All request gets one device prepared, and a firstAvailable result (<request>/<subrequest>, KEP-4816) matches "
    "no request, so the claim is refused (resource.k8s.io/v1 DeviceRequestAllocationResult.request).",
}
# the per-claim error text of the faults that fail every NodePrepareResources (state.ClaimStore.prepare)
PREPARE_ERRORS = {
    "prepare-error": "",
    "prepare-connection-refused": ": reading the claim failed: [Errno 111] Connection refused",
}


class UnknownFaultError(ValueError):
    """A fault name that is not in :data:`FAULTS`; the message lists the known names."""


@dataclass(frozen=True)
class Faults:
    """The set of enabled faults. ``faults.on("prepare-error")`` is True when that fault is enabled."""

    enabled: frozenset[str] = frozenset()

    def on(self, name: str) -> bool:
        """True when fault ``name`` is enabled; raises KeyError for a name missing from the registry."""
        if name not in FAULTS:
            raise KeyError(f"fault {name!r} is not in the registry (reference_driver/faults.py)")
        return name in self.enabled

    @classmethod
    def parse(cls, *specs: str | None) -> Faults:
        """Build from comma-separated lists (flag value, env value; empty or None = none).

        Raises UnknownFaultError naming the bad entry and the known names.
        """
        names = {n.strip() for spec in specs if spec for n in spec.split(",") if n.strip()}
        unknown = sorted(names - FAULTS.keys())
        if unknown:
            raise UnknownFaultError(
                f"unknown fault(s) {unknown}; known faults: {sorted(FAULTS)} (--faults / DRA_REFERENCE_FAULTS)"
            )
        return cls(frozenset(names))

    def describe(self) -> str:
        """Human-readable list of the enabled faults, or 'none'."""
        return ", ".join(sorted(self.enabled)) or "none"
