"""Driver images built offline run as their charts run them: the archive of `dra-conformance images` is
imported into every node of the local cluster, and on each node a pod with the image and command of the
chart's rendered DaemonSet (``helm template``; pull policy Never, so nothing is pulled) runs ``--help``.
About 20 s warm (images cached by `make setup`)."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from conformance_lab.local.images import import_into_nodes
from conformance_lab.toolchain import cache
from conformance_lab.toolchain.images import catalog, example_driver, reference_image
from kubernetes import client

from conformance import images as refs
from tests.e2e import kube

pytestmark = pytest.mark.e2e

CHARTS = {  # image name -> (chart dir, what `--help` prints first)
    "reference-driver": (lambda: reference_image.CHART, "usage: dra-reference-driver"),
    "dra-example-driver": (lambda: example_driver.module_dir() / example_driver.CHART, "dra-example-kubeletplugin"),
}


def _chart_container(chart, namespace: str, k8s_version: str) -> dict:
    """The plugin container of the DaemonSet the chart renders with its default values."""
    rendered = subprocess.run(
        [str(cache.tool_binary("helm")), "template", "imgs", str(chart), "--namespace", namespace]
        + ["--kube-version", k8s_version.lstrip("v")],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    daemonsets = [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") == "DaemonSet"]
    assert len(daemonsets) == 1, f"{chart} renders {len(daemonsets)} DaemonSets"
    return daemonsets[0]["spec"]["template"]["spec"]["containers"][0]


@pytest.fixture
def core(local_cluster):
    return kube.core_api(local_cluster)


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_driver_image_runs_on_every_node_as_its_chart_runs_it(local_cluster, core, name):
    chart, usage = CHARTS[name]
    # given: the image built offline and imported into every node's containerd
    spec = catalog.select([name])[0]
    nodes = import_into_nodes(local_cluster.name, [spec.build()], say=lambda line: None)
    ns = kube.namespace(core, "offline-img")
    try:
        kube.wait_default_sa(core, ns)
        container = _chart_container(chart(), ns, local_cluster.k8s_version)
        assert refs.normalize(container["image"]) == spec.ref(), "the image is stored under the chart's name"
        # when: a pod per node runs the chart's image and command with --help
        for i, node in enumerate(nodes):
            pod = client.V1Pod(
                metadata=client.V1ObjectMeta(name=f"help-{i}"),
                spec=client.V1PodSpec(
                    node_name=node,
                    restart_policy="Never",
                    containers=[
                        client.V1Container(
                            name="plugin",
                            image=container["image"],
                            image_pull_policy="Never",
                            command=container.get("command"),
                            args=["--help"],
                        )
                    ],
                ),
            )
            core.create_namespaced_pod(ns, pod)
        # then: each exits 0 and printed the driver's usage
        for i, node in enumerate(nodes):
            done = kube.wait_pod_done(core, ns, f"help-{i}", timeout=90)
            log = core.read_namespaced_pod_log(f"help-{i}", ns)
            assert done.spec.node_name == node and usage in log, f"{node}: {log[:500]}"
    finally:
        kube.delete_namespace(core, ns)
