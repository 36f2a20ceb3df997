"""The benchmark's objects: claim specs per variant, pods pinned to the fake nodes (no cluster)."""

from __future__ import annotations

from conformance_tools.bench import workload

DRIVER = "gpu.dra-conformance.test"


def test_variants_ask_for_what_they_name():
    cel = workload.claim_spec("cel", DRIVER)["devices"]["requests"][0]["exactly"]
    assert DRIVER in cel["selectors"][0]["cel"]["expression"]
    pair = workload.claim_spec("match-attribute", DRIVER)["devices"]
    assert pair["requests"][0]["exactly"]["count"] == 2
    assert pair["constraints"] == [{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    first = workload.claim_spec("prioritized", DRIVER)["devices"]["requests"][0]["firstAvailable"]
    assert [s["name"] for s in first] == ["big", "any"]


def test_shared_pods_reference_one_claim_per_group():
    claims = workload.claim_objects("shared", DRIVER, pods=10, share=4)
    assert [c["metadata"]["name"] for c in claims] == ["shared-0", "shared-1", "shared-2"]
    assert workload.pod("shared", 5, "img", 4)["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimName": "shared-1"}
    ]


def test_pods_land_only_on_fake_nodes():
    for variant in ("template", "classic"):
        spec = workload.pod(variant, 0, "img", 4)["spec"]
        assert spec["nodeSelector"] == {"dra-conformance.test/node": "kwok"}
        assert spec["tolerations"][0]["key"] == "kwok.x-k8s.io/node"
    classic = workload.pod("classic", 0, "img", 4)["spec"]
    assert classic["containers"][0]["resources"] == {"limits": {"example.com/gpu": "1"}}
    assert "resourceClaims" not in classic
    assert workload.claim_objects("classic", DRIVER, 10, 4) == []
