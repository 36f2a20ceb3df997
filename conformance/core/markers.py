"""The public marker vocabulary of dra-conformance, declared once.

Markers are how users select tests and how reports group them:

* **area** markers (``@pytest.mark.allocation``): one per suite area; Allure *epic*.
* **profile** markers (``@pytest.mark.core``): exactly one per test. Profiles nest
  ``core`` < ``standard`` < ``full``; ``disruptive`` tests (kubelet/plugin restarts) run only with
  ``--profile disruptive --allow-disruptive`` (which also runs everything in ``full``).
* ``@pytest.mark.requires(*capabilities)``: capabilities the cluster or driver must have
  (see :data:`CAPABILITIES`); missing ones become a skip decided at collection, with evidence.
* ``@pytest.mark.scenario(*ids)``: scenario IDs of shared/reference/feature-catalog.md (e.g. ``ALLOC-04``,
  ``KEP5970-3``); Allure *story*.
* ``@pytest.mark.kep(number)``: the KEP the behaviour comes from; Allure link.

Sources: KEP-5970 (profiles and the seven core behaviours); feature-catalog.md §5 and §7.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Marker:
    """One marker: ``name``, ``kind`` (area|profile|meta), ``description``, optional ``kep``."""

    name: str
    kind: str
    description: str
    kep: str = ""


AREAS = (
    Marker(
        "api_v1",
        "area",
        "resource.k8s.io/v1 API stability: verbs, discovery, validation limits, "
        "immutability, cross-version round trips (API-*, LIM-*)",
        "4381",
    ),
    Marker("allocation", "area", "claims, templates, sharing, CEL selectors, constraints, lifecycle (ALLOC-*)", "4381"),
    Marker("prioritized_list", "area", "firstAvailable subrequests (PL-*)", "4816"),
    Marker("admin_access", "area", "adminAccess claims and the namespace label guard (ADMIN-*)", "5018"),
    Marker("podresources", "area", "kubelet PodResources API reports DRA claims (PRA-*)", "3695"),
    Marker(
        "node",
        "area",
        "registration, NodePrepareResources/Unprepare, CDI, container isolation (REG-*, PREP-*, SEC-*)",
        "4381",
    ),
    Marker("publishing", "area", "ResourceSlice publishing by the driver (PUB-*)", "4381"),
    Marker("partitions", "area", "partitionable devices: shared counters, overlapping partitions (PART-*)", "4815"),
    Marker(
        "consumable_capacity",
        "area",
        "multi-allocatable devices: shares, shareID, consumedCapacity (CAP-*)",
        "5075",
    ),
    Marker("taints", "area", "device taints, tolerations and DeviceTaintRules (TAINT-*)", "5055"),
    Marker(
        "extended_resources",
        "area",
        "container limits of a DeviceClass's extended resource served through a generated claim (ER-*)",
        "5004",
    ),
    Marker(
        "device_status",
        "area",
        "ResourceClaim status.devices written by the driver, binding conditions (DS-*, BC-*)",
        "4817",
    ),
)

MISSION_AREAS = ("api_v1", "allocation", "prioritized_list", "admin_access", "podresources")
"""The five areas users qualify drivers on (v1 API stability, allocation, prioritized lists, admin access,
PodResources reporting): features GA or beta-on-by-default in Kubernetes 1.34, so the default ``standard``
profile selects every test of them (tests skip with evidence where the cluster does not serve a feature)."""

PROFILES = (
    Marker("core", "profile", "the seven KEP-5970 minimum behaviours every driver must pass", "5970"),
    Marker("standard", "profile", "core + every test of the five mission areas and the node checks (the default)"),
    Marker("full", "profile", "standard + newer and alpha features"),
    Marker("disruptive", "profile", "restarts kubelets or driver plugins; needs --allow-disruptive"),
)

META = (
    Marker("requires", "meta", "requires(*capabilities): skip with evidence when the cluster/driver lacks one"),
    Marker("scenario", "meta", "scenario(*ids): feature-catalog scenario IDs this test covers"),
    Marker("kep", "meta", "kep(number): the KEP the behaviour comes from"),
    Marker(
        "shard_devices",
        "meta",
        "shard_devices(n=1): the outcome depends only on n devices per node of the test's own; under xdist it "
        "takes n device slots and runs beside other sharded tests (conformance.runner.parallel)",
    ),
    Marker(
        "long_window",
        "meta",
        "long_window: the test mostly watches a fixed window (e.g. 60 s of no churn) or waits as the kubelet paces "
        "it (restart back-off); under xdist a sharded one starts early among the sharded tests, an unsharded one "
        "last among the unsharded, never before the cluster-exclusive block (conformance.runner.run_order)",
    ),
)

ALL = AREAS + PROFILES + META
PROFILE_ORDER = ("core", "standard", "full", "disruptive")

# capability name -> what provides it (for skip messages and docs)
CAPABILITIES = {
    # served API versions (discovery)
    "api.v1beta1": "resource.k8s.io/v1beta1 served (runtime-config)",
    "api.v1beta2": "resource.k8s.io/v1beta2 served (runtime-config)",
    "api.v1alpha3": "resource.k8s.io/v1alpha3 served (runtime-config)",
    "api.devicetaintrules": "DeviceTaintRule served in some resource.k8s.io version",
    # cluster
    "multi_node": "at least two nodes where the driver publishes devices",
    "node_access": "the harness can reach node files and sockets (PodResources, CDI, plugin registry)",
    "plugin_restart": "the harness can restart the driver's kubelet plugin",
    "kubelet_restart": "the harness can restart a kubelet (disruptive)",
    "plugin_registration": "the harness can call the kubelet plugin registration sockets (GetInfo)",
    "driver_slices_writable": "the run deployed the driver itself, so a test may delete one of the driver's "
    "ResourceSlices as a kubelet does at start-up; never a driver the cluster's admin installed (preinstalled)",
    # feature gates (kubernetes_feature_enabled metrics)
    "gate.DRAPrioritizedList": "feature gate DRAPrioritizedList on",
    "gate.DRAAdminAccess": "feature gate DRAAdminAccess on",
    "gate.DRADeviceTaints": "feature gate DRADeviceTaints on",
    "gate.DRAPartitionableDevices": "feature gate DRAPartitionableDevices on",
    "gate.DRAConsumableCapacity": "feature gate DRAConsumableCapacity on",
    "gate.DRAExtendedResource": "feature gate DRAExtendedResource on",
    "gate.KubeletPodResourcesDynamicResources": "kubelet feature gate KubeletPodResourcesDynamicResources on",
    "gate.KubeletPodResourcesGet": "kubelet feature gate KubeletPodResourcesGet on",
    "gate.ResourceHealthStatus": "feature gate ResourceHealthStatus on in every kubelet and kube-apiserver "
    "(pod status allocatedResourcesStatus, KEP-4680)",
    # the cluster's allocator delivers a gated behaviour (no known upstream gap in this release)
    "allocator.distinct_attribute": "the scheduler enforces distinctAttribute constraints (KEP-5075)",
    "allocator.result_tolerations": "the scheduler copies request tolerations into allocation results (KEP-5055)",
    "allocator.admin_access_counters": "the scheduler gives admin access to devices whose counters are consumed "
    "(KEP-5018 with KEP-4815)",
    "allocator.all_mode_counters": "the scheduler allocates a claim with allocationMode All over devices that "
    "consume shared counters (KEP-4815) without crashing",
    # declared by the driver profile (a declared capability that does not work is a failure)
    "driver.shared_claims": "driver lets several pods share one claim",
    "driver.admin_access": "driver supports adminAccess claims",
    "driver.admin_access_signal": "driver shows adminAccess to the container (profile admin_access_signal)",
    "driver.partitions": "driver publishes partitionable devices (shared counters)",
    "driver.consumable_capacity": "driver publishes devices with allowMultipleAllocations",
    "driver.prioritized_list": "driver's devices can satisfy firstAvailable alternatives",
    "driver.opaque_config": "driver accepts an opaque config and shows it in the container",
    "driver.multiple_devices": "driver publishes at least two devices per node",
    "driver.fault_injection": "driver has fault switches (the reference driver)",
    "driver.taints": "DeviceTaintRules and tolerations apply to the driver's devices (KEP-5055; on wherever the "
    "cluster serves DeviceTaintRules with DRADeviceTaints on, unless the profile declares taints: false)",
    "driver.published_taints": "driver publishes device taints in its ResourceSlices (devices[].taints, "
    "KEP-5055) in this deployment (profile published_taints)",
    "gate.DRAResourceClaimDeviceStatus": "feature gate DRAResourceClaimDeviceStatus on (claim status.devices)",
    "gate.DRADeviceBindingConditions": "feature gate DRADeviceBindingConditions on (KEP-5007)",
    "driver.device_status": "driver writes ResourceClaim status.devices for the devices it prepared (KEP-4817)",
    "driver.binding_conditions": "driver publishes devices with bindingConditions and sets them True (KEP-5007)",
    "driver.cdi": "NodePrepareResources returns the prepared devices, handed to containers as CDI specs the driver "
    "writes per claim (profile cdi, default true; false for dranet: it moves a netdev into the pod's netns via NRI)",
    "driver.consumed_capacity_signal": "a container holding a share of a multi-allocatable device shows the "
    "consumedCapacity granted to it (profile consumed_capacity_signal; KEP-5075)",
    "driver.cdi_identity": "the CDI edits of an allocated device carry its device nodes, env and mounts as the "
    "profile's cdi_identity patterns render them from its attributes, and no other device's (issue 24 §3)",
    "driver.container_isolation": "a device shows only in the containers that reference its claim (profile "
    "container_isolation, default true; false for a netdev, which lives in the pod's network namespace)",
    "driver.binding_failure": "a device whose attach fails in this deployment (profile binding_failure_device): "
    "the driver sets its bindingFailureConditions True (KEP-5007)",
    "driver.extended_resource_name": "a DeviceClass of the profile's device_classes maps the profile's "
    "extended_resource_name (spec.extendedResourceName, KEP-5004)",
    "platform.extended_claim_cleanup_on_completion": "kube-controller-manager deletes the claim generated for a "
    "pod's extended resources once the pod completed (KEP-5004)",
    "driver.health": "the driver streams its devices' health to the kubelet (DRAResourceHealth NodeWatchResources, "
    "an optional service of a DRA plugin, KEP-4680; profile health)",
    "platform.health_of_named_claims": "the kubelet reports device health (allocatedResourcesStatus) for a pod "
    "that references a ResourceClaim by name, not only for claims generated from a template (KEP-4680)",
    # disruptive lane: optional abilities of the cluster provider and the driver deployer
    "node_reboot": "the cluster provider reboots a node or emulates it (disruptive)",
    "controller_manager_restart": "the cluster provider restarts kube-controller-manager (disruptive)",
    "driver_reinstall": "the driver deployer removes the driver's plugins and installs them again (disruptive)",
    "driver_upgrade": "the driver deployer installs the profile's previous version (upgrade_from) and upgrades it "
    "to the deployed one in place (disruptive)",
    "driver_surge_update": "the driver deployer rolls the plugin DaemonSets with maxSurge 1 / maxUnavailable 0, two "
    "plugin instances per node at once (profile deploy rolling_update: surge; disruptive)",
    "driver_downgrade": "the driver deployer puts the profile's previous version (upgrade_from) in place of the "
    "deployed one while pods run, and the profile does not declare downgrade unsupported (upgrade_from.downgrade: "
    "false) (disruptive)",
    "driver.names_devices": "the visibility probe names each device a container shows, so device checks prove "
    "which devices (profile visibility.names_devices, default true; false for a per-request probe such as the "
    "upstream test driver's claim_<c>_<r>=true: device checks then prove visibility only, a summary waiver)",
}


def ini_lines() -> list[str]:
    """``name: description`` lines for pytest's ``markers`` ini value."""
    return [f"{m.name}: {m.description}" for m in ALL]


def profile_includes(selected: str, test_profile: str) -> bool:
    """Whether running ``--profile selected`` includes a test marked ``test_profile``.

    core < standard < full; disruptive includes everything.
    """
    order = {name: i for i, name in enumerate(PROFILE_ORDER)}
    if selected not in order or test_profile not in order:
        raise ValueError(f"unknown profile {selected!r} or {test_profile!r}; use one of {PROFILE_ORDER}")
    if test_profile == "disruptive":
        return selected == "disruptive"
    return order[test_profile] <= order[selected]
