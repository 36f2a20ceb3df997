"""Profile ``cdi_identity`` (conformance/core/profile_identity.py: parsed, checked, rendered) and the identity
check over CDI edits (conformance/node/cdi_identity.py), on real CDI spec shapes and the reference profile."""

from __future__ import annotations

import json

import pytest

from conformance.core import capabilities, profile, profile_identity
from conformance.core.errors import ConfigError
from conformance.dra.inventory import Device
from conformance.drivers.profiles import load
from conformance.node import cdi, cdi_identity

DRIVER = "gpu.example.com"
BASE = {
    "name": "p",
    "driver": DRIVER,
    "device_classes": [DRIVER],
    "attributes": {"index": "int", "uuid": "string", "resource.kubernetes.io/pciBusID": "string"},
    "visibility": {"command": "env", "env_regex": "^GPU="},
}
PATTERN = {"device_nodes": ["/dev/dri/card{index}"], "env": ["GPU_UUID={uuid}"], "mounts": ["/run/gpu/{device}"]}


def _device(i: int, pool: str = "node-a") -> Device:
    attrs = {f"{DRIVER}/index": i, f"{DRIVER}/uuid": f"GPU-{i}"}
    return Device(pool, pool, f"gpu-{i}", attrs, {})


def _edits(i: int, *, common: dict | None = None) -> dict[str, set[str]]:
    edits = {
        "env": [f"GPU_UUID=GPU-{i}", "OTHER=1"],
        "deviceNodes": [{"path": f"/dev/dri/card{i}"}, {"path": "/dev/dri/renderD128"}],
        "mounts": [{"hostPath": f"/var/gpu/{i}", "containerPath": f"/run/gpu/gpu-{i}", "options": ["ro"]}],
    }
    spec = {"cdiVersion": "0.6.0", "kind": f"{DRIVER}/gpu", "devices": [{"name": "d", "containerEdits": edits}]}
    if common:
        spec["containerEdits"] = common
    return cdi_identity.carried(cdi.device_edits({"s.json": json.dumps(spec)}).values())


def test_the_pattern_parses_and_renders_attributes_device_and_pool():
    parsed = profile.parse({**BASE, "cdi_identity": {**PATTERN, "env": ["BUS={resource.kubernetes.io/pciBusID}"]}})
    assert parsed.cdi_identity["device_nodes"] == ("/dev/dri/card{index}",)
    attrs = {f"{DRIVER}/index": 2, "resource.kubernetes.io/pciBusID": "0000:02:00.0"}
    assert profile_identity.render("BUS={resource.kubernetes.io/pciBusID}", DRIVER, "g", "p", attrs) == (
        "BUS=0000:02:00.0"
    )
    assert profile_identity.render("/x/{pool}/{device}{index}", DRIVER, "g", "p", attrs) == "/x/p/g2"
    assert profile.parse(BASE).cdi_identity == {}


@pytest.mark.parametrize(
    ("section", "field", "words"),
    [
        ({"env": ["X={serial}"]}, "cdi_identity.env[0]", "placeholder {serial}"),
        ({"env": ["{uuid}"]}, "cdi_identity.env[0]", "NAME=value"),
        ({"env": ["GPU=0"]}, "cdi_identity.env[0]", "no placeholder"),
        ({"device_nodes": ["dev/card{index}"]}, "cdi_identity.device_nodes[0]", "absolute"),
        ({"mounts": "/run/{uuid}"}, "cdi_identity.mounts", "list of strings"),
        ({"nodes": ["/dev/{index}"]}, "cdi_identity", "device_nodes, env, mounts, host_device_nodes"),
        ({"host_device_nodes": ["nvidia{index}"]}, "cdi_identity.host_device_nodes[0]", "absolute"),
        ({"env": []}, "cdi_identity", "gives no pattern"),
    ],
)
def test_a_bad_pattern_is_refused_naming_the_key(section, field, words):
    with pytest.raises(ConfigError) as err:
        profile.parse({**BASE, "cdi_identity": section}, source="p.yaml")
    assert err.value.field == field and words in str(err.value), err.value


def test_the_allocated_devices_own_edits_pass():
    found = _edits(1)
    assert cdi_identity.problems(PATTERN, DRIVER, _device(1), [_device(i) for i in range(3)], found) == []


def test_another_devices_node_or_uuid_is_named():
    found = _edits(2)  # the spec of gpu-2 handed to a claim holding gpu-1
    wrong = cdi_identity.problems(PATTERN, DRIVER, _device(1), [_device(i) for i in range(3)], found)
    assert wrong[:3] == [
        "device_nodes ['/dev/dri/card1'] of gpu-1 missing",
        "env ['GPU_UUID=GPU-1'] of gpu-1 missing",
        "mounts ['/run/gpu/gpu-1'] of gpu-1 missing",
    ]
    assert "env ['GPU_UUID=GPU-2'] of another device, gpu-2" in wrong


def _swapped_host(i: int, host: str) -> dict[str, set[str]]:
    """The edits of gpu-``i`` with its node's container path right and ``host`` behind it."""
    spec = {
        "cdiVersion": "0.6.0",
        "kind": f"{DRIVER}/gpu",
        "devices": [
            {
                "name": "d",
                "containerEdits": {
                    "env": [f"GPU_UUID=GPU-{i}"],
                    "deviceNodes": [{"path": f"/dev/dri/card{i}", "hostPath": host}],
                },
            }
        ],
    }
    return cdi_identity.carried(cdi.device_edits({"s.json": json.dumps(spec)}).values())


def test_the_right_node_name_with_another_devices_node_behind_it_is_named():
    """Breaker s12 F1: path /dev/dri/card0 backed by the host's /dev/dri/card1 is card1's device. Without
    host_device_nodes the host side is compared with the other devices' paths (CDI: hostPath defaults to path) but
    not required: a driver installed under a driver root backs it by its own node elsewhere (breaker s13 B4)."""
    pattern = {"device_nodes": ["/dev/dri/card{index}"], "env": ["GPU_UUID={uuid}"]}
    devices = [_device(i) for i in range(2)]
    wrong = cdi_identity.problems(pattern, DRIVER, _device(0), devices, _swapped_host(0, "/dev/dri/card1"))
    assert wrong == ["host_device_nodes ['/dev/dri/card1'] of another device, gpu-1"]
    assert cdi_identity.problems(pattern, DRIVER, _device(0), devices, _swapped_host(0, "/dev/dri/card0")) == []
    rooted = _swapped_host(0, "/run/nvidia/driver/dev/dri/card0")
    assert cdi_identity.problems(pattern, DRIVER, _device(0), devices, rooted) == []


def test_a_host_pattern_names_the_node_behind_a_remapped_path():
    """``host_device_nodes`` for a driver that backs its container paths by other host nodes (the reference
    driver: /dev/dra-<device> backed by /dev/<hostDeviceNode>)."""
    pattern = {"device_nodes": ["/dev/dri/card{index}"], "host_device_nodes": ["/dev/host{index}"]}
    devices = [_device(i) for i in range(3)]
    assert cdi_identity.problems(pattern, DRIVER, _device(2), devices, _swapped_host(2, "/dev/host2")) == []
    assert cdi_identity.problems(pattern, DRIVER, _device(2), devices, _swapped_host(2, "/dev/host0")) == [
        "host_device_nodes ['/dev/host2'] of gpu-2 missing",
        "host_device_nodes ['/dev/host0'] of another device, gpu-0",
    ]


def test_a_spec_wide_edit_listing_every_device_is_named():
    common = {"env": [f"GPU_UUID=GPU-{i}" for i in range(3)]}
    wrong = cdi_identity.problems(PATTERN, DRIVER, _device(1), [_device(i) for i in range(3)], _edits(1, common=common))
    assert wrong == [
        "env ['GPU_UUID=GPU-0'] of another device, gpu-0",
        "env ['GPU_UUID=GPU-2'] of another device, gpu-2",
    ]


def test_an_entry_rendered_alike_for_two_devices_counts_as_the_allocated_ones():
    pattern = {"device_nodes": ["/dev/dri/card{index}"]}
    parent_part = Device("n", "n", "gpu-1-part-0", {f"{DRIVER}/index": 1}, {})
    assert cdi_identity.problems(pattern, DRIVER, _device(1), [_device(1), parent_part], _edits(1)) == []


def test_the_allocated_device_without_the_patterns_attribute_raises():
    bare = Device("n", "n", "gpu-9", {}, {})
    with pytest.raises(LookupError, match="publishes no attribute gpu.example.com/uuid"):
        cdi_identity.problems({"env": ["GPU_UUID={uuid}"]}, DRIVER, bare, [], _edits(1))


def test_the_capability_is_off_without_a_pattern_or_under_cdi_false_and_the_reference_has_one():
    ref = load("reference")
    assert ref.cdi_identity == {
        "env": ("DRA_GPU_GPU_{index}_UUID={uuid}",),
        "device_nodes": ("/dev/dra-{device}",),
        "host_device_nodes": ("/dev/{hostDeviceNode}",),
    }
    assert profile_identity.availability("cdi_identity", ref, "r")[0]
    assert not profile_identity.availability("cdi_identity", profile.parse(BASE), "p")[0]
    no_cdi = profile.parse({**BASE, "cdi_identity": PATTERN, "capabilities": {"cdi": False}})
    assert profile_identity.availability("cdi_identity", no_cdi, "p") == (
        False,
        "p declares cdi: false (no CDI spec to judge)",
    )
    assert "driver.cdi_identity" in capabilities.CAPABILITIES


def test_consumed_capacity_signal_needs_value_and_gates_its_capability():
    parsed = profile.parse({**BASE, "consumed_capacity_signal": "^LIMIT={value}$"})
    assert parsed.consumed_capacity_signal == "^LIMIT={value}$"
    for bad in ("^LIMIT=1Gi$", "^(LIMIT={value}$"):
        with pytest.raises(ConfigError) as err:
            profile.parse({**BASE, "consumed_capacity_signal": bad}, source="p.yaml")
        assert err.value.field == "consumed_capacity_signal", err.value
    facts = {"served_versions": {"v1": []}, "feature_gates": {}, "devices": [], "k8s_version": "v1.34.4"}
    items = capabilities.evaluate(facts, profile.parse(BASE)).items
    assert not items["driver.consumed_capacity_signal"].available
    assert "names no consumed_capacity_signal" in items["driver.consumed_capacity_signal"].evidence
    assert not items["driver.cdi_identity"].available
    assert "gives no cdi_identity pattern" in items["driver.cdi_identity"].evidence
    with_pattern = capabilities.evaluate(facts, profile.parse({**BASE, "cdi_identity": PATTERN})).items
    assert with_pattern["driver.cdi_identity"].available and with_pattern["driver.cdi_identity"].declared


class _Access:
    """A fake node access: one node's CDI specs and a PodResources entry, or no PodResources (``unreadable``)."""

    mode = "kind"

    def __init__(self, specs: dict[str, str], dynamic: list[dict] | None, unreadable: str = ""):
        self.specs, self.dynamic, self.unreadable = specs, dynamic, unreadable

    def cdi_specs(self, node: str) -> dict[str, str]:
        return self.specs

    def pod_resources(self, node: str):
        from conformance.node.base import NodeAccessUnavailable  # noqa: PLC0415

        if self.unreadable:
            raise NodeAccessUnavailable(self.unreadable)
        return self

    def dynamic_resources(self, pod: str, namespace: str) -> dict[str, list[dict]]:
        return {"ctr": self.dynamic or []}


def _claim_and_pod():
    from conformance.core.objects import Obj  # noqa: PLC0415

    claim = Obj({"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns", "uid": "uid-1"}})
    pod = Obj({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "node-a"}})
    return claim, pod


def _spec(name: str, i: int) -> str:
    edits = {"env": [f"GPU_UUID=GPU-{i}"]}
    return json.dumps(
        {"cdiVersion": "0.6.0", "kind": f"{DRIVER}/gpu", "devices": [{"name": name, "containerEdits": edits}]}
    )


def test_claim_edits_are_those_of_the_ids_podresources_reports():
    """The IDs the driver answered (PodResources) pick the edits, whatever the claim's own spec says: a
    driver-wide spec's device injecting GPU-0 is judged, not the per-claim decoy naming GPU-3."""
    claim, pod = _claim_and_pod()
    specs = {"claim-uid-1.json": _spec("decoy", 3), "driver.json": _spec("all", 0)}
    reported = [
        {"claimName": "c", "claimNamespace": "ns", "claimResources": [{"cdiDevices": [{"name": f"{DRIVER}/gpu=all"}]}]}
    ]
    found, source = cdi_identity.claim_edits(_Access(specs, reported), pod, claim)
    assert found["env"] == {"GPU_UUID=GPU-0"} and "PodResources reports" in source


def test_claim_edits_without_podresources_refuse_the_weaker_spec_file_check():
    """Where node access cannot read PodResources, the claim's own spec files are not judged instead (a decoy
    would pass): PodResourcesUnread names the access mode, the node and why, and PREP-12 skips with it."""
    claim, pod = _claim_and_pod()
    access = _Access({"claim-uid-1.json": _spec("decoy", 3)}, None, unreadable="kind node root not reachable")
    with pytest.raises(cdi_identity.PodResourcesUnread, match="'kind'.*PodResources on node node-a.*not reachable"):
        cdi_identity.claim_edits(access, pod, claim)


def test_the_path_listing_runs_in_sh_and_judges_what_the_container_holds(tmp_path):
    """Inside the container (issue 24 §3): the listing of a device's nodes and mounts, run by a real sh over real
    paths, reports the device's own paths present and another device's absent; a path of its own missing, one of
    another device present, or a listing that never ran (no line for a path) is a problem, never a pass."""
    import subprocess  # noqa: PLC0415

    pattern = {"device_nodes": [f"{tmp_path}/dev/card{{index}}"], "mounts": [f"{tmp_path}/gpu/{{device}}"]}
    listing = cdi_identity.path_listing(pattern, DRIVER, _device(1), [_device(0), _device(1), _device(2)])
    assert listing.own == {f"{tmp_path}/dev/card1", f"{tmp_path}/gpu/gpu-1"}
    assert listing.theirs[f"{tmp_path}/dev/card0"] == "gpu-0" and listing.theirs[f"{tmp_path}/gpu/gpu-2"] == "gpu-2"
    for folder, name in (("dev", "card1"), ("gpu", "gpu-1")):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).touch()

    def run() -> str:
        return subprocess.run(["sh", "-c", listing.script], capture_output=True, text=True, check=True).stdout

    assert listing.problems(run()) == []
    (tmp_path / "dev" / "card1").unlink()  # the runtime never injected the device's node
    (tmp_path / "dev" / "card2").touch()  # and another device's is there
    assert listing.problems(run()) == [
        f"{tmp_path}/dev/card1 of gpu-1 is not in the container",
        f"{tmp_path}/dev/card2 of another device, gpu-2, is in the container",
    ]
    assert "did the probe's listing run" in listing.problems("")[0]
    empty = cdi_identity.path_listing({"env": ["GPU_UUID={uuid}"]}, DRIVER, _device(1), [_device(0)])
    assert empty.script == "" and empty.problems("") == []


def test_the_reference_profile_names_each_devices_node():
    """The reference driver injects ``/dev/dra-<device>`` per device (backed by /dev/null): its profile's
    pattern names it, so PREP-12 lists it inside the container."""
    prof = load("reference")
    listing = cdi_identity.path_listing(prof.cdi_identity, prof.driver, _device(3), [_device(0), _device(3)])
    assert listing.own == {"/dev/dra-gpu-3"} and listing.theirs == {"/dev/dra-gpu-0": "gpu-0"}


def test_host_nodes_rendered_alike_for_devices_that_are_not_partitions_of_one_parent_fail():
    """Breaker s13 B3: a driver that backs every device by one host node and says so in its ``hostDeviceNode``
    attribute (or the reference driver's backing wrapping past 8 GPUs) cannot be told apart by PREP-12: the claim
    is judged wrong, naming both devices; partitions sharing their parent's counter set may share its node."""
    pattern = {"device_nodes": ["/dev/dri/card{index}"], "host_device_nodes": ["/dev/{hostDeviceNode}"]}

    def dev(i: int, host: str, consumes: tuple = ()) -> Device:
        attrs = {f"{DRIVER}/index": i, f"{DRIVER}/uuid": f"GPU-{i}", f"{DRIVER}/hostDeviceNode": host}
        return Device("node-a", "node-a", f"gpu-{i}", attrs, {}, consumes=consumes)

    same = [dev(i, "nvidia0") for i in range(4)]
    wrong = cdi_identity.problems(pattern, DRIVER, same[2], same, _swapped_host(2, "/dev/nvidia0"))
    assert len(wrong) == 3 and wrong[0].startswith("host_device_nodes cannot tell gpu-2 from gpu-0: both render"), wrong
    wrapped = [dev(i, ["null", "zero", "full", "urandom"][i % 4]) for i in range(8)]
    wrong = cdi_identity.problems(pattern, DRIVER, wrapped[4], wrapped, _swapped_host(4, "/dev/null"))
    assert wrong == [wrong[0]] and "cannot tell gpu-4 from gpu-0" in wrong[0], wrong
    counters = (("gpu-0-counters", "memory", "1Gi"),)
    parts = [dev(0, "nvidia0", counters), dev(1, "nvidia0", counters)]  # partitions of one parent
    assert cdi_identity.problems(pattern, DRIVER, parts[1], parts, _swapped_host(1, "/dev/nvidia0")) == []
