"""Message classes of our .proto files, loaded into a private descriptor pool.

The kubelet fixes the proto package names (``pluginregistration``, ``k8s.io.kubelet.pkg.apis.dra.v1``...).
Importing generated ``*_pb2`` modules registers those symbols in protobuf's process-wide default pool, and
a second set of stubs for the same packages (e.g. a test client elsewhere in the same process) would then
fail with "duplicate symbol". So we read the serialized FileDescriptorProto out of the generated module's
source (``python -m conformance.protos`` produces it) and build classes in a pool of our own.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from types import SimpleNamespace

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.internal import enum_type_wrapper

PROTO_DIR = Path(__file__).with_name("proto")


class StubsMissingError(RuntimeError):
    """Generated stubs are missing; the message says how to generate them."""


def _serialized_descriptor(stem: str) -> bytes:
    path = PROTO_DIR / f"{stem}_pb2.py"
    try:
        tree = ast.parse(path.read_text())
    except FileNotFoundError:
        raise StubsMissingError(
            f"{path} is missing: generate the stubs with `python -m conformance_lab.toolchain "
            f"protos` (or grpc_tools.protoc on {stem}.proto)"
        ) from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            return ast.literal_eval(node.args[0])
    raise StubsMissingError(f"{path}: no serialized descriptor found; regenerate the stubs")


@functools.cache
def load(stem: str) -> SimpleNamespace:
    """Message classes and enums of ``proto/<stem>.proto`` as attributes, plus ``SERVICE`` (full service name) and
    ``PACKAGE``. Raises StubsMissingError when the generated module is absent."""
    pool = descriptor_pool.DescriptorPool()
    fd = pool.AddSerializedFile(_serialized_descriptor(stem))
    ns = SimpleNamespace(PACKAGE=fd.package)
    for name, desc in fd.message_types_by_name.items():
        setattr(ns, name, message_factory.GetMessageClass(desc))
    for name, desc in fd.enum_types_by_name.items():
        setattr(ns, name, enum_type_wrapper.EnumTypeWrapper(desc))
    services = list(fd.services_by_name.values())
    ns.SERVICE = services[0].full_name if services else None
    return ns


def registration():
    """Messages of the plugin registration API (package ``pluginregistration``)."""
    return load("refdrv_pluginregistration_v1")


def dra_v1():
    """Messages of DRA gRPC v1 (``k8s.io.kubelet.pkg.apis.dra.v1``)."""
    return load("refdrv_dra_v1")


def dra_v1beta1():
    """Messages of DRA gRPC v1beta1 (``k8s.io.kubelet.pkg.apis.dra.v1beta1``)."""
    return load("refdrv_dra_v1beta1")


def health_v1alpha1():
    """Messages of the DRA health service v1alpha1 (package ``v1alpha1``)."""
    return load("refdrv_drahealth_v1alpha1")


def health_v1():
    """Messages of the DRA health service v1 (package ``v1``)."""
    return load("refdrv_drahealth_v1")
