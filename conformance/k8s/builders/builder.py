"""The per-test :class:`Builder`: renders complete objects with derived names, run/test labels, the test's
namespace, the driver's DeviceClass and the requested API version (v1 unless a test asks).

Source of the shapes: resource.k8s.io/v1 (KEP-4381), upstream test/e2e/dra builders (``b.claim()``,
``b.podExternal()``...).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.core import names, probe_marker
from conformance.core.objects import Obj
from conformance.k8s.builders import parts
from conformance.k8s.builders.versions import render

POD_CLAIM_PREFIX = "c"
_SHORT = {"ResourceClaim": "claim", "ResourceClaimTemplate": "template", "Pod": "pod"}


@dataclasses.dataclass
class BuilderContext:
    """What a Builder binds: ``namespace``, ``run_id``, ``test_id``, ``driver`` (name), ``device_class``,
    ``image`` (busybox-like, has ``sh``), ``probe_command`` (shell text printing what proves device visibility,
    e.g. ``env``), ``api_version`` (default version for DRA kinds), ``taint_rule_version``, ``shard_selector``
    (a CEL expression added to every request and subrequest of the claims built: the test's device shard
    under a parallel run, :mod:`conformance.runner.parallel`; "" for none)."""

    namespace: str
    run_id: str
    test_id: str
    driver: str
    device_class: str
    image: str = "busybox:1.36"
    probe_command: str = "env"
    api_version: str = "v1"
    taint_rule_version: str = "v1"
    shard_selector: str = ""


class Builder:
    """Factory of complete objects for one test. Every method returns an :class:`Obj` ready for
    ``tracker.create``; nothing touches the API."""

    def __init__(self, ctx: BuilderContext) -> None:
        self.ctx = ctx
        self.namer = names.Namer(ctx.test_id)

    def in_namespace(self, namespace: str) -> Builder:
        """A Builder for another namespace (e.g. the ``admin_namespace``), sharing this one's name counter."""
        other = Builder(dataclasses.replace(self.ctx, namespace=namespace))
        other.namer = self.namer
        return other

    # -- common ---------------------------------------------------------------------------------------
    def labels(self) -> dict[str, str]:
        """The run and test labels every object carries."""
        return names.run_labels(self.ctx.run_id, self.ctx.test_id)

    def _meta(self, kind: str, name: str | None, namespaced: bool, labels: Mapping[str, str] | None) -> dict:
        meta: dict[str, Any] = {
            "name": name or self.namer.next(_SHORT.get(kind, kind.lower())),
            "labels": {**self.labels(), **(labels or {})},
        }
        if namespaced:
            meta["namespace"] = self.ctx.namespace
        return meta

    def _dra(
        self,
        kind: str,
        spec: dict,
        *,
        name: str | None,
        namespaced: bool,
        version: str | None,
        labels: Mapping[str, str] | None = None,
    ) -> Obj:
        obj = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": kind,
            "metadata": self._meta(kind, name, namespaced, labels),
            "spec": spec,
        }
        return Obj(render(obj, version or self.ctx.api_version))

    def _fill_request(self, req: dict) -> dict:
        req = copy.deepcopy(req)
        for spec in [req.get("exactly")] + list(req.get("firstAvailable") or []):
            if spec is not None and not spec.get("deviceClassName"):
                spec["deviceClassName"] = self.ctx.device_class
            if spec is not None and self.ctx.shard_selector:
                spec["selectors"] = list(spec.get("selectors") or []) + parts.cel_selectors(self.ctx.shard_selector)
        return req

    def _claim_spec(
        self, requests, count, selectors, allocation_mode, admin_access, constraints, config, device_class
    ) -> dict:
        if requests is None:
            requests = [
                parts.request(
                    device_class=device_class,
                    count=count,
                    selectors=selectors,
                    allocation_mode=allocation_mode,
                    admin_access=admin_access,
                )
            ]
        devices: dict[str, Any] = {"requests": [self._fill_request(r) for r in requests]}
        if constraints:
            devices["constraints"] = list(constraints)
        if config:
            cfgs = copy.deepcopy(list(config))
            for cfg in cfgs:
                if cfg.get("opaque") and not cfg["opaque"].get("driver"):
                    cfg["opaque"]["driver"] = self.ctx.driver
            devices["config"] = cfgs
        return {"devices": devices}

    # -- DRA objects ----------------------------------------------------------------------------------
    def claim(
        self,
        *,
        requests: Iterable[dict] | None = None,
        count: int | None = None,
        selectors: Iterable[str] | str | None = None,
        allocation_mode: str | None = None,
        admin_access: bool | None = None,
        constraints: Iterable[dict] = (),
        config: Iterable[dict] = (),
        device_class: str | None = None,
        name: str | None = None,
        version: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Obj:
        """A ResourceClaim. Without ``requests``: one request ``device`` for ``count`` (default 1) devices of
        the test's DeviceClass with ``selectors``/``allocation_mode``/``admin_access``; otherwise the given
        :func:`~.parts.request`/:func:`~.parts.first_available` requests (class filled in)."""
        spec = self._claim_spec(
            requests, count, selectors, allocation_mode, admin_access, constraints, config, device_class
        )
        return self._dra("ResourceClaim", spec, name=name, namespaced=True, version=version, labels=labels)

    def claim_template(
        self,
        *,
        requests: Iterable[dict] | None = None,
        count: int | None = None,
        selectors: Iterable[str] | str | None = None,
        allocation_mode: str | None = None,
        admin_access: bool | None = None,
        constraints: Iterable[dict] = (),
        config: Iterable[dict] = (),
        device_class: str | None = None,
        name: str | None = None,
        version: str | None = None,
    ) -> Obj:
        """A ResourceClaimTemplate whose claim spec is what :meth:`claim` would build."""
        spec = {
            "spec": self._claim_spec(
                requests, count, selectors, allocation_mode, admin_access, constraints, config, device_class
            )
        }
        return self._dra("ResourceClaimTemplate", spec, name=name, namespaced=True, version=version)

    def device_class(
        self,
        *,
        selectors: Iterable[str] | str | None = None,
        config: Iterable[dict] = (),
        extended_resource_name: str | None = None,
        driver: str | None = None,
        name: str | None = None,
        version: str | None = None,
    ) -> Obj:
        """A DeviceClass selecting ``device.driver == <driver>`` plus ``selectors``; ``config``: opaque
        configs (driver filled in); name derived from run and test IDs."""
        drv = driver or self.ctx.driver
        extra = [selectors] if isinstance(selectors, str) else list(selectors or [])
        spec: dict[str, Any] = {"selectors": parts.cel_selectors([f'device.driver == "{drv}"'] + extra)}
        if config:
            cfgs = copy.deepcopy(list(config))
            for cfg in cfgs:
                cfg.pop("requests", None)
                if cfg.get("opaque") and not cfg["opaque"].get("driver"):
                    cfg["opaque"]["driver"] = drv
            spec["config"] = cfgs
        if extended_resource_name:
            spec["extendedResourceName"] = extended_resource_name
        return self._dra(
            "DeviceClass", spec, name=name or self._cluster_name("class"), namespaced=False, version=version
        )

    def extended_resource_class(self, *, domain: str = "dra-conformance.test") -> Obj:
        """A DeviceClass for the driver's devices that maps the extended resource ``<domain>/<class name>``
        (``spec.extendedResourceName``, KEP-5004): unique per test, so no other class serves that name."""
        name = self._cluster_name("class")
        return self.device_class(name=name, extended_resource_name=f"{domain}/{name}")

    def resource_slice(
        self,
        devices: Iterable[dict],
        *,
        node: str | None = None,
        all_nodes: bool = False,
        pool: str | None = None,
        driver: str | None = None,
        generation: int = 1,
        slice_count: int = 1,
        name: str | None = None,
        version: str | None = None,
    ) -> Obj:
        """A test-made ResourceSlice for ``driver`` (default: a per-test driver name, never the real one) on
        ``node`` or ``all_nodes``; ``devices`` from :func:`~.parts.device`."""
        drv = driver or self.test_driver_name()
        spec: dict[str, Any] = {
            "driver": drv,
            "pool": {
                "name": pool or (node or self.ctx.test_id),
                "generation": generation,
                "resourceSliceCount": slice_count,
            },
            "devices": list(devices),
        }
        if node:
            spec["nodeName"] = node
        else:
            spec["allNodes"] = True
        return self._dra(
            "ResourceSlice", spec, name=name or self._cluster_name("slice"), namespaced=False, version=version
        )

    def device_taint_rule(
        self,
        *,
        key: str,
        effect: str = "NoSchedule",
        value: str | None = None,
        driver: str | None = None,
        pool: str | None = None,
        device: str | None = None,
        name: str | None = None,
        version: str | None = None,
    ) -> Obj:
        """A DeviceTaintRule tainting devices of ``driver``/``pool``/``device`` (KEP-5055), rendered in the
        version the cluster serves for DeviceTaintRule unless ``version`` is given."""
        selector = {k: v for k, v in {"driver": driver or self.ctx.driver, "pool": pool, "device": device}.items() if v}
        taint: dict[str, Any] = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        spec = {"deviceSelector": selector, "taint": taint}
        return self._dra(
            "DeviceTaintRule",
            spec,
            name=name or self._cluster_name("taint"),
            namespaced=False,
            version=version or self.ctx.taint_rule_version,
        )

    # -- pods ----------------------------------------------------------------------------------------
    def pod(
        self,
        *,
        uses: Any = None,
        containers: Iterable[dict] | None = None,
        init_containers: Iterable[dict] = (),
        command: list[str] | None = None,
        node_name: str | None = None,
        restart_policy: str = "Never",
        extended_resources: Mapping[str, str] | None = None,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        bypass_scheduler: bool = False,
        unreferenced: Iterable[Obj] = (),
        claim_entries_named_as_objects: bool = False,
    ) -> Obj:
        """A Pod. ``uses``: a claim/template Obj, a ``(obj, request)`` pair, or a list of those, referenced by
        one default container that runs the profile's probe then sleeps. ``containers``: explicit
        :func:`~.parts.container` specs instead. Pod claim names are ``c0``, ``c1``... in order of first use;
        ``extended_resources``: container limits such as ``{"deviceclass.resource.kubernetes.io/x": "1"}``.
        ``node_name``: a node selector, or with ``bypass_scheduler`` ``spec.nodeName`` (the scheduler never sees
        the pod). ``unreferenced``: claims/templates listed in ``spec.resourceClaims`` that no container
        references (KEP-4381: still prepared). ``restart_policy``: ``Never`` | ``OnFailure`` | ``Always``.
        ``claim_entries_named_as_objects``: name each ``spec.resourceClaims`` entry after its claim/template object
        instead of ``c0``...: kubelets before 1.35 report device health (KEP-4680) only for entries named like
        their ResourceClaim (kubernetes/kubernetes#134875)."""
        entry_names = "object" if claim_entries_named_as_objects else POD_CLAIM_PREFIX
        if containers is None:
            uses_list = [] if uses is None else (uses if isinstance(uses, list) else [uses])
            containers = [parts.container("ctr", uses=uses_list, command=command)]
        pod_claims: dict[str, dict] = {}
        rendered_init = [self._container(c, pod_claims, extended_resources, entry_names) for c in init_containers]
        rendered = [self._container(c, pod_claims, extended_resources, entry_names) for c in containers]
        for obj in unreferenced:
            self._pod_claim(obj, pod_claims, entry_names)
        spec: dict[str, Any] = {
            "restartPolicy": restart_policy,
            "containers": rendered,
            "terminationGracePeriodSeconds": 5,
        }
        if rendered_init:
            spec["initContainers"] = rendered_init
        if pod_claims:
            spec["resourceClaims"] = list(pod_claims.values())
        if node_name and bypass_scheduler:
            spec["nodeName"] = node_name
        elif node_name:
            spec["nodeSelector"] = {"kubernetes.io/hostname": node_name}
        return Obj({"apiVersion": "v1", "kind": "Pod", "metadata": self._meta("Pod", name, True, labels), "spec": spec})

    def probe_pod_command(self, then_sleep: bool = True, then: str = "") -> list[str]:
        """``sh -c '(<probe>); echo DRA_CONFORMANCE_PROBE_END rc=$?; exec sleep ...'``: the default command of
        a container, whose end marker proves the probe ran (:mod:`conformance.core.probe_marker`); with
        ``then_sleep=False`` it exits with the probe's status instead of sleeping. ``then``: sh lines run after
        the probe, before the marker (e.g. a path listing); the marker keeps the probe's exit status."""
        command = self.ctx.probe_command
        if then:
            command = f"{command}\nprobe_rc=$?\n{then}\nexit $probe_rc"
        return ["sh", "-c", probe_marker.script(command, then_sleep)]

    @staticmethod
    def _pod_claim(obj: Obj, pod_claims: dict[str, dict], entry_names: str = POD_CLAIM_PREFIX) -> str:
        """The pod claim name of ``obj`` (a claim or template), added to ``pod_claims`` on first use: the
        object's name when ``entry_names`` is ``"object"``, else ``<entry_names><n>``."""
        key = f"{obj.kind}/{obj.name}"
        if key not in pod_claims:
            field = "resourceClaimTemplateName" if obj.kind == "ResourceClaimTemplate" else "resourceClaimName"
            name = obj.name if entry_names == "object" else f"{entry_names}{len(pod_claims)}"
            pod_claims[key] = {"name": name, field: obj.name}
        return pod_claims[key]["name"]

    def _container(
        self,
        spec: dict,
        pod_claims: dict[str, dict],
        extended: Mapping[str, str] | None,
        entry_names: str = POD_CLAIM_PREFIX,
    ) -> dict:
        claims = []
        for use in spec.get("_uses", []):
            obj, req = use if isinstance(use, tuple) else (use, None)
            ref = {"name": self._pod_claim(obj, pod_claims, entry_names)}
            if req:
                ref["request"] = req
            claims.append(ref)
        out: dict[str, Any] = {
            "name": spec["name"],
            "image": spec.get("image") or self.ctx.image,
            "command": spec.get("command") or self.probe_pod_command(),
        }
        if spec.get("env"):
            out["env"] = [{"name": k, "value": v} for k, v in spec["env"].items()]
        if spec.get("restartPolicy"):
            out["restartPolicy"] = spec["restartPolicy"]
        resources: dict[str, Any] = {}
        if claims:
            resources["claims"] = claims
        if extended:
            resources["limits"] = dict(extended)
            resources["requests"] = dict(extended)
        if resources:
            out["resources"] = resources
        return out

    # -- names ---------------------------------------------------------------------------------------
    def _cluster_name(self, kind: str) -> str:
        return names.dns_label(f"{self.ctx.run_id}-{self.namer.next(kind)}")

    def test_driver_name(self) -> str:
        """A driver name owned by this test, for test-made slices (``<hash>.slices.dra-conformance.test``)."""
        return f"{names.dns_label(self.ctx.test_id, 30)}.slices.dra-conformance.test"
