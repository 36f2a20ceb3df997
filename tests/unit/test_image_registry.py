"""Where the suite's images live in a registry (``images push --registry`` and ``--image-registry`` share one
mapping), how a run takes ``--image-registry``, and the helm flags for charts from registries and repositories."""

from __future__ import annotations

import pytest

from conformance import images as refs
from conformance.clusters.existing import choose_images
from conformance.core.config import RunConfig
from conformance.core.errors import ConfigError
from conformance.drivers.helm import chart_source_args


@pytest.mark.parametrize(
    ("ref", "registry", "expected"),
    [
        ("dra-conformance.local/busybox:1", "127.0.0.1:5000", "127.0.0.1:5000/busybox:1"),
        ("dra-reference-driver:dev", "127.0.0.1:5000/dra/", "127.0.0.1:5000/dra/library/dra-reference-driver:dev"),
        ("registry.k8s.io/a/b:v1", "reg.example.com", "reg.example.com/a/b:v1"),
    ],
)
def test_in_registry_keeps_the_path_and_replaces_the_host(ref, registry, expected):
    assert refs.in_registry(ref, registry) == expected


@pytest.mark.parametrize("bad", ["http://127.0.0.1:5000", "Reg.Example", "host:port", ""])
def test_a_registry_that_is_not_host_port_prefix_is_refused_naming_the_form(bad):
    with pytest.raises(refs.ImageError, match=r"HOST\[:PORT\]\[/PREFIX\]"):
        refs.check_registry(bad)
    with pytest.raises(ConfigError, match="--image-registry"):
        RunConfig(cluster="existing", image_registry=bad)


def test_image_registry_is_refused_on_the_local_cluster_that_loads_images_itself_and_taken_by_kind():
    with pytest.raises(ConfigError, match="--cluster existing"):
        RunConfig(cluster="local", image_registry="127.0.0.1:5000")
    assert RunConfig(cluster="existing", image_registry="127.0.0.1:5000/").image_registry == "127.0.0.1:5000/"
    assert RunConfig(cluster="kind", image_registry="127.0.0.1:5000").image_registry == "127.0.0.1:5000"


def test_image_registry_makes_test_and_helper_pods_pull_from_it_whatever_the_nodes_hold():
    chosen = choose_images([], "127.0.0.1:5000")
    assert chosen == {
        "busybox": "127.0.0.1:5000/busybox:1",
        "grpc": refs.in_registry(refs.reference_driver_ref(), "127.0.0.1:5000"),
    }
    assert choose_images([])["grpc"] == "", "without a registry and without node images: no relay"


def test_chart_source_args_repo_plain_http_and_values_files(tmp_path):
    values = tmp_path / "vendor-values.yaml"
    values.write_text("x: 1\n")
    profile = str(tmp_path / "p.yaml")
    repo = chart_source_args({"repo": "http://127.0.0.1:8879", "values_files": ["vendor-values.yaml"]}, "drv", profile)
    assert repo == ["--repo", "http://127.0.0.1:8879", "--values", str(values)]
    assert chart_source_args({}, "oci://127.0.0.1:5000/charts/drv") == ["--plain-http"]
    assert chart_source_args({}, "oci://registry.example.com/charts/drv") == []
    with pytest.raises(ConfigError, match=r"values_files\[0\]"):
        chart_source_args({"values_files": ["missing.yaml"]}, "drv", profile)


def test_run_values_file_must_exist_and_is_named_in_the_error(tmp_path):
    from conformance.drivers.helm import cli_values_file

    given = tmp_path / "v.yaml"
    given.write_text("a: 1\n")
    assert cli_values_file(str(given)) == str(given)
    with pytest.raises(ConfigError, match="--values"):
        cli_values_file(str(tmp_path / "absent.yaml"))


def test_pull_failures_name_the_node_container_image_and_reason():
    from conformance.core.objects import Obj
    from conformance.node.helper_pod import pull_failures

    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
    pod = Obj(
        {
            "kind": "Pod",
            "metadata": {"name": "helper-0", "namespace": "ns"},
            "spec": {"nodeName": "n1"},
            "status": {
                "containerStatuses": [
                    {"name": "helper", "image": "127.0.0.1:1/busybox:1", "state": {"running": {}}},
                    {"name": "grpc", "image": "127.0.0.1:1/library/dra-reference-driver:dev", "state": waiting},
                ]
            },
        }
    )

    class Listing:  # the one read pull_failures makes: list the helper namespace's pods
        def list(self, kind, namespace):
            assert (kind, namespace) == ("Pod", "ns")
            return [pod]

    assert pull_failures(Listing(), "ns") == [
        "node n1: container grpc could not pull 127.0.0.1:1/library/dra-reference-driver:dev: ImagePullBackOff: "
        "Back-off pulling image"
    ]
