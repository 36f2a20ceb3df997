"""The handle Protocols every layer codes against, declared once (design.md §1, §2). Pure: no I/O.

* :class:`Node`, :class:`HostNode`: a kubelet node (a name; host paths when the harness runs the node);
* :class:`ClusterHandle`: a running cluster (kubeconfig, version, nodes, gates, images);
* :class:`NodeAccess`: what the harness can do on a node beyond the API (CDI specs, plugin registry,
  PodResources, container log files);
* :class:`DriverHandle`: a deployed driver (name, DeviceClasses, profile, deployer, logs);
* :class:`ClusterProvider`: brings a cluster up and down, opens node access, re-opens its handle in a worker;
  :func:`creates_cluster` marks the factories whose cluster the run owns (:class:`CreatesCluster`).

Optional abilities are narrow ``runtime_checkable`` Protocols a handle may also implement, checked with
``isinstance`` (never ``hasattr``): :class:`RunsHostProcesses` (start the kubelet plugin as a host process),
:class:`RestartsKubelet`, :class:`RebootsNode`, :class:`RestartsControllerManager`, :class:`ReadsNodeFiles`,
:class:`StatsNodeDevices` (node access),
:class:`RestartsPlugin`, :class:`RemovesDriver`, :class:`UpgradesDriver`, :class:`DowngradesDriver`,
:class:`HasComponentLogs`, :class:`Stoppable`. A test that needs one declares it as a capability and is skipped
with evidence when the handle lacks it.

Pattern: kubernetes-sigs/e2e-framework ``support.E2EClusterProvider`` (every interface in one small leaf
package); csi-test ``pkg/sanity`` (capabilities decide which tests run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from conformance.core.config import RunConfig
from conformance.core.profile import DriverProfile


# -- nodes and clusters ------------------------------------------------------------------------------------
@runtime_checkable
class Node(Protocol):
    """A kubelet node: its Kubernetes name."""

    name: str


@runtime_checkable
class HostNode(Protocol):
    """A node whose kubelet directories are paths on this host (local clusters): ``plugin_registry_dir``
    (registration sockets), ``plugins_dir`` (``<driver>/dra.sock``), ``pod_resources_socket``, ``cdi_dir``
    (the CDI spec directory its runtime reads)."""

    name: str
    kubelet_root_dir: Path
    plugin_registry_dir: Path
    plugins_dir: Path
    pod_resources_socket: Path
    cdi_dir: Path


@runtime_checkable
class ClusterHandle(Protocol):
    """A running cluster.

    kubeconfig: admin kubeconfig; k8s_version: exact tag (``v1.34.4``); nodes: the real kubelet nodes;
    feature_gates: gate name -> value given to every component (empty when unknown); runtime_config: the
    apiserver ``--runtime-config`` ("" when unknown); images: logical name (``busybox``, ``pause``) -> image
    reference present on every node.
    """

    kubeconfig: Path
    k8s_version: str
    nodes: Sequence[Node]
    feature_gates: Mapping[str, bool]
    runtime_config: str
    images: Mapping[str, str]


@runtime_checkable
class HostProcess(Protocol):
    """A process the harness started on this host (``name`` for ``node``, output in ``log_path``)."""

    name: str
    node: str
    pid: int
    log_path: Path

    def is_running(self) -> bool: ...

    def stop(self, timeout: float = 10.0) -> None: ...

    def restart(self) -> Any: ...


# -- optional abilities of a cluster handle, node access or driver handle -------------------------------------
@runtime_checkable
class RunsHostProcesses(Protocol):
    """A cluster whose nodes are this host: start a kubelet plugin as a host process, list those running."""

    def start_host_process(self, node: str, name: str, argv: list[str], env: dict | None = None) -> HostProcess: ...

    def host_processes(self) -> list[HostProcess]: ...


@runtime_checkable
class MakesTestNetdevs(Protocol):
    """A cluster whose nodes can be given test network interfaces (network drivers such as dranet):
    ``add_test_netdevs(node, kind, count)`` -> the interface names, unique to the node (``ifb`` | ``veth``);
    ``remove_test_netdevs(node)`` -> those still present. The cluster's tear-down deletes them too."""

    def add_test_netdevs(self, node: str, kind: str, count: int) -> list[str]: ...

    def remove_test_netdevs(self, node: str) -> list[str]: ...


@runtime_checkable
class RunsNriPlugins(Protocol):
    """A cluster that starts an NRI plugin (containerd Node Resource Interface) as a host process for one node,
    where the default socket ``/var/run/nri/nri.sock`` is that node's (a cluster started with NRI on)."""

    def start_nri_plugin(self, node: str, name: str, argv: list[str], env: dict | None = None) -> HostProcess: ...


@runtime_checkable
class RestartsKubelet(Protocol):
    """Restarts a node's kubelet and waits until the node is Ready again (disruptive tests).
    ``can_restart_kubelet()`` -> ``(able, evidence)``."""

    def restart_kubelet(self, node: str) -> None: ...

    def can_restart_kubelet(self) -> tuple[bool, str]: ...


@runtime_checkable
class RebootsNode(Protocol):
    """Reboots a node (or emulates it: processes stopped, containers killed, the node's ``/run`` cleared) and
    waits until it is Ready again with its driver plugins started (disruptive tests). ``reboot_node(node)`` ->
    what was cleared (evidence); ``can_reboot_node()`` -> ``(able, evidence)``."""

    def reboot_node(self, node: str) -> list[str]: ...

    def can_reboot_node(self) -> tuple[bool, str]: ...


@runtime_checkable
class RestartsControllerManager(Protocol):
    """Restarts kube-controller-manager: stops it, runs ``while_stopped()`` (the test's changes made while no
    controller runs), starts it again and waits until it is healthy (disruptive tests).
    ``can_restart_controller_manager()`` -> ``(able, evidence)``."""

    def restart_controller_manager(self, while_stopped: Callable[[], None] | None = None) -> None: ...

    def can_restart_controller_manager(self) -> tuple[bool, str]: ...


@runtime_checkable
class LoadsImages(Protocol):
    """A cluster whose nodes take OCI image archives directly (no registry, e.g. the local cluster):
    ``load_images(archives)`` imports every archive into every real node's container runtime and returns the
    node names. Raises ClusterUnavailable when an import fails."""

    def load_images(self, archives: list[Path]) -> list[str]: ...


@runtime_checkable
class ReadsNodeFiles(Protocol):
    """Reads a file of a node's filesystem (absolute path on the node) as bytes; raises OSError."""

    def read_node_file(self, node: str, path: str) -> bytes: ...


@runtime_checkable
class StatsNodeDevices(Protocol):
    """Node access that stats device nodes on a node: ``device_numbers(node, paths)`` -> ``{path: "c 1:3"}``
    (``c``/``b`` with major:minor of the node the path resolves to; ``""`` for a path that is no device node;
    a path that does not exist is left out). Raises ``conformance.node.base.NodeAccessUnavailable``."""

    def device_numbers(self, node: str, paths: Sequence[str]) -> dict[str, str]: ...


@runtime_checkable
class RestartsPlugin(Protocol):
    """A driver handle that restarts its kubelet plugin on one node (disruptive tests)."""

    def restart_plugin(self, node: str) -> None: ...


@runtime_checkable
class RemovesDriver(Protocol):
    """A driver handle whose deployer can remove the driver's kubelet plugins from every node while pods run
    (``remove_driver()``: plugins stopped, DeviceClasses and the driver's node state kept, as an uninstall of
    the DaemonSet does) and install them again (``reinstall_driver()``: started, slices published on every
    node); raise an error naming the plugin's log when a plugin does not come back (disruptive tests)."""

    def remove_driver(self) -> None: ...

    def reinstall_driver(self) -> None: ...


@runtime_checkable
class UpgradesDriver(Protocol):
    """A driver handle whose deployer can put the profile's previous version (N-1) in place of the running
    one and upgrade it to the deployed version N again, in place, as an operator's ``helm upgrade`` does
    (disruptive tests). ``can_upgrade()`` -> ``(able, evidence naming N-1 and N)``; ``install_previous()``
    and ``upgrade_driver()`` return when the plugins of that version run and publish slices on every node,
    and raise an error naming the deployer's output otherwise; ``upgrade_driver()`` is idempotent."""

    def can_upgrade(self) -> tuple[bool, str]: ...

    def install_previous(self) -> None: ...

    def upgrade_driver(self) -> None: ...


@runtime_checkable
class SurgeUpdatesDriver(Protocol):
    """A driver handle that rolls its plugin DaemonSets with maxSurge 1 / maxUnavailable 0 (a node's new plugin
    pod runs beside the old one until Ready; kubelet pluginwatcher "Seamless Upgrade", KEP-4381):
    ``can_surge_update()`` -> ``(able, evidence)`` (the profile declares ``rolling_update: surge``);
    ``surge_update(node)`` returns when every node runs only new Ready plugin pods and ``node`` runs a new one
    (raises an error naming the nodes still rolling, or that nothing was rolled); ``restore_update_strategy()``
    puts the strategies back, also after a failed roll (disruptive tests)."""

    def can_surge_update(self) -> tuple[bool, str]: ...

    def surge_update(self, node: str = "") -> None: ...

    def restore_update_strategy(self) -> None: ...


class DowngradesDriver(UpgradesDriver, Protocol):
    """An :class:`UpgradesDriver` whose profile may declare that the driver does not support a downgrade from
    the deployed version N to N-1 (``upgrade_from.downgrade: false``). ``can_downgrade()`` -> ``(able,
    evidence)``; the downgrade lane uses ``install_previous()`` as the downgrade and ``upgrade_driver()`` to
    put N back. Source: NVIDIA's DRA driver release testing (N -> N-1 with workloads running)."""

    def can_downgrade(self) -> tuple[bool, str]: ...


@runtime_checkable
class HasComponentLogs(Protocol):
    """A cluster whose component logs (kubelet, scheduler...) are files in ``log_dir`` on this host."""

    log_dir: Path


@runtime_checkable
class Stoppable(Protocol):
    """Something holding cluster resources (helper pods) until ``stop()``; idempotent."""

    def stop(self) -> None: ...


# -- node access ----------------------------------------------------------------------------------------
@runtime_checkable
class PodResources(Protocol):
    """One kubelet's PodResources API v1 (KEP-3695): ``list()`` -> podResources dicts (protobuf JSON names),
    ``get(pod, namespace)`` -> one pod's entry (gate KubeletPodResourcesGet), ``allocatable()`` ->
    GetAllocatableResources, ``entry(pod, namespace)`` -> the pod's ``List`` entry ({} when not listed),
    ``dynamic_resources(pod, namespace)`` -> ``{container: [DynamicResource dict]}`` from ``List``."""

    def list(self) -> list[dict]: ...

    def get(self, pod: str, namespace: str) -> dict: ...

    def allocatable(self) -> dict: ...

    def entry(self, pod: str, namespace: str) -> dict: ...

    def dynamic_resources(self, pod: str, namespace: str) -> dict[str, list[dict]]: ...


@runtime_checkable
class DraPlugin(Protocol):
    """One driver's DRAPlugin service on one node (k8s.io/kubelet/pkg/apis/dra/v1), called like the kubelet
    does: ``prepare(claim, uid=None)`` -> NodePrepareResources entry of that claim (``.devices``,
    ``.device_names``, ``.cdi_ids``, ``.error``), ``unprepare(claim, uid=None)`` -> NodeUnprepareResources
    entry (``.error``), ``prepare_all(claims)`` / ``unprepare_all(claims)`` -> ``{claim UID: entry}`` of one call
    naming them all, ``serving()`` -> whether the service answers; ``prepared``: claims prepared through
    it and not unprepared since. Implementation: :class:`conformance.node.draplugin.DraPluginClient`."""

    prepared: list

    def prepare(self, claim: Any, uid: str | None = None) -> Any: ...

    def unprepare(self, claim: Any, uid: str | None = None) -> Any: ...

    def prepare_all(self, claims: Any) -> dict: ...

    def unprepare_all(self, claims: Any) -> dict: ...

    def serving(self) -> bool: ...


@runtime_checkable
class NodeAccess(Protocol):
    """Node-level access for one cluster. ``mode``: e.g. local | kind | privileged-pod.

    ``probe()`` -> ``(available, evidence)`` (checked once per run); ``cdi_specs(node)`` -> ``{file name:
    text}`` of the node's CDI spec directories; ``plugin_sockets(node)`` -> file names in the kubelet plugin
    registry; ``plugin_info(node)`` -> the pluginregistration GetInfo answers of those sockets (``[{type, name,
    endpoint, supported_versions, socket}]``); ``pod_resources(node)`` -> a PodResources client;
    ``dra_plugin(node, driver)`` -> a :class:`DraPlugin` client of that driver's DRA socket (the endpoint its
    registration advertises);
    ``container_log(...)`` -> a container's output
    from the node's log files. Operations a mode cannot do raise ``conformance.node.base.NodeAccessUnavailable``.
    Kubelet restarts are the optional :class:`RestartsKubelet` ability.
    """

    mode: str

    def probe(self) -> tuple[bool, str]: ...

    def cdi_specs(self, node: str) -> dict[str, str]: ...

    def plugin_sockets(self, node: str) -> list[str]: ...

    def plugin_info(self, node: str) -> list[dict]: ...

    def pod_resources(self, node: str) -> PodResources: ...

    def dra_plugin(self, node: str, driver: str) -> DraPlugin: ...

    def container_log(self, node: str, namespace: str, pod: str, uid: str, container: str) -> str: ...


# -- drivers ---------------------------------------------------------------------------------------------
@runtime_checkable
class DriverHandle(Protocol):
    """A deployed driver: ``name`` (ResourceSlice spec.driver), ``device_classes`` (first = the one tests
    use, also ``device_class``), ``profile``, ``deploy_mode`` (the deployer's registry name), ``version``
    (best known, "" when unknown), ``processes`` (node -> host process; empty unless the plugin runs on this
    host), ``logs(tail_bytes)`` -> ``{source: text}``. Restarting the plugin is :class:`RestartsPlugin`."""

    name: str
    device_classes: tuple[str, ...]
    profile: DriverProfile
    deploy_mode: str
    version: str
    processes: Mapping[str, HostProcess]

    @property
    def device_class(self) -> str: ...

    def logs(self, tail_bytes: int = 20000) -> dict[str, str]: ...


# -- cluster providers ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ProviderContext:
    """What a cluster provider factory receives: the run's config, its report directory (logs go under it),
    a one-line progress callback and the driver's deploy mode (``helm``/``manifests`` run plugins as
    DaemonSet pods: a provider makes its nodes' standard kubelet/CDI paths work for them)."""

    cfg: RunConfig
    report_dir: Path
    progress: Callable[[str], None] = lambda line: None
    deploy_mode: str = ""
    nri: bool = False  # the driver is an NRI plugin (profile deploy.nri): nodes' runtimes must serve NRI


@runtime_checkable
class ClusterProvider(Protocol):
    """Brings one cluster up and down (registered under a name, see ``conformance.runner.registry``).

    ``up()`` -> the handle (raises ClusterUnavailable after cleaning up); ``down()`` is idempotent and leaves
    nothing behind that ``up()`` created (a provider that did not create the cluster removes nothing);
    ``node_access(choice, owner)`` -> NodeAccess for ``--node-access`` ``choice`` (auto | none |
    privileged-pod) or None when the cluster offers none; ``owner`` is False in xdist workers, which must not
    create shared helpers; raises ConfigError for a choice the provider cannot honour.
    ``state()`` -> JSON-able dict from which ``attach(state)`` re-opens the same handle in another process.
    """

    def up(self) -> ClusterHandle: ...

    def down(self) -> None: ...

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None: ...

    def state(self) -> dict: ...

    def attach(self, state: Mapping[str, Any]) -> ClusterHandle: ...


ClusterProviderFactory = Callable[[ProviderContext], ClusterProvider]


@runtime_checkable
class CreatesCluster(Protocol):
    """A provider factory marked by :func:`creates_cluster`: its ``up()`` creates the cluster, so the run owns it
    and may install a driver there. A factory without the mark (``existing``, a third party's) reaches a cluster
    someone else runs: the run installs nothing unless ``--allow-install`` (core.config.deploy_mode)."""

    creates_cluster: bool


F = TypeVar("F", bound=Callable[..., Any])


def creates_cluster(factory: F) -> F:
    """Mark a cluster provider factory as creating the cluster it returns (``factory.creates_cluster = True``);
    returns ``factory`` (a decorator). Read by ``conformance.runner.registry.Registry.creates_cluster``."""
    factory.creates_cluster = True  # type: ignore[attr-defined]
    return factory
