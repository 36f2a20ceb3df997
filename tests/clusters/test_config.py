"""LocalClusterConfig validation and the derived port/subnet layout (bad input names the field and fix)."""

import pytest
from conformance_lab.local import LocalCluster, LocalClusterConfig
from conformance_lab.local.cluster import resolve_version
from conformance_lab.local.config import layout_for

from conformance.core.errors import ConfigError


@pytest.mark.parametrize(
    "kwargs,field,needle",
    [
        ({"nodes": 0}, "nodes", "from 1 to 8"),
        ({"nodes": 9}, "nodes", "from 1 to 8"),
        ({"kwok_nodes": -1}, "kwok_nodes", "from 0 to 100"),
        ({"feature_gates": "everything"}, "feature_gates", "defaults, all"),
        ({"name": "Bad_Name"}, "name", "lowercase"),
        ({"slot": 10}, "slot", "from 0 to 9"),
        ({"images": {"nginx": "x"}}, "images", "busybox, pause"),
    ],
)
def test_bad_config_is_refused_with_field_and_fix(kwargs, field, needle):
    with pytest.raises(ConfigError) as err:
        LocalCluster(LocalClusterConfig(**kwargs))
    assert err.value.field == field
    assert needle in str(err.value)


@pytest.mark.parametrize("version", ["1.99", "banana", "v1.34.999"])
def test_unknown_k8s_version_names_the_pinned_versions(version):
    with pytest.raises(ConfigError) as err:
        resolve_version(version)
    assert err.value.field == "k8s_version"
    assert "1.34" in str(err.value)


def test_default_version_resolves_to_the_pinned_tag():
    assert resolve_version(None).startswith("v1.34.")


def test_layout_ports_are_distinct_and_slots_do_not_overlap():
    a = layout_for(LocalClusterConfig(name="a", nodes=8).validate())
    b = layout_for(LocalClusterConfig(name="b", nodes=8, slot=1).validate())
    pa, pb = a.all_ports(), b.all_ports()
    assert len(set(pa.values())) == len(pa), pa
    assert not set(pa.values()) & set(pb.values())
    assert a.service_ip == "10.0.0.1" and b.service_ip == "10.0.1.1"
    assert {a.pod_subnet(i) for i in range(8)}.isdisjoint({b.pod_subnet(i) for i in range(8)})


def test_layout_bridge_names_fit_linux_limit_and_differ_per_cluster():
    a = layout_for(LocalClusterConfig(name="abcdefghijklmnop").validate())
    b = layout_for(LocalClusterConfig(name="other").validate())
    assert all(len(x.bridge(i)) <= 15 for x in (a, b) for i in range(8))
    assert a.bridge(0) != b.bridge(0) and a.bridge(0) != a.bridge(1)
