"""Test network interfaces of local nodes (for network DRA drivers such as dranet) and the NRI socket hand-off.

Each node has a network namespace of its own (netns.py), where its interfaces are made (a real node's shape; a
node without one, a cluster made before namespaces, gets them in the host's). Names stay unique to the node:
``<prefix>-<k>`` with ``prefix = "dn" + 6 hex digits of sha256(<cluster>/<node>)``
(at most 15 bytes, the kernel's IFNAMSIZ - 1). Kinds: ``ifb`` (one link) and ``veth`` (the published end
``<prefix>-<k>``, its peer ``<prefix>p<k>``, which a ``<prefix>-`` filter leaves out). This kernel has no
``dummy`` links (CONFIG_DUMMY unset); ifb and veth links can be moved into a pod's network namespace, and
being virtual they are destroyed with it instead of leaking into the host (veth(4), ifb(4), network_namespaces(7)).
Names are recorded in the cluster state before they are created, so tear-down (also after Ctrl-C or a crash)
deletes every one of them.

NRI (containerd's Node Resource Interface): each node's containerd serves NRI on ``<node run dir>/nri/nri.sock``
when the cluster is started with ``nri``; an NRI plugin that only knows the default socket
``/var/run/nri/nri.sock`` (containerd/nri pkg/api/plugin.go DefaultSocketPath; dranet has no flag for it) runs
in a mount namespace of its own where the node's ``nri/`` directory is bind-mounted at ``/run/nri``
(:func:`nri_plugin_argv`, unshare(1) with slave propagation: nothing mounted there reaches the host) and a
private tmpfs covers ``/tmp`` (dranet extracts its PCI database there; it goes away with the namespace).
``/run/nri`` is created on the host when missing, recorded host-wide and removed by the last NRI cluster.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
from pathlib import Path

from conformance_lab.local import hostsys, netns
from conformance_lab.local.config import RUN_ROOT
from conformance_lab.local.node_config import NodePaths
from conformance_lab.local.state import ClusterState, existing_clusters

KINDS = ("ifb", "veth")
MAX_PER_NODE = 99
IFNAMSIZ = 16  # include/uapi/linux/if.h: names are at most 15 bytes
NRI_DEFAULT_DIR = Path("/var/run/nri")  # containerd/nri pkg/api/plugin.go: DefaultSocketPath's directory
NRI_CREATED = RUN_ROOT / "created-nri-dir.json"  # host-wide: /run/nri was created by a local cluster


def prefix(cluster: str, node: str) -> str:
    """The name prefix of ``node``'s test interfaces: ``dn`` + 6 hex digits of sha256(``cluster/node``)."""
    return "dn" + hashlib.sha256(f"{cluster}/{node}".encode()).hexdigest()[:6]


def names(cluster: str, node: str, count: int) -> list[str]:
    """The ``count`` interface names of ``node``: ``<prefix>-0`` ... Raises ValueError outside 1..99."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PER_NODE:
        raise ValueError(f"test interface count {count!r} is out of range: use 1 to {MAX_PER_NODE}")
    base = prefix(cluster, node)
    return [f"{base}-{k}" for k in range(count)]


def peer(name: str) -> str:
    """The veth peer of test interface ``name`` (``dnXXXXXX-3`` -> ``dnXXXXXXp3``): outside the ``-`` prefix."""
    return name.replace("-", "p", 1)


def add_argv(kind: str, name: str) -> list[str]:
    """``ip link add`` for one test interface of ``kind``. Raises ValueError naming the kinds."""
    if kind not in KINDS:
        raise ValueError(f"test interface kind {kind!r} is unknown: use one of {', '.join(KINDS)} (no dummy here)")
    if len(name.encode()) >= IFNAMSIZ:
        raise ValueError(f"interface name {name!r} is longer than {IFNAMSIZ - 1} bytes")
    if kind == "veth":
        return ["ip", "link", "add", name, "type", "veth", "peer", "name", peer(name)]
    return ["ip", "link", "add", name, "type", "ifb"]


def _ip(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=20)


def create(state: ClusterState, node: str, kind: str, count: int) -> list[str]:
    """Record, then create and set up ``count`` test interfaces of ``kind`` for ``node``; returns their names.
    Raises ValueError (bad kind or count) or RuntimeError naming the ``ip`` command and its error (what was
    created stays recorded for tear-down)."""
    wanted = names(state.name, node, count)
    argvs = [add_argv(kind, n) for n in wanted]
    recorded = state.host.setdefault("netdevs", {})
    recorded[node] = sorted(set(recorded.get(node, [])) | set(wanted))
    state.save()
    for name, argv in zip(wanted, argvs, strict=True):
        for step in (argv, ["ip", "link", "set", name, "up"]):
            proc = _ip(netns.in_node(state.processes, node, step))
            if proc.returncode != 0:
                raise RuntimeError(f"`{' '.join(step)}` failed: {proc.stderr.strip()}")
    return wanted


def present(names_: list[str], where: list[str] | None = None) -> list[str]:
    """Those of ``names_`` (and their veth peers) that exist in the host's network namespace, or where the
    command prefix ``where`` (``nsenter --net=...``, :func:`netns.in_node`) runs ``ip``."""
    out = _ip([*(where or []), "ip", "-o", "link", "show"]).stdout
    links = {m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)(?:@[^:]+)?: ", out, re.M)}
    return sorted(n for name in names_ for n in (name, peer(name)) if n in links)


def remove(state: ClusterState, node: str | None = None) -> list[str]:
    """Delete the recorded test interfaces of ``node`` (all nodes when None) and their veth peers; returns
    those that still exist afterwards (an interface inside a pod's namespace is not in the host's: it goes
    away with that namespace)."""
    recorded = state.host.get("netdevs") or {}
    nodes = [node] if node is not None else list(recorded)
    gone_for = []
    left = []
    for n in nodes:
        where = netns.in_node(state.processes, n, [])  # [] when the node's namespace is gone (links with it)
        for name in present(recorded.get(n, []), where):
            _ip([*where, "ip", "link", "del", name])
        gone_for.append(n)
        left += present(recorded.get(n, []), where)
    if not left:
        for n in gone_for:
            recorded.pop(n, None)
        if state.path.parent.exists():
            state.save()
    return left


def nri_plugin_argv(np: NodePaths, argv: list[str]) -> list[str]:
    """``argv`` run in a private mount namespace where node ``np``'s NRI socket is the default
    ``/var/run/nri/nri.sock`` and ``/tmp`` is a private tmpfs (unshare execs: the pid stays argv's)."""
    target = NRI_DEFAULT_DIR.parent.resolve() / NRI_DEFAULT_DIR.name
    script = (
        f"set -e; mount --bind {shlex.quote(str(np.nri_dir))} {shlex.quote(str(target))}; "
        'mount -t tmpfs -o mode=1777 tmpfs /tmp; exec "$@"'
    )
    return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c", script, "nri-plugin", *argv]


def ensure_nri_mount_point() -> bool:
    """Create the default NRI directory on the host when missing (the bind-mount target) and record it
    host-wide; returns whether it was created. Call under ``state.host_lock``."""
    target = NRI_DEFAULT_DIR.parent.resolve() / NRI_DEFAULT_DIR.name
    if target.exists():
        return False
    target.mkdir(parents=True)
    NRI_CREATED.parent.mkdir(parents=True, exist_ok=True)
    NRI_CREATED.write_text(json.dumps([str(target)]))
    return True


def remove_nri_mount_point(name: str) -> list[str]:
    """When no local cluster but ``name`` runs with NRI, remove the NRI directory a cluster created (empty);
    returns what could not be removed. Call under ``state.host_lock``."""
    for other in existing_clusters():
        if other == name:
            continue
        try:
            if ClusterState.load(other).host.get("nri"):
                return []
        except (FileNotFoundError, ValueError, KeyError):
            continue
    try:
        created = json.loads(NRI_CREATED.read_text())
    except (OSError, ValueError):
        return []
    left = hostsys.rmdir_each(list(created))
    if not left:
        NRI_CREATED.unlink(missing_ok=True)
    return left
