"""Who a host-state line belongs to: the local clusters (and a kind runtime) alive on this host, each with the
tokens that name its things in a :mod:`conformance_lab.local.hoststate` line.

Owner labels: ``cluster <name>`` (its directories, bridges, CNI networks, cgroups, DNAT chain, test interfaces,
node names, pod subnets, Service CIDR, ports), ``kube-proxy of <name>`` (the host-global ``KUBE-*`` chains and the
sysctls kube-proxy writes: clusters share the host's network namespace, so these cannot be told apart per
cluster), ``local clusters (host-wide)`` (the kubelet's own ``KUBE-FIREWALL``/``KUBE-KUBELET-CANARY``/
``KUBE-IPTABLES-HINT`` chains and kernel tunables, ``ip_forward`` and the files recording what the first
cluster created for all: any cluster makes them, the last one down removes them) and ``kind runtime`` (the
private containerd of ``--cluster kind``, its nerdctl bridges and CNI chains). A line is attributed to the first
owner one of whose tokens it contains.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance_lab.local import netdevs
from conformance_lab.local.config import Layout
from conformance_lab.local.state import ClusterState, existing_clusters

KUBELET_TOKENS = (
    "KUBE-FIREWALL",
    "KUBE-KUBELET-CANARY",
    "KUBE-IPTABLES-HINT",
    "vm.overcommit_memory=",
    "vm.panic_on_oom=",
    "kernel.panic=",
    "kernel.panic_on_oops=",
    "kernel.keys.root_max",
    "net.ipv4.ip_forward=",
    "/run/dra-conformance/ip_forward.orig",
    "/run/dra-conformance/sysctls.orig.json",
    "/run/dra-conformance/created-",
    "/run/cdi",
    "/etc/cdi",
    "/run/nri",
)
KUBE_PROXY_TOKENS = ("KUBE-", "net.ipv4.conf.all.route_localnet=", "nf_conntrack")
KIND_TOKENS = ("dra-kind", "dra-conformance-kind", "/var/lib/dra-conformance/kind", "nerdctl", "NERDCTL", "CNI-")


def cluster_tokens(state: ClusterState) -> list[str]:
    """The strings that name cluster ``state``'s things in a host-state line."""
    lay = Layout(name=state.name, slot=state.slot, nodes=state.nodes, log_dir=Path("."))
    tokens = [str(lay.state_dir) + "/", str(lay.run_dir) + "/", str(lay.state_dir) + " ", str(lay.run_dir) + " "]
    tokens += [f"DRA-API-{state.name} ", f"DRA-API-{state.name}\n", f"-j DRA-API-{state.name}"]
    tokens += [f"10.0.{state.slot}.", f":{lay.apiserver_port} "]
    tokens += [f":{p} " for p in lay.all_ports().values()]
    for i in range(state.nodes):
        node = lay.node_name(i)
        net = lay.cni_network(i)
        tokens += [lay.bridge(i), f"{net}-", f'"{net}"', f'"{net}\\"', f"<{net}>", f"{lay.cgroup_root(i)}/"]
        tokens += [f"{lay.cgroup_root(i)} ", f"/{lay.cgroup_root(i).strip('/')}\n", netdevs.prefix(state.name, node)]
        tokens += [f"{lay.pod_subnet(i).rsplit('.', 1)[0]}.", node]
    return tokens


def _kind_alive() -> bool:
    from conformance_lab.kind import host as kindhost  # noqa: PLC0415 - only the socket path, on use
    from conformance_lab.local.processes import processes_matching  # noqa: PLC0415

    return kindhost.SOCKET.exists() and bool(processes_matching(str(kindhost.SOCKET)))


def _kind_bridges() -> list[str]:
    """Bridge names (``br-<network id>``) of the kind runtime's nerdctl networks, read from the CNI network lists
    in its own netconf dir (``<kind lib>/cni/<namespace>/*.conflist``, the ``bridge`` plugin's ``bridge``
    field); [] when none can be read. Each kind network gets such a bridge, with veths and a link-local address."""
    from conformance_lab.kind import host as kindhost  # noqa: PLC0415 - only the paths, on use

    names = []
    for conflist in sorted((kindhost.LIB / "cni").glob("*/*.conflist")):
        try:
            plugins = json.loads(conflist.read_text()).get("plugins") or []
        except (OSError, ValueError, AttributeError):
            continue
        names += [p["bridge"] for p in plugins if isinstance(p, dict) and isinstance(p.get("bridge"), str)]
    return names


def owners_now() -> dict[str, list[str]]:
    """``{owner label: tokens}`` of every local cluster with a state file and a live process, the host-global
    owners they imply, and the kind runtime when its containerd runs. Order = attribution order."""
    owners: dict[str, list[str]] = {}
    proxies, kubelets = [], False
    for name in existing_clusters():
        try:
            state = ClusterState.load(name)
        except (OSError, ValueError, TypeError):
            continue
        if not any(p.is_running() for p in state.processes):
            continue
        owners[f"cluster {name}"] = cluster_tokens(state)
        kubelets = kubelets or any(p.name == "kubelet" for p in state.processes)
        proxy = state.process("kube-proxy")
        if proxy is not None and proxy.is_running():
            proxies.append(name)
    if kubelets:
        owners["local clusters (host-wide)"] = list(KUBELET_TOKENS)
    for name in proxies:
        owners[f"kube-proxy of {name}"] = list(KUBE_PROXY_TOKENS)
    if _kind_alive():
        owners["kind runtime"] = [*KIND_TOKENS, *_kind_bridges()]
    return owners


def owner_of(line: str, owners: dict[str, list[str]]) -> str:
    """The label of the first owner one of whose tokens ``line`` contains (a line is matched with a trailing
    newline so tokens can anchor its end); '' when none."""
    text = line + "\n"
    for label, tokens in owners.items():
        if any(t in text for t in tokens):
            return label
    return ""
