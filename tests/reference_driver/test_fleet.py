"""Fleet mode: the pools it publishes per fake node (from the plugin's own slice code) and its flag checks."""

from __future__ import annotations

import pytest

from reference_driver import DRIVER_NAME, fleet


def test_each_node_gets_its_own_pool_owned_by_its_node():
    # given a fake node with 8 devices; when its slices are rendered
    objs = fleet.node_slices("kwok-3", "uid-3", DRIVER_NAME, 8)
    # then one slice, pool = node name, Node controller owner, 8 devices with the plugin's attributes
    assert len(objs) == 1
    spec = objs[0]["spec"]
    assert spec["nodeName"] == "kwok-3" and spec["pool"] == {"name": "kwok-3", "generation": 1, "resourceSliceCount": 1}
    assert objs[0]["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "kwok-3", "uid": "uid-3", "controller": True}
    ]
    assert [d["name"] for d in spec["devices"]] == [f"gpu-{i}" for i in range(8)]
    assert "resource.kubernetes.io/pcieRoot" in spec["devices"][0]["attributes"]


def test_more_than_128_devices_split_into_slices_of_one_pool():
    objs = fleet.node_slices("n", "u", DRIVER_NAME, 200)
    assert [len(o["spec"]["devices"]) for o in objs] == [128, 72]
    assert {o["spec"]["pool"]["resourceSliceCount"] for o in objs} == {2}


@pytest.mark.parametrize("argv", [["--devices", "0"], ["--devices", "2000"], ["--workers", "0"]])
def test_bad_flags_exit_2(argv, tmp_path, capsys):
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("x")
    with pytest.raises(SystemExit) as exit_:
        fleet.parse(["--kubeconfig", str(kubeconfig), *argv])
    assert exit_.value.code == 2 and "dra-reference-driver-fleet" in capsys.readouterr().err


def test_missing_kubeconfig_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        fleet.parse(["--kubeconfig", str(tmp_path / "nope")])
    assert "no such file" in capsys.readouterr().err
