"""A device check names WHICH devices (review 5 finding 1): a probe line that names no device fails the check,
unless the profile opts out with ``visibility.names_devices: false``, which proves visibility only and shows as
a waiver (capability ``driver.names_devices``). The shipped profiles name devices where the driver lets them:
NVIDIA by uuid (nvidia-smi -L, MIG lines over their parent GPU), mock NVML by device node, Intel by PCI address."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.core import profile as schema
from conformance.core.capabilities import evaluate
from conformance.core.errors import ConfigError
from conformance.core.objects import Obj
from conformance.core.profile import Visibility
from conformance.dra.inventory import Device
from conformance.drivers import profiles
from conformance.node.probe import Probe

POD = Obj({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})
GPUS = [f"gpu-{i}" for i in range(8)]
BASE = {"name": "x", "driver": "gpu.example.com", "device_classes": ["gpu.example.com"]}


def _ended(*lines: str, rc: int = 0) -> str:
    return "".join(line + "\n" for line in lines) + f"\nDRA_CONFORMANCE_PROBE_END rc={rc}\n"


def _k8s(*lines: str, rc: int = 0):
    return SimpleNamespace(logs=lambda pod, container=None, retry=True: _ended(*lines, rc=rc))


def _probe(vis: Visibility, *lines: str, inventory=None, driver: str = "gpu.example.com", rc: int = 0) -> Probe:
    prof = SimpleNamespace(visibility=vis, qualified=lambda a: a if "/" in a else f"{driver}/{a}")
    return Probe(_k8s(*lines, rc=rc), prof, None, inventory)


def test_a_line_naming_no_device_fails_with_what_was_expected_and_printed():
    """``NVIDIA_VISIBLE_DEVICES=all`` names no device: a driver leaking every GPU into the container must not
    pass "exactly gpu-3" (it did: the probe returned "only visibility is proven" as a pass)."""
    vis = Visibility(env_regex=r"^NVIDIA_VISIBLE_DEVICES=\S+$")
    ok, evidence = _probe(vis, "PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all").shows_devices(POD, ["gpu-3"], GPUS)
    assert not ok
    assert "expected ['gpu-3'], the probe shows no device" in evidence
    assert "naming no device of this node ['NVIDIA_VISIBLE_DEVICES=all']" in evidence
    assert "names_devices: false" in evidence and evidence.rstrip().endswith("NVIDIA_VISIBLE_DEVICES=all")


def test_names_devices_false_proves_visibility_only_and_says_so():
    """The opt-out passes on a hit (the upstream test driver's ``claim_<c>_<r>=true``) with evidence saying
    which device was not proven; a "shows no device" check still fails on a hit and a positive one on none."""
    vis = Visibility(env_regex=r"^claim_\w+=true$", names_devices=False)
    ok, evidence = _probe(vis, "claim_x_gpu=true").shows_devices(POD, ["gpu-0"], GPUS)
    assert ok and "names_devices: false: only visibility is proven, not which device" in evidence
    assert "expected ['gpu-0'], the probe shows ['claim_x_gpu=true']" in evidence
    assert not _probe(vis, "claim_x_gpu=true").shows_devices(POD, [], GPUS)
    assert not _probe(vis, "PATH=/bin").shows_devices(POD, ["gpu-0"], GPUS)
    assert _probe(vis, "PATH=/bin").shows_devices(POD, [], GPUS)


@pytest.mark.parametrize(
    "names_devices, extra, message",
    [
        ("no", {}, "must be true or false, got 'no'"),
        (False, {"device_attribute": "uuid"}, "contradicts device_attribute"),
    ],
)
def test_bad_names_devices_names_the_field_and_the_fix(names_devices, extra, message):
    vis = {"env_regex": "^X=", "names_devices": names_devices, **extra}
    with pytest.raises(ConfigError, match=message) as info:
        schema.parse({**BASE, "visibility": vis, "deploy": {"mode": "preinstalled"}}, source="p.yaml")
    assert info.value.field == "visibility.names_devices" and info.value.source == "p.yaml" and info.value.fix
    assert schema.parse({**BASE, "visibility": {"env_regex": "^X="}}).visibility.names_devices is True


def test_only_probes_that_cannot_name_a_device_opt_out_and_the_capability_says_so():
    opted = {n for n in profiles.available() if not profiles.load(n).visibility.names_devices}
    assert opted == {"k8s-test-driver", "amd-gpu", "dra-driver-cpu"}  # dra-driver-cpu: the env names a cpuset
    caps = evaluate({}, profiles.load("k8s-test-driver"))
    assert not caps.has("driver.names_devices")
    assert "declares visibility.names_devices: false" in caps.evidence("driver.names_devices")
    assert evaluate({}, profiles.load("reference")).has("driver.names_devices")


NVIDIA_NODE = [
    Device("n1", "n1", "gpu-0", {"gpu.nvidia.com/uuid": "GPU-0a0a0a0a-0000-0000-0000-000000000000"}, {}),
    Device("n1", "n1", "gpu-0-mig-19-0-1", {"gpu.nvidia.com/uuid": "MIG-1b1b1b1b-0000-0000-0000-000000000001"}, {}),
    Device("n1", "n1", "gpu-0-mig-19-1-1", {"gpu.nvidia.com/uuid": "MIG-2c2c2c2c-0000-0000-0000-000000000002"}, {}),
    Device("n1", "n1", "gpu-1", {"gpu.nvidia.com/uuid": "GPU-3d3d3d3d-0000-0000-0000-000000000003"}, {}),
]
SMI_GPU0 = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-0a0a0a0a-0000-0000-0000-000000000000)"
SMI_MIG0 = "  MIG 1g.5gb      Device  0: (UUID: MIG-1b1b1b1b-0000-0000-0000-000000000001)"
SMI_MIG1 = "  MIG 1g.5gb      Device  1: (UUID: MIG-2c2c2c2c-0000-0000-0000-000000000002)"
SMI_GPU1 = "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-3d3d3d3d-0000-0000-0000-000000000003)"


@pytest.mark.parametrize(
    "lines, device, ok",
    [
        ((SMI_GPU1,), "gpu-1", True),
        ((SMI_GPU0, SMI_MIG0), "gpu-0-mig-19-0-1", True),  # a MIG container lists its parent GPU too
        ((SMI_GPU0, SMI_MIG0, SMI_MIG1), "gpu-0-mig-19-0-1", False),  # given the whole parent GPU
        ((SMI_GPU0,), "gpu-1", False),  # the wrong GPU
        ((SMI_GPU0, SMI_GPU1), "gpu-1", False),  # every GPU
    ],
)
def test_nvidia_profile_names_gpus_and_mig_devices_by_uuid(lines, device, ok):
    inventory = SimpleNamespace(on_node=lambda node: NVIDIA_NODE)
    prof = profiles.load("nvidia-gpu")
    probe = Probe(_k8s(*lines), prof, None, inventory)
    shown = probe.shows_devices(POD, [device], [d.name for d in NVIDIA_NODE])
    assert bool(shown) is ok, shown.evidence
    assert "devices named by gpu.nvidia.com/uuid" in shown.evidence


def test_mock_nvml_profile_names_gpus_by_their_device_nodes():
    """The driver's CDI spec sets NVIDIA_VISIBLE_DEVICES=void, and mock NVML lists every GPU: the profile reads
    the injected /dev/nvidia<minor> nodes, which name gpu-<minor>."""
    prof = profiles.load("nvidia-gpu-mock-nvml")
    assert "NVIDIA_VISIBLE_DEVICES" not in prof.visibility.command

    def check(*lines):
        return Probe(_k8s(*lines), prof, None, None).shows_devices(POD, ["gpu-3"], GPUS)

    assert check("gpu-3 (/dev/nvidia3)")
    assert not check("gpu-0 (/dev/nvidia0)") and not check("gpu-3 (/dev/nvidia3)", "gpu-4 (/dev/nvidia4)")
    assert not check("NVIDIA_VISIBLE_DEVICES=void")


def test_intel_profile_names_gpus_by_pci_address():
    node = [
        Device("n1", "n1", "0000-03-00-0-0x56a0", {"resource.kubernetes.io/pciBusID": "0000:03:00.0"}, {}),
        Device("n1", "n1", "0000-04-00-0-0x56a0", {"resource.kubernetes.io/pciBusID": "0000:04:00.0"}, {}),
    ]
    prof = profiles.load("intel-gpu")
    inventory = SimpleNamespace(on_node=lambda n: node)

    def check(*lines):
        probe = Probe(_k8s(*lines), prof, None, inventory)
        return probe.shows_devices(POD, ["0000-04-00-0-0x56a0"], [d.name for d in node])

    assert check("renderD129 pci 0000:04:00.0")
    assert not check("renderD128 pci 0000:03:00.0") and not check("renderD128", "renderD129")
