"""The driver profile: what the suite needs to know about a driver, validated with clear errors. Pure.

A profile is YAML (``fixtures/drivers/<name>.yaml``); :func:`parse` turns its dict into a frozen
:class:`DriverProfile` or raises :class:`~conformance.core.errors.ConfigError` naming the file, the dotted
field and the fix. Shape (feature-catalog.md §7 "Inputs"; drivers.md per-driver facts)::

    name: reference                       # the profile's name (file stem)
    driver: gpu.dra-conformance.test      # ResourceSlice spec.driver
    description: ...
    device_classes: [gpu.dra-conformance.test]   # first = the class tests use
    attributes: {model: string, index: int, driverVersion: version}   # expected, unqualified or qualified
    devices_per_node: 4                   # at least this many on each driver node
    visibility:                           # how a container proves it sees the device
      env_regex: '^DRA_DEVICE_\\w+='       # matched (multiline) against the output of `command` (default env)
      command: env                        # or e.g. nvidia-smi -L with expected_output
      expected_output: 'GPU \\d+:'
      image: busybox                      # optional image with the command
      device_attribute: ifName            # optional: the probe names a device by this attribute's value
                                          # (e.g. dranet's interface name), not by its device name
      names_devices: true                 # default; false: the output names no device (one line per claim
                                          # request), so device checks prove visibility only: a summary waiver
    opaque_config: {parameters: {...}, shows_as: 'regex in the probe output'}   # optional
    capabilities: {shared_claims: true, admin_access: true, partitions: false, consumable_capacity: false,
                   taints: true, prioritized_list: true, multiple_devices: true, opaque_config: true,
                   fault_injection: false, extended_resource_name: "",
                   published_taints: false, device_status: false, binding_conditions: false, cdi: true,
                   container_isolation: true, health: false}
                                              # taints: DeviceTaintRules apply to its devices (default: on where
                                              # the cluster serves them; false is a waiver); published_taints:
                                              # this deployment publishes devices[].taints; extended_resource_name:
                                              # what a DeviceClass of device_classes maps (KEP-5004);
                                              # multiple_devices: measured, a node publishing two or more
                                              # devices holds the driver to it even when false;
                                              # shared_claims, admin_access, prioritized_list (gates on) and
                                              # opaque_config (with a sample) are held when left out: only
                                              # false turns one off, a waiver (issue 24)
    requires_hardware: false              # true: real devices only; a run on a cluster it creates is refused
    deploy: {mode: bundled|host|helm|manifests|preinstalled, ...mode-specific keys}
                                          # host: nri: true (the plugin is an NRI plugin: nodes serve NRI);
                                          # netdevs: {kind: ifb|veth, count: N} test interfaces per node
    deploy_alternatives: {helm: {chart: ..., values: ...}}   # optional: what ``--driver-deploy MODE`` uses
    binding_failure_device: gpu-3         # optional: a device name (in every pool) whose attach this deployment
                                          # makes fail: the driver sets its bindingFailureConditions (KEP-5007)
    cdi_identity: {device_nodes: ['/dev/dri/card{index}'], env: ['GPU_UUID={uuid}'], mounts: [...]}
                                          # optional (cdi: true): what the CDI edits of an allocated device
                                          # carry, placeholders from its attributes (core/profile_identity.py)
    consumed_capacity_signal: '^GPU_MEMORY_LIMIT={value}$'   # optional: how a share's container shows the
                                          # consumedCapacity granted to it (else capacity is publish-only)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from conformance.core import profile_checks, profile_identity
from conformance.core.errors import ConfigError
from conformance.core.profile_deploy import check_deploy
from conformance.core.profile_sections import check_visibility, devices_per_node, identity

ATTRIBUTE_TYPES = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
BOOL_CAPABILITIES = (
    "shared_claims",
    "admin_access",
    "partitions",
    "consumable_capacity",
    "taints",
    "prioritized_list",
    "multiple_devices",
    "opaque_config",
    "fault_injection",
    "published_taints",
    "device_status",
    "binding_conditions",
    "cdi",
    "container_isolation",
    "health",
)
DEPLOY_KEYS = {
    "bundled": {"devices", "device_classes_dir", "args"},
    "host": {"binary", "args", "env", "device_classes_dir", "restart_settle_s", "nri", "netdevs"},
    "helm": {
        "chart",
        "release",
        "namespace",
        "values",
        "version",
        "set",
        "timeout_s",
        "images",
        "env_values",
        "upgrade_from",
        "repo",
        "values_files",
        "nri",  # the chart's pods are NRI plugins (dra-driver-cpu): nodes serve NRI at /var/run/nri
        "rolling_update",
    },
    "manifests": {
        "dir",
        "namespace",
        "chart",
        "release",
        "values",
        "env_values",
        "images",
        "timeout_s",
        "rolling_update",
    },
    "preinstalled": {"node_selector"},  # the driver's nodes, when the run cannot find its DaemonSets
}
TOP_KEYS = {
    "name",
    "driver",
    "description",
    "device_classes",
    "attributes",
    "devices_per_node",
    "visibility",
    "opaque_config",
    "capabilities",
    "requires_hardware",
    "deploy",
    "notes",
    "version",
    "admin_access_signal",
    "deploy_alternatives",
    "binding_failure_device",
    "health_switch",
    "cdi_identity",
    "consumed_capacity_signal",
}


def _regex(raw: Mapping[str, Any], key: str, src: str) -> str:
    value = str(raw.get(key) or "")
    try:
        re.compile(value)
    except re.error as exc:
        raise ConfigError(
            f"not a regular expression: {exc}",
            source=src,
            field=key,
            fix="a Python regex matched per line, e.g. '^DRA_ADMIN_ACCESS=true$'",
        ) from None
    return value


def _device_name(raw: Mapping[str, Any], key: str, src: str) -> str:
    """The optional device name under ``key`` ("" when absent); ConfigError when it is not a DNS label."""
    value = raw.get(key)
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or not re.match(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", value):
        raise ConfigError(
            f"must be a device name (a DNS label), got {value!r}", source=src, field=key, fix=f"{key}: gpu-3"
        )
    return value


@dataclasses.dataclass(frozen=True)
class Visibility:
    """How to prove a device is visible in a container: run ``command`` (shell) in ``image``; pass when
    ``env_regex`` / ``expected_output`` (regexes, multiline) match its output."""

    command: str = "env"
    env_regex: str = ""
    expected_output: str = ""
    image: str = ""
    device_attribute: str = ""  # qualified or unqualified attribute whose value the probe shows ("" = name)
    names_devices: bool = True  # False: probe lines name no device; device checks prove visibility only

    def matches(self, output: str) -> tuple[bool, str]:
        """``(visible, evidence)`` for the probe ``output``."""
        for label, pattern in (("env_regex", self.env_regex), ("expected_output", self.expected_output)):
            if pattern and not re.search(pattern, output, re.M):
                return False, f"{label} {pattern!r} not found in the output of {self.command!r}:\n{output[-2000:]}"
        hits = [m.group(0) for p in (self.env_regex, self.expected_output) if p for m in re.finditer(p, output, re.M)]
        return True, f"{self.command!r} shows: " + "; ".join(hits[:8])


@dataclasses.dataclass(frozen=True)
class DriverProfile:
    """A validated driver profile (see module docstring). ``source`` is the file it came from."""

    name: str
    driver: str
    device_classes: tuple[str, ...]
    visibility: Visibility
    deploy_mode: str
    deploy: Mapping[str, Any]
    attributes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    devices_per_node: int = 1
    capabilities: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    extended_resource_name: str = ""
    opaque_parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    opaque_shows_as: str = ""
    # opaque_config.override: a second sample whose marker replaces the first's (config precedence); {} = none
    opaque_override: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    opaque_override_shows_as: str = ""
    # regex a container of an adminAccess claim shows (e.g. '^DRA_ADMIN_ACCESS=true$'); "" = no signal
    admin_access_signal: str = ""
    requires_hardware: bool = False
    description: str = ""
    version: str = ""
    source: str = ""
    deploy_alternatives: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # a device name whose attach this deployment makes fail (bindingFailureConditions, KEP-5007); "" = none
    binding_failure_device: str = ""
    # health_switch.node_annotation: the Node annotation key ({driver}: the driver name) whose device names the
    # driver reports Unhealthy (KEP-4680 health transition); "" = no switch
    health_annotation: str = ""
    # cdi_identity: {device_nodes|env|mounts: (template, ...)} the CDI edits of an allocated device must carry,
    # placeholders from its attributes (conformance/core/profile_identity.py); {} = no pattern (untested)
    cdi_identity: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # regex (per line) with {value}: how a container shows the consumedCapacity of its share; "" = not shown
    consumed_capacity_signal: str = ""

    def for_mode(self, mode: str) -> DriverProfile:
        """This profile deployed by ``mode`` (``--driver-deploy``): its ``deploy_alternatives[mode]`` replaces
        ``deploy`` when the profile's own mode differs; otherwise the profile itself."""
        if mode == self.deploy_mode or mode not in self.deploy_alternatives:
            return self
        return dataclasses.replace(self, deploy_mode=mode, deploy=dict(self.deploy_alternatives[mode]))

    @property
    def device_class(self) -> str:
        """The DeviceClass tests use by default (the first listed)."""
        return self.device_classes[0]

    def declares(self, capability: str) -> bool:
        """Whether the profile declares ``capability`` (``shared_claims`` or ``driver.shared_claims``)."""
        return bool(self.capabilities.get(capability.removeprefix("driver."), False))

    def qualified(self, attribute: str) -> str:
        """An attribute name qualified with the driver's domain (``model`` -> ``<driver>/model``)."""
        return attribute if "/" in attribute else f"{self.driver}/{attribute}"


def _mapping(raw: Mapping, key: str, src: str) -> Mapping:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"must be a mapping, got {type(value).__name__}", source=src, field=key, fix=f"write {key}: {{name: value}}"
        )
    return value


def parse(
    raw: Any, source: str = "<profile>", extra_modes: Mapping[str, frozenset[str]] | None = None
) -> DriverProfile:
    """Validate a profile dict; return a :class:`DriverProfile`. Raises ConfigError (file, field, fix).

    ``extra_modes``: deploy modes of registered third-party deployers -> the ``deploy`` keys each takes
    (conformance.runner.registry.Registry.deploy_modes), accepted besides the shipped :data:`DEPLOY_KEYS`.
    Sections are checked in file order (top-level keys, identity, attributes, devices_per_node, visibility,
    capabilities, deploy, deploy_alternatives, opaque_config, requires_hardware, admin_access_signal,
    binding_failure_device); the first problem raises. Unknown keys get "did you mean"
    (:func:`conformance.core.profile_checks.unknown_keys`). Checks that need the file (its name, relative
    paths) are :func:`conformance.drivers.profiles.check_file`'s."""
    src = source
    _check_top_level(raw, src)
    name, driver, classes = identity(raw, src)
    attributes = _attributes(raw, src)
    per_node = devices_per_node(raw, src)
    vis = _visibility(raw, src)
    profile_checks.device_attribute(_mapping(raw, "visibility", src), attributes, driver, src)
    ext, flags = _capabilities(raw, src)
    modes = {**(extra_modes or {}), **DEPLOY_KEYS}
    deploy = _mapping(raw, "deploy", src)
    mode = check_deploy(deploy, deploy.get("mode", "preinstalled"), src, modes)
    alternatives = _deploy_alternatives(raw, src, modes)
    opaque, shows_as = profile_checks.opaque_config(raw, src, flags.get("opaque_config", False))
    override, override_shows_as = profile_checks.opaque_override(raw, src)
    return DriverProfile(
        name=name,
        driver=driver,
        device_classes=tuple(classes),
        visibility=vis,
        deploy_mode=mode,
        deploy=dict(deploy),
        deploy_alternatives=alternatives,
        attributes=dict(attributes),
        devices_per_node=per_node,
        capabilities=flags,
        extended_resource_name=ext,
        opaque_parameters=opaque,
        opaque_shows_as=shows_as,
        opaque_override=override,
        opaque_override_shows_as=override_shows_as,
        requires_hardware=profile_checks.requires_hardware(raw, src),
        description=str(raw.get("description") or ""),
        version=str(raw.get("version") or ""),
        admin_access_signal=_regex(raw, "admin_access_signal", src),
        binding_failure_device=_device_name(raw, "binding_failure_device", src),
        health_annotation=profile_checks.health_switch(raw, src),
        cdi_identity=profile_identity.parse(raw, attributes, driver, src),
        consumed_capacity_signal=profile_checks.consumed_capacity_signal(raw, src),
        source=source,
    )


def _check_top_level(raw: Any, src: str) -> None:
    """ConfigError unless ``raw`` is a mapping holding only :data:`TOP_KEYS`."""
    if not isinstance(raw, Mapping):
        raise ConfigError(
            "a driver profile must be a YAML mapping", source=src, fix="see fixtures/drivers/reference.yaml"
        )
    profile_checks.unknown_keys(raw, TOP_KEYS, src)


def _attributes(raw: Mapping, src: str) -> Mapping:
    """The ``attributes`` mapping; each type one of :data:`ATTRIBUTE_TYPES`."""
    attributes = _mapping(raw, "attributes", src)
    for attr, typ in attributes.items():
        if typ not in ATTRIBUTE_TYPES:
            raise ConfigError(
                f"type {typ!r} is not an attribute type",
                source=src,
                field=f"attributes.{attr}",
                fix=f"use one of {', '.join(ATTRIBUTE_TYPES)}",
            )
    return attributes


def _visibility(raw: Mapping, src: str) -> Visibility:
    """The ``visibility`` section as a :class:`Visibility` (checked by ``profile_sections.check_visibility``)."""
    vis = _mapping(raw, "visibility", src)
    check_visibility(vis, src)
    return Visibility(
        command=str(vis.get("command") or "env"),
        env_regex=str(vis.get("env_regex") or ""),
        expected_output=str(vis.get("expected_output") or ""),
        image=str(vis.get("image") or ""),
        device_attribute=str(vis.get("device_attribute") or ""),
        names_devices=vis.get("names_devices", True),
    )


def _capabilities(raw: Mapping, src: str) -> tuple[str, dict[str, bool]]:
    """``(extended_resource_name, flags)`` from ``capabilities``: flags only from :data:`BOOL_CAPABILITIES`."""
    caps = _mapping(raw, "capabilities", src)
    ext = profile_checks.extended_resource_name(caps.get("extended_resource_name"), src)
    profile_checks.unknown_keys(caps, (*BOOL_CAPABILITIES, "extended_resource_name"), src, "capabilities")
    flags = {}
    for key, value in caps.items():
        if key == "extended_resource_name":
            continue
        if not isinstance(value, bool):
            raise ConfigError(
                f"must be true or false, got {value!r}", source=src, field=f"capabilities.{key}", fix=f"{key}: true"
            )
        flags[key] = value
    return ext, flags


def _deploy_alternatives(raw: Mapping, src: str, modes: Mapping) -> dict[str, dict[str, Any]]:
    """``deploy_alternatives``: mode -> its deploy mapping (with ``mode`` set), each checked like ``deploy``."""
    alternatives = {}
    for alt_mode, alt in _mapping(raw, "deploy_alternatives", src).items():
        if not isinstance(alt, Mapping):
            raise ConfigError(
                "must be a mapping", source=src, field=f"deploy_alternatives.{alt_mode}", fix="e.g. {chart: path}"
            )
        check_deploy({**alt, "mode": alt_mode}, alt_mode, src, modes)
        alternatives[str(alt_mode)] = {**alt, "mode": alt_mode}
    return alternatives
