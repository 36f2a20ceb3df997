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
                                              # devices holds the driver to it even when false
    node_selector: {key: value}           # nodes where the driver runs (empty: all)
    requires_hardware: false
    deploy: {mode: bundled|host|helm|manifests|preinstalled, ...mode-specific keys}
                                          # host: nri: true (the plugin is an NRI plugin: nodes serve NRI);
                                          # netdevs: {kind: ifb|veth, count: N} test interfaces per node
    deploy_alternatives: {helm: {chart: ..., values: ...}}   # optional: what ``--driver-deploy MODE`` uses
    binding_failure_device: gpu-3         # optional: a device name (in every pool) whose attach this deployment
                                          # makes fail: the driver sets its bindingFailureConditions (KEP-5007)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from conformance.core.errors import ConfigError
from conformance.core.profile_deploy import check_deploy

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
    },
    "manifests": {"dir", "namespace", "chart", "release", "values", "env_values", "images", "timeout_s"},
    "preinstalled": set(),
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
    "node_selector",
    "requires_hardware",
    "deploy",
    "notes",
    "version",
    "admin_access_signal",
    "deploy_alternatives",
    "binding_failure_device",
}
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
    # regex a container of an adminAccess claim shows (e.g. '^DRA_ADMIN_ACCESS=true$'); "" = no signal
    admin_access_signal: str = ""
    node_selector: Mapping[str, str] = dataclasses.field(default_factory=dict)
    requires_hardware: bool = False
    description: str = ""
    version: str = ""
    source: str = ""
    deploy_alternatives: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # a device name whose attach this deployment makes fail (bindingFailureConditions, KEP-5007); "" = none
    binding_failure_device: str = ""

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


def _req(raw: Mapping, key: str, typ: type | tuple, src: str, fix: str) -> Any:
    if key not in raw:
        raise ConfigError("is required", source=src, field=key, fix=fix)
    value = raw[key]
    if not isinstance(value, typ) or isinstance(value, bool) and typ is int:
        raise ConfigError(
            f"must be {getattr(typ, '__name__', typ)}, got {type(value).__name__} {value!r}",
            source=src,
            field=key,
            fix=fix,
        )
    return value


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
    (conformance.runner.registry.Registry.deploy_modes), accepted besides the shipped :data:`DEPLOY_KEYS`."""
    src = source
    if not isinstance(raw, Mapping):
        raise ConfigError(
            "a driver profile must be a YAML mapping", source=src, fix="see fixtures/drivers/reference.yaml"
        )
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown field(s) {unknown}", source=src, field=unknown[0], fix=f"use only {', '.join(sorted(TOP_KEYS))}"
        )
    name = _req(raw, "name", str, src, "name: my-driver")
    driver = _req(raw, "driver", str, src, "driver: gpu.example.com (the ResourceSlice spec.driver)")
    if not _DNS_SUBDOMAIN.match(driver) or len(driver) > 63:
        raise ConfigError(
            f"{driver!r} is not a DNS subdomain of at most 63 characters",
            source=src,
            field="driver",
            fix="e.g. gpu.example.com",
        )
    classes = _req(raw, "device_classes", list, src, "device_classes: [gpu.example.com]")
    if not classes or not all(isinstance(c, str) and _DNS_SUBDOMAIN.match(c) for c in classes):
        raise ConfigError(
            f"must be a non-empty list of DeviceClass names, got {classes!r}",
            source=src,
            field="device_classes",
            fix="device_classes: [gpu.example.com]",
        )
    attributes = _mapping(raw, "attributes", src)
    for attr, typ in attributes.items():
        if typ not in ATTRIBUTE_TYPES:
            raise ConfigError(
                f"type {typ!r} is not an attribute type",
                source=src,
                field=f"attributes.{attr}",
                fix=f"use one of {', '.join(ATTRIBUTE_TYPES)}",
            )
    per_node = raw.get("devices_per_node", 1)
    if not isinstance(per_node, int) or isinstance(per_node, bool) or per_node < 1:
        raise ConfigError(
            f"must be an integer ≥ 1, got {per_node!r}", source=src, field="devices_per_node", fix="devices_per_node: 2"
        )
    vis = _mapping(raw, "visibility", src)
    bad = sorted(set(vis) - {"command", "env_regex", "expected_output", "image", "device_attribute", "names_devices"})
    if bad:
        raise ConfigError(
            f"unknown field(s) {bad}",
            source=src,
            field=f"visibility.{bad[0]}",
            fix="use command, env_regex, expected_output, image, device_attribute, names_devices",
        )
    if not isinstance(vis.get("names_devices", True), bool):
        raise ConfigError(
            f"must be true or false, got {vis['names_devices']!r}",
            source=src,
            field="visibility.names_devices",
            fix="names_devices: false only when the probe output cannot name a device (it then proves visibility "
            "only); leave it out otherwise",
        )
    if vis.get("names_devices") is False and vis.get("device_attribute"):
        raise ConfigError(
            "names_devices: false contradicts device_attribute (the probe names devices by that attribute)",
            source=src,
            field="visibility.names_devices",
            fix="drop one of the two",
        )
    if not vis.get("env_regex") and not vis.get("expected_output"):
        raise ConfigError(
            "needs env_regex or expected_output",
            source=src,
            field="visibility",
            fix="e.g. visibility: {env_regex: '^GPU_DEVICE_[0-9]+='}",
        )
    for key in ("env_regex", "expected_output"):
        if vis.get(key):
            try:
                re.compile(vis[key])
            except re.error as exc:
                raise ConfigError(
                    f"invalid regex: {exc}",
                    source=src,
                    field=f"visibility.{key}",
                    fix="write a Python regular expression",
                ) from None
    caps = _mapping(raw, "capabilities", src)
    ext = caps.get("extended_resource_name", "") or ""
    flags = {}
    for key, value in caps.items():
        if key == "extended_resource_name":
            if not isinstance(value, (str, type(None))):
                raise ConfigError(
                    "must be a string", source=src, field=f"capabilities.{key}", fix="e.g. example.com/gpu"
                )
            continue
        if key not in BOOL_CAPABILITIES:
            raise ConfigError(
                f"unknown capability {key!r}",
                source=src,
                field=f"capabilities.{key}",
                fix=f"use {', '.join(BOOL_CAPABILITIES)}, extended_resource_name",
            )
        if not isinstance(value, bool):
            raise ConfigError(
                f"must be true or false, got {value!r}", source=src, field=f"capabilities.{key}", fix=f"{key}: true"
            )
        flags[key] = value
    modes = {**(extra_modes or {}), **DEPLOY_KEYS}
    deploy = _mapping(raw, "deploy", src)
    mode = check_deploy(deploy, deploy.get("mode", "preinstalled"), src, modes)
    alternatives = {}
    for alt_mode, alt in _mapping(raw, "deploy_alternatives", src).items():
        if not isinstance(alt, Mapping):
            raise ConfigError(
                "must be a mapping", source=src, field=f"deploy_alternatives.{alt_mode}", fix="e.g. {chart: path}"
            )
        check_deploy({**alt, "mode": alt_mode}, alt_mode, src, modes)
        alternatives[str(alt_mode)] = {**alt, "mode": alt_mode}
    opaque = _mapping(raw, "opaque_config", src)
    node_selector = _mapping(raw, "node_selector", src)
    return DriverProfile(
        name=name,
        driver=driver,
        device_classes=tuple(classes),
        visibility=Visibility(
            command=str(vis.get("command") or "env"),
            env_regex=str(vis.get("env_regex") or ""),
            expected_output=str(vis.get("expected_output") or ""),
            image=str(vis.get("image") or ""),
            device_attribute=str(vis.get("device_attribute") or ""),
            names_devices=vis.get("names_devices", True),
        ),
        deploy_mode=mode,
        deploy=dict(deploy),
        deploy_alternatives=alternatives,
        attributes=dict(attributes),
        devices_per_node=per_node,
        capabilities=flags,
        extended_resource_name=ext,
        opaque_parameters=dict(opaque.get("parameters") or {}),
        opaque_shows_as=str(opaque.get("shows_as") or ""),
        node_selector={str(k): str(v) for k, v in node_selector.items()},
        requires_hardware=bool(raw.get("requires_hardware", False)),
        description=str(raw.get("description") or ""),
        version=str(raw.get("version") or ""),
        admin_access_signal=_regex(raw, "admin_access_signal", src),
        binding_failure_device=_device_name(raw, "binding_failure_device", src),
        source=source,
    )
