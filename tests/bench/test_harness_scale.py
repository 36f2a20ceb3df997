"""``make harness-scale`` without a cluster: the run's objects all carry the run label (what the sweep finds),
the mirrored slices can be owned by their fake Node, and the table states the growth per phase."""

from __future__ import annotations

from conformance_tools.bench import harness_scale, mirror

from conformance.core import names

DRIVER = "gpu.example.com"


def test_every_run_object_and_generated_claim_carries_the_run_label():
    objects = harness_scale.run_objects("hs100-1", DRIVER, 3, "pause")
    labels = names.run_labels("hs100-1")
    assert [o["kind"] for o in objects] == ["Namespace", "DeviceClass", "ResourceClaimTemplate", "Pod", "Pod", "Pod"]
    assert all(labels.items() <= o["metadata"]["labels"].items() for o in objects), objects
    template = objects[2]
    assert template["spec"]["metadata"]["labels"] == labels  # the claims made from it are swept too
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["deviceClassName"] == objects[1]["metadata"]["name"]
    assert {o["metadata"].get("namespace") for o in objects[2:]} == {objects[0]["metadata"]["name"]}


def test_mirrored_slices_are_owned_by_their_fake_node_when_its_uid_is_given():
    source = {"spec": {"driver": DRIVER, "nodeName": "real", "pool": {"name": "real"}, "devices": [{"name": "g"}]}}
    model = mirror._node_slices([source], DRIVER, None, "t")
    owned = mirror.fake_slices(model, "kwok-1", "b", owner_uid="uid-1")[0]["metadata"]["ownerReferences"]
    assert owned == [{"apiVersion": "v1", "kind": "Node", "name": "kwok-1", "uid": "uid-1", "controller": True}]
    assert "ownerReferences" not in mirror.fake_slices(model, "kwok-1", "b")[0]["metadata"]


def test_table_rows_and_growth_line():
    rows = [
        {"nodes": n, "slices": n, "pods": n, "discovery_s": s, "invariants_s": s, "sweep_s": 2 * s,
         "apiserver_rss_mib": 300.0, "violations": 0}
        for n, s in ((100, 1.0), (1000, 10.0))
    ]  # fmt: skip
    text = harness_scale.table(rows)
    assert "| 1000 | 1000 | 1000 | 10.0 (-) | 10.0 (-) | 20.0 (-) | 300.0 | 0 |" in text
    assert "from 100 to 1000 nodes (x10): discovery x10.0, invariants x10.0, sweep x10.0" in text
