"""The checks of ``dra-conformance preflight``: what a run on an existing cluster needs, read before it runs.

Each check returns :class:`Check` lines (``ok`` / ``missing`` / ``warn``, what it found, the fix). They read
the cluster the way the run does: RBAC through SelfSubjectAccessReviews of :data:`conformance.core.permissions.NEEDED`,
API discovery and kube-apiserver ``/metrics`` (conformance/k8s/discovery.py), the profile's DeviceClasses and the
driver's ResourceSlices (conformance/drivers/readiness.py, KEP-5970 "clear error" cases), the images the
existing provider picks (conformance/clusters/existing.py) against ``Node.status.images``, and Pod Security
admission / policy engines through a server-side dry-run (``dryRun=All``, KEP-576) of the privileged helper pods
(conformance/node/helper_pod.py). The only object created is the dry run's namespace, removed before returning.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections import Counter

from conformance import images as refs
from conformance.clusters import existing
from conformance.core import errors, names, permissions, timeouts
from conformance.core.markers import CAPABILITIES
from conformance.core.objects import Obj
from conformance.core.profile import DriverProfile
from conformance.dra.checks.slices import check_slices
from conformance.k8s import access, discovery, waits
from conformance.k8s.client import K8s
from conformance.node.helper_pod import helper_namespace, helper_pod

OK, MISSING, WARN = "ok", "missing", "warn"
GATES = tuple(sorted(n.split(".", 1)[1] for n in CAPABILITIES if n.startswith("gate.")))  # what the run reads
IMPORT_FIX = "make it pullable from the nodes, or load it: `dra-conformance images export` then `images import`"


@dataclasses.dataclass(frozen=True)
class Check:
    """One preflight line: ``check`` (what, e.g. ``rbac namespaces``), ``status`` (``ok``: the run has it;
    ``missing``: the run cannot work; ``warn``: it works with less), ``detail`` (what was found) and ``fix``
    (what to do; "" when ok)."""

    check: str
    status: str
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        """``{check, status, detail, fix}`` for ``-o json``."""
        return dataclasses.asdict(self)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (its type when empty)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def api_check(served: dict[str, list[str]]) -> Check:
    """``resource.k8s.io/v1`` served with ResourceClaims (``served``: :func:`discovery.served_versions`)."""
    versions = ", ".join(sorted(served)) or "none"
    if "resourceclaims" in served.get("v1", []):
        return Check("api resource.k8s.io/v1", OK, f"served (resource.k8s.io versions: {versions})")
    return Check(
        "api resource.k8s.io/v1",
        MISSING,
        f"not served (resource.k8s.io versions: {versions})",
        "Kubernetes >= 1.34 serves it by default; on older clusters enable --runtime-config=resource.k8s.io/v1",
    )


def rbac_checks(k8s: K8s, node_access: bool, served: dict[str, list[str]]) -> list[Check]:
    """One line per applicable row of :data:`permissions.NEEDED`: ``ok``, or the verbs denied and the
    ClusterRole rule that grants them (``warn`` for an optional row)."""
    plurals = {p for found in served.values() for p in found}
    rows = permissions.applicable(node_access, plurals)
    out = []
    for row, denied in access.denied_verbs(k8s, rows):
        name = f"rbac {row.subject}"
        if not denied:
            out.append(Check(name, OK, ", ".join(row.verbs)))
            continue
        where = "" if row.url else " (cluster-wide)" if row.cluster else " (in every namespace)"
        cannot = ", ".join(f"{verb} {row.subject}" for verb in denied)
        out.append(
            Check(
                name,
                WARN if row.when == permissions.OPTIONAL else MISSING,
                f"cannot {cannot}{where}: needed for {row.why}",
                f"add to the ClusterRole bound to the run's user the rule {json.dumps(row.rule(denied))}",
            )
        )
    return out


def gates_check(k8s: K8s) -> Check:
    """The feature gates the run reads (:data:`GATES`) as kube-apiserver's /metrics reports them."""
    gates, error = discovery.apiserver_feature_gates(k8s)
    if error:
        return Check(
            "feature gates",
            WARN,
            f"kube-apiserver /metrics not readable ({error}): the run cannot tell a gate that is off from an unknown",
            "grant `get` on the nonResourceURL /metrics, or state the gates with --cluster-feature-gates Name=true,..",
        )
    on = [g for g in GATES if gates.get(g)]
    off = [g for g in GATES if not gates.get(g)]
    detail = f"on: {', '.join(on) or 'none'}; off or not reported: {', '.join(off) or 'none'}"
    return Check("feature gates", OK, detail + (" (tests needing those skip with that evidence)" if off else ""))


def driver_checks(k8s: K8s, profile: DriverProfile) -> list[Check]:
    """The profile's DeviceClasses exist, and the driver's ResourceSlices are published (the nodes having them)."""
    out = []
    for name in profile.device_classes:
        if k8s.exists("DeviceClass", name):
            out.append(Check(f"deviceclass {name}", OK, "exists"))
        else:
            fix = "install the driver's DeviceClass, or correct device_classes in the profile"
            out.append(Check(f"deviceclass {name}", MISSING, f"does not exist (profile {profile.name})", fix))
    slices = discovery.driver_slices(k8s, profile.driver)
    nodes = sorted({s.get("spec.nodeName") or "(not node-local)" for s in slices})
    devices = len(discovery.devices_of(slices))
    if slices and devices:
        detail = f"{len(slices)} ResourceSlice(s), {devices} device(s) on: {', '.join(nodes)}"
        out.append(Check(f"resourceslices {profile.driver}", OK, detail))
        out += profile_vs_slices(slices, profile)
    else:
        out.append(
            Check(
                f"resourceslices {profile.driver}",
                MISSING,
                f"{len(slices)} ResourceSlice(s) with spec.driver={profile.driver}, {devices} device(s)",
                "install the driver and check its kubelet plugin pods publish slices "
                "(kubectl get resourceslices; the plugin's logs)",
            )
        )
    return out


def profile_vs_slices(slices: list[Obj], profile: DriverProfile) -> list[Check]:
    """What the profile says of the driver against what the driver publishes, as a run would judge it: the
    slice rules with the profile's attribute types (:func:`conformance.dra.checks.slices.check_slices`, the
    after-module invariants' check) and ``devices_per_node`` on every node that publishes. Two checks, each
    ``ok`` or ``missing`` naming the first violations; the fix says whether the profile or the driver is wrong."""
    violations = check_slices(slices, profile.driver, profile.attributes)
    if violations:
        shown = "; ".join(f"{v.rule}: {v.message}" for v in violations[:3])
        more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
        fix = "correct the profile's attributes (name: type as published), or the driver if it breaks a slice rule"
        rules = Check(
            f"profile {profile.name} vs slices", MISSING, f"{len(violations)} violation(s): {shown}{more}", fix
        )
    else:
        rules = Check(f"profile {profile.name} vs slices", OK, f"attributes {sorted(profile.attributes)} as declared")
    per_node = Counter(d["node"] or "(not node-local)" for d in discovery.devices_of(slices))
    few = {n: c for n, c in sorted(per_node.items()) if c < profile.devices_per_node}
    want = f"devices_per_node {profile.devices_per_node}"
    if few:
        seen = ", ".join(f"{n}: {c}" for n, c in few.items())
        fix = "set devices_per_node to the fewest devices a driver node publishes, or fix the driver's inventory"
        count = Check(f"profile {profile.name} {want}", MISSING, f"nodes publishing fewer: {seen}", fix)
    else:
        count = Check(f"profile {profile.name} {want}", OK, f"per node: {dict(sorted(per_node.items()))}")
    return [rules, count]


def images_wanted(nodes: list[Obj], profile: DriverProfile, node_access: bool) -> dict[str, str]:
    """``{use: image}`` a run would use on these nodes: the test pods' (the profile's visibility image, else
    the busybox the existing provider picks), and with ``node_access`` the helper pods' and their gRPC relay
    ("" when no node has the relay image: the node checks needing gRPC then skip)."""
    try:
        chosen = existing.choose_images(nodes)
    except refs.ImageError:  # the reference driver's chart is not installed: no relay image known
        chosen = {"busybox": existing.DEFAULT_IMAGES["busybox"], "grpc": ""}
    out = {"test pods": profile.visibility.image or chosen["busybox"]}
    if node_access:
        out.update({"helper pods": chosen["busybox"], "helper gRPC relay": chosen["grpc"]})
    return out


def image_checks(nodes: list[Obj], wanted: dict[str, str]) -> list[Check]:
    """Per image of ``wanted``: the nodes whose ``status.images`` lack it (they must pull it)."""
    held = {
        n.name: {refs.normalize(x) for i in n.get("status.images") or [] for x in i.get("names") or []} for n in nodes
    }
    out = []
    for use, image in wanted.items():
        if not image:
            detail = f"no node holds the reference-driver image ({_relay_ref()}): node checks that call gRPC skip"
            out.append(Check(f"image {use}", WARN, detail, IMPORT_FIX))
            continue
        lacking = sorted(n for n, have in held.items() if refs.normalize(image) not in have)
        if not lacking:
            out.append(Check(f"image {use}", OK, f"{image} present on every node ({len(held)})"))
        else:
            detail = (
                f"{image} not in Node.status.images of {', '.join(lacking)} (the kubelet lists at most 50 images by "
                "default): pulled at run time where absent, and the pods fail where the registry is unreachable"
            )
            out.append(Check(f"image {use}", WARN, detail, IMPORT_FIX))
    return out


def _images_of(node: Obj) -> set[str]:
    """The normalized image names a node holds (``status.images[].names``, digests left out)."""
    return {refs.normalize(x) for i in node.get("status.images") or [] for x in i.get("names") or [] if "@" not in x}


def _relay_ref() -> str:
    try:
        return refs.reference_driver_ref()
    except refs.ImageError:
        return "dra-reference-driver"


def admission_check(k8s: K8s, nodes: list[str], image: str, grpc_image: str = "") -> Check:
    """Whether the privileged helper pods would be admitted: creates a namespace labelled as the run labels its
    helper namespace, dry-runs (``dryRun=All``) one helper pod per node in it, deletes it and waits until it is
    gone (also on Ctrl-C). ``missing`` names the refusal (Pod Security admission, a policy engine's webhook)."""
    run_id = "preflight-" + secrets.token_hex(3)
    ns, name = names.dns_label(f"dra-{run_id}"), "admission privileged helper pods"
    fix = (
        "allow privileged pods (hostPID, hostPath /) in the run's helper namespace dra-node-access-<run id> "
        "(Pod Security admission, policy engines), or run with --node-access none"
    )
    try:
        created = k8s.create(helper_namespace(ns, run_id))
    except errors.ApiError as exc:
        return Check(
            name, MISSING, f"namespace {ns} (labelled pod-security privileged) refused: {first_line(exc)}", fix
        )
    try:
        waits.default_service_account(k8s, ns, timeout=timeouts.API_SHORT)
        refused: dict[str, list[str]] = {}  # rejection -> nodes
        for i, node in enumerate(nodes):
            pod = helper_pod(f"helper-{i}", ns, node, image, run_id, grpc_image)
            try:
                k8s.request("POST", f"/api/v1/namespaces/{ns}/pods", query={"dryRun": "All"}, body=pod)
            except errors.ApiError as exc:
                refused.setdefault(first_line(exc), []).append(node)
    finally:
        _remove(k8s, created)
    if refused:
        why = "; ".join(f"on {', '.join(n)}: {text}" for text, n in refused.items())
        return Check(name, MISSING, f"a dry-run create of the helper pod was refused {why}", fix)
    return Check(name, OK, f"a dry-run create of the helper pod was admitted for {len(nodes)} node(s)")


def _remove(k8s: K8s, namespace: Obj) -> None:
    """Delete the dry run's namespace and wait until it is gone (bounded)."""
    try:
        k8s.unguarded().delete("Namespace", namespace.name)
    except errors.NotFound:
        return
    waits.object_gone(k8s, namespace, timeout=timeouts.NAMESPACE_DELETE)
